#include "models/offline_table.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace zl {

void OfflineTable::lookup(int64_t r, float* out) const {
  std::fill(out, out + cols(), 1.0f);
  for (Eigen::SparseMatrix<float, Eigen::RowMajor, int32_t>::InnerIterator it(delta, r); it; ++it)
    out[it.index()] += it.value();
}

int64_t OfflineTable::bytes() const {
  return static_cast<int64_t>(delta.nonZeros()) * static_cast<int64_t>(sizeof(float) + sizeof(int32_t)) +
         (delta.outerSize() + 1) * static_cast<int64_t>(sizeof(int32_t));
}

OfflineTableBuilder::OfflineTableBuilder(int64_t kinds, int64_t buckets, int64_t layers, int64_t dim)
    : kinds_(kinds), buckets_(buckets), layers_(layers), dim_(dim),
      sum_(static_cast<size_t>(kinds * buckets * layers * dim), 0.0), counts_(static_cast<size_t>(kinds * buckets), 0) {
  if (kinds < 1 || buckets < 1 || layers < 1 || dim < 1) throw std::invalid_argument("OfflineTableBuilder: empty shape");
}

void OfflineTableBuilder::add(int64_t row, const float* c) {
  if (row < 0 || row >= kinds_ * buckets_) throw std::out_of_range("OfflineTableBuilder::add: row out of range");
  const int64_t n = layers_ * dim_;
  double* s = sum_.data() + row * n;
  for (int64_t j = 0; j < n; ++j) s[j] += c[j];
  ++counts_[row];
}

OfflineTable OfflineTableBuilder::finish(double tolerance) const {
  OfflineTable t;
  t.kinds = kinds_;
  t.buckets = buckets_;
  t.layers = layers_;
  t.dim = dim_;
  t.counts = counts_;
  const int64_t rows = kinds_ * buckets_, n = layers_ * dim_;
  std::vector<Eigen::Triplet<float, int32_t>> entries;
  for (int64_t r = 0; r < rows; ++r) {
    if (counts_[r] == 0) continue;
    for (int64_t j = 0; j < n; ++j) {
      const double d = sum_[r * n + j] / counts_[r] - 1.0;
      if (std::abs(d) >= tolerance && d != 0.0)
        entries.emplace_back(static_cast<int32_t>(r), static_cast<int32_t>(j), static_cast<float>(d));
    }
  }
  t.delta.resize(rows, n);
  t.delta.setFromTriplets(entries.begin(), entries.end());
  t.delta.makeCompressed();
  return t;
}

}  // namespace zl
