#include "sim/config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "sim/operating_point.h"
#include "sim/variants.h"
#include "sim/util/format.h"

namespace zl {
namespace {

// ---- parsing one value ---------------------------------------------------

int64_t parse_int(const std::string& s) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("expected an integer, got '" + s + "'");
  }
  if (used != s.size()) throw std::invalid_argument("expected an integer, got '" + s + "'");
  return v;
}

double parse_float(const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("expected a number, got '" + s + "'");
  }
  if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument("expected a finite number, got '" + s + "'");
  return v;
}

std::string format_float(double v) { return significant(v, 10); }

// ---- checks --------------------------------------------------------------

using IntCheck = std::function<void(int64_t)>;
using FloatCheck = std::function<void(double)>;
using StrCheck = std::function<void(const std::string&)>;

IntCheck at_least(int64_t lo) {
  return [lo](int64_t v) {
    if (v < lo) throw std::invalid_argument("must be >= " + std::to_string(lo) + ", got " + std::to_string(v));
  };
}

FloatCheck in_range(double lo, double hi, bool open_lo = false) {
  return [=](double v) {
    if (v < lo || v > hi || (open_lo && v == lo))
      throw std::invalid_argument("must be in " + std::string(open_lo ? "(" : "[") + format_float(lo) + ", " +
                                  format_float(hi) + "], got " + format_float(v));
  };
}

StrCheck one_of(std::vector<std::string> allowed) {
  return [allowed](const std::string& v) {
    for (const auto& a : allowed)
      if (v == a) return;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw std::invalid_argument("must be one of {" + list + "}, got '" + v + "'");
  };
}

// `fused.value_rank`: 0 (off), an integer rank, or a ratio in (0,1] of the head width.
void check_rank(const std::string& v) {
  double r = parse_float(v);
  if (r < 0) throw std::invalid_argument("must be 0 (off), a rank >= 1 or a ratio in (0,1], got " + v);
  if (r > 1 && std::floor(r) != r) throw std::invalid_argument("a rank above 1 must be an integer, got " + v);
}

// `latent.rank`: auto (each mode's paper's default, latent_rank()), an
// integer rank >= 1, or (with a decimal point or an exponent) a share in
// (0,1] of the baseline's K/V width.
bool is_share(const std::string& v) { return v.find_first_of(".eE") != std::string::npos; }

void check_latent_rank(const std::string& v) {
  if (v == "auto") return;
  if (is_share(v)) {
    double r = parse_float(v);
    if (r <= 0 || r > 1)
      throw std::invalid_argument("a share of the K/V width (with a decimal point) must be in (0,1], got " + v);
    return;
  }
  if (parse_int(v) < 1)
    throw std::invalid_argument("must be auto, a rank >= 1 or a share in (0,1] of the K/V width (0.25), got " + v);
}

// A key whose value becomes a path (output.dir, serve.trace): path_text_problem().
void path_text(const std::string& v) {
  if (std::string why = path_text_problem(v); !why.empty()) throw std::invalid_argument(why);
}

// A comma list of numbers > 0 ("inf" allowed where `infinite`): serve.loads, serve.rates.
StrCheck positive_list(bool infinite, bool allow_empty) {
  return [=](const std::string& v) {
    if (v.empty()) {
      if (allow_empty) return;
      throw std::invalid_argument("must list at least one number");
    }
    for (double x : number_list(v))
      if (!(x > 0) || (!infinite && std::isinf(x)))
        throw std::invalid_argument("each value must be " + std::string(infinite ? "> 0 (or inf)" : "a finite number > 0") +
                                    ", got " + format_float(x) + " in '" + v + "'");
  };
}

// ---- registry builders -----------------------------------------------------

template <class Section, class Field>
KeySpec int_key(std::string name, Section RunConfig::*sec, Field Section::*field, KeyRole role, std::string help,
                IntCheck check = at_least(std::numeric_limits<int64_t>::min())) {
  return {name, "int", help, role,
          [=](RunConfig& c, const std::string& t) {
            int64_t v = parse_int(t);
            check(v);
            (c.*sec).*field = v;
          },
          [=](const RunConfig& c) { return std::to_string((c.*sec).*field); }};
}

template <class Section>
KeySpec float_key(std::string name, Section RunConfig::*sec, double Section::*field, KeyRole role, std::string help,
                  FloatCheck check = [](double) {}) {
  return {name, "float", help, role,
          [=](RunConfig& c, const std::string& t) {
            double v = parse_float(t);
            check(v);
            (c.*sec).*field = v;
          },
          [=](const RunConfig& c) { return format_float((c.*sec).*field); }};
}

template <class Section>
KeySpec str_key(std::string name, Section RunConfig::*sec, std::string Section::*field, KeyRole role, std::string help,
                StrCheck check = [](const std::string&) {}) {
  return {name, "string", help, role,
          [=](RunConfig& c, const std::string& t) {
            check(t);
            (c.*sec).*field = t;
          },
          [=](const RunConfig& c) { return (c.*sec).*field; }};
}

// A key whose value is a comma list (KeySpec::list).
KeySpec listed(KeySpec k) {
  k.list = true;
  return k;
}

template <class Section>
KeySpec bool_key(std::string name, Section RunConfig::*sec, bool Section::*field, KeyRole role, std::string help) {
  return {name, "bool", help, role, [=](RunConfig& c, const std::string& t) { (c.*sec).*field = parse_bool(t); },
          [=](const RunConfig& c) { return std::string((c.*sec).*field ? "true" : "false"); }};
}

std::vector<KeySpec> build_registry() {
  using R = RunConfig;
  const auto T = KeyRole::Training, E = KeyRole::Evaluation, O = KeyRole::Output;
  std::vector<KeySpec> k;
  k.push_back({"variant", "string", variant_names(" | ") + " (zerolayer variants)", T,
               [](R& c, const std::string& t) {
                 variant_info(t);  // an unknown name is refused, naming the table's
                 c.variant = t;
               },
               [](const R& c) { return c.variant; }});
  k.push_back({"seed", "int", "seeds the data order, init and sampling", T,
               [](R& c, const std::string& t) {
                 int64_t v = parse_int(t);
                 at_least(0)(v);
                 c.seed = v;
               },
               [](const R& c) { return std::to_string(c.seed); }});

  k.push_back(int_key("model.layers", &R::model, &ModelConfig::layers, T, "transformer blocks", at_least(1)));
  k.push_back(int_key("model.heads", &R::model, &ModelConfig::heads, T, "attention heads (divide model.dim)", at_least(1)));
  k.push_back(int_key("model.dim", &R::model, &ModelConfig::dim, T, "residual width", at_least(1)));
  k.push_back(int_key("model.context", &R::model, &ModelConfig::context, T, "context length in tokens", at_least(8)));
  k.push_back(int_key("model.mlp_ratio", &R::model, &ModelConfig::mlp_ratio, T, "MLP width / model.dim", at_least(1)));
  k.push_back(float_key("model.dropout", &R::model, &ModelConfig::dropout, T, "dropout probability", in_range(0, 0.9)));

  k.push_back(str_key("data.corpus", &R::data, &DataConfig::corpus, T, "contracts | brown | licenses",
                      one_of({"contracts", "brown", "licenses"})));
  k.push_back(str_key("data.tokenizer", &R::data, &DataConfig::tokenizer, T, "sentencepiece | byte",
                      one_of({"sentencepiece", "byte"})));
  k.push_back(int_key("data.vocab_size", &R::data, &DataConfig::vocab_size, T, "sentencepiece vocabulary (>= 320: 256 byte pieces plus the corpus characters)", at_least(320)));
  k.push_back(float_key("data.val_fraction", &R::data, &DataConfig::val_fraction, T, "held-out share of documents",
                        in_range(0, 0.5, true)));
  k.push_back(int_key("data.documents", &R::data, &DataConfig::documents, T,
                      "contracts generated (a cap for other corpora; 0 = all)", at_least(0)));
  k.push_back(int_key("data.nesting", &R::data, &DataConfig::nesting, T, "contracts: deepest conditional nesting", at_least(0)));
  k.push_back(int_key("data.facts", &R::data, &DataConfig::facts, T, "contracts: facts per contract", at_least(1)));
  k.push_back(int_key("data.reference_distance", &R::data, &DataConfig::reference_distance, T,
                      "contracts: clauses between a fact and its reference", at_least(1)));
  k.push_back(str_key("data.eval_corpus", &R::data, &DataConfig::eval_corpus, E,
                      "out-of-distribution corpus for evaluation (empty = none)", one_of({"", "contracts", "brown", "licenses"})));

  k.push_back(int_key("train.steps", &R::train, &TrainConfig::steps, T, "optimizer steps", at_least(1)));
  k.push_back(int_key("train.batch", &R::train, &TrainConfig::batch, T, "sequences per step", at_least(1)));
  k.push_back(float_key("train.lr", &R::train, &TrainConfig::lr, T, "peak learning rate", in_range(0, 10, true)));
  k.push_back(float_key("train.min_lr_ratio", &R::train, &TrainConfig::min_lr_ratio, T, "final lr / peak lr", in_range(0, 1)));
  k.push_back(int_key("train.warmup", &R::train, &TrainConfig::warmup, T, "linear warm-up steps", at_least(0)));
  k.push_back(float_key("train.weight_decay", &R::train, &TrainConfig::weight_decay, T, "AdamW decoupled decay", in_range(0, 10)));
  k.push_back(float_key("train.beta1", &R::train, &TrainConfig::beta1, T, "AdamW beta1", in_range(0, 1)));
  k.push_back(float_key("train.beta2", &R::train, &TrainConfig::beta2, T, "AdamW beta2", in_range(0, 1)));
  k.push_back(float_key("train.grad_clip", &R::train, &TrainConfig::grad_clip, T, "global gradient norm clip (0 = off)",
                        in_range(0, 1e9)));
  // Threads and device change speed, not the trained weights' meaning; they
  // are Output-role so a study can re-time a model without retraining it.
  k.push_back(int_key("train.threads", &R::train, &TrainConfig::threads, O, "LibTorch threads (0 = all cores)", at_least(0)));
  k.push_back(str_key("train.device", &R::train, &TrainConfig::device, T, "cpu | cuda", one_of({"cpu", "cuda"})));
  k.push_back(str_key("train.precision", &R::train, &TrainConfig::precision, T, "fp32 | bf16 (autocast)",
                      one_of({"fp32", "bf16"})));
  k.push_back(int_key("train.eval_every", &R::train, &TrainConfig::eval_every, T, "validation period (steps)", at_least(1)));
  k.push_back(int_key("train.eval_batches", &R::train, &TrainConfig::eval_batches, T, "batches per validation", at_least(1)));
  k.push_back(float_key("train.branch", &R::train, &TrainConfig::branch, T,
                        "share of train.steps a model of another family than the baseline's trains after branching "
                        "from the baseline's checkpoint (uptraining, sim/branch.h); 0 = from scratch",
                        in_range(0, 0.95)));
  k.push_back(int_key("train.checkpoint_every", &R::train, &TrainConfig::checkpoint_every, O, "checkpoint period (steps)",
                      at_least(1)));
  k.push_back(bool_key("train.memory_check", &R::train, &TrainConfig::memory_check, O,
                       "refuse a run whose estimated peak memory exceeds what this machine has available, before "
                       "anything is allocated (off: run anyway)"));
  k.push_back(float_key("train.memory_margin", &R::train, &TrainConfig::memory_margin, O,
                        "share of the available memory held back for the system and other processes (memory check)",
                        in_range(0, 0.9)));
  k.push_back(str_key("train.stale_checkpoints", &R::train, &TrainConfig::stale_checkpoints, O,
                      "refuse | reuse: a checkpoint whose recorded training code differs from this build's "
                      "(sim/training_code.h) is refused, or reused as it is",
                      one_of({"refuse", "reuse"})));

  k.push_back(int_key("decode.max_new_tokens", &R::decode, &DecodeConfig::max_new_tokens, E, "tokens generated per prompt", at_least(1)));
  k.push_back(float_key("decode.temperature", &R::decode, &DecodeConfig::temperature, E, "sampling temperature (0 = greedy)",
                        in_range(0, 100)));
  k.push_back(int_key("decode.top_k", &R::decode, &DecodeConfig::top_k, E, "top-k filter (0 = off)", at_least(0)));
  k.push_back(float_key("decode.top_p", &R::decode, &DecodeConfig::top_p, E, "nucleus filter (1 = off)", in_range(0, 1, true)));
  k.push_back(int_key("decode.batch", &R::decode, &DecodeConfig::batch, E, "sequences decoded together", at_least(1)));
  k.push_back(int_key("decode.prompts", &R::decode, &DecodeConfig::prompts, E, "contract prompts judged", at_least(1)));
  k.push_back(str_key("decode.step", &R::decode, &DecodeConfig::step, E,
                      "fast (hand-written CPU decode step where the model allows) | reference (LibTorch modules)",
                      one_of({"fast", "reference"})));
  k.push_back(int_key("decode.repeats", &R::decode, &DecodeConfig::repeats, E, "timed passes after warm-up", at_least(1)));
  k.push_back(str_key("decode.timing", &R::decode, &DecodeConfig::timing, E,
                      "paired (after every run, interleaved with the other arms of the seed) | run (in the run's "
                      "process, after its quality pass)",
                      one_of({"paired", "run"})));
  k.push_back(int_key("decode.seed", &R::decode, &DecodeConfig::seed, E,
                      "sampling streams (0 = from the run's seed; another value samples anew from the same model)",
                      at_least(0)));

  k.push_back(float_key("verify.threshold", &R::verify, &VerifyConfig::threshold, E, "re-sample below this confidence", in_range(0, 1)));
  k.push_back(int_key("verify.window", &R::verify, &VerifyConfig::window, T, "tokens the verifier scores", at_least(2)));
  k.push_back(str_key("verify.drop", &R::verify, &VerifyConfig::drop, E, "tokens dropped: 1 | 2 | random",
                      one_of({"1", "2", "random"})));
  k.push_back(float_key("verify.temp_bump", &R::verify, &VerifyConfig::temp_bump, E, "temperature added on re-sampling",
                        in_range(0, 10)));
  k.push_back(int_key("verify.max_retries", &R::verify, &VerifyConfig::max_retries, E, "re-samples per position", at_least(0)));
  k.push_back(float_key("verify.params_ratio", &R::verify, &VerifyConfig::params_ratio, T, "verifier size / model size",
                        in_range(0, 1, true)));
  k.push_back(int_key("verify.train_steps", &R::verify, &VerifyConfig::train_steps, E, "verifier training steps", at_least(1)));
  k.push_back(float_key("verify.negative_temperature", &R::verify, &VerifyConfig::negative_temperature, E,
                        "temperature of the LM samples in negative windows", in_range(0, 100, true)));
  k.push_back(float_key("verify.equiv_epsilon", &R::verify, &VerifyConfig::equiv_epsilon, E,
                        "|delta judge NLL| (nats/token) under which a re-sample counts as equivalent", in_range(0, 100)));

  k.push_back(int_key("speculative.lookahead", &R::speculative, &SpeculativeConfig::lookahead, E,
                      "draft tokens proposed per target step", at_least(1)));
  k.push_back(float_key("speculative.draft_ratio", &R::speculative, &SpeculativeConfig::draft_ratio, E,
                        "draft model size / model size", in_range(0, 1, true)));

  k.push_back(int_key("control.best_of_n", &R::control, &ControlConfig::best_of_n, E,
                      "sfvl_best_of_n: samples per prompt scored by the verifier (match sfvl's checks_per_token)",
                      at_least(1)));
  k.push_back(str_key("control.best_score", &R::control, &ControlConfig::best_score, E,
                      "sfvl_best_of_n: a sample's score, mean | min of its windows' confidences",
                      one_of({"mean", "min"})));
  k.push_back(float_key("control.trigger_rate", &R::control, &ControlConfig::trigger_rate, E,
                        "sfvl_random: probability that a check fires (match sfvl's trigger_rate)", in_range(0, 1)));
  k.push_back(str_key("control.oracle_drop", &R::control, &ControlConfig::oracle_drop, E,
                      "sfvl_oracle: span (from the violation's first token) | verify (verify.drop)",
                      one_of({"span", "verify"})));
  k.push_back(int_key("contrastive.k", &R::contrastive, &ContrastiveConfig::k, E,
                      "contrastive search: candidates per step (Su et al. 2022: 8)", at_least(1)));
  k.push_back(float_key("contrastive.alpha", &R::contrastive, &ContrastiveConfig::alpha, E,
                        "contrastive search: degeneration penalty weight (Su et al. 2022: 0.6; 0 = greedy)",
                        in_range(0, 0.95)));

  k.push_back(int_key("streaming.sinks", &R::streaming, &StreamingConfig::sinks, E,
                      "streaming: first tokens always kept, the attention sinks (Xiao et al. 2024: 4; 0 = window attention)",
                      at_least(0)));
  k.push_back(int_key("streaming.window", &R::streaming, &StreamingConfig::window, E,
                      "streaming: most recent tokens kept beside the sinks", at_least(1)));
  k.push_back(str_key("streaming.positions", &R::streaming, &StreamingConfig::positions, E,
                      "streaming: a token enters at its position in the text | at its index in the cache (section 3.2's rule)",
                      one_of({"text", "cache"})));
  k.push_back(float_key("h2o.budget", &R::h2o, &H2oConfig::budget, E,
                        "h2o: tokens kept / model.context, half heavy hitters, half recent (Zhang et al. 2023: 0.2)",
                        in_range(0, 1, /*open_lo=*/true)));

  k.push_back(str_key("fused.key_weighting", &R::fused, &FusedConfig::key_weighting, T, "off | scale | bias",
                      one_of({"off", "scale", "bias"})));
  k.push_back(str_key("fused.importance", &R::fused, &FusedConfig::importance, T, "attn_mass | grad_norm | hidden_norm",
                      one_of({"attn_mass", "grad_norm", "hidden_norm"})));
  k.push_back(float_key("fused.alpha", &R::fused, &FusedConfig::alpha, T, "key weight decay rate", in_range(0, 10)));
  k.push_back(str_key("fused.value_rank", &R::fused, &FusedConfig::value_rank, T,
                      "0 = off, a rank (64), or a ratio of head width (0.5)", check_rank));
  k.push_back(float_key("fused.ortho_weight", &R::fused, &FusedConfig::ortho_weight, T, "orthogonality loss weight",
                        in_range(0, 100)));
  k.push_back(bool_key("fused.gate", &R::fused, &FusedConfig::gate, T, "logits gate on/off"));
  k.push_back(str_key("fused.orthogonal", &R::fused, &FusedConfig::orthogonal, T,
                      "penalty (ortho_weight * |PP^T - I|^2) | hard (orthonormal by construction)",
                      one_of({"penalty", "hard"})));
  k.push_back(int_key("fused.gate_top_k", &R::fused, &FusedConfig::gate_top_k, T, "candidates the logits gate scales",
                      at_least(1)));
  k.push_back(int_key("fused.gate_hidden", &R::fused, &FusedConfig::gate_hidden, T, "logits gate hidden width",
                      at_least(1)));

  k.push_back(int_key("sfcl.hidden", &R::sfcl, &SfclConfig::hidden, T, "correction module hidden width", at_least(1)));
  k.push_back(str_key("sfcl.form", &R::sfcl, &SfclConfig::form, T,
                      "centered: c = 2*sigmoid (zero module = identity) | literal: c = sigmoid",
                      one_of({"centered", "literal"})));
  k.push_back(bool_key("sfcl.at_inference", &R::sfcl, &SfclConfig::at_inference, E,
                       "run the correction module when decoding (off: c = 1, the naive removal)"));
  k.push_back(float_key("sfcl.misfire_threshold", &R::sfcl, &SfclConfig::misfire_threshold, E,
                        "mean |c - 1| above which a position misfires (0 = calibrate by sfcl.misfire_quantile)",
                        in_range(0, 2)));
  k.push_back(float_key("sfcl.misfire_quantile", &R::sfcl, &SfclConfig::misfire_quantile, E,
                        "calibrated threshold: this quantile of the training corpus's deviations", in_range(0, 1, true)));
  k.push_back(int_key("sfcl.probe_windows", &R::sfcl, &SfclConfig::probe_windows, E,
                      "windows per corpus for the misfire rates", at_least(1)));

  k.push_back(int_key("oet.buckets", &R::oet, &OetConfig::buckets, E, "context buckets per event kind", at_least(1)));
  k.push_back(int_key("oet.numeric_run", &R::oet, &OetConfig::numeric_run, E,
                      "consecutive numeric tokens that fire the numeric event", at_least(1)));
  k.push_back(int_key("oet.nesting_depth", &R::oet, &OetConfig::nesting_depth, E,
                      "the nesting event fires deeper than this many conditionals", at_least(0)));
  k.push_back(int_key("oet.table_windows", &R::oet, &OetConfig::table_windows, E,
                      "training windows the offline table averages over", at_least(1)));
  k.push_back(float_key("oet.tolerance", &R::oet, &OetConfig::tolerance, E,
                        "table entries with |mean c - 1| below this are left out", in_range(0, 1)));

  k.push_back(float_key("alibi.max_bias", &R::alibi, &AlibiConfig::max_bias, T,
                        "head h of n has slope 2^(-max_bias*h/n) (Press et al. 2022, section 3: 8)",
                        in_range(0, 64, /*open_lo=*/true)));
  k.push_back(str_key("gated_attn.granularity", &R::gated_attn, &GatedAttnConfig::granularity, T,
                      "elementwise (a gate per channel of each head, the paper's best) | headwise (one per head)",
                      one_of({"elementwise", "headwise"})));
  k.push_back(bool_key("gated_attn.bias", &R::gated_attn, &GatedAttnConfig::bias, T,
                       "a bias inside the gate's sigmoid (off: the paper's sigma(X W))"));

  // latent_kv: mode, rank and norm shape the trained model (trained); in svd
  // mode none of them enters train_id (relevant() below), so the run shares
  // the baseline's checkpoint, and the svd_* keys, choices made after
  // training, are Evaluation.
  k.push_back(str_key("latent.mode", &R::latent, &LatentConfig::mode, T,
                      "trained (MLA, DeepSeek-V2 2.1.2: its own checkpoint) | svd (Palu: the baseline's checkpoint, "
                      "its K/V projections factorised after training)",
                      one_of({"trained", "svd"})));
  k.push_back(str_key("latent.rank", &R::latent, &LatentConfig::rank, T,
                      "latent values cached per token and layer: auto (trained: 4*head width as DeepSeek-V2 3.1.2, at "
                      "most model.dim; svd: model.dim, Palu's 50%), a rank (64), or with a decimal point a share of "
                      "the baseline's K/V width 2*model.dim (0.25)",
                      check_latent_rank));
  k.push_back(bool_key("latent.norm", &R::latent, &LatentConfig::norm, T,
                       "trained: RMSNorm on the latent (DeepSeek-V2 3.1.2)"));
  k.push_back(str_key("latent.svd_factor", &R::latent, &LatentConfig::svd_factor, E,
                      "svd: separate (Palu: W_K and W_V at r/2 each) | joint ([W_K; W_V] at rank r, one latent as MLA's)",
                      one_of({"joint", "separate"})));
  k.push_back(int_key("latent.svd_group", &R::latent, &LatentConfig::svd_group, E,
                      "svd: heads per factorised group (Palu's G-LRD: 4; at least model.heads: J-LRD; 1: M-LRD)",
                      at_least(1)));
  k.push_back(bool_key("latent.svd_whiten", &R::latent, &LatentConfig::svd_whiten, E,
                       "svd: factorise W*S, S the Cholesky factor of the layer inputs' Gram (Palu's code, from "
                       "SVD-LLM); off: plain SVD of the weights"));
  k.push_back(int_key("latent.svd_calib_windows", &R::latent, &LatentConfig::svd_calib_windows, E,
                      "svd: training windows of model.context tokens whose inputs give the Gram (Palu: 256)",
                      at_least(1)));

  k.push_back(bool_key("judge.enabled", &R::judge, &JudgeConfig::enabled, E,
                       "train (once per study) and use the independent judge: judge_nll, resample_equiv_rate"));
  k.push_back(int_key("judge.layers", &R::judge, &JudgeConfig::layers, E, "judge depth", at_least(1)));
  k.push_back(int_key("judge.heads", &R::judge, &JudgeConfig::heads, E, "judge attention heads", at_least(1)));
  k.push_back(int_key("judge.dim", &R::judge, &JudgeConfig::dim, E, "judge width", at_least(8)));
  k.push_back(int_key("judge.steps", &R::judge, &JudgeConfig::steps, E, "judge training steps", at_least(1)));
  k.push_back(float_key("judge.lr", &R::judge, &JudgeConfig::lr, E, "judge peak learning rate", in_range(0, 10, true)));
  k.push_back(str_key("judge.precision", &R::judge, &JudgeConfig::precision, E, "fp32 | bf16 (autocast)",
                      one_of({"fp32", "bf16"})));

  k.push_back(bool_key("serve.enabled", &R::serve, &ServeConfig::enabled, E,
                       "serve the trained model (continuous batching, sim/serving/): set by serve-bench and simulate"));
  k.push_back(bool_key("serve.measure", &R::serve, &ServeConfig::measure, E,
                       "run the real server beside the simulator (off: the simulator alone, as `simulate` does)"));
  k.push_back(listed(str_key("serve.loads", &R::serve, &ServeConfig::loads, E,
                      "request rates as shares of the simulated capacity, comma list (light, near saturation, overload)",
                      positive_list(false, false))));
  k.push_back(listed(str_key("serve.rates", &R::serve, &ServeConfig::rates, E,
                      "request rates in requests/s instead of serve.loads, comma list (inf: all at once)",
                      positive_list(true, true))));
  k.push_back(str_key("serve.trace", &R::serve, &ServeConfig::trace, E,
                      "trace file (CSV: arrival_s, prompt, output_tokens) instead of synthetic arrivals", path_text));
  k.push_back(int_key("serve.requests", &R::serve, &ServeConfig::requests, E, "requests per load", at_least(1)));
  k.push_back(int_key("serve.repeats", &R::serve, &ServeConfig::repeats, E,
                      "times the real server serves each load's same requests, back to back (2 or more: its own "
                      "repeatability, the validation's noise floor)",
                      at_least(1)));
  k.push_back(int_key("serve.threads", &R::serve, &ServeConfig::threads, E,
                      "LibTorch threads of the real server and its profiles, its decode step's team (0: as "
                      "train.threads); on a machine shared with other work, fewer than the cores keeps the OS "
                      "from pre-empting a team member mid-step",
                      at_least(0)));
  k.push_back(float_key("serve.burstiness", &R::serve, &ServeConfig::burstiness, E,
                        "Gamma shape of the arrival gaps (1: Poisson)", in_range(0, 1e6, true)));
  k.push_back(int_key("serve.output_len", &R::serve, &ServeConfig::output_len, E,
                      "tokens per request (0: decode.max_new_tokens)", at_least(0)));
  k.push_back(int_key("serve.block_size", &R::serve, &ServeConfig::block_size, E, "KV block (tokens)", at_least(1)));
  k.push_back(int_key("serve.max_num_seqs", &R::serve, &ServeConfig::max_num_seqs, E, "requests running at once",
                      at_least(1)));
  k.push_back(int_key("serve.max_num_batched_tokens", &R::serve, &ServeConfig::max_num_batched_tokens, E,
                      "tokens fed per step", at_least(1)));
  k.push_back(float_key("serve.kv_budget_mb", &R::serve, &ServeConfig::kv_budget_mb, E,
                        "KV cache budget in MB (0: max_num_seqs full contexts of the baseline's cache)", in_range(0, 1e9)));
  k.push_back(float_key("serve.slo_ttft_ms", &R::serve, &ServeConfig::slo_ttft_ms, E, "TTFT SLO (0: none)", in_range(0, 1e9)));
  k.push_back(float_key("serve.slo_tpot_ms", &R::serve, &ServeConfig::slo_tpot_ms, E, "TPOT SLO (0: none)", in_range(0, 1e9)));
  k.push_back(float_key("serve.slo_e2el_ms", &R::serve, &ServeConfig::slo_e2el_ms, E, "E2E latency SLO (0: none)",
                        in_range(0, 1e9)));
  k.push_back(float_key("serve.slo_attainment", &R::serve, &ServeConfig::slo_attainment, E,
                        "share of requests that must meet every SLO", in_range(0, 1, true)));
  k.push_back(listed(str_key("serve.hardware", &R::serve, &ServeConfig::hardware, E,
                      "accelerators to project to, comma list of ablations/hardware.ini sections (empty: none)")));
  k.push_back(listed(str_key("serve.shapes", &R::serve, &ServeConfig::shapes, E,
                      "model shapes to project, comma list of ablations/hardware.ini sections")));
  k.push_back(float_key("serve.projected_slo_ttft_ms", &R::serve, &ServeConfig::projected_slo_ttft_ms, E,
                        "TTFT SLO of projected serving (0: none)", in_range(0, 1e9)));
  k.push_back(float_key("serve.projected_slo_tpot_ms", &R::serve, &ServeConfig::projected_slo_tpot_ms, E,
                        "TPOT SLO of projected serving (0: none)", in_range(0, 1e9)));

  // Operating points (sim/operating_point.h): [calibrate.VARIANT] per
  // calibratable variant. Evaluation keys by role; a target whose knob shapes
  // training (sfcl.hidden) enters the train_id in the knob's place
  // (calibrate_key_counts), so setting it trains a new model.
  for (const std::string& v : calibratable_variants()) {
    const std::string p = "calibrate." + v + ".";
    auto target = [v](R& c) -> CalibrateTarget& { return c.calibrate.targets[v]; };
    auto get = [v](const R& c) -> const CalibrateTarget& { return c.calibrate.targets.at(v); };
    k.push_back({p + "target", "float", "the value " + v + "'s metric is solved for (0: none, the knob as configured)", E,
                 [=](R& c, const std::string& t) {
                   double x = parse_float(t);
                   in_range(0, 1e12)(x);
                   target(c).target = x;
                 },
                 [=](const R& c) { return format_float(get(c).target); }});
    k.push_back({p + "metric", "string", "what the target is a value of (sim/operating_point.cpp lists them)", E,
                 [=](R& c, const std::string& t) { target(c).metric = t; },
                 [=](const R& c) { return get(c).metric; }});
    k.push_back({p + "knob", "string", "the config key solved for the target", E,
                 [=](R& c, const std::string& t) { target(c).knob = t; }, [=](const R& c) { return get(c).knob; }});
    k.push_back(listed({p + "range", "string", "lo, hi: where the knob is searched", E,
                        [=](R& c, const std::string& t) {
                          auto r = number_list(t);
                          if (r.size() != 2 || !(r[0] < r[1]) || !std::isfinite(r[0]) || !std::isfinite(r[1]))
                            throw std::invalid_argument("expected 'lo, hi' with lo < hi, got '" + t + "'");
                          target(c).range = t;
                        },
                        [=](const R& c) { return get(c).range; }}));
  }
  k.push_back(int_key("calibrate.prompts", &R::calibrate, &CalibrateConfig::prompts, E,
                      "calibration prompts: openings of validation documents that no test prompt was cut from",
                      at_least(1)));
  k.push_back(float_key("calibrate.tolerance", &R::calibrate, &CalibrateConfig::tolerance, E,
                        "relative: the search ends at a probe within tolerance * target", in_range(0, 1, true)));
  // Not part of any identity: the rounds change how well a timed knob is
  // solved, not what was asked for (the target is in the identity).
  k.push_back(int_key("calibrate.timing_rounds", &R::calibrate, &CalibrateConfig::timing_rounds, E,
                      "measurements per knob of a timed grid solved before training (sfcl's time share): its "
                      "interval comes from them",
                      at_least(1)));

  k.push_back(str_key("output.dir", &R::output, &OutputConfig::dir, O, "where shards, checkpoints and results go",
                      [](const std::string& v) {
                        if (v.empty()) throw std::invalid_argument("must not be empty");
                        path_text(v);
                      }));
  k.push_back(int_key("output.verbosity", &R::output, &OutputConfig::verbosity, O, "0 quiet, 1 progress, 2 debug",
                      at_least(0)));
  return k;
}

}  // namespace

CalibrateConfig::CalibrateConfig() {
  for (const auto& t : operating_targets()) {
    if (targets.count(t.variant)) continue;  // the variant's first row gives its defaults
    CalibrateTarget& c = targets[t.variant];
    c.metric = t.metric;
    c.knob = t.knob;
    c.range = format_float(t.lo) + ", " + format_float(t.hi);
  }
}

std::string Origin::str(const std::string& key) const {
  if (file.empty()) return key;
  if (line > 0) return file + ":" + std::to_string(line) + ": " + key;
  return file + ": " + key;
}

namespace {

// A key a variant declares (VariantKey): parsed by its type, kept as
// canonical text in RunConfig::options.
KeySpec variant_key(const VariantKey& k) {
  const std::string name = k.name, type = k.type, value = k.value;
  auto canonical = [type](const std::string& t) -> std::string {
    if (type == "int") return std::to_string(parse_int(t));
    if (type == "float") return format_float(parse_float(t));
    if (type == "bool") return parse_bool(t) ? "true" : "false";
    if (type == "string") return t;
    throw std::invalid_argument("type " + type + " (int, float, bool or string)");
  };
  canonical(value);  // a default its own type refuses is the table's mistake: said at once
  return {name, type, k.help, k.trains ? KeyRole::Training : KeyRole::Evaluation,
          [=](RunConfig& c, const std::string& t) { c.options[name] = canonical(t); },
          [=](const RunConfig& c) {
            auto it = c.options.find(name);
            return it != c.options.end() ? it->second : canonical(value);
          }};
}

std::vector<KeySpec>& registry() {
  static std::vector<KeySpec> keys = [] {
    auto k = build_registry();
    for (const auto& v : variants())
      for (const auto& key : v.keys) k.push_back(variant_key(key));
    return k;
  }();
  return keys;
}

}  // namespace

const std::vector<KeySpec>& config_keys() { return registry(); }

const VariantInfo& register_variant(VariantInfo info) {
  std::vector<KeySpec> specs;
  for (const auto& key : info.keys) specs.push_back(variant_key(key));  // checked before the row is added
  const VariantInfo& row = add_variant_info(std::move(info));
  for (auto& spec : specs) registry().push_back(std::move(spec));
  return row;
}

std::string option_text(const RunConfig& cfg, const std::string& key) {
  for (const auto& v : variants())
    for (const auto& k : v.keys)
      if (k.name == key) return find_key(key)->get(cfg);
  throw std::invalid_argument("'" + key + "' is no key a variant declares (sim/variants.def: VARIANT_KEY)");
}

double option_number(const RunConfig& cfg, const std::string& key) { return parse_float(option_text(cfg, key)); }
bool option_flag(const RunConfig& cfg, const std::string& key) { return parse_bool(option_text(cfg, key)); }

const KeySpec* find_key(const std::string& name) {
  for (const auto& k : config_keys())
    if (k.name == name) return &k;
  return nullptr;
}

void set_key(RunConfig& cfg, const std::string& name, const std::string& value, const Origin& where) {
  const KeySpec* spec = find_key(name);
  if (!spec) throw ConfigError(where.str(name) + ": unknown key");
  try {
    spec->set(cfg, value);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(where.str(name) + ": " + e.what());
  }
}

void validate(const RunConfig& c, const std::map<std::string, Origin>& origins) {
  auto fail = [&](const std::string& key, const std::string& why) {
    auto it = origins.find(key);
    throw ConfigError((it == origins.end() ? Origin{} : it->second).str(key) + ": " + why);
  };
  if (c.model.dim % c.model.heads != 0)
    fail("model.heads", "model.heads (" + std::to_string(c.model.heads) + ") must divide model.dim (" +
                            std::to_string(c.model.dim) + ")");
  if (c.train.warmup > c.train.steps)
    fail("train.warmup", "must not exceed train.steps (" + std::to_string(c.train.steps) + ")");
  if (c.decode.max_new_tokens >= c.model.context)
    fail("decode.max_new_tokens", "must be below model.context (" + std::to_string(c.model.context) +
                                      ") so that a prompt fits beside the continuation");
  if (c.verify.window > c.model.context) fail("verify.window", "must not exceed model.context");
  if (c.data.tokenizer == "sentencepiece" && c.data.vocab_size > 32000)
    fail("data.vocab_size", "must be at most 32000");
  if (c.judge.enabled && c.judge.dim % c.judge.heads != 0)
    fail("judge.heads", "judge.heads (" + std::to_string(c.judge.heads) + ") must divide judge.dim (" +
                            std::to_string(c.judge.dim) + ")");
  if (c.variant == "h2o" && std::llround(c.h2o.budget * c.model.context) < 2)
    fail("h2o.budget", "keeps " + std::to_string(std::llround(c.h2o.budget * c.model.context)) + " of model.context's " +
                           std::to_string(c.model.context) + " tokens: at least 2 (a heavy hitter and a recent token)");
  if (c.variant == "latent_kv") {
    const int64_t r = latent_rank(c);
    if (c.latent.mode == "trained" && r > c.model.dim)
      // MLA's c is a linear image of the C-wide input (normalised per token):
      // a wider latent is a larger cache that holds nothing more.
      fail("latent.rank", "resolves to " + std::to_string(r) + ", above model.dim (" + std::to_string(c.model.dim) +
                              "): the latent of a " + std::to_string(c.model.dim) + "-wide input has no more rank");
    if (c.latent.mode == "svd") {
      const std::string problem = latent_svd_options(c).problem(c.model.dim, c.model.heads);
      const auto colon = problem.find(": ");
      if (!problem.empty()) fail(problem.substr(0, colon), problem.substr(colon + 2));
    }
  }
  for (const auto& [variant, t] : c.calibrate.targets) {
    if (t.target == 0) continue;
    const std::string problem = operating_target_problem(variant, t.metric, t.knob);
    if (!problem.empty()) {
      const bool knob = problem.rfind("unknown knob", 0) == 0;
      fail("calibrate." + variant + (knob ? ".knob" : ".metric"), problem);
    }
  }
  double rank = std::stod(c.fused.value_rank);
  if (rank > static_cast<double>(c.model.head_dim()))
    fail("fused.value_rank", "must not exceed the head width (" + std::to_string(c.model.head_dim()) + ")");
}

std::string to_ini(const RunConfig& cfg) {
  std::ostringstream out;
  std::string section;
  for (const auto& k : config_keys()) {
    auto dot = k.name.rfind('.');  // [calibrate.sfvl] target = ...
    std::string sec = dot == std::string::npos ? "" : k.name.substr(0, dot);
    std::string key = dot == std::string::npos ? k.name : k.name.substr(dot + 1);
    if (sec != section) {
      out << "\n[" << sec << "]\n";
      section = sec;
    }
    out << key << " = " << k.get(cfg) << "\n";
  }
  return out.str();
}

std::string hash_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 12);
}

std::string path_text_problem(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto ch = static_cast<unsigned char>(text[i]);
    if (ch == 0)
      return "holds a NUL byte (byte " + std::to_string(i + 1) + " of " + std::to_string(text.size()) +
             "), which no file name can hold: the path would end there and name another file";
    if (ch < 0x20 || ch == 0x7f) {
      char code[8];
      std::snprintf(code, sizeof code, "0x%02x", ch);
      return "holds the control character " + std::string(code) + " (byte " + std::to_string(i + 1) + " of " +
             std::to_string(text.size()) + "), which zerolayer does not put in a file name";
    }
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('/', start), text.size());
    if (end - start > 255)
      return "has a component of " + std::to_string(end - start) + " bytes ('" + text.substr(start, 24) +
             "...'), longer than a file name may be (255)";
    start = end + 1;
  }
  return "";
}

uint64_t sampling_seed(const RunConfig& cfg, uint64_t k) {
  return static_cast<uint64_t>(cfg.seed) * k + static_cast<uint64_t>(cfg.decode.seed) * 0x9E3779B97F4A7C15ull;
}

int64_t latent_rank(const RunConfig& cfg) {
  const std::string& v = cfg.latent.rank;
  const int64_t C = cfg.model.dim;
  if (v == "auto") return cfg.latent.mode == "svd" ? C : std::min<int64_t>(4 * cfg.model.head_dim(), C);
  if (!is_share(v)) return parse_int(v);
  return std::max<int64_t>(1, std::llround(parse_float(v) * 2.0 * static_cast<double>(C)));
}

LatentSvdOptions latent_svd_options(const RunConfig& cfg) {
  LatentSvdOptions o;
  o.rank = latent_rank(cfg);
  o.separate = cfg.latent.svd_factor == "separate";
  o.group_heads = cfg.latent.svd_group;
  o.whiten = cfg.latent.svd_whiten;
  return o;
}

std::string trained_family(const RunConfig& cfg) {
  if (cfg.variant == "latent_kv" && cfg.latent.mode == "svd") return "baseline";
  return trained_family(cfg.variant);
}

RunConfig as_baseline(const RunConfig& cfg) {
  RunConfig b = cfg;
  b.variant = "baseline";
  return b;
}

std::string trained_family(const std::string& variant) {
  const VariantInfo* v = find_variant(variant);
  return v ? v->family : variant;
}

namespace {

// `mode`: latent.mode of a latent_kv run ("" when unknown: every latent.*
// key counts, as for the run's identity under either mode).
bool relevant(const std::string& key, const std::string& variant, bool training_only, const std::string& mode = "",
              bool serving = false) {
  const std::string family = trained_family(variant);
  // Serving's keys say how a run is served; a run that is not served is the
  // same run whatever they say.
  if (key.rfind("serve.", 0) == 0) return serving && !training_only;
  if (key.rfind("latent.", 0) == 0) {
    // latent_kv: svd decodes the baseline's checkpoint, so no latent key
    // enters its train_id; norm only shapes a trained model, the svd_* keys
    // only the factorisation of an svd one.
    if (variant != "latent_kv") return false;
    if (mode == "svd" && (training_only || key == "latent.norm")) return false;
    if (mode == "trained" && key.rfind("latent.svd_", 0) == 0) return false;
    return true;
  }
  if (key.rfind("calibrate.", 0) == 0) {
    // A variant's own target, the target of the family its checkpoint trains
    // as where that target's knob shapes training (oet decodes sfcl's solved
    // width), and the shared settings where either is; which of them enter
    // an identity depends on the targets set (calibrate_key_counts).
    auto reads = [&](const std::string& v, bool training) {
      for (const auto& t : operating_targets())
        if (t.variant == v && (!training || t.before_training))
          return key.rfind("calibrate." + v + ".", 0) == 0 || key == "calibrate.prompts" ||
                 key == "calibrate.tolerance" || key == "calibrate.timing_rounds";
      return false;
    };
    return (!training_only && reads(variant, false)) || reads(family, true);
  }
  // The variant table (sim/variants.def): a key that shapes the family's
  // trained model is in both identities; one that only the variant's decoding
  // reads is in its run id alone; a shared key the variant does not read is
  // in neither. A key of a section the table does not know is a key someone
  // added without saying whose it is: refused rather than silently joining
  // every variant's identity.
  const auto dot = key.find('.');
  const std::string section = dot == std::string::npos ? "" : key.substr(0, dot);
  if (!section.empty() && !known_section(section))
    throw std::logic_error("config key '" + key + "': section '" + section +
                           "' is neither shared by every run nor named by a variant in sim/variants.def");
  const VariantInfo* own = find_variant(variant);
  const VariantInfo* trained = find_variant(family);
  if (trained && names_key(trained->trains, key)) return true;
  if (own && names_key(own->decodes, key)) return !training_only;
  if (section.empty() || shared_section(section)) return !(own && names_key(own->ignores, key));
  return false;  // another variant's key
}

}  // namespace

bool parse_bool(const std::string& s) {
  if (s == "true" || s == "on" || s == "yes" || s == "1") return true;
  if (s == "false" || s == "off" || s == "no" || s == "0") return false;
  throw std::invalid_argument("expected true or false, got '" + s + "'");
}

bool relevant_key(const std::string& key, const std::string& variant) { return relevant(key, variant, false); }
bool relevant_key(const std::string& key, const RunConfig& cfg) {
  return relevant(key, cfg.variant, false, cfg.latent.mode, cfg.serve.enabled);
}

namespace {
std::string canonical(const RunConfig& cfg, bool training_only) {
  std::string text;
  const auto solved = training_operating_point(cfg);
  for (const auto& k : config_keys()) {
    if (k.role == KeyRole::Output || !relevant(k.name, cfg.variant, training_only, cfg.latent.mode, cfg.serve.enabled))
      continue;
    // Without a target the [calibrate] keys change nothing: a run keeps the
    // identity it had before operating points existed. A target whose knob
    // shapes training is part of the train_id in the knob's place.
    if (k.name.rfind("calibrate.", 0) == 0) {
      if (!calibrate_key_counts(k.name, cfg, training_only)) continue;
    } else if (training_only && k.role != KeyRole::Training) {
      continue;
    }
    if (solved && k.name == solved->knob) continue;  // an outcome of the target above, not a setting
    // From scratch (0) a run keeps the identity it had before branching
    // existed; the baseline's own model is the same whatever the share.
    if (k.name == "train.branch" && (cfg.train.branch == 0 || trained_family(cfg) == "baseline")) continue;
    std::string value = (training_only && k.name == "variant") ? trained_family(cfg) : k.get(cfg);
    text += k.name + "=" + value + "\n";
  }
  return text;
}
}  // namespace

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t first = item.find_first_not_of(" \t\r");
    out.push_back(first == std::string::npos ? "" : item.substr(first, item.find_last_not_of(" \t\r") - first + 1));
  }
  return out;
}

std::vector<double> number_list(const std::string& text) {
  std::vector<double> out;
  for (const auto& item : split_list(text))
    out.push_back(item == "inf" ? std::numeric_limits<double>::infinity() : parse_float(item));
  return out;
}

std::vector<std::string> name_list(const std::string& text) {
  std::vector<std::string> out;
  for (auto& item : split_list(text))
    if (!item.empty()) out.push_back(std::move(item));
  return out;
}

std::string run_id(const RunConfig& cfg) { return hash_hex(canonical(cfg, false)); }
std::string train_id(const RunConfig& cfg) { return hash_hex(canonical(cfg, true)); }

}  // namespace zl
