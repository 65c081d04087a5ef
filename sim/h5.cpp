#include "sim/h5.h"

#include <hdf5_hl.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <type_traits>

namespace zl::h5 {
namespace {

// HDF5 prints its whole error stack to stderr on every failing call unless
// told not to; we report through exceptions instead. The setting is per thread
// in thread-safe builds, hence thread_local.
void silence_hdf5_errors() {
  thread_local bool done = false;
  if (done) return;
  H5open();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  done = true;
}

herr_t collect_error(unsigned, const H5E_error2_t* err, void* data) {
  auto* descs = static_cast<std::vector<std::string>*>(data);
  if (err->desc != nullptr && err->desc[0] != '\0') descs->emplace_back(err->desc);
  return 0;
}

// Splits "a/b/c" into its parts; rejects empty parts so that "" or "a//b"
// is a caller's bug reported as such rather than an obscure HDF5 failure.
// The path may come from the file itself (a run id read from /index), so
// the error names the file like every other.
std::vector<std::string> split_path(const std::string& path, const std::string& file) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty())
      throw std::invalid_argument("bad HDF5 path '" + path + "' in '" + file + "' (empty component)");
    parts.push_back(part);
    if (slash == std::string::npos) return parts;
    start = slash + 1;
  }
}

// "a/b/c" -> {"a/b", "c"}; "c" -> {"", "c"}.
std::pair<std::string, std::string> split_parent(const std::string& path, const std::string& file) {
  split_path(path, file);  // validates
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

Id make_plist(hid_t cls, const std::string& file) {
  return Id(check(H5Pcreate(cls), file, "create property list"));
}

// Creation property list for groups and datasets: no modification times, so
// that equal content gives equal bytes.
Id object_plist(hid_t cls, const std::string& file) {
  Id plist = make_plist(cls, file);
  check(H5Pset_obj_track_times(plist.get(), false), file, "disable object times");
  return plist;
}

// Link names are UTF-8 (run ids and metric names are ASCII, but be explicit).
Id link_plist(const std::string& file) {
  Id plist = make_plist(H5P_LINK_CREATE, file);
  check(H5Pset_char_encoding(plist.get(), H5T_CSET_UTF8), file, "set link encoding");
  return plist;
}

Id access_plist(const std::string& file) {
  Id fapl = make_plist(H5P_FILE_ACCESS, file);
  // The 1.8 format stores large attributes (a long config text) densely,
  // which the earliest format cannot, and is still read by every current
  // tool (h5py, netCDF-4, HDF5 1.8+).
  check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), file, "set format version");
  // SEMI: closing a file with objects still open fails instead of silently
  // keeping the file open, so File::close() proves the file is complete.
  check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_SEMI), file, "set close degree");
  return fapl;
}

Id string_type(size_t size, const std::string& file) {
  Id type(check(H5Tcopy(H5T_C_S1), file, "copy string type"));
  check(H5Tset_size(type.get(), size), file, "set string size");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), file, "set string encoding");
  if (size != H5T_VARIABLE) check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), file, "set string padding");
  return type;
}

// A compound memory type with the single member `name`, used to read one
// column of a compound dataset (HDF5 matches compound members by name).
Id single_member(const std::string& name, hid_t member, size_t size, const std::string& file) {
  Id type(check(H5Tcreate(H5T_COMPOUND, size), file, "create compound type"));
  check(H5Tinsert(type.get(), name.c_str(), 0, member), file, "insert compound member '" + name + "'");
  return type;
}

size_t column_size(const Table::Column& column) {
  return std::visit([](const auto& values) { return values.size(); }, column);
}

void validate(const Table& table, const std::string& what) {
  if (table.names.size() != table.columns.size())
    throw std::invalid_argument(what + ": " + std::to_string(table.names.size()) + " names for " +
                                std::to_string(table.columns.size()) + " columns");
  if (table.names.empty()) throw std::invalid_argument(what + ": a table needs at least one column");
  size_t rows = column_size(table.columns[0]);
  for (size_t i = 0; i < table.names.size(); ++i) {
    if (table.names[i].empty()) throw std::invalid_argument(what + ": empty column name");
    if (std::count(table.names.begin(), table.names.end(), table.names[i]) > 1)
      throw std::invalid_argument(what + ": duplicate column '" + table.names[i] + "'");
    if (column_size(table.columns[i]) != rows)
      throw std::invalid_argument(what + ": column '" + table.names[i] + "' has " +
                                  std::to_string(column_size(table.columns[i])) + " rows, expected " +
                                  std::to_string(rows));
  }
}

// Frees the strings HDF5 allocated when reading variable-length data.
struct VlenReclaim {
  hid_t mem_type, space;
  void* buffer;
  ~VlenReclaim() {
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(mem_type, space, H5P_DEFAULT, buffer);
#else
    H5Dvlen_reclaim(mem_type, space, H5P_DEFAULT, buffer);
#endif
  }
};

// Fixed-length strings come back padded; cut at the first NUL, and trim
// trailing blanks for space-padded strings.
std::string unpad(const char* data, size_t width, H5T_str_t pad) {
  std::string s(data, strnlen(data, width));
  if (pad == H5T_STR_SPACEPAD) s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

herr_t collect_scale(hid_t, unsigned, hid_t scale, void* data) {
  ssize_t n = H5Iget_name(scale, nullptr, 0);
  if (n < 0) return -1;
  std::string name(static_cast<size_t>(n) + 1, '\0');
  H5Iget_name(scale, name.data(), name.size());
  name.resize(static_cast<size_t>(n));
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

}  // namespace

[[noreturn]] void fail(const std::string& file, const std::string& op) {
  std::vector<std::string> descs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &descs);
  H5Eclear2(H5E_DEFAULT);
  std::string msg = "HDF5 error in '" + file + "': " + op;
  // The outermost entry says what failed, the innermost why.
  if (!descs.empty()) msg += ": " + descs.front();
  if (descs.size() > 1 && descs.back() != descs.front()) msg += " (" + descs.back() + ")";
  throw std::runtime_error(msg);
}

// ---- Id --------------------------------------------------------------------

Id& Id::operator=(Id&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    other.id_ = H5I_INVALID_HID;
  }
  return *this;
}

herr_t Id::reset() {
  if (id_ < 0) return 0;
  hid_t id = id_;
  id_ = H5I_INVALID_HID;
  switch (H5Iget_type(id)) {
    case H5I_FILE: return H5Fclose(id);
    case H5I_GROUP: return H5Gclose(id);
    case H5I_DATASET: return H5Dclose(id);
    case H5I_DATATYPE: return H5Tclose(id);
    case H5I_DATASPACE: return H5Sclose(id);
    case H5I_ATTR: return H5Aclose(id);
    case H5I_GENPROP_LST: return H5Pclose(id);
    default: return H5Idec_ref(id) < 0 ? -1 : 0;
  }
}

// ---- Node: attributes ------------------------------------------------------

namespace {

void write_attr(const Node& node, const std::string& name, hid_t file_type, hid_t mem_type,
                const void* value) {
  const std::string op = "write attribute '" + name + "'";
  if (check(H5Aexists(node.id(), name.c_str()), node.file(), op) > 0)
    check(H5Adelete(node.id(), name.c_str()), node.file(), op);
  Id space(check(H5Screate(H5S_SCALAR), node.file(), op));
  Id attr(check(H5Acreate2(node.id(), name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                node.file(), op));
  check(H5Awrite(attr.get(), mem_type, value), node.file(), op);
}

// Opens attribute `name`, checking that it exists, is scalar and of `cls`
// (or `alt` as well, when given).
Id open_attr(const Node& node, const std::string& name, H5T_class_t cls, H5T_class_t alt, Id* type) {
  const std::string op = "read attribute '" + name + "'";
  if (!node.has_attr(name))
    throw std::runtime_error("missing attribute '" + name + "' in '" + node.file() + "'");
  Id attr(check(H5Aopen(node.id(), name.c_str(), H5P_DEFAULT), node.file(), op));
  *type = Id(check(H5Aget_type(attr.get()), node.file(), op));
  H5T_class_t got = H5Tget_class(type->get());
  Id space(check(H5Aget_space(attr.get()), node.file(), op));
  if ((got != cls && got != alt) || H5Sget_simple_extent_npoints(space.get()) != 1)
    throw std::runtime_error("attribute '" + name + "' in '" + node.file() + "' is not a scalar of the expected type");
  return attr;
}

}  // namespace

void Node::set_attr(const std::string& name, const std::string& value) const {
  Id type = string_type(H5T_VARIABLE, file_);
  const char* data = value.c_str();
  write_attr(*this, name, type.get(), type.get(), &data);
}

void Node::set_attr(const std::string& name, int64_t value) const {
  write_attr(*this, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void Node::set_attr(const std::string& name, double value) const {
  write_attr(*this, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

bool Node::has_attr(const std::string& name) const {
  return check(H5Aexists(id(), name.c_str()), file_, "look up attribute '" + name + "'") > 0;
}

void Node::remove_attr(const std::string& name) const {
  if (has_attr(name)) check(H5Adelete(id(), name.c_str()), file_, "remove attribute '" + name + "'");
}

std::string Node::attr_string(const std::string& name) const {
  const std::string op = "read attribute '" + name + "'";
  Id type;
  Id attr = open_attr(*this, name, H5T_STRING, H5T_STRING, &type);
  if (check(H5Tis_variable_str(type.get()), file_, op) > 0) {
    Id mem = string_type(H5T_VARIABLE, file_);
    char* data = nullptr;
    check(H5Aread(attr.get(), mem.get(), &data), file_, op);
    std::string value = data != nullptr ? data : "";
    H5free_memory(data);
    return value;
  }
  size_t width = H5Tget_size(type.get());
  std::vector<char> data(width + 1, '\0');
  check(H5Aread(attr.get(), type.get(), data.data()), file_, op);
  return unpad(data.data(), width, H5Tget_strpad(type.get()));
}

int64_t Node::attr_int(const std::string& name) const {
  Id type;
  Id attr = open_attr(*this, name, H5T_INTEGER, H5T_INTEGER, &type);
  int64_t value = 0;
  check(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), file_, "read attribute '" + name + "'");
  return value;
}

double Node::attr_double(const std::string& name) const {
  Id type;
  Id attr = open_attr(*this, name, H5T_FLOAT, H5T_INTEGER, &type);
  double value = 0;
  check(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value), file_, "read attribute '" + name + "'");
  return value;
}

// ---- Group -----------------------------------------------------------------

Kind Group::kind(const std::string& path) const {
  std::string prefix;
  Kind kind = Kind::missing;
  for (const std::string& part : split_path(path, file_)) {
    // An intermediate that is not a group cannot contain anything.
    if (!prefix.empty() && kind != Kind::group) return Kind::missing;
    prefix += (prefix.empty() ? "" : "/") + part;
    if (check(H5Lexists(id(), prefix.c_str(), H5P_DEFAULT), file_, "look up '" + prefix + "'") == 0)
      return Kind::missing;
    Id object(H5Oopen(id(), prefix.c_str(), H5P_DEFAULT));
    if (!object.valid()) {  // a dangling soft or external link
      H5Eclear2(H5E_DEFAULT);
      return Kind::other;
    }
    H5I_type_t type = H5Iget_type(object.get());
    kind = type == H5I_GROUP ? Kind::group : type == H5I_DATASET ? Kind::dataset : Kind::other;
  }
  return kind;
}

Group Group::group(const std::string& path) const {
  return Group(Id(check(H5Gopen2(id(), path.c_str(), H5P_DEFAULT), file_, "open group '" + path + "'")), file_);
}

Group Group::require_group(const std::string& path) const {
  std::string prefix;
  for (const std::string& part : split_path(path, file_)) {
    prefix += (prefix.empty() ? "" : "/") + part;
    Kind k = kind(prefix);
    if (k == Kind::group) continue;
    if (k != Kind::missing)
      throw std::runtime_error("cannot create group '" + prefix + "' in '" + file_ + "': a dataset is in the way");
    // Intermediates are created one by one (not through the link property
    // H5Pset_create_intermediate_group) so that each gets our creation
    // properties, times off included.
    Id gcpl = object_plist(H5P_GROUP_CREATE, file_);
    Id lcpl = link_plist(file_);
    Id created(check(H5Gcreate2(id(), prefix.c_str(), lcpl.get(), gcpl.get(), H5P_DEFAULT), file_,
                     "create group '" + prefix + "'"));
  }
  return group(path);
}

Dataset Group::dataset(const std::string& path) const {
  return Dataset(Id(check(H5Dopen2(id(), path.c_str(), H5P_DEFAULT), file_, "open dataset '" + path + "'")),
                 file_);
}

void Group::remove(const std::string& path) const {
  check(H5Ldelete(id(), path.c_str(), H5P_DEFAULT), file_, "remove '" + path + "'");
}

std::vector<std::string> Group::children() const {
  H5G_info_t info;
  check(H5Gget_info(id(), &info), file_, "list group");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t n = check(H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT),
                      file_, "list group");
    std::string name(static_cast<size_t>(n) + 1, '\0');
    check(H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT),
          file_, "list group");
    name.resize(static_cast<size_t>(n));
    names.push_back(name);
  }
  return names;
}

namespace {

// How many hard links the object `name` in `group` has.
unsigned hard_links(hid_t group, const std::string& name, const std::string& file) {
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  check(H5Oget_info_by_name3(group, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT), file, "look up '" + name + "'");
#else
  H5O_info_t info;
  check(H5Oget_info_by_name2(group, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT), file, "look up '" + name + "'");
#endif
  return info.rc;
}

}  // namespace

std::vector<std::string> Group::tree_children() const {
  std::vector<std::string> names;
  for (const std::string& name : children()) {
    H5L_info_t link;
    check(H5Lget_info(id(), name.c_str(), &link, H5P_DEFAULT), file_, "look up link '" + name + "'");
    if (link.type != H5L_TYPE_HARD) continue;
    if (kind(name) == Kind::group && hard_links(id(), name, file_) > 1) continue;
    names.push_back(name);
  }
  return names;
}

namespace {

// Creates dataset `path` under `group` (making its parent groups), with the
// given types and shape.
Id create_dataset(const Group& group, const std::string& path, hid_t type, hid_t space, hid_t dcpl) {
  auto [parent, leaf] = split_parent(path, group.file());
  std::optional<Group> holder;
  hid_t loc = group.id();
  if (!parent.empty()) {
    holder.emplace(group.require_group(parent));
    loc = holder->id();
  }
  Id lcpl = link_plist(group.file());
  return Id(check(H5Dcreate2(loc, leaf.c_str(), type, space, lcpl.get(), dcpl, H5P_DEFAULT), group.file(),
                 "create dataset '" + path + "'"));
}

}  // namespace

Dataset Group::create_extendible(const std::string& path, Elem elem, hsize_t chunk) const {
  const std::string op = "create dataset '" + path + "'";
  hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  chunk = std::max<hsize_t>(chunk, 1);
  Id space(check(H5Screate_simple(1, &zero, &unlimited), file_, op));
  Id dcpl = object_plist(H5P_DATASET_CREATE, file_);
  check(H5Pset_chunk(dcpl.get(), 1, &chunk), file_, op);
  hid_t type = elem == Elem::f64 ? H5T_IEEE_F64LE : H5T_STD_I64LE;
  return Dataset(create_dataset(*this, path, type, space.get(), dcpl.get()), file_);
}

namespace {

// The byte layout of one table row: where each column sits and its type.
struct RowLayout {
  std::vector<size_t> offsets;
  std::vector<Id> member_types;  // only the string ones are owned; others are predefined
  std::vector<hid_t> types;
  size_t size = 0;
};

RowLayout row_layout(const Table& table, const std::string& file) {
  RowLayout layout;
  for (const Table::Column& column : table.columns) {
    layout.offsets.push_back(layout.size);
    if (std::holds_alternative<std::vector<double>>(column)) {
      layout.types.push_back(H5T_NATIVE_DOUBLE);
      layout.size += sizeof(double);
    } else if (std::holds_alternative<std::vector<int64_t>>(column)) {
      layout.types.push_back(H5T_NATIVE_INT64);
      layout.size += sizeof(int64_t);
    } else {
      size_t width = 1;  // HDF5 has no zero-length fixed strings
      for (const std::string& s : std::get<std::vector<std::string>>(column)) width = std::max(width, s.size());
      layout.member_types.push_back(string_type(width, file));
      layout.types.push_back(layout.member_types.back().get());
      layout.size += width;
    }
  }
  return layout;
}

// Packs the table row by row into `layout`, the buffer H5Dwrite takes.
std::vector<char> pack_rows(const Table& table, const RowLayout& layout, size_t rows) {
  std::vector<char> buffer(rows * layout.size, '\0');
  for (size_t c = 0; c < table.columns.size(); ++c) {
    char* base = buffer.data() + layout.offsets[c];
    std::visit(
        [&](const auto& values) {
          using T = typename std::decay_t<decltype(values)>::value_type;
          for (size_t r = 0; r < rows; ++r) {
            if constexpr (std::is_same_v<T, std::string>)
              std::memcpy(base + r * layout.size, values[r].data(), values[r].size());
            else
              std::memcpy(base + r * layout.size, &values[r], sizeof(T));
          }
        },
        table.columns[c]);
  }
  return buffer;
}

}  // namespace

Dataset Group::write_table(const std::string& path, const Table& table) const {
  const std::string op = "write table '" + path + "'";
  validate(table, "table '" + path + "' for '" + file_ + "'");
  RowLayout layout = row_layout(table, file_);
  // Memory and file types share the packed layout; on little-endian hosts
  // the native types are the file's little-endian ones and no conversion runs.
  Id mem(check(H5Tcreate(H5T_COMPOUND, layout.size), file_, op));
  Id disk(check(H5Tcreate(H5T_COMPOUND, layout.size), file_, op));
  for (size_t c = 0; c < table.columns.size(); ++c) {
    hid_t disk_member = layout.types[c] == H5T_NATIVE_DOUBLE  ? H5T_IEEE_F64LE
                        : layout.types[c] == H5T_NATIVE_INT64 ? H5T_STD_I64LE
                                                              : layout.types[c];
    check(H5Tinsert(mem.get(), table.names[c].c_str(), layout.offsets[c], layout.types[c]), file_, op);
    check(H5Tinsert(disk.get(), table.names[c].c_str(), layout.offsets[c], disk_member), file_, op);
  }
  hsize_t rows = table.rows();
  Id space(check(H5Screate_simple(1, &rows, nullptr), file_, op));
  Id dcpl = object_plist(H5P_DATASET_CREATE, file_);
  Dataset ds(create_dataset(*this, path, disk.get(), space.get(), dcpl.get()), file_);
  if (rows > 0) {
    std::vector<char> buffer = pack_rows(table, layout, rows);
    check(H5Dwrite(ds.id(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()), file_, op);
  }
  return ds;
}

namespace {

// Calls fn(path relative to `group`, dataset) for every dataset below it.
template <class Fn>
void for_each_dataset(const Group& group, const std::string& prefix, const Fn& fn) {
  for (const std::string& child : group.tree_children()) {
    const std::string rel = prefix.empty() ? child : prefix + "/" + child;
    Kind kind = group.kind(child);
    if (kind == Kind::group) for_each_dataset(group.group(child), rel, fn);
    if (kind == Kind::dataset) fn(rel, group.dataset(child));
  }
}

// Re-attaches in `dst` (a fresh copy of `src`) every dimension scale that
// `src` attaches within itself, after dropping the copied, dangling links.
// Scales outside the copied group cannot be followed and stay detached.
void relink_scales(const Group& src, const Group& dst) {
  for_each_dataset(dst, "", [](const std::string&, const Dataset& ds) {
    ds.remove_attr("DIMENSION_LIST");
    ds.remove_attr("REFERENCE_LIST");
  });
  const std::string root = src.path() + "/";
  for_each_dataset(src, "", [&](const std::string& rel, const Dataset& ds) {
    if (ds.is_scale()) return;
    const int rank = ds.rank();
    for (int dim = 0; dim < rank; ++dim) {
      for (const std::string& scale : ds.scale_paths(static_cast<unsigned>(dim))) {
        if (scale.compare(0, root.size(), root) != 0) continue;
        dst.dataset(rel).attach_scale(dst.dataset(scale.substr(root.size())), static_cast<unsigned>(dim));
      }
    }
  });
}

}  // namespace

void Group::copy(const std::string& src_path, const Group& dst, const std::string& dst_path) const {
  const std::string op = "copy '" + src_path + "' from '" + file_ + "' to '" + dst_path + "'";
  if (kind(src_path) != Kind::group) throw std::runtime_error("cannot " + op + ": not a group");
  auto [parent, leaf] = split_parent(dst_path, dst.file());
  std::optional<Group> holder;
  hid_t loc = dst.id();
  if (!parent.empty()) {
    holder.emplace(dst.require_group(parent));
    loc = holder->id();
  }
  Id ocpypl = make_plist(H5P_OBJECT_COPY, dst.file());
  Id lcpl = link_plist(dst.file());
  check(H5Ocopy(id(), src_path.c_str(), loc, leaf.c_str(), ocpypl.get(), lcpl.get()), dst.file(), op);
  relink_scales(group(src_path), dst.group(dst_path));
}

// ---- File ------------------------------------------------------------------

File File::create(const std::string& path) {
  silence_hdf5_errors();
  Id fcpl = object_plist(H5P_FILE_CREATE, path);  // the root group, times off
  Id fapl = access_plist(path);
  Id id(check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), path, "create file"));
  return File(std::move(id), path);
}

File File::open(const std::string& path, bool writable) {
  silence_hdf5_errors();
  Id fapl = access_plist(path);
  Id id(check(H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get()), path, "open file"));
  return File(std::move(id), path);
}

void File::flush() const { check(H5Fflush(id(), H5F_SCOPE_GLOBAL), file_, "flush file"); }

void File::close() { check(id_.reset(), file_, "close file (objects still open?)"); }

// ---- Dataset ---------------------------------------------------------------

std::string Node::path() const {
  ssize_t n = check(H5Iget_name(id(), nullptr, 0), file_, "get dataset name");
  std::string name(static_cast<size_t>(n) + 1, '\0');
  check(H5Iget_name(id(), name.data(), name.size()), file_, "get dataset name");
  name.resize(static_cast<size_t>(n));
  return name;
}

int Dataset::rank() const {
  Id space(check(H5Dget_space(id()), file_, "get dataspace"));
  return check(H5Sget_simple_extent_ndims(space.get()), file_, "get rank");
}

hsize_t Dataset::size() const {
  Id space(check(H5Dget_space(id()), file_, "get dataspace"));
  if (check(H5Sget_simple_extent_ndims(space.get()), file_, "get rank") != 1)
    throw std::runtime_error("dataset '" + path() + "' in '" + file_ + "' is not 1-D");
  hsize_t n = 0;
  check(H5Sget_simple_extent_dims(space.get(), &n, nullptr), file_, "get extent");
  return n;
}

H5T_class_t Dataset::type_class() const {
  Id type(check(H5Dget_type(id()), file_, "get dataset type"));
  return H5Tget_class(type.get());
}

void Dataset::append_raw(hid_t mem_type, const void* data, hsize_t n) const {
  if (n == 0) return;
  const std::string op = "append to '" + path() + "'";
  hsize_t start = size();
  hsize_t grown = start + n;
  check(H5Dset_extent(id(), &grown), file_, op);
  Id file_space(check(H5Dget_space(id()), file_, op));
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &n, nullptr), file_, op);
  Id mem_space(check(H5Screate_simple(1, &n, nullptr), file_, op));
  check(H5Dwrite(id(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data), file_, op);
}

void Dataset::append(const std::vector<double>& values) const {
  append_raw(H5T_NATIVE_DOUBLE, values.data(), values.size());
}

void Dataset::append(const std::vector<int64_t>& values) const {
  append_raw(H5T_NATIVE_INT64, values.data(), values.size());
}

template <class T>
std::vector<T> Dataset::read_all(hid_t mem_type) const {
  std::vector<T> values(size());
  if (!values.empty())
    check(H5Dread(id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), file_, "read '" + path() + "'");
  return values;
}

std::vector<double> Dataset::read_doubles() const {
  H5T_class_t cls = type_class();
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    throw std::runtime_error("dataset '" + path() + "' in '" + file_ + "' is not numeric");
  return read_all<double>(H5T_NATIVE_DOUBLE);
}

std::vector<int64_t> Dataset::read_int64s() const {
  if (type_class() != H5T_INTEGER)
    throw std::runtime_error("dataset '" + path() + "' in '" + file_ + "' is not integer");
  return read_all<int64_t>(H5T_NATIVE_INT64);
}

void Dataset::make_scale(const std::string& name) const {
  check(H5DSset_scale(id(), name.c_str()), file_, "make '" + path() + "' a dimension scale");
}

bool Dataset::is_scale() const { return check(H5DSis_scale(id()), file_, "check dimension scale") > 0; }

namespace {

// hdf5_hl 1.10.8's H5DSattach_scale reads a CLASS attribute into a buffer one
// byte longer than the string, leaves that byte unset and strlen()s it: a
// CLASS with no NUL among its bytes (a shard edited with h5py or PyTables, a
// damaged one) is read past the buffer's end. Such a dataset is refused first;
// ours have no CLASS, or the NUL-terminated one H5DSset_scale writes.
void check_class_readable(const Node& ds, const std::string& op) {
  if (!ds.has_attr("CLASS")) return;
  Id type;
  Id attr = open_attr(ds, "CLASS", H5T_STRING, H5T_STRING, &type);  // a scalar string, or an error naming the file
  bool terminated = false;
  if (H5Tis_variable_str(type.get()) == 0) {
    std::vector<char> bytes(H5Tget_size(type.get()));
    check(H5Aread(attr.get(), type.get(), bytes.data()), ds.file(), op);
    terminated = std::find(bytes.begin(), bytes.end(), '\0') != bytes.end();
  }
  if (!terminated)
    throw std::runtime_error("cannot " + op + " in '" + ds.file() + "': attribute CLASS of '" + ds.path() +
                             "' is not a NUL-terminated string");
}

}  // namespace

void Dataset::attach_scale(const Dataset& scale, unsigned dim) const {
  const std::string op = "attach scale '" + scale.path() + "' to '" + path() + "'";
  check_class_readable(*this, op);
  check_class_readable(scale, op);
  check(H5DSattach_scale(id(), scale.id(), dim), file_, op);
}

namespace {

// hdf5_hl 1.10.8's H5DSiterate_scales reads DIMENSION_LIST with whatever type
// it has into room for one variable-length list per dimension, then follows
// the lists' pointers: an attribute of another type or size (a damaged file,
// another writer) makes it write past that room or follow garbage. So it must
// first be what H5DSattach_scale writes: object references, a list per dimension.
void check_dimension_list(const Dataset& ds, const std::string& op) {
  if (!ds.has_attr("DIMENSION_LIST")) return;
  Id attr(check(H5Aopen(ds.id(), "DIMENSION_LIST", H5P_DEFAULT), ds.file(), op));
  Id type(check(H5Aget_type(attr.get()), ds.file(), op));
  Id space(check(H5Aget_space(attr.get()), ds.file(), op));
  bool ok = H5Tget_class(type.get()) == H5T_VLEN && H5Sget_simple_extent_ndims(space.get()) == 1 &&
            H5Sget_simple_extent_npoints(space.get()) == ds.rank();
  if (ok) {
    Id base(check(H5Tget_super(type.get()), ds.file(), op));
    ok = H5Tequal(base.get(), H5T_STD_REF_OBJ) > 0;
  }
  if (!ok)
    throw std::runtime_error("cannot " + op + " in '" + ds.file() +
                             "': its DIMENSION_LIST attribute is not a list of object references per dimension");
}

}  // namespace

std::vector<std::string> Dataset::scale_paths(unsigned dim) const {
  const std::string op = "list dimension scales of '" + path() + "'";
  check_dimension_list(*this, op);
  std::vector<std::string> paths;
  check(H5DSiterate_scales(id(), dim, nullptr, collect_scale, &paths), file_, op);
  return paths;
}

Table Dataset::read_table() const {
  const std::string where = "'" + path() + "' in '" + file_ + "'";
  const std::string op = "read table '" + path() + "'";
  Id type(check(H5Dget_type(id()), file_, op));
  if (H5Tget_class(type.get()) != H5T_COMPOUND) throw std::runtime_error("dataset " + where + " is not a table");
  const size_t rows = size();
  Id space(check(H5Dget_space(id()), file_, op));
  Table table;
  int members = check(H5Tget_nmembers(type.get()), file_, op);
  for (int m = 0; m < members; ++m) {
    char* raw_name = H5Tget_member_name(type.get(), static_cast<unsigned>(m));
    if (raw_name == nullptr) fail(file_, op);
    std::string name = raw_name;
    H5free_memory(raw_name);
    Id member(check(H5Tget_member_type(type.get(), static_cast<unsigned>(m)), file_, op));
    const std::string col_op = op + " column '" + name + "'";
    switch (H5Tget_class(member.get())) {
      case H5T_FLOAT: {
        Id mem = single_member(name, H5T_NATIVE_DOUBLE, sizeof(double), file_);
        std::vector<double> values(rows);
        if (rows) check(H5Dread(id(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), file_, col_op);
        table.add(name, std::move(values));
        break;
      }
      case H5T_INTEGER: {
        Id mem = single_member(name, H5T_NATIVE_INT64, sizeof(int64_t), file_);
        std::vector<int64_t> values(rows);
        if (rows) check(H5Dread(id(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), file_, col_op);
        table.add(name, std::move(values));
        break;
      }
      case H5T_STRING: {
        std::vector<std::string> values;
        values.reserve(rows);
        if (check(H5Tis_variable_str(member.get()), file_, col_op) > 0) {
          Id str = string_type(H5T_VARIABLE, file_);
          Id mem = single_member(name, str.get(), sizeof(char*), file_);
          std::vector<char*> data(rows, nullptr);
          if (rows) {
            check(H5Dread(id(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), file_, col_op);
            VlenReclaim reclaim{mem.get(), space.get(), data.data()};
            for (char* s : data) values.emplace_back(s != nullptr ? s : "");
          }
        } else {
          size_t width = H5Tget_size(member.get());
          Id mem = single_member(name, member.get(), width, file_);
          std::vector<char> data(rows * width);
          if (rows) check(H5Dread(id(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), file_, col_op);
          H5T_str_t pad = H5Tget_strpad(member.get());
          for (size_t r = 0; r < rows; ++r) values.push_back(unpad(data.data() + r * width, width, pad));
        }
        table.add(name, std::move(values));
        break;
      }
      default:
        throw std::runtime_error("column '" + name + "' of " + where + " has an unsupported type");
    }
  }
  return table;
}

std::string library_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace zl::h5
