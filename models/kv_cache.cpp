#include "models/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "models/blas.h"

namespace zl {

KVCache KVCache::allocate(const ModelConfig& cfg, int64_t batch, int64_t capacity, const torch::TensorOptions& opts,
                          const EvictionOptions& eviction) {
  KVCache c;
  const auto& f = cfg.fused;
  if (eviction.on()) {
    // Eviction moves tokens between slots; fused's per-position state and
    // ALiBi's distances between slots assume slot = position, and latent_kv
    // holds no K and V to evict.
    if (f.any() || cfg.alibi || cfg.latent_rank > 0)
      throw std::invalid_argument("KV cache eviction is not available with fused's parts, ALiBi or latent_kv");
    if (eviction.budget < 1) throw std::invalid_argument("KV cache eviction: a budget of at least 1 token");
    capacity = std::min(capacity, eviction.budget + 1);
  }
  c.capacity = capacity;
  c.eviction = eviction;
  // Value distillation: the cache really stores r values per token and head.
  const int64_t value_width = f.value_rank > 0 ? f.value_rank : cfg.head_dim();
  for (int64_t l = 0; l < cfg.layers; ++l) {
    if (cfg.latent_rank > 0) {
      // latent_kv: the cache holds c alone, r values per token for all heads
      // together; keys and values are never stored (models/latent_kv.h).
      LayerCache lc;
      lc.latent = torch::zeros({batch, capacity, cfg.latent_rank}, opts);
      c.layers.push_back(lc);
      continue;
    }
    LayerCache lc;
    lc.k = torch::zeros({batch, cfg.heads, capacity, cfg.head_dim()}, opts);
    lc.v = torch::zeros({batch, cfg.heads, capacity, value_width}, opts);
    if (f.key_weighting_on() && f.importance == FusedOptions::Importance::AttnMass) {
      lc.mass = torch::zeros({batch, cfg.heads, capacity}, opts.dtype(torch::kFloat));
      lc.queries = torch::zeros({batch, cfg.heads, capacity, cfg.head_dim()}, opts.dtype(torch::kFloat));
      lc.mass_rows = torch::zeros({batch}, torch::kLong);
    } else if (f.key_weighting_on()) {
      lc.importance = torch::zeros({batch, capacity}, opts.dtype(torch::kFloat));
    }
    if (eviction.on()) {
      lc.order = torch::zeros({batch, cfg.heads, capacity}, opts.dtype(torch::kInt));
      if (eviction.policy == EvictionOptions::Policy::H2O)
        lc.score = torch::zeros({batch, cfg.heads, capacity}, opts.dtype(torch::kFloat));
    }
    c.layers.push_back(lc);
  }
  c.lengths = torch::zeros({batch}, opts.dtype(torch::kLong));
  if (eviction.on()) c.held = torch::zeros({batch}, opts.dtype(torch::kLong));
  return c;
}

void KVCache::truncate(int64_t b, int64_t length) {
  // On the CPU without ATen calls: decoders roll back every sequence every
  // round, where two tensor operations each cost more than the check.
  int64_t* cpu = lengths.is_cpu() && lengths.is_contiguous() ? lengths.data_ptr<int64_t>() : nullptr;
  if (b < 0 || b >= batch()) throw std::out_of_range("KVCache::truncate: no sequence " + std::to_string(b));
  const int64_t now = cpu ? cpu[b] : lengths[b].item<int64_t>();
  if (length < 0 || length > now)
    throw std::out_of_range("KVCache::truncate: sequence " + std::to_string(b) + " holds " + std::to_string(now) +
                            " tokens, cannot roll back to " + std::to_string(length));
  if (evicting()) {
    // Only the newest tokens can be dropped, and only while every token fed is held.
    const int64_t kept = held[b].item<int64_t>();
    if (kept != now)
      throw std::out_of_range("KVCache::truncate: sequence " + std::to_string(b) + " has evicted tokens, cannot roll back");
    held[b] = length;
  }
  if (cpu)
    cpu[b] = length;
  else
    lengths[b] = length;
}

void KVCache::sync_mass() {
  auto len = lengths.to(torch::kCPU).contiguous();
  for (auto& l : layers)
    if (l.mass.defined())
      for (int64_t b = 0; b < batch(); ++b) l.sync_mass(b, len.data_ptr<int64_t>()[b]);
}

namespace {

// The unweighted attention rows of one head's queries [lo, hi) (query m over
// keys j <= m), times `sign`, added to its column sums: on the fast step's
// kernels, so that a row subtracted is the row the fast step added.
void add_rows_cpu(const float* Q, const float* K, int64_t D, int64_t lo, int64_t hi, float sign, float* sums) {
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  thread_local std::vector<float> row;  // per team member
  row.resize(std::max<int64_t>(hi, 1));
  for (int64_t m = lo; m < hi; ++m) {
    scaled_scores(Q + m * D, K, m + 1, D, scale, row.data());
    softmax_inplace(row.data(), m + 1);
    for (int64_t j = 0; j <= m; ++j) sums[j] += sign * row[j];
  }
}

// The same for every head of sequence b in tensor operations (a cache off
// the CPU, or keys not in float32): [H,R,D]·[H,D,hi] scores, masked, softmax.
void add_rows_tensor(LayerCache& lc, int64_t b, int64_t lo, int64_t hi, float sign) {
  const int64_t D = lc.queries.size(3);
  auto q = lc.queries[b].narrow(1, lo, hi - lo);                                          // [H,R,D]
  auto k = lc.k[b].narrow(1, 0, hi).to(torch::kFloat);                                     // [H,hi,D]
  auto s = torch::matmul(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(D));       // [H,R,hi]
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(s.device());
  auto future = torch::arange(hi, opts).view({1, 1, hi}) > torch::arange(lo, hi, opts).view({1, hi - lo, 1});
  s.masked_fill_(future, -std::numeric_limits<float>::infinity());
  lc.mass[b].narrow(1, 0, hi).add_(torch::softmax(s, -1).sum(1), sign);  // [H,hi]
}

}  // namespace

void LayerCache::sync_mass(int64_t b, int64_t rows) {
  int64_t& from = mass_rows.data_ptr<int64_t>()[b];
  if (from == rows) return;
  const int64_t H = mass.size(1), cap = mass.size(2), D = queries.size(3);
  const bool cpu = mass.is_cpu() && k.scalar_type() == torch::kFloat && k.is_contiguous();
  auto add = [&](int64_t lo, int64_t hi, float sign) {
    if (hi <= lo) return;
    if (!cpu) return add_rows_tensor(*this, b, lo, hi, sign);
    for (int64_t h = 0; h < H; ++h) {
      const int64_t head = b * H + h;
      add_rows_cpu(queries.data_ptr<float>() + head * cap * D, k.data_ptr<float>() + head * cap * D, D, lo, hi, sign,
                   mass.data_ptr<float>() + head * cap);
    }
  };
  // Columns [lo, hi) of every head back to 0 (no query below lo sees them).
  auto clear = [&](int64_t lo, int64_t hi) {
    if (hi <= lo) return;
    if (!cpu) return void(mass[b].narrow(1, lo, hi - lo).zero_());
    for (int64_t h = 0; h < H; ++h) std::fill_n(mass.data_ptr<float>() + (b * H + h) * cap + lo, hi - lo, 0.0f);
  };
  if (rows > from) {
    add(from, rows, 1.0f);  // queries fed but not summed
  } else if (2 * rows * rows <= from * from) {
    // Rebuilding costs Σ_{m<rows} (m+1) keys, subtracting Σ_{rows<=m<from}
    // (m+1): rebuild when that is less, which also sheds any rounding.
    clear(0, from);
    add(0, rows, 1.0f);
  } else {
    add(rows, from, -1.0f);
    clear(rows, from);  // exactly 0, not a difference of rounded sums
  }
  from = rows;
}

int64_t KVCache::bytes_per_token(std::map<std::string, int64_t>* parts) const {
  int64_t k = 0, v = 0, latent = 0, state = 0, evict = 0;
  for (const auto& l : layers) {
    // Per token: H * D elements of K, H * D (or H * r) of V; or r of the latent.
    if (l.k.defined()) k += l.k.size(1) * l.k.size(3) * l.k.element_size();
    if (l.v.defined()) v += l.v.size(1) * l.v.size(3) * l.v.element_size();
    if (l.latent.defined()) latent += l.latent.size(2) * l.latent.element_size();
    if (l.mass.defined()) state += l.mass.size(1) * l.mass.element_size();                   // H sums
    if (l.queries.defined()) state += l.queries.size(1) * l.queries.size(3) * l.queries.element_size();  // H * D
    if (l.importance.defined()) state += l.importance.element_size();                        // one scalar
    if (l.order.defined()) evict += l.order.size(1) * l.order.element_size();                 // H positions
    if (l.score.defined()) evict += l.score.size(1) * l.score.element_size();                 // H scores
  }
  if (parts) *parts = {{"k", k}, {"v", v}, {"latent", latent}, {"fused_state", state}, {"eviction_state", evict}};
  return k + v + latent + state + evict;
}

}  // namespace zl
