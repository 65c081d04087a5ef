#include "sim/trainer.h"

#include <chrono>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <optional>

#include "sim/branch.h"
#include "sim/optimizer.h"
#include "sim/runtime.h"
#include "sim/util/progress.h"
#include "sim/util/stop.h"

namespace zl {
namespace fs = std::filesystem;

double learning_rate(const TrainConfig& t, int64_t step) {
  if (step < t.warmup) return t.lr * (step + 1) / static_cast<double>(t.warmup);
  double progress = (step - t.warmup) / static_cast<double>(std::max<int64_t>(1, t.steps - t.warmup));
  double cosine = 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress)));
  return t.lr * (t.min_lr_ratio + (1.0 - t.min_lr_ratio) * cosine);
}

std::string checkpoint_path(const RunConfig& cfg) { return identify(cfg).checkpoint_dir; }

void check_checkpoint_code(const RunConfig& cfg, const std::string& checkpoint, const TrainingCode& recorded) {
  const std::string why = stale_checkpoint_problem(checkpoint, recorded, current_training_code());
  if (why.empty()) return;
  if (cfg.train.stale_checkpoints != "reuse") throw StaleCheckpoint(why);
  if (cfg.output.verbosity > 0)
    std::fprintf(stderr, "warning: train.stale_checkpoints = reuse: %s\n", why.c_str());
}

double evaluate_loss(Transformer& model, const BatchSampler& val, int64_t batches, const torch::Device& device,
                     bool bf16) {
  torch::NoGradGuard no_grad;
  model->eval();
  AutocastGuard autocast(bf16, device);
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) {
    auto [x, y] = val.eval_batch(i, batches);
    total += model->loss(x.to(device), y.to(device)).item<double>();
  }
  model->train();
  return total / batches;
}

namespace {

void set_lr(torch::optim::AdamW& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

}  // namespace

TrainOutcome train_model(const RunConfig& cfg, const RunIdentity& id, Transformer& model, const Dataset& data,
                         const torch::Device& device) {
  const TrainConfig& t = cfg.train;
  const bool bf16 = t.precision == "bf16";
  CheckpointDir ckpt(id.checkpoint_dir);
  ckpt.lock();  // another shard training the same model waits, then reuses it

  model->to(device);
  auto optim = make_optimizer(model, t);
  TrainOutcome out;
  const TrainingCode& ours = current_training_code();
  out.state.code = ours;
  bool resumed = false;
  if (ckpt.exists()) {
    try {
      out.state = ckpt.load(&model, &optim, id.family);  // another family's checkpoint is refused
      check_checkpoint_code(cfg, id.checkpoint_dir, out.state.code);
      // Trained further by this code, it is neither the old code's model nor ours: it says both.
      if (!out.state.complete && out.state.code.fingerprint != ours.fingerprint)
        out.state.code = {out.state.code.commit + "," + ours.commit, out.state.code.fingerprint + "," + ours.fingerprint};
      resumed = true;
    } catch (const DamagedCheckpoint& e) {
      ckpt.set_aside(e.what());  // nothing was loaded: train from the model's initial weights
    }
  }
  if (!resumed && trains_as_branch(cfg)) {
    out.state = start_from_branch(cfg, model, optim, data, device);
    out.state.code = ours;
  }
  model->to(device);

  BatchSampler train(data.train.tokens, t.batch, cfg.model.context, static_cast<uint64_t>(cfg.seed));
  BatchSampler val(data.val.tokens, t.batch, cfg.model.context, static_cast<uint64_t>(cfg.seed));
  const std::string tokenizer_model = data.tokenizer->model_path();
  auto save = [&]() { ckpt.save(out.state, model, &optim, to_ini(cfg), tokenizer_model); };
  // The baseline keeps its checkpoint at the branch point for the branches
  // of its seed (sim/branch.h); a side model (judge, draft) sets no share.
  const int64_t branch_at = id.family == "baseline" ? branch_step(t) : -1;
  std::optional<CheckpointDir> branch_point;
  if (branch_at >= 0) branch_point.emplace(branch_point_dir(cfg));

  out.reused = out.state.complete;
  Progress progress("train " + id.train_id, t.steps, cfg.output.verbosity > 0);
  model->train();
  while (!out.state.complete) {
    CheckpointState& s = out.state;
    const int64_t step = s.step;
    if (step == branch_at && !branch_point->exists()) branch_point->save(s, model, &optim, to_ini(cfg), tokenizer_model);
    const double lr = learning_rate(t, step);
    set_lr(optim, lr);

    auto begin = std::chrono::steady_clock::now();
    auto [x, y] = train.train_batch(step);
    torch::Tensor loss;
    {
      AutocastGuard autocast(bf16, device);
      loss = model->loss(x.to(device), y.to(device));
      // fused value distillation: + ortho_weight * ‖PPᵀ − I‖²_F (undefined for other variants)
      if (auto reg = model->regularizer(); reg.defined()) loss = loss + reg;
    }
    drop_grads(optim);
    loss.backward();
    clip_step(optim, t.grad_clip);
    const double loss_value = loss.item<double>();  // syncs, so the timing below is honest
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (!std::isfinite(loss_value))
      throw NonFiniteLoss("non-finite training loss (" + std::to_string(loss_value) + ") at step " +
                          std::to_string(step) + " with train.lr " + std::to_string(t.lr) +
                          ": lower train.lr or raise train.warmup");

    s.step = step + 1;
    if (step >= 2) {  // the first steps pay for allocation and warm-up
      s.train_seconds += seconds;
      s.timed_tokens += t.batch * cfg.model.context;
    }
    s.curves["train/loss"].step.push_back(s.step);
    s.curves["train/loss"].value.push_back(loss_value);
    s.curves["train/lr"].step.push_back(s.step);
    s.curves["train/lr"].value.push_back(lr);

    const bool last = s.step == t.steps;
    if (s.step % t.eval_every == 0 || last) {
      double v = evaluate_loss(model, val, t.eval_batches, device, bf16);
      s.curves["train/val_loss"].step.push_back(s.step);
      s.curves["train/val_loss"].value.push_back(v);
    }
    s.complete = last;
    const bool stopping = stop_requested() && !last;
    if (s.step % t.checkpoint_every == 0 || last || stopping) save();
    progress.update(s.step, "loss " + std::to_string(loss_value).substr(0, 6));
    if (stopping) {
      progress.finish();
      throw_if_stop_requested("at training step " + std::to_string(s.step) + " of " + id.train_id +
                              " (checkpoint saved)");
    }
  }
  progress.finish();
  model->eval();

  const auto& s = out.state;
  out.train_tok_s = s.train_seconds > 0 ? s.timed_tokens / s.train_seconds : std::nan("");
  const auto& vl = s.curves.at("train/val_loss").value;
  out.val_loss = vl.empty() ? std::nan("") : vl.back();
  return out;
}

}  // namespace zl
