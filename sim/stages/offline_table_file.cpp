#include "sim/stages/offline_table_file.h"

#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "datasets/cache_file.h"

namespace zl {
namespace {

constexpr char kMagic[8] = {'Z', 'L', 'O', 'E', 'T', 'T', 'B', '1'};

template <class T>
void put(std::ostream& f, const T* p, size_t n) {
  f.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n * sizeof(T)));
}

template <class T>
void get(std::istream& f, T* p, size_t n, const std::string& path) {
  f.read(reinterpret_cast<char*>(p), static_cast<std::streamsize>(n * sizeof(T)));
  if (!f) throw std::runtime_error("offline table '" + path + "' is truncated or unreadable; delete it to rebuild");
}

}  // namespace

void save_offline_table(const OfflineTable& t, const std::string& path) {
  std::ostringstream f;
  const int64_t shape[5] = {t.kinds, t.buckets, t.layers, t.dim, static_cast<int64_t>(t.delta.nonZeros())};
  put(f, kMagic, 8);
  put(f, shape, 5);
  put(f, t.counts.data(), t.counts.size());
  put(f, t.delta.outerIndexPtr(), static_cast<size_t>(t.delta.outerSize() + 1));
  put(f, t.delta.innerIndexPtr(), static_cast<size_t>(t.delta.nonZeros()));
  put(f, t.delta.valuePtr(), static_cast<size_t>(t.delta.nonZeros()));
  publish_cache_file(path, f.str());
}

OfflineTable load_offline_table(const std::string& path) {
  if (!std::filesystem::exists(path)) throw std::runtime_error("cannot open offline table '" + path + "'");
  return parse_offline_table(read_whole_file(path), path);
}

OfflineTable parse_offline_table(const std::string& bytes, const std::string& path) {
  std::istringstream f(bytes);
  char magic[8];
  get(f, magic, 8, path);
  if (std::memcmp(magic, kMagic, 8) != 0)
    throw std::runtime_error("'" + path + "' is not a zerolayer offline table (bad magic); delete it to rebuild");
  int64_t shape[5];
  get(f, shape, 5, path);
  OfflineTable t;
  t.kinds = shape[0];
  t.buckets = shape[1];
  t.layers = shape[2];
  t.dim = shape[3];
  const int64_t nnz = shape[4];
  const int64_t limit = int64_t{1} << 31;
  if (t.kinds < 1 || t.buckets < 1 || t.layers < 1 || t.dim < 1 || t.rows() >= limit || t.cols() >= limit || nnz < 0 ||
      nnz > t.rows() * t.cols())
    throw std::runtime_error("offline table '" + path + "' has an impossible shape; delete it to rebuild");
  t.counts.resize(static_cast<size_t>(t.rows()));
  get(f, t.counts.data(), t.counts.size(), path);
  std::vector<int32_t> outer(static_cast<size_t>(t.rows() + 1)), inner(static_cast<size_t>(nnz));
  std::vector<float> values(static_cast<size_t>(nnz));
  get(f, outer.data(), outer.size(), path);
  get(f, inner.data(), inner.size(), path);
  get(f, values.data(), values.size(), path);
  if (f.peek() != std::char_traits<char>::eof())
    throw std::runtime_error("offline table '" + path + "' has trailing bytes; delete it to rebuild");
  // Validate the compressed structure before handing it to Eigen.
  if (outer.front() != 0 || outer.back() != nnz)
    throw std::runtime_error("offline table '" + path + "' is corrupt (row starts); delete it to rebuild");
  for (int64_t r = 0; r < t.rows(); ++r) {
    if (outer[r + 1] < outer[r]) throw std::runtime_error("offline table '" + path + "' is corrupt (row starts); delete it to rebuild");
    for (int32_t k = outer[r]; k < outer[r + 1]; ++k)
      if (inner[k] < 0 || inner[k] >= t.cols() || (k > outer[r] && inner[k] <= inner[k - 1]))
        throw std::runtime_error("offline table '" + path + "' is corrupt (columns); delete it to rebuild");
  }
  std::vector<Eigen::Triplet<float, int32_t>> entries;
  entries.reserve(values.size());
  for (int64_t r = 0; r < t.rows(); ++r)
    for (int32_t k = outer[r]; k < outer[r + 1]; ++k) entries.emplace_back(static_cast<int32_t>(r), inner[k], values[k]);
  t.delta.resize(t.rows(), t.cols());
  t.delta.setFromTriplets(entries.begin(), entries.end());
  t.delta.makeCompressed();
  return t;
}

}  // namespace zl
