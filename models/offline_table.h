// The Offline State Modeller of variant oet (seed 000 §2.2): after training,
// the sfcl correction module is run over training text (teacher-forced), each
// position where the event trigger fires is bucketed by (event kind, context
// bucket), and the mean correction per bucket is stored in a sparse table.
// At decode time a fired event looks its row up instead of running the module.
//
// Layout: an Eigen row-major sparse matrix, row = kind · buckets + bucket,
// column = layer · C + channel, value = mean c − 1. Storing the deviation from
// identity is what makes the table sparse: a row never observed is empty, and
// entries with |mean c − 1| below `tolerance` are left out (they read as c = 1).
// The context bucket of position p (0-based, in a context of T_max tokens) is
// p · buckets / T_max: the article's "context" is otherwise unspecified, and
// the position is what the trigger knows without more state.
// Saving and loading (I/O) live in sim/stages/offline_table_file.h.
#pragma once
#include <Eigen/SparseCore>

#include <cstdint>
#include <vector>

namespace zl {

struct OfflineTable {
  int64_t kinds = 0, buckets = 0, layers = 0, dim = 0;
  Eigen::SparseMatrix<float, Eigen::RowMajor, int32_t> delta;  // [kinds·buckets, layers·dim]: mean c − 1
  std::vector<int64_t> counts;                                  // positions averaged per row

  int64_t rows() const { return kinds * buckets; }
  int64_t cols() const { return layers * dim; }
  int64_t row(int kind, int64_t bucket) const { return kind * buckets + bucket; }
  static int64_t bucket_of(int64_t position, int64_t context, int64_t buckets) {
    const int64_t b = position * buckets / context;
    return b < 0 ? 0 : (b >= buckets ? buckets - 1 : b);
  }
  // Writes the coefficients of `row` into out[cols()] (layer-major): 1 + delta.
  // A row never observed gives c = 1 (identity).
  void lookup(int64_t row, float* out) const;
  // Bytes of the sparse matrix as stored (values, inner indices, outer starts).
  int64_t bytes() const;
};

// Accumulates corrections per row, then averages them into a table.
class OfflineTableBuilder {
 public:
  OfflineTableBuilder(int64_t kinds, int64_t buckets, int64_t layers, int64_t dim);
  // Adds one position's coefficients c[layers·dim] (layer-major) to `row`.
  void add(int64_t row, const float* c);
  // Means of what was added, less 1, entries with |·| < tolerance left out.
  OfflineTable finish(double tolerance) const;

 private:
  int64_t kinds_, buckets_, layers_, dim_;
  std::vector<double> sum_;  // [rows, cols]
  std::vector<int64_t> counts_;
};

}  // namespace zl
