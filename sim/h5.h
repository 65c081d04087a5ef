// A small RAII wrapper over the HDF5 C API (HighFive, the usual C++ binding,
// is not packaged in Debian 12). Handles close themselves; every failing call
// throws std::runtime_error naming the file and the operation, and HDF5's own
// printing of its error stack to stderr is switched off.
//
// Only what the results file needs: groups (with intermediates), scalar
// attributes, 1-D chunked extendible datasets with append, dimension scales
// (H5DS from hdf5_hl), compound tables from a zl::Table, and whole-object copy.
//
// Every object is created without modification times (H5Pset_obj_track_times
// off), so that writing the same content gives the same bytes: a merged results
// file does not depend on when, or in which order, its shards were written.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/results.h"

namespace zl::h5 {

// Throws std::runtime_error "HDF5 error in '<file>': <op>: <HDF5's reason>",
// taking the reason from the current HDF5 error stack, which it then clears.
[[noreturn]] void fail(const std::string& file, const std::string& op);

// Returns `result` if the HDF5 call succeeded (>= 0), otherwise fail()s.
template <class T>
T check(T result, const std::string& file, const std::string& op) {
  if (result < 0) fail(file, op);
  return result;
}

// Owns one HDF5 identifier and closes it with the close call of its kind.
class Id {
 public:
  Id() = default;
  explicit Id(hid_t id) : id_(id) {}
  ~Id() { reset(); }
  Id(Id&& other) noexcept : id_(other.id_) { other.id_ = H5I_INVALID_HID; }
  Id& operator=(Id&& other) noexcept;
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now; returns the close call's status (negative on failure).
  herr_t reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

class Dataset;

// Anything attributes hang on: a file's root group, a group, a dataset.
class Node {
 public:
  hid_t id() const { return id_.get(); }
  const std::string& file() const { return file_; }
  // Full path inside the file, e.g. "/runs/ab12/train/loss".
  std::string path() const;

  // Scalar attributes; writing replaces an attribute of the same name.
  // Strings are variable-length UTF-8, which h5py returns as Python str.
  void set_attr(const std::string& name, const std::string& value) const;
  void set_attr(const std::string& name, const char* value) const { set_attr(name, std::string(value)); }
  void set_attr(const std::string& name, int64_t value) const;
  void set_attr(const std::string& name, double value) const;

  bool has_attr(const std::string& name) const;
  void remove_attr(const std::string& name) const;  // no-op when absent
  // Read a scalar attribute; throw naming the attribute when it is missing or
  // of another kind. Strings may be fixed- or variable-length.
  std::string attr_string(const std::string& name) const;
  int64_t attr_int(const std::string& name) const;
  double attr_double(const std::string& name) const;

 protected:
  Node(Id id, std::string file) : id_(std::move(id)), file_(std::move(file)) {}
  Id id_;
  std::string file_;
};

// What a link in a group points at.
enum class Kind { missing, group, dataset, other };

// Element type of a 1-D numeric dataset.
enum class Elem { f64, i64 };

class Group : public Node {
 public:
  // Paths are relative to this group, '/'-separated, without empty parts.
  Kind kind(const std::string& path) const;
  bool exists(const std::string& path) const { return kind(path) != Kind::missing; }
  Group group(const std::string& path) const;
  // Creates the group and any missing intermediate groups; an existing group
  // is opened (so it is idempotent).
  Group require_group(const std::string& path) const;
  Dataset dataset(const std::string& path) const;
  // Unlinks the object at `path` (its space is not reclaimed, as HDF5 does).
  void remove(const std::string& path) const;
  // Names of the links directly in this group, in name order.
  std::vector<std::string> children() const;
  // The children a walk down the tree takes: hard links, but not to a group
  // that has another hard link. A soft or external link may lead anywhere,
  // and a group linked twice may be linked from below itself, a cycle that a
  // walk would follow forever; the results schema has neither.
  std::vector<std::string> tree_children() const;

  // A 1-D dataset of size 0 with unlimited maximum size, chunked by `chunk`
  // elements, grown by Dataset::append.
  Dataset create_extendible(const std::string& path, Elem elem, hsize_t chunk) const;
  // A 1-D compound dataset with one row per table row and one member per
  // column: float64, int64, or fixed-length null-padded UTF-8 strings sized to
  // the column's longest value. Fixed length because h5py then reads the table
  // as a plain numpy structured array (no object fields) that
  // pandas.DataFrame takes as is; strings arrive as bytes either way.
  Dataset write_table(const std::string& path, const Table& table) const;
  // Copies the group at `src_path`, with everything below it, to `dst_path`
  // under `dst`, possibly in another file (H5Ocopy), and re-links the
  // dimension scales inside it: H5Ocopy copies the object references that
  // tie a dataset to its scales verbatim, and in another file they point at
  // nothing (HDF5 1.10 and later alike).
  void copy(const std::string& src_path, const Group& dst, const std::string& dst_path) const;

 protected:
  Group(Id id, std::string file) : Node(std::move(id), std::move(file)) {}
};

class File : public Group {
 public:
  // Creates (truncating any existing file) or opens a file.
  static File create(const std::string& path);
  static File open(const std::string& path, bool writable);
  void flush() const;
  // Closes the file now; throws if any object in it is still open, since
  // the file would otherwise stay open behind our back (fclose degree SEMI).
  void close();

 private:
  File(Id id, std::string file) : Group(std::move(id), std::move(file)) {}
};

class Dataset : public Node {
 public:
  int rank() const;
  // Extent of a 1-D dataset; throws for other ranks.
  hsize_t size() const;
  H5T_class_t type_class() const;

  // Grows a 1-D extendible dataset and writes `values` at its end.
  void append(const std::vector<double>& values) const;
  void append(const std::vector<int64_t>& values) const;
  // Reads a whole 1-D numeric dataset, converting to the requested type.
  std::vector<double> read_doubles() const;
  std::vector<int64_t> read_int64s() const;

  // Dimension scales (H5DS): make this dataset a scale named `name`, attach a
  // scale to dimension `dim` of this dataset, list the paths of the scales
  // attached to dimension `dim`.
  void make_scale(const std::string& name) const;
  bool is_scale() const;
  void attach_scale(const Dataset& scale, unsigned dim = 0) const;
  std::vector<std::string> scale_paths(unsigned dim = 0) const;

  // Reads a compound dataset written by Group::write_table (or any 1-D
  // compound of float, integer and fixed- or variable-length string members).
  Table read_table() const;

 private:
  friend class Group;
  Dataset(Id id, std::string file) : Node(std::move(id), std::move(file)) {}
  void append_raw(hid_t mem_type, const void* data, hsize_t n) const;
  template <class T>
  std::vector<T> read_all(hid_t mem_type) const;
};

// "1.10.8": the HDF5 library this binary runs with.
std::string library_version();

}  // namespace zl::h5
