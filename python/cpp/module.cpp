#include "python/cpp/module.h"

#include "sim/config.h"

PYBIND11_MODULE(_native, m) {
  m.doc() = "zerolayer's C++ engine: run studies, generate from checkpoints, tokenize, judge claims.";
  // A bad config key or value is the caller's error: ValueError, naming the key.
  pybind11::register_exception<zl::ConfigError>(m, "ConfigError", PyExc_ValueError);
  m.attr("source_dir") = ZL_SOURCE_DIR;
  m.attr("version") = ZL_VERSION;
  zl::python::register_study(m);
  zl::python::register_tokenizer(m);
  zl::python::register_generator(m);
  zl::python::register_claims(m);
}
