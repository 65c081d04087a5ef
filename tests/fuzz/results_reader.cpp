// libFuzzer harness (issue 16): the HDF5 results reader. The input drives
// structure, not bytes: it builds 1-3 RunRecords (odd run ids, NaN metrics,
// curves and tables of mismatched lengths), writes each with write_shard, then
// damages the shards through the HDF5 API (attributes deleted or of another
// type, /index replaced, a curve or table of the wrong rank or type, links and
// groups where none belong, a truncated file, a stray file in runs/). Raw
// garbage would only exercise HDF5's own parser, which is not ours to fix.
// Then read_index, read_provenance, read_shard, read_run and the claims on
// every shard, merge_shards, and the claims on the merged file. Each call must
// succeed or throw std::runtime_error or std::invalid_argument whose message
// names the file it read (write_shard may refuse a bad record with either,
// naming what is wrong); a crash, undefined behaviour, a leak, another
// exception or a message without the file is a finding. ZL_FUZZ_TRACE and
// ZL_FUZZ_KEEP (below) retell what an input did.
#include <fuzzer/FuzzedDataProvider.h>
#include <hdf5.h>
#include <hdf5_hl.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include "sim/claims/claims.h"
#include "sim/h5.h"
#include "sim/results.h"

namespace {

namespace fs = std::filesystem;
using Fdp = FuzzedDataProvider;
using zl::h5::Id;

// ---- the scratch folder ------------------------------------------------------

// One per process, on tmpfs where there is one: every shard and the merge are
// fsynced, which costs milliseconds per file on a disk. Leaked on purpose, so
// that the exit handler that removes it never sees it destroyed.
const fs::path& scratch() {
  static const fs::path* dir = [] {
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string pattern = (base / "zl_fuzz_results_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    return new fs::path(pattern);
  }();
  return *dir;
}

void remove_scratch() {
  std::error_code ec;
  fs::remove_all(scratch(), ec);
}

// ---- tracing, to retell a finding -------------------------------------------

// With ZL_FUZZ_TRACE set, says what an input built and broke: a finding is
// then a story one can retell with h5py.
void trace(const std::string& what) {
  static const bool on = std::getenv("ZL_FUZZ_TRACE") != nullptr;
  if (on) std::fprintf(stderr, "  %s\n", what.c_str());
}

// With ZL_FUZZ_KEEP=DIR, the damaged shards are copied there before reading,
// to look at with h5dump or h5py.
void keep(const fs::path& runs) {
  static const char* dir = std::getenv("ZL_FUZZ_KEEP");
  if (dir == nullptr) return;
  fs::remove_all(dir);
  fs::copy(runs, dir, fs::copy_options::recursive);
}

std::string shown(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\0') out += "\\0";
    else out += c;
  }
  return (out.size() > 80 ? out.substr(0, 80) + "...(" + std::to_string(s.size()) + " bytes)" : out) + "'";
}

// ---- checking a reader's errors ------------------------------------------------

[[noreturn]] void finding(const char* what, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", what, why.c_str());
  std::abort();
}

// Runs `call`: true if it returned; an error must name one of `files` (when
// any are given).
bool expect_clean(const char* what, const std::vector<std::string>& files, const std::function<void()>& call) {
  std::string message;
  try {
    call();
    trace(std::string(what) + ": ok");
    return true;
  } catch (const std::runtime_error& e) {
    message = e.what();
  } catch (const std::invalid_argument& e) {
    message = e.what();
  } catch (const std::exception& e) {
    finding(what, std::string("not a runtime_error or invalid_argument (") + typeid(e).name() + "): " + e.what());
  }
  trace(std::string(what) + ": " + shown(message));
  if (message.empty()) finding(what, "an error without a message");
  if (files.empty()) return false;
  for (const std::string& file : files)
    if (message.find(file) != std::string::npos) return false;
  finding(what, "an error without the file's name: " + message);
}

// ---- fuzzed values -----------------------------------------------------------

std::string with_nul(const char* a, const char* b) { return std::string(a) + '\0' + b; }

// Names the schema and the registry below use, so that damage and claims meet
// real objects as often as odd ones.
const std::vector<std::string> kNames = {"a", "m", "n", "x", "y", "t", "seed", "run_id", "status", "step",
                                         "train/loss", "train/lr", "train/val_loss", "eval/items", "t/step", "",
                                         ".", "..", "/", "a/", "a//b", "/a", with_nul("x", "y")};
const std::vector<std::string> kVariants = {"a", "b", "c", ""};
const std::vector<std::string> kStatus = {"complete", "failed", ""};
const std::vector<std::string> kAttrs = {"schema_version", "git_commit", "git_dirty", "command_line", "created_utc",
                                         "torch_version", "hdf5_version", "threads", "zerolayer_version", "config",
                                         "status", "error", "DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME"};

template <class T>
const T& pick(Fdp& in, const std::vector<T>& from) {
  return from[in.ConsumeIntegralInRange<size_t>(0, from.size() - 1)];
}

// A common name, a long run of one byte, or arbitrary bytes (NULs, slashes).
std::string pick_string(Fdp& in, const std::vector<std::string>& common, size_t max_len) {
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: return pick(in, common);
    case 1: return std::string(in.ConsumeIntegralInRange<size_t>(0, max_len), in.ConsumeIntegral<char>());
    default: return in.ConsumeRandomLengthString(64);
  }
}

double pick_double(Fdp& in) {
  switch (in.ConsumeIntegralInRange(0, 4)) {
    case 0: return std::numeric_limits<double>::quiet_NaN();
    case 1: return in.ConsumeBool() ? HUGE_VAL : -HUGE_VAL;
    case 2: return in.ConsumeIntegralInRange(-3, 3);
    default: return in.ConsumeFloatingPoint<double>();
  }
}

// Either a config the registry's selectors can match or arbitrary text (a
// long one tests the dense attribute storage of a config over 64 KiB).
std::string pick_config(Fdp& in) {
  if (in.ConsumeBool()) return pick_string(in, kNames, 70000);
  return "variant = " + pick(in, kVariants) + "\nseed = " + std::to_string(in.ConsumeIntegral<int8_t>()) +
         "\n\n[x]\nk = " + std::to_string(in.ConsumeIntegralInRange(0, 3)) + "\n";
}

// Steps possibly unsorted, repeated, and not as many as the values.
zl::Curve pick_curve(Fdp& in) {
  zl::Curve c;
  const size_t n = in.ConsumeIntegralInRange<size_t>(0, 6);
  const size_t m = in.ConsumeIntegralInRange(0, 7) == 0 ? in.ConsumeIntegralInRange<size_t>(0, 6) : n;
  for (size_t i = 0; i < n; ++i) c.step.push_back(in.ConsumeIntegralInRange<int64_t>(-2, 8));
  for (size_t i = 0; i < m; ++i) c.value.push_back(pick_double(in));
  if (in.ConsumeIntegralInRange(0, 3) == 0) c.axis = pick_string(in, kNames, 16);
  return c;
}

zl::Table::Column pick_column(Fdp& in, size_t rows) {
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0: {
      std::vector<double> v;
      for (size_t r = 0; r < rows; ++r) v.push_back(pick_double(in));
      return v;
    }
    case 1: {
      std::vector<int64_t> v;
      for (size_t r = 0; r < rows; ++r) v.push_back(in.ConsumeIntegral<int64_t>());
      return v;
    }
    default: {
      std::vector<std::string> v;
      for (size_t r = 0; r < rows; ++r) v.push_back(pick_string(in, kNames, 32));
      return v;
    }
  }
}

// Filled directly, not through Table::add, so that write_shard meets bad
// tables too (empty or repeated names, columns of other lengths).
zl::Table pick_table(Fdp& in) {
  zl::Table t;
  const size_t cols = in.ConsumeIntegralInRange<size_t>(0, 3), rows = in.ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t c = 0; c < cols; ++c) {
    t.names.push_back(pick_string(in, kNames, 16));
    t.columns.push_back(pick_column(in, in.ConsumeIntegralInRange(0, 7) == 0 ? rows + 1 : rows));
  }
  return t;
}

zl::RunRecord pick_run(Fdp& in) {
  zl::RunRecord r;
  r.run_id = pick_string(in, kNames, 300);
  r.train_id = pick_string(in, kNames, 16);
  r.variant = pick(in, kVariants);
  r.setting = pick_string(in, kNames, 16);
  r.seed = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 3) : in.ConsumeIntegral<int64_t>();
  r.status = pick(in, kStatus);
  r.error = pick_string(in, kNames, 16);
  r.config_ini = pick_config(in);
  r.started_utc = pick_string(in, kNames, 16);
  for (size_t i = in.ConsumeIntegralInRange(0, 4); i > 0; --i) r.metrics[pick_string(in, kNames, 16)] = pick_double(in);
  for (size_t i = in.ConsumeIntegralInRange(0, 3); i > 0; --i) r.curves[pick_string(in, kNames, 16)] = pick_curve(in);
  for (size_t i = in.ConsumeIntegralInRange(0, 2); i > 0; --i) r.tables[pick_string(in, kNames, 16)] = pick_table(in);
  return r;
}

// ---- damage, through the HDF5 C API --------------------------------------------
// A step HDF5 refuses is simply not taken: the damage is the harness's tool,
// not what is under test.

herr_t collect_link(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

// Every link path in the file, and "." for the root.
std::vector<std::string> all_paths(hid_t file) {
  std::vector<std::string> paths = {"."};
  H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, collect_link, &paths);
  return paths;
}

// Intermediate groups are made as needed, so that damage can land anywhere.
Id intermediate_lcpl() {
  Id lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  return lcpl;
}

// A scalar, array or empty attribute of a type the reader may not expect.
void put_attr(hid_t obj, const std::string& name, Fdp& in) {
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  const int shape = in.ConsumeIntegralInRange(0, 5);
  hsize_t two = 2;
  Id space(shape == 4 ? H5Screate_simple(1, &two, nullptr) : H5Screate(shape == 5 ? H5S_NULL : H5S_SCALAR));
  Id type;
  switch (in.ConsumeIntegralInRange(0, 4)) {
    case 0: type = Id(H5Tcopy(H5T_STD_I64LE)); break;
    case 1: type = Id(H5Tcopy(H5T_IEEE_F32LE)); break;
    case 2: type = Id(H5Tcopy(H5T_STD_U8LE)); break;
    default:
      type = Id(H5Tcopy(H5T_C_S1));
      H5Tset_size(type.get(), in.ConsumeIntegralInRange<size_t>(1, 8));
  }
  Id attr(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid() || shape == 5) return;
  std::string bytes = in.ConsumeBytesAsString(2 * H5Tget_size(type.get()));
  bytes.resize(2 * H5Tget_size(type.get()));
  H5Awrite(attr.get(), type.get(), bytes.data());
}

// A compound type with an unsupported, a variable-length or an odd member.
Id odd_compound(Fdp& in) {
  Id type(H5Tcreate(H5T_COMPOUND, 16));
  H5Tinsert(type.get(), "x", 0, H5T_NATIVE_DOUBLE);
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: {
      Id e(H5Tenum_create(H5T_NATIVE_INT));
      int v = 0;
      H5Tenum_insert(e.get(), "zero", &v);
      H5Tinsert(type.get(), "e", 8, e.get());
      break;
    }
    case 1: {
      hsize_t two = 2;
      Id a(H5Tarray_create2(H5T_NATIVE_INT, 1, &two));
      H5Tinsert(type.get(), "a", 8, a.get());
      break;
    }
    case 2: {
      Id s(H5Tcopy(H5T_C_S1));
      H5Tset_size(s.get(), H5T_VARIABLE);
      H5Tinsert(type.get(), pick_string(in, kNames, 8).c_str(), 8, s.get());
      break;
    }
    default: H5Tinsert(type.get(), pick_string(in, kNames, 8).c_str(), 8, H5T_NATIVE_INT32);
  }
  return type;
}

// Variable-length strings need pointers to text, not raw bytes.
bool has_vlen(hid_t type) {
  return H5Tdetect_class(type, H5T_VLEN) > 0 || (H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0) ||
         (H5Tget_class(type) == H5T_COMPOUND && H5Tget_nmembers(type) > 1 && [&] {
           Id member(H5Tget_member_type(type, 1));
           return H5Tis_variable_str(member.get()) > 0;
         }());
}

// A dataset of a rank or type a curve, a step axis or a table is not.
void put_dataset(hid_t file, const std::string& path, Fdp& in) {
  hsize_t dims[2] = {in.ConsumeIntegralInRange<hsize_t>(0, 3), 2};
  int rank = in.ConsumeIntegralInRange(0, 2);
  Id type;
  switch (in.ConsumeIntegralInRange(0, 4)) {
    case 0: type = Id(H5Tcopy(in.ConsumeBool() ? H5T_IEEE_F64LE : H5T_IEEE_F32LE)); break;
    case 1: type = Id(H5Tcopy(in.ConsumeBool() ? H5T_STD_I64LE : H5T_STD_U8LE)); break;
    case 2:
      type = Id(H5Tcopy(H5T_C_S1));
      H5Tset_size(type.get(), in.ConsumeBool() ? H5T_VARIABLE : 4);
      break;
    default: type = odd_compound(in);
  }
  Id space(rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims, nullptr));
  Id lcpl = intermediate_lcpl();
  Id ds(H5Dcreate2(file, path.c_str(), type.get(), space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT));
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  if (!ds.valid() || points <= 0 || has_vlen(type.get())) return;  // vlen members stay unwritten (empty)
  std::string bytes = in.ConsumeBytesAsString(points * H5Tget_size(type.get()));
  bytes.resize(points * H5Tget_size(type.get()));
  H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
}

// /index read back, changed the way a hand edit or another writer might, and
// written again.
void perturb_index(const zl::h5::File& file, Fdp& in) {
  zl::Table t = file.dataset("index").read_table();
  if (t.names.empty()) return;
  const size_t c = in.ConsumeIntegralInRange<size_t>(0, t.names.size() - 1);
  switch (in.ConsumeIntegralInRange(0, 4)) {
    case 0:
      t.names.erase(t.names.begin() + c);
      t.columns.erase(t.columns.begin() + c);
      break;
    case 1: t.columns[c] = pick_column(in, t.rows()); break;
    case 2:
      for (auto& column : t.columns) std::visit([](auto& v) { v.clear(); }, column);
      break;
    case 3:
      for (auto& column : t.columns)
        std::visit(
            [](auto& v) {
              const auto rows = v;  // inserting a vector's own range into it is undefined
              v.insert(v.end(), rows.begin(), rows.end());
            },
            column);
      break;
    default: t.add(pick_string(in, kNames, 16), pick_column(in, t.rows()));
  }
  file.remove("index");
  file.write_table("index", t);
}

// A soft link (to anything, dangling, or an ancestor: a cycle by name), a hard
// link to a group (a real cycle when to an ancestor) or an external link.
// Not a hard link to the root: merge would copy it with the run group, and
// H5Ocopy in libhdf5 before 1.14.4 crashes copying an object whose
// attributes are variable-length strings stored densely (more than 8, as the
// root's provenance is): HDF5 issue 2414, reported with issue 16.
void put_link(hid_t file, const std::string& target, const std::string& where, Fdp& in) {
  Id lcpl = intermediate_lcpl();
  const int kind = in.ConsumeIntegralInRange(0, 2);
  H5O_info_t info, root;
  const bool group = H5Oget_info_by_name2(file, target.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 &&
                     H5Oget_info2(file, &root, H5O_INFO_BASIC) >= 0 && info.type == H5O_TYPE_GROUP &&
                     info.addr != root.addr;  // by address: a soft link may lead to the root
  if (kind == 1 && group)
    H5Lcreate_hard(file, target.c_str(), file, where.c_str(), lcpl.get(), H5P_DEFAULT);
  else if (kind == 2)
    H5Lcreate_external("missing.h5", "/x", file, where.c_str(), lcpl.get(), H5P_DEFAULT);
  else
    H5Lcreate_soft(("/" + target).c_str(), file, where.c_str(), lcpl.get(), H5P_DEFAULT);
}

herr_t note_dataset(hid_t, const char* name, const H5O_info_t* info, void* out) {
  if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

// The file addresses of the step datasets: those some DIMENSION_LIST refers to
// (one that damage made unreadable refers to nothing, for HDF5 as for us).
std::set<haddr_t> step_addresses(const zl::h5::File& file) {
  std::vector<std::string> datasets;
  H5Ovisit2(file.id(), H5_INDEX_NAME, H5_ITER_INC, note_dataset, &datasets, H5O_INFO_BASIC);
  std::set<haddr_t> steps;
  for (const std::string& path : datasets) {
    try {
      const zl::h5::Dataset ds = file.dataset(path);
      for (int dim = 0; dim < ds.rank(); ++dim)
        for (const std::string& scale : ds.scale_paths(static_cast<unsigned>(dim))) {
          H5O_info_t info;
          if (H5Oget_info_by_name2(file.id(), scale.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0)
            steps.insert(info.addr);
        }
    } catch (const std::exception&) {
    }
  }
  return steps;
}

// libhdf5 1.10.8 leaks an object header chunk (LeakSanitizer: 56 bytes under
// H5O_protect) when it fails to load an object header, which it does when a
// DIMENSION_LIST reference points at a step dataset that was deleted and
// whose space was then reused or cut off (see the report of issue 16). So a
// step dataset goes only with its group, curves and all: references never
// dangle, and LeakSanitizer stays strict for our code. (Hard links go only to
// groups, for the same reason: a curve linked elsewhere would outlive its
// group's step dataset.)
bool is_step_dataset(const zl::h5::File& file, const std::string& path) {
  H5O_info_t info;
  return H5Lexists(file.id(), path.c_str(), H5P_DEFAULT) > 0 &&
         H5Oget_info_by_name2(file.id(), path.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 &&
         step_addresses(file).count(info.addr) != 0;
}

// Unlinks `path`, or its whole group if it is a step dataset.
void unlink_object(const zl::h5::File& file, const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string doomed = is_step_dataset(file, path) && slash != std::string::npos ? path.substr(0, slash) : path;
  H5Ldelete(file.id(), doomed.c_str(), H5P_DEFAULT);
}

// One damaging step at a path the file has (or a new name below one).
void damage_once(const zl::h5::File& file, Fdp& in) {
  const std::vector<std::string> paths = all_paths(file.id());
  const std::string& at = pick(in, paths);
  const std::string below = (at == "." ? "" : at + "/") + pick_string(in, kNames, 16);
  const int step = in.ConsumeIntegralInRange(0, 6);
  trace("damage " + std::to_string(step) + " at " + shown(at) + ", below: " + shown(below));
  switch (step) {
    case 0: {
      Id obj(H5Oopen(file.id(), at.c_str(), H5P_DEFAULT));
      if (obj.valid()) H5Adelete(obj.get(), pick_string(in, kAttrs, 16).c_str());
      break;
    }
    case 1: {
      Id obj(H5Oopen(file.id(), at.c_str(), H5P_DEFAULT));
      if (obj.valid()) put_attr(obj.get(), pick_string(in, kAttrs, 16), in);
      break;
    }
    case 2: unlink_object(file, at); break;
    case 3: {
      const std::string& where = in.ConsumeBool() ? at : below;
      unlink_object(file, where);
      put_dataset(file.id(), where, in);
      break;
    }
    case 4: {
      Id lcpl = intermediate_lcpl();
      Id group(H5Gcreate2(file.id(), below.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT));
      break;
    }
    case 5: perturb_index(file, in); break;
    default: put_link(file.id(), pick(in, paths), below, in);
  }
}

void damage(const std::string& path, Fdp& in) {
  const int steps = in.ConsumeIntegralInRange(0, 4);
  if (steps == 0) return;
  try {
    zl::h5::File file = zl::h5::File::open(path, true);
    for (int i = 0; i < steps; ++i) damage_once(file, in);
  } catch (const std::exception&) {
  }
  H5Eclear2(H5E_DEFAULT);
  // A crashed copy: HDF5 notices a short file at open, before parsing it.
  if (in.ConsumeIntegralInRange(0, 15) == 0)
    fs::resize_file(path, in.ConsumeIntegralInRange<uintmax_t>(0, fs::file_size(path)));
}

// What else lands in runs/: an empty or non-HDF5 file named .h5 (merge must
// say which), a folder named .h5 and a .h5.tmp still being written (skipped).
void put_stray(const fs::path& runs, Fdp& in) {
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 0: std::ofstream(runs / "empty.h5"); break;
    case 1: std::ofstream(runs / "text.h5") << "not HDF5: " << in.ConsumeIntegral<uint32_t>(); break;
    case 2: fs::create_directories(runs / "folder.h5"); break;
    case 3: std::ofstream(runs / "busy.h5.tmp") << "half written"; break;
    default: break;
  }
}

// ---- reading -------------------------------------------------------------------

// A registry that reads metrics, config keys, the seed pairing and a per-run
// table, so that the claims touch every part of a run the reader returns.
const std::vector<zl::ClaimSpec>& registry() {
  static const std::vector<zl::ClaimSpec> specs = zl::parse_registry(
      "[claim V]\nsource = fuzz\nclaim = value\nmetric = m\ncomparison = value\ntreatment = variant=a\n"
      "claimed = 1\ntolerance = 0.5\n\n"
      "[claim R]\nsource = fuzz\nclaim = relative\nmetric = m / (n + 1)\ncomparison = relative\n"
      "treatment = variant=a\ncontrol = variant=b\nregion = 0 .. inf\n\n"
      "[claim A]\nsource = fuzz\nclaim = argmin\nmetric = m\ncomparison = argmin\nover = x.k\n"
      "treatment = variant=a|b\nclaimed = 1\ntolerance = x2\n\n"
      "[claim T]\nsource = fuzz\nclaim = trend\ncomparison = trend\ntable = t\nx = x\ny = y\n"
      "treatment = variant=a\nclaimed = 0\ntolerance = 1\n",
      "fuzz.registry");
  return specs;
}

// The claims as `zerolayer claims` computes them; with `write`, the table
// goes into the file as well.
void claims(const std::string& file, Fdp& in, bool write) {
  zl::ClaimsOptions options;
  static const std::vector<std::string> kMethods = {"t", "percentile", "bca", "auto"};
  options.method = pick(in, kMethods);
  options.calibration_studies = 8;  // the method choice runs, at a fuzzing pace
  const std::vector<zl::ClaimResult> results = zl::evaluate_claims(registry(), zl::load_claims_input(file), options);
  const zl::Table table = zl::claims_table(results);
  if (!write) return;
  zl::write_table(file, "claims", table);
  zl::write_table(file, "claims_seeds", zl::claim_seeds_table(results));
}

void read_everything(const std::string& file, Fdp& in, bool write_claims) {
  expect_clean("read_index", {file}, [&] { zl::read_index(file); });
  expect_clean("read_provenance", {file}, [&] { zl::read_provenance(file); });
  expect_clean("read_run", {file}, [&] {
    for (const zl::IndexRow& row : zl::read_index(file)) {
      auto id = row.strings.find("run_id");
      if (id != row.strings.end()) zl::read_run(file, id->second);
    }
  });
  expect_clean("claims", {file}, [&] { claims(file, in, write_claims); });
}

std::vector<std::string> files_in(const fs::path& runs) {
  std::vector<std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(runs)) files.push_back(entry.path().string());
  return files;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // HDF5 takes a 1 MiB conversion buffer for every table column it reads and
  // a metadata cache of about 0.5 MiB for every file it opens, and past its
  // free lists' default limits gives them back to malloc; under ASan each is
  // then a fresh mapping, and an input took seconds. Larger limits keep them
  // for the next read (HDF5's own memory, not what it reads or returns).
  H5set_free_list_limits(16 << 20, 4 << 20, 16 << 20, 4 << 20, 16 << 20, 4 << 20);
  scratch();
  std::atexit(remove_scratch);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const fs::path runs = scratch() / "runs";
  const std::string merged = (scratch() / "results.h5").string();
  fs::remove_all(runs);
  fs::remove(merged);
  fs::create_directories(runs);

  for (int i = in.ConsumeIntegralInRange(1, 3); i > 0; --i) {
    const std::string shard = (runs / ("s" + std::to_string(i) + ".h5")).string();
    const zl::RunRecord run = pick_run(in);
    trace(shard + ": run_id " + shown(run.run_id));
    for (const auto& [name, curve] : run.curves)
      trace("curve " + shown(name) + " on " + shown(curve.axis) + ", " + std::to_string(curve.step.size()) + " steps");
    for (const auto& [name, table] : run.tables) trace("table " + shown(name));
    // write_shard refuses a bad record (a bad run_id, clashing names) by
    // naming the run or the object, not always the file: any message will do.
    if (!expect_clean("write_shard", {}, [&] { zl::write_shard(shard, zl::Provenance{}, run); }))
      continue;
    damage(shard, in);
  }
  put_stray(runs, in);
  keep(runs);

  for (const std::string& file : files_in(runs)) {
    if (!fs::is_regular_file(file) || fs::path(file).extension() != ".h5") continue;
    expect_clean("read_shard", {file}, [&] { zl::read_shard(file); });
    read_everything(file, in, false);
  }
  std::vector<std::string> named = files_in(runs);
  named.push_back(merged);
  if (expect_clean("merge_shards", named, [&] { zl::merge_shards(scratch().string(), merged, zl::Provenance{}); }))
    read_everything(merged, in, true);
  return 0;
}
