// A checkpoint loaded once and sampled from (sim/generate.h).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "python/cpp/module.h"
#include "sim/generate.h"

namespace py = pybind11;

namespace zl::python {

py::array_t<int32_t> to_array(const std::vector<int32_t>& ids);  // tokenizer.cpp
std::vector<int32_t> from_array(const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& a);

namespace {
GenerateOptions options(int64_t max_new_tokens, double temperature, int64_t top_k, double top_p, uint64_t seed) {
  if (max_new_tokens < 1) throw py::value_error("max_new_tokens must be >= 1");
  if (temperature < 0) throw py::value_error("temperature must be >= 0");
  if (!(top_p > 0 && top_p <= 1)) throw py::value_error("top_p must be in (0, 1]");
  return {max_new_tokens, temperature, top_k, top_p, seed};
}
}  // namespace

void register_generator(py::module& m) {
  py::class_<Generator>(m, "Generator", "A trained model loaded from a checkpoint directory, ready to sample.")
      .def(py::init([](const std::string& dir) {
             py::gil_scoped_release release;
             return std::make_unique<Generator>(dir);
           }),
           py::arg("checkpoint_dir"),
           "Loads output.dir/checkpoints/<train_id> (model, config, tokenizer). Raises RuntimeError naming the "
           "directory when it is missing or corrupt.")
      .def(
          "generate",
          [](Generator& g, const std::string& prompt, int64_t max_new_tokens, double temperature, int64_t top_k,
             double top_p, uint64_t seed) {
            auto opt = options(max_new_tokens, temperature, top_k, top_p, seed);
            std::string out;
            {
              py::gil_scoped_release release;
              out = g.generate_text(prompt, opt);
            }
            return py::bytes(out).attr("decode")("utf-8", "replace").cast<std::string>();
          },
          py::arg("prompt"), py::arg("max_new_tokens") = 64, py::arg("temperature") = 0.8, py::arg("top_k") = 0,
          py::arg("top_p") = 1.0, py::arg("seed") = 1,
          "The continuation of `prompt` (text, without the prompt). Same sampling seed, same text.")
      .def(
          "generate_ids",
          [](Generator& g, const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& prompt,
             int64_t max_new_tokens, double temperature, int64_t top_k, double top_p, uint64_t seed) {
            auto opt = options(max_new_tokens, temperature, top_k, top_p, seed);
            auto ids = from_array(prompt);
            std::vector<int32_t> out;
            {
              py::gil_scoped_release release;
              out = g.generate(ids, opt);
            }
            return to_array(out);
          },
          py::arg("prompt_ids"), py::arg("max_new_tokens") = 64, py::arg("temperature") = 0.8, py::arg("top_k") = 0,
          py::arg("top_p") = 1.0, py::arg("seed") = 1,
          "The continuation's token ids (numpy int32, end-of-document excluded) of a prompt given as ids.")
      .def(
          "logits",
          [](Generator& g, const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& prompt) {
            auto ids = from_array(prompt);
            int64_t rows = 0, cols = 0;
            std::vector<float> v;
            {
              py::gil_scoped_release release;
              v = g.logits(ids, &rows, &cols);
            }
            py::array_t<float> a({rows, cols});
            std::copy(v.begin(), v.end(), a.mutable_data());
            return a;
          },
          py::arg("prompt_ids"), "Full-forward logits of the prompt, a float32 array [T, V].")
      .def_property_readonly("tokenizer", &Generator::tokenizer, py::return_value_policy::reference_internal,
                             "The checkpoint's tokenizer.")
      .def_property_readonly("config", &Generator::config_ini, "The resolved config the model was trained with (INI).")
      .def_property_readonly("variant", &Generator::variant, "The variant name.")
      .def_property_readonly("context", &Generator::context, "The model's context length in tokens.");
}

}  // namespace zl::python
