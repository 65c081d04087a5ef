#include "models/blas.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <torch/torch.h>

namespace zl {
namespace {

using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);

Sgemm resolve() {
  static Sgemm f = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "sgemm_"));
  return f;
}

// Column-major view: C_rmᵀ [N×M] = W_rm [N×K] · A_rmᵀ, i.e. sgemm('T','N') on
// the column-major K×N matrix W_cm and the K×M matrix A_cm.
void one(Sgemm f, int64_t M, int64_t N, int64_t K, const float* A, const float* W, float* C, int64_t ldc) {
  const int m = static_cast<int>(N), n = static_cast<int>(M), k = static_cast<int>(K), lda = static_cast<int>(K),
            ldb = static_cast<int>(K), ld = static_cast<int>(ldc);
  const float one_f = 1.0f, zero_f = 0.0f;
  f("T", "N", &m, &n, &k, &one_f, W, &lda, A, &ldb, &zero_f, C, &ld);
}

}  // namespace

void matmul_bt(int64_t M, int64_t N, int64_t K, const float* A, const float* W, float* C) {
  Sgemm f = resolve();
  if (!f) {  // no Fortran BLAS symbol: LibTorch's own product
    auto a = torch::from_blob(const_cast<float*>(A), {M, K});
    auto w = torch::from_blob(const_cast<float*>(W), {N, K});
    auto c = torch::from_blob(C, {M, N});
    torch::mm_out(c, a, w.t());
    return;
  }
  // Split N (rows of W) across threads when the product is big enough to pay for it.
  const int64_t grain = std::max<int64_t>(64, (1 << 16) / std::max<int64_t>(1, K));
  if (N * K < (1 << 17) || at::get_num_threads() < 2) return one(f, M, N, K, A, W, C, N);
  at::parallel_for(0, N, grain, [&](int64_t begin, int64_t end) {
    one(f, M, end - begin, K, A, W + begin * K, C + begin, N);
  });
}

}  // namespace zl
