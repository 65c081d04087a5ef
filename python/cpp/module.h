// The pybind11 module zerolayer._native (laid out like CTranslate2's
// python/cpp: one register_xxx per file, one PYBIND11_MODULE in module.cpp).
// Arrays cross the boundary as numpy arrays, never torch tensors, so the
// module does not depend on which Python torch (if any) is installed.
#pragma once
#include <pybind11/pybind11.h>

namespace zl::python {

void register_study(pybind11::module& m);      // study.cpp: run a study or one run
void register_tokenizer(pybind11::module& m);  // tokenizer.cpp: encode / decode
void register_generator(pybind11::module& m);  // generator.cpp: checkpoint -> text
void register_claims(pybind11::module& m);     // claims.cpp: the claims table

}  // namespace zl::python
