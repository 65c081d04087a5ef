// The run stage of variant latent_kv (issue 13 §3; models/latent_kv.h). In
// mode trained the model is MLA, trained as its own checkpoint, and the stage
// adds nothing to the decode. In mode svd the run loads (or trains) the
// baseline's checkpoint, and prepare() factorises its K/V projections to
// latent.rank (Palu, J-LRD), then measures the factorised model on the
// validation windows: val_loss, val_ppl and bpb are the factorised model's,
// the trained baseline's are kept as val_loss_trained. Both modes decode on
// the reference step (the fast step does not serve a latent cache: the run
// records decode_fast_step = 0 and its reason), from a cache of r values per
// token and layer (kv_bytes_per_token from the cache's tensors).
//
// Metrics: latent_rank (r), latent_svd_rel_error (svd: mean over layers of
// ‖[W_K; W_V] − B·A‖_F / ‖[W_K; W_V]‖_F), val_loss_trained (svd).
#pragma once
#include <memory>

#include "sim/variant.h"

namespace zl {

// latent.mode = svd: factorises `model` (the baseline's network, trained) as
// the run config says, returning the relative error of fit_latent_svd; any
// other run: nothing, NaN.
double fit_latent_for_run(const RunConfig& cfg, Transformer& model);

std::unique_ptr<VariantStage> make_latent_kv_stage(const RunConfig& cfg);

}  // namespace zl
