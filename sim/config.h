// The typed run configuration (docs/design.md#runs-identity-and-checkpoints) and its one key registry. Every key
// has a dotted name (`train.steps`), a type, a default declared below, a
// check, and whether it affects training. The registry drives the INI parser,
// the command-line options, the canonical text a run is hashed from, and the
// error messages (which name the key, the file and the line).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/latent_options.h"
#include "models/model_config.h"

namespace zl {

struct DataConfig {
  std::string corpus = "contracts";     // contracts | brown | licenses
  std::string tokenizer = "sentencepiece";  // sentencepiece | byte
  int64_t vocab_size = 1024;            // sentencepiece vocabulary
  double val_fraction = 0.1;            // share of documents held out
  int64_t documents = 2000;             // contracts generated (or a cap for the others; 0 = all)
  int64_t nesting = 3;                  // contracts: deepest conditional nesting
  int64_t facts = 4;                    // contracts: facts stated per contract
  int64_t reference_distance = 3;       // contracts: clauses between a fact and its reference
  std::string eval_corpus = "";         // out-of-distribution corpus for evaluation ("" = none)
};

struct TrainConfig {
  int64_t steps = 300;                  // optimizer steps
  int64_t batch = 32;                   // sequences per step (each model.context tokens)
  double lr = 3e-3;                     // peak learning rate
  double min_lr_ratio = 0.1;            // cosine decays to lr * min_lr_ratio
  int64_t warmup = 30;                  // linear warm-up steps
  double weight_decay = 0.1;            // AdamW, on matrices only
  double beta1 = 0.9, beta2 = 0.95;     // AdamW
  double grad_clip = 1.0;               // global norm; 0 disables
  int64_t threads = 0;                  // LibTorch intra-op threads; 0 = all cores
  std::string device = "cpu";           // cpu | cuda
  std::string precision = "fp32";       // fp32 | bf16 (autocast)
  int64_t eval_every = 100;             // validation period in steps (and at the end)
  int64_t eval_batches = 8;             // batches per validation
  int64_t checkpoint_every = 100;       // checkpoint period in steps (and at the end)
  // Uptraining (sim/branch.h): a model of another family than the baseline's
  // (sfcl, fused) trains its last `branch` share of train.steps from the
  // baseline's checkpoint at step steps·(1 − branch), with the baseline's
  // optimizer moments, schedule and batches; 0 trains it from scratch.
  double branch = 0;
  // The memory check (sim/memory_estimate.h): before anything is allocated,
  // a run whose estimated peak exceeds what this machine has available is
  // refused, naming the keys that drive the figure. Output keys, as threads:
  // they change no result, only whether a run is let start.
  bool memory_check = true;             // off: run anyway (the estimate is within about 1.5x; you may know better)
  double memory_margin = 0.1;           // share of the available memory held back for the system and other processes
  // A checkpoint written by other training code (sim/training_code.h): refused,
  // or reused as it is. An output key: it decides whether a run may start.
  std::string stale_checkpoints = "refuse";
};

struct DecodeConfig {
  int64_t max_new_tokens = 48;
  double temperature = 0.8;
  int64_t top_k = 0;                    // 0 = off
  double top_p = 1.0;                   // 1 = off
  int64_t batch = 8;                    // sequences decoded together
  int64_t prompts = 32;                 // contract prompts judged for violation_rate
  int64_t repeats = 3;                  // timed passes (after one warm-up pass)
  // Where the timed passes run. paired: after every run of the study, the
  // arms of one seed in one process, pass by pass in rotating order
  // (sim/study/paired_timing.h), so that the arms a claim compares meet the same
  // machine load; run: in each run's own process, after its quality pass.
  std::string timing = "paired";
  int64_t seed = 0;                     // sampling streams: 0 = the run's seed alone; another value draws other
                                        // samples from the same model (an A/A arm)
  std::string step = "fast";            // fast (hand-written CPU step where possible) | reference (LibTorch modules)
};

// sfvl (seed 002 §2.1): read by the verification layer.
struct VerifyConfig {
  double threshold = 0.82;              // re-sample below this confidence
  int64_t window = 5;                   // tokens the verifier sees
  std::string drop = "1";               // 1 | 2 | random (1 or 2)
  double temp_bump = 0.3;               // added to temperature on re-sampling
  int64_t max_retries = 3;
  double params_ratio = 0.05;           // verifier size / main model size
  int64_t train_steps = 300;            // verifier optimizer steps (batch 256 windows)
  double negative_temperature = 1.5;    // LM samples that corrupt negative windows
  double equiv_epsilon = 0.5;           // |Δ judge NLL| (nats/token) below which a re-sample is equivalent
};

// Exact speculative sampling (Leviathan et al. 2023; Chen et al. 2023), the
// principled reference beside sfvl: a draft proposes, the model accepts.
struct SpeculativeConfig {
  int64_t lookahead = 4;                // gamma: draft tokens proposed per target step
  double draft_ratio = 0.05;            // draft size / model size (about the verifier's)
};

// The plain controls of sfvl (issue 13 §7), each decoding the baseline's
// checkpoint and prompts (sim/stages/sfvl_stage.h, sim/stages/best_of_n_stage.h). The
// fourth control, a temperature / top_p grid, is the baseline run with a
// [grid] over decode.temperature and decode.top_p and needs no key.
struct ControlConfig {
  // sfvl_best_of_n: samples per prompt, each scored by sfvl's verifier (one
  // check per generated token), the best kept. Checks per kept token are
  // about n: to match sfvl's cost, set n to sfvl's measured checks_per_token
  // (rounded; a grid n = 1, 2, 4 brackets it).
  int64_t best_of_n = 2;
  std::string best_score = "mean";      // a sample's score: mean | min of its windows' confidences
  // sfvl_random: the probability that a check fires, at any position; set it
  // to sfvl's measured trigger_rate to ask whether *where* the verifier fires
  // matters. Re-samples follow verify.drop, temp_bump and max_retries.
  double trigger_rate = 0.1;
  // sfvl_oracle: what a fire drops. span: from the first token of the
  // violation the checker found in the window to the newest token (the
  // checker sees a value once the text after it is written, so the
  // offending tokens are often 2-4 back); verify: verify.drop as sfvl does.
  std::string oracle_drop = "span";
};

// contrastive search (Su et al., NeurIPS 2022, §3.2; sim/stages/contrastive_stage.h):
// a deterministic decode on the baseline's checkpoint that picks, among the
// top k tokens, the one maximising (1 − α)·p(v) − α·max_j cos(h_v, h_j).
struct ContrastiveConfig {
  int64_t k = 8;                        // candidates per step (the paper's document-generation setting)
  double alpha = 0.6;                   // degeneration penalty weight (the paper's setting; 0 = greedy)
};

// streaming: StreamingLLM (Xiao et al., ICLR 2024, §3.2; models/eviction.h),
// decoding the baseline's checkpoint with a cache of the first `sinks`
// tokens and a rolling window of the most recent `window`.
struct StreamingConfig {
  int64_t sinks = 4;                    // attention sinks kept (the paper: 4 initial tokens)
  int64_t window = 28;                  // recent tokens kept: 4 + 28 = a quarter of the default 128-token context,
                                        // as the paper's 4 + 1020 cache is of Llama-2's 4096 (Table 1)
  std::string positions = "text";       // text (each token at its position in the text) | cache (at its index in the cache)
};

// h2o: Heavy-Hitter Oracle (Zhang et al., NeurIPS 2023, §4, Algorithm 1;
// models/eviction.h), decoding the baseline's checkpoint: the recent tokens
// and the heavy hitters by accumulated attention, one evicted per step.
struct H2oConfig {
  double budget = 0.2;                  // tokens kept / model.context (the paper: 20%), half heavy hitters, half recent
};

// fused (seed 002 §2.1): the claimed replacement.
struct FusedConfig {
  std::string key_weighting = "off";    // off | scale | bias
  std::string importance = "attn_mass"; // attn_mass | grad_norm | hidden_norm
  double alpha = 0.05;
  std::string value_rank = "0";         // 0 = off; an integer rank (64) or a ratio of head width (0.5)
  double ortho_weight = 0.01;
  bool gate = false;
  std::string orthogonal = "penalty";   // penalty (ortho_weight * ‖PPᵀ − I‖²_F) | hard (P from a QR factorisation)
  int64_t gate_top_k = 5;               // candidates (by logit) the gate scales
  int64_t gate_hidden = 32;             // gate hidden width
};

// sfcl (seed 000 §2.1): the in-layer correction loop.
struct SfclConfig {
  int64_t hidden = 16;                  // correction module hidden width
  std::string form = "centered";        // centered: c = 2·sigmoid (zero module = identity) | literal: c = sigmoid
  bool at_inference = true;             // false: the module is skipped (c = 1) when decoding (S002-naive-removal)
  double misfire_threshold = 0;         // mean |c − 1| above which a position "misfires"; 0 = calibrate (below)
  double misfire_quantile = 0.95;       // calibrated threshold: this quantile of the training corpus's deviations
  int64_t probe_windows = 16;           // windows of model.context tokens per corpus for the misfire rates
};

// oet (seed 000 §2.2): the Offline State Modeller's table and the Online
// Event Trigger. Evaluation keys: oet reuses the sfcl checkpoint.
struct OetConfig {
  int64_t buckets = 4;                  // context buckets per event kind (by position in the context)
  int64_t numeric_run = 3;              // consecutive numeric tokens that fire the numeric event
  int64_t nesting_depth = 3;            // the nesting event fires when conditionals nest deeper than this
  int64_t table_windows = 64;           // training windows (model.context tokens) the table averages over
  double tolerance = 1e-3;              // table entries with |mean c − 1| below this are left out (c = 1)
};

// alibi (Press et al., ICLR 2022; models/alibi.h): linear biases in place of
// position embeddings, with the paper's fixed head slopes.
struct AlibiConfig {
  double max_bias = 8;                  // head h of n gets m_h = 2^(−max_bias·h/n) (§3: 8; 8 heads: 1/2 .. 1/256)
};

// gated_attn (Qiu et al., 2025, §2.2; models/attention.h): a sigmoid gate on
// the attention output, after SDPA and before the output projection, from
// the block's normalised input, trained with the model.
struct GatedAttnConfig {
  std::string granularity = "elementwise";  // elementwise (C gates per token, the paper's best) | headwise (H)
  bool bias = false;                    // add a bias inside the sigmoid (the paper's σ(X W_θ) has none)
};

// latent_kv (issue 13 §3; models/latent_kv.h): keys and values compressed
// to one latent of `rank` values per token and layer, the only thing the KV
// cache holds, up-projected per head.
struct LatentConfig {
  // trained: MLA trained from scratch (DeepSeek-V2 §2.1.2), its own
  // checkpoint; svd: the baseline's checkpoint, its K/V projections
  // factorised after training (Palu), sharing the baseline's checkpoint.
  std::string mode = "trained";
  // auto: each paper's own. trained: d_c = 4·d_h (DeepSeek-V2 §3.1.2: 512
  // for d_h = 128), at most model.dim; svd: model.dim, half the baseline's
  // K/V cache (Palu's main 50% setting). Or an integer rank ("64"), or with a
  // decimal point a share of the baseline's per-layer K/V width 2·model.dim
  // ("0.25").
  std::string rank = "auto";
  bool norm = true;                     // trained: RMSNorm on the latent (DeepSeek-V2 §3.1.2)
  std::string svd_factor = "separate";  // svd: separate (Palu: W_K and W_V, r/2 each) | joint ([W_K; W_V] at r, MLA's layout)
  int64_t svd_group = 4;                // svd: heads per factorised group (Palu's G-LRD, group size 4)
  bool svd_whiten = true;               // svd: SVD of W·S, S from the inputs' Gram (Palu's code, from SVD-LLM)
  int64_t svd_calib_windows = 256;      // svd: training windows (model.context tokens) for the Gram (Palu: 256)
};

// The independent judge (docs/design.md#metrics-and-cost's reference model, issue 17 §7): a
// language model at least the study model's size trained longer on the same corpus and tokenizer, once per
// study (keyed like a checkpoint), that scores judge_nll for every run and
// decides whether an sfvl re-sample is equivalent. Off: no judge_nll, and
// the re-sampling equivalence is only self-judged (resample_equiv_rate_self).
struct JudgeConfig {
  bool enabled = false;
  int64_t layers = 6;                   // at least the study model's parameters (checked)
  int64_t heads = 8;
  int64_t dim = 256;
  int64_t steps = 1200;                 // optimizer steps at train.batch sequences
  double lr = 2e-3;                     // peak learning rate (warm-up a tenth of the steps, cosine)
  std::string precision = "bf16";       // fp32 | bf16 (about 3x faster on AVX512-BF16 CPUs)
};

// Serving (issue 14; sim/serving/): a continuous-batching server over the
// trained model, measured here and simulated on a cost model calibrated on
// the real step, then projected to named accelerators by roofline. Off by
// default; `zerolayer serve-bench` and `simulate` turn it on. Its keys are
// part of a run's identity only when it is on.
struct ServeConfig {
  bool enabled = false;
  bool measure = true;                  // run the real server (serve-bench); off: the simulator alone (simulate)
  std::string loads = "0.3,0.8,1.5";    // request rates as shares of the simulated capacity (light, near saturation, overload)
  std::string rates;                    // request rates in requests/s instead of loads (comma list, "inf" allowed)
  std::string trace;                    // a trace file (arrival_s, prompt, output_tokens) instead of synthetic arrivals
  int64_t requests = 200;               // requests per load
  int64_t repeats = 1;                  // times the real server serves each load's requests, back to back
  int64_t threads = 0;                  // LibTorch threads of the real server, its team (0: train.threads')
  double burstiness = 1;                // Gamma shape of the arrival gaps (1: Poisson)
  int64_t output_len = 0;               // tokens per request (0: decode.max_new_tokens)
  int64_t block_size = 16;              // PagedAttention block, tokens
  int64_t max_num_seqs = 16;            // requests running at once
  int64_t max_num_batched_tokens = 256; // tokens per step
  double kv_budget_mb = 0;              // KV cache budget (0: max_num_seqs full contexts of the baseline's cache)
  double slo_ttft_ms = 0;               // SLOs for goodput and the highest rate that meets them (0: none on it)
  double slo_tpot_ms = 0;
  double slo_e2el_ms = 0;
  double slo_attainment = 0.9;          // share of requests that must meet every SLO
  std::string hardware = "H100-SXM,H200-SXM,A100-80GB-SXM,L4";  // projected accelerators (ablations/hardware.ini; empty: none)
  std::string shapes = "llama2-7b,llama2-70b";                  // projected model shapes
  double projected_slo_ttft_ms = 1000;  // the SLOs of projected serving (a named model's latencies, not this one's)
  double projected_slo_tpot_ms = 100;
};

// Operating points (docs/design.md#operating-points; sim/operating_point.h): a behaviour an article
// states, solved for per run by a knob. One target per calibratable variant,
// set in a [calibrate.VARIANT] section.
struct CalibrateTarget {
  double target = 0;                    // 0 = none: the knob as configured
  std::string metric, knob;             // defaults: the variant's first row of operating_targets()
  std::string range;                    // "lo, hi" of the knob (default: that row's)
};
struct CalibrateConfig {
  std::map<std::string, CalibrateTarget> targets;  // by variant; every calibratable variant has an entry
  int64_t prompts = 64;                 // calibration prompts (openings of validation documents no test prompt uses)
  double tolerance = 0.1;               // relative: a probe within tolerance * target ends the search
  int64_t timing_rounds = 3;            // a timed grid's measurements per knob (sim/operating_point.h solve_on_grid)
  CalibrateConfig();
};

struct OutputConfig {
  std::string dir = "results";          // shards, checkpoints and results.h5 go here
  int64_t verbosity = 1;                // 0 quiet, 1 progress, 2 debug
};

struct RunConfig {
  std::string variant = "baseline";     // baseline | sfvl | sfcl | oet | fused | speculative | alibi | gated_attn | streaming | h2o | latent_kv | ...
  int64_t seed = 1;                     // data order, init and sampling
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  DecodeConfig decode;
  VerifyConfig verify;
  SpeculativeConfig speculative;
  ControlConfig control;
  ContrastiveConfig contrastive;
  StreamingConfig streaming;
  H2oConfig h2o;
  FusedConfig fused;
  SfclConfig sfcl;
  OetConfig oet;
  AlibiConfig alibi;
  GatedAttnConfig gated_attn;
  LatentConfig latent;
  JudgeConfig judge;
  ServeConfig serve;
  CalibrateConfig calibrate;
  OutputConfig output;
  // The keys variants declare in the table (sim/variants.def: VARIANT_KEY),
  // by dotted name, as canonical text; a key not set here has its default.
  std::map<std::string, std::string> options;
};

// Where a key's value came from, for error messages.
struct Origin {
  std::string file;   // "" = default, "command line" for overrides
  int line = 0;
  std::string str(const std::string& key) const;  // "ablations/quick.ini:12: train.steps"
};

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class KeyRole { Training, Evaluation, Output };

struct KeySpec {
  std::string name;    // dotted: "train.steps"
  std::string type;    // int | float | string | bool
  std::string help;
  KeyRole role;
  // Parses `text` into the field; throws std::invalid_argument with the reason.
  std::function<void(RunConfig&, const std::string& text)> set;
  std::function<std::string(const RunConfig&)> get;  // canonical text
  // The value is itself a comma list (serve.loads): a command-line override
  // sets it whole instead of sweeping it.
  bool list = false;
};

const std::vector<KeySpec>& config_keys();
const KeySpec* find_key(const std::string& name);

// A variant added at runtime (sim/variants.h: add_variant_info), its keys
// joining config_keys(); returns its row. Before any config is read.
struct VariantInfo;
const VariantInfo& register_variant(VariantInfo info);

// The value of a key a variant declares (VariantInfo::keys), or its default;
// std::invalid_argument for a key no variant declares.
std::string option_text(const RunConfig& cfg, const std::string& key);
double option_number(const RunConfig& cfg, const std::string& key);
bool option_flag(const RunConfig& cfg, const std::string& key);

// Sets one key, or throws ConfigError naming the key and its origin.
void set_key(RunConfig& cfg, const std::string& name, const std::string& value, const Origin& where);

// Cross-key checks (heads divide dim, ...); `origins` locates each key set.
void validate(const RunConfig& cfg, const std::map<std::string, Origin>& origins);

// The resolved config as INI text, every key, in registry order.
std::string to_ini(const RunConfig& cfg);

// A boolean as config files spell it: true/on/yes/1 or false/off/no/0; throws
// std::invalid_argument naming the text otherwise.
bool parse_bool(const std::string& s);

// A comma list, each item trimmed: "1, 2,3" -> {"1","2","3"} (a grid's
// values, a list-valued key).
std::vector<std::string> split_list(const std::string& text);
// A comma list of numbers ("inf" read as infinity); throws
// std::invalid_argument naming the item that is not one.
std::vector<double> number_list(const std::string& text);
// A comma list of names, empty items dropped.
std::vector<std::string> name_list(const std::string& text);

// Identity: a hash of the keys that are not output settings (run_id), and of
// only the keys that shape the trained model (train_id).
std::string run_id(const RunConfig& cfg);
std::string train_id(const RunConfig& cfg);

// Whether `key` is part of a `variant` run's identity (another variant's
// section is not: a baseline run is the same whatever fused.alpha says).
// The RunConfig form also reads the variant's mode (latent.mode), which
// decides whether latent.norm or latent.svd_factor matters.
bool relevant_key(const std::string& key, const std::string& variant);
bool relevant_key(const std::string& key, const RunConfig& cfg);

// The model family a variant trains: baseline and sfvl share the language
// model; oet starts from a trained sfcl model (docs/articles.md). The RunConfig form
// also reads the mode: latent_kv with latent.mode = svd decodes the
// baseline's checkpoint ("baseline"), with trained its own ("latent_kv").
std::string trained_family(const std::string& variant);
std::string trained_family(const RunConfig& cfg);

// The same config with variant = baseline: the run whose model a variant's
// is compared with (fused's kl_from_baseline), branches from (sim/branch.h)
// or is judged as (the judge's size check).
RunConfig as_baseline(const RunConfig& cfg);

// latent_kv: latent.rank resolved to a rank (auto by the mode, a share
// times 2·model.dim rounded and at least 1, or the integer); latent.rank's
// text is checked when it is set, the rank against the model by validate().
int64_t latent_rank(const RunConfig& cfg);
// latent_kv svd: the factorisation the run config asks for (models/latent_kv.h).
// Here rather than in sim/model_options.h, beside latent_rank, because the
// config's validation reads it and this file builds without LibTorch.
LatentSvdOptions latent_svd_options(const RunConfig& cfg);

std::string hash_hex(const std::string& text);

// Text that becomes a path (output.dir, serve.trace, a study or checkpoint
// path): "" when it can name a file, else why not: a NUL byte (the system
// call would see the path cut short there, and another file), another
// control character, or a component longer than 255 bytes (NAME_MAX).
std::string path_text_problem(const std::string& text);

// The seed of one of a run's sampling streams (`k` names the stream: the
// quality pass, a timed pass, a sweep): seed·k, shifted by decode.seed so an
// A/A arm draws new samples from the same model. decode.seed = 0 leaves
// every stream as it was before the key existed.
uint64_t sampling_seed(const RunConfig& cfg, uint64_t k);  // FNV-1a 64, 12 hex digits

}  // namespace zl
