// Variant fused on the hand-written decode step (models/decode_step.h):
// the same arithmetic as AttentionImpl::forward_fused and the transformer's
// token importance and gate (models/attention.cpp, models/transformer.cpp,
// models/logits_gate.cpp), on one row and one head at a time, with no ATen
// call inside (a team member runs these).
#include <algorithm>
#include <cmath>
#include <vector>

#include "models/blas.h"
#include "models/decode_step.h"
#include "models/logits_gate.h"

namespace zl {
namespace {

// Per member: a row beside another member's writes slowed both (models/blas.h).
struct Scratch {
  std::vector<float> raw, scores, y;
  std::vector<int64_t> top;
  void fit(int64_t n, int64_t r, int64_t keys) {
    top.resize(keys);
    raw.resize(n);
    scores.resize(n);
    y.resize(r);
  }
};

float squash(float n) { return n / (1.0f + n); }

}  // namespace

void DecodeStep::attend_fused(size_t l, const Row* rows, int64_t M, const float* qkv, float* y, KVCache& cache,
                              bool alone, float* features) {
  const auto& cfg = model_->cfg;
  const int64_t C = cfg.dim, H = cfg.heads, D = cfg.head_dim(), cap = cache.capacity, Wv = value_width_;
  const int64_t keys = fused_.gate_keys;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const float alpha = static_cast<float>(fused_.alpha);
  const bool weigh = fused_.key_weighting_on() && skipped_ != Part::KeyWeighting;
  const bool mass_importance = weigh && fused_.importance == FusedOptions::Importance::AttnMass;
  const bool scale_form = fused_.key_weighting == FusedOptions::KeyWeighting::Scale;
  LayerCache& lc = cache.layers[l];
  const float* kc = lc.k.data_ptr<float>();
  const float* vc = lc.v.data_ptr<float>();
  float* mass = mass_importance ? lc.mass.data_ptr<float>() : nullptr;              // [B,H,cap]
  const float* imp = weigh && !mass_importance ? lc.importance.data_ptr<float>() : nullptr;  // [B,cap]
  const float* P = layers_[l].value_p;                                              // [r,D] or none
  const bool distill = skipped_ != Part::ValueDistillation;

  // Runs of rows of one sequence: a row's exclusive mass (attn_mass) is the
  // column sums after the rows before it, so each run goes in order, head by
  // head (the sums were brought to the run's first row before the keys were
  // written: through_layers).
  std::vector<int64_t> runs{0};
  for (int64_t m = 1; m < M; ++m)
    if (rows[m].sequence != rows[m - 1].sequence) runs.push_back(m);
  runs.push_back(M);
  const int64_t R = static_cast<int64_t>(runs.size()) - 1;

  split(R * H, alone, [&](int64_t begin, int64_t end) {
    thread_local Scratch sc;
    for (int64_t rh = begin; rh < end; ++rh) {
      const int64_t run = rh / H, hd = rh % H;
      for (int64_t m = runs[run]; m < runs[run + 1]; ++m) {
        const int64_t b = rows[m].sequence, p = rows[m].position, n = p + 1;
        const int64_t head = (b * H + hd) * cap;
        const float* q = qkv + m * 3 * C + hd * D;
        sc.fit(n, Wv, keys);
        float* s = sc.scores.data();
        if (weigh) {
          // The raw scores q·k / sqrt(D) apart, weighed into s; nothing
          // reads them after (the gate's cosines take q·k afresh).
          float* raw = sc.raw.data();
          scaled_scores(q, kc + head * D, n, D, scale, raw);
          if (mass_importance) {
            // excl = the head's column sums over the queries before p; log w
            // = alpha (excl − d) (models/attention.cpp). Then this query's
            // unweighted attention, softmax(raw) in place, joins the sums.
            float* sums = mass + head;
            weigh_keys(raw, sums, nullptr, alpha, p, n, scale_form, s);
            softmax_inplace(raw, n);
            for (int64_t j = 0; j < n; ++j) sums[j] += raw[j];
          } else {
            weigh_keys(raw, nullptr, imp + b * cap, alpha, p, n, scale_form, s);
          }
        } else {
          scaled_scores(q, kc + head * D, n, D, scale, s);
        }
        softmax_inplace(s, n);
        float* out = y + m * C + hd * D;
        if (P) {  // r-wide values, then back through P: y = (Σ a z) P
          float* yr = sc.y.data();
          weighted_rows(s, vc + head * Wv, n, Wv, yr);
          if (distill)
            weighted_rows(yr, P, Wv, D, out);  // Σ_i yr_i P_i, the rows of P weighted
          else
            std::fill(out, out + D, 0.0f);
        } else {
          weighted_rows(s, vc + head * D, n, D, out);
        }
        // The gate's inputs: cosines of the query with the keys it attends to most.
        if (features) gate_cosines(q, kc + head * D, s, n, D, keys, sc.top.data(), features + m * H * keys + hd * keys);
      }
    }
  });
  if (!mass_importance) return;
  int64_t* counted = lc.mass_rows.data_ptr<int64_t>();  // each run's rows are now in its sums
  for (int64_t run = 0; run < R; ++run) counted[rows[runs[run]].sequence] = rows[runs[run + 1] - 1].position + 1;
}

void DecodeStep::token_importance(int64_t M, const float* x, float* importance, bool alone) {
  const int64_t C = model_->cfg.dim, V = model_->cfg.vocab;
  if (fused_.importance == FusedOptions::Importance::HiddenNorm) {
    for (int64_t m = 0; m < M; ++m) {
      double sq = 0;
      for (int64_t i = 0; i < C; ++i) sq += static_cast<double>(x[m * C + i]) * x[m * C + i];
      importance[m] = squash(static_cast<float>(std::sqrt(sq) / std::sqrt(static_cast<double>(C))));
    }
    return;
  }
  // grad_norm: ‖∂ LSE(W·LN(x)) / ∂x‖ in closed form. ∂LSE/∂logits = softmax
  // p, so ∂/∂y = Wᵀp for y = LN(x); through the norm, with x̂ = (x − μ)/σ and
  // g = γ ⊙ Wᵀp: ∂/∂x = (g − mean(g) − x̂ · mean(g ⊙ x̂)) / σ.
  std::vector<float> xhat(M * C), y(M * C), p(M * V), g(M * C);
  std::vector<float> inv_sigma(M);
  for (int64_t m = 0; m < M; ++m) {
    const float* xm = x + m * C;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < C; ++i) mean += xm[i];
    mean /= C;
    for (int64_t i = 0; i < C; ++i) var += (xm[i] - mean) * (xm[i] - mean);
    inv_sigma[m] = static_cast<float>(1.0 / std::sqrt(var / C + eps_));
    for (int64_t i = 0; i < C; ++i) {
      xhat[m * C + i] = (xm[i] - static_cast<float>(mean)) * inv_sigma[m];
      y[m * C + i] = xhat[m * C + i] * lnf_w_[i] + lnf_b_[i];
    }
  }
  product(M, V, C, y.data(), wte_panels_, p.data(), alone);
  for (int64_t m = 0; m < M; ++m) softmax_inplace(p.data() + m * V, V);
  product(M, C, V, p.data(), wte_t_panels_, g.data(), alone);  // Wᵀp
  for (int64_t m = 0; m < M; ++m) {
    float* gm = g.data() + m * C;
    const float* xh = xhat.data() + m * C;
    double mean_g = 0, mean_gx = 0;
    for (int64_t i = 0; i < C; ++i) {
      gm[i] *= lnf_w_[i];
      mean_g += gm[i];
      mean_gx += gm[i] * xh[i];
    }
    mean_g /= C;
    mean_gx /= C;
    double sq = 0;
    for (int64_t i = 0; i < C; ++i) {
      const double d = (gm[i] - mean_g - xh[i] * mean_gx) * inv_sigma[m];
      sq += d * d;
    }
    importance[m] = squash(static_cast<float>(std::sqrt(sq)));
  }
}

void DecodeStep::gate_logits(int64_t n, const float* features, float* logits, bool alone) {
  const int64_t V = model_->cfg.vocab, F = model_->cfg.heads * fused_.gate_keys, K = fused_.gate_top_k;
  const int64_t k = std::min(K, V);
  thread_local std::vector<float> hidden, out;  // per member, kept between calls
  thread_local std::vector<int64_t> top;
  hidden.resize(n * gate_hidden_);
  out.resize(n * K);
  top.resize(k);
  product(n, gate_hidden_, F, features, gate_fc1_, hidden.data(), alone, /*gelu=*/true, gate_fc1_b_);
  product(n, K, gate_hidden_, hidden.data(), gate_fc2_, out.data(), alone, /*gelu=*/false, gate_fc2_b_);
  for (int64_t r = 0; r < n; ++r) gate_candidates(logits + r * V, V, out.data() + r * K, k, top.data());
}

}  // namespace zl
