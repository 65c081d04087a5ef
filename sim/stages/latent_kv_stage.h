// The run stage of variant latent_kv (issue 13 §3; models/latent_kv.h). In
// mode trained the model is MLA, trained as its own checkpoint, and the stage
// adds nothing to the decode. In mode svd the run loads (or trains) the
// baseline's checkpoint, and prepare() factorises its K/V projections as
// Palu does (latent.svd_*: K and V apart, groups of 4 heads, whitened by the
// Gram of each layer's inputs over latent.svd_calib_windows training
// windows), then measures the factorised model on the validation windows:
// val_loss, val_ppl and bpb are the factorised model's, the trained
// baseline's are kept as val_loss_trained, and params is the factorised
// model's count. Both modes decode on the reference step (the fast step
// does not serve a latent cache: the run records decode_fast_step = 0 and
// its reason), from a cache of r values per token and layer
// (kv_bytes_per_token from the cache's tensors).
//
// Metrics: latent_rank (r), latent_svd_rel_error (svd: mean over layers of
// the relative error of [W_K; W_V]'s outputs on the calibration windows,
// ‖(W − B·A) S‖_F / ‖W S‖_F; NaN in mode trained), val_loss_trained (svd).
#pragma once
#include <memory>

#include "sim/stages/variant.h"

namespace zl {

// latent.mode = svd: factorises `model` (the baseline's network, trained) as
// the run config says, returning fit_latent_svd's relative error. The
// calibration windows come from `train_tokens` (the training split); without
// them (the decode benchmark's random model, whose speed does not depend on
// the factors' values) the weights are factorised unwhitened. Any other run:
// nothing, NaN.
double fit_latent_for_run(const RunConfig& cfg, Transformer& model, const torch::Tensor& train_tokens = {});

std::unique_ptr<VariantStage> make_latent_kv_stage(const RunConfig& cfg);

}  // namespace zl
