// Tokenizers (datasets/tokenizer.h) from Python: ids are numpy int32 arrays.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "datasets/tokenizer.h"
#include "python/cpp/module.h"
#include "sim/generate.h"

namespace py = pybind11;

namespace zl::python {

py::array_t<int32_t> to_array(const std::vector<int32_t>& ids) {
  py::array_t<int32_t> a(static_cast<py::ssize_t>(ids.size()));
  std::copy(ids.begin(), ids.end(), a.mutable_data());
  return a;
}

std::vector<int32_t> from_array(const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& a) {
  if (a.ndim() != 1) throw py::value_error("expected a 1-D array of token ids, got " + std::to_string(a.ndim()) + "-D");
  std::vector<int32_t> ids(a.size());
  for (py::ssize_t i = 0; i < a.size(); ++i) {
    int64_t v = a.data()[i];
    if (v < 0 || v > INT32_MAX) throw py::value_error("token id " + std::to_string(v) + " out of range");
    ids[i] = static_cast<int32_t>(v);
  }
  return ids;
}

void register_tokenizer(py::module& m) {
  py::class_<Tokenizer>(m, "Tokenizer", "Text <-> token ids: SentencePiece BPE or bytes (byte-exact either way).")
      .def_static("byte", &make_byte_tokenizer, "The byte tokenizer: ids 0-255 are bytes, 256 ends a document.")
      .def_static(
          "from_file", [](const std::string& path) { return load_sentencepiece_tokenizer(path); }, py::arg("path"),
          "A trained SentencePiece model file (e.g. output.dir/cache/tokenizer-*.model).")
      .def_static(
          "from_checkpoint",
          [](const std::string& dir) { return checkpoint_tokenizer(dir); },
          py::arg("checkpoint_dir"), "The tokenizer a run trained with, from its checkpoint directory.")
      .def(
          "encode", [](const Tokenizer& t, const std::string& text) { return to_array(t.encode(text)); },
          py::arg("text"), "Token ids of `text` as a numpy int32 array (no end-of-document id).")
      .def(
          "decode",
          [](const Tokenizer& t, const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& ids) {
            return py::bytes(t.decode(from_array(ids)));
          },
          py::arg("ids"),
          "The bytes that a sequence of ids stands for (bytes, since a slice of ids may split a UTF-8 character; "
          "use .decode('utf-8', 'replace') for text).")
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size, "Number of ids.")
      .def_property_readonly("eos_id", &Tokenizer::eos_id, "The end-of-document id.")
      .def_property_readonly("kind", &Tokenizer::kind, "'byte' or 'sentencepiece'.")
      .def_property_readonly("model_path", &Tokenizer::model_path, "The SentencePiece model file ('' for byte).");
}

}  // namespace zl::python
