"""The results file schema (docs/results_schema.md), checked and loaded.

`check_results_file(path)` is what the tests and notebooks call to make sure a
file is one they can read; the `load_*` helpers turn its parts into pandas
objects with text columns decoded (h5py hands fixed-length strings back as
bytes).
"""
import h5py
import numpy as np
import pandas as pd

SCHEMA_VERSION = 1

ROOT_ATTRS = (
    "schema_version", "git_commit", "git_dirty", "command_line", "created_utc",
    "torch_version", "hdf5_version", "cuda_version", "cpu_model", "gpu_model",
    "host", "threads", "zerolayer_version",
)
_INTEGER_ROOT_ATTRS = ("schema_version", "git_dirty", "threads")

# The fixed leading columns of /index, in order; one float64 column per
# metric follows.
INDEX_COLUMNS = (
    "run_id", "train_id", "variant", "setting", "seed", "status", "error",
    "started_utc", "finished_utc",
)
_STRING_COLUMNS = tuple(c for c in INDEX_COLUMNS if c != "seed")
# Written after them since 2026-12-07: the commit each run ran at and the one
# that trained its model (docs/results_schema.md). Older files have neither.
LATER_INDEX_COLUMNS = ("commit", "train_commit")

# docs/design.md#runs-identity-and-checkpoints: every run that trained has these, with steps as dimension scales.
REQUIRED_CURVES = ("train/loss", "train/val_loss")
PRIMARY_STEP = "train/step"

STATUSES = ("complete", "failed")


class SchemaError(ValueError):
    """A results file does not follow the schema; the message lists every problem."""


def _decode(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _decode_frame(frame):
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(_decode)
    return frame


def load_index(path):
    """The /index table as a DataFrame, one row per run, text decoded to str."""
    with h5py.File(path, "r") as f:
        return _decode_frame(pd.DataFrame(f["index"][:]))


def load_table(path, run_id, name):
    """A per-run table such as "eval/items" or "decode/requests" as a DataFrame."""
    with h5py.File(path, "r") as f:
        return _decode_frame(pd.DataFrame(f["runs"][run_id][name][:]))


def load_curve(path, run_id, name):
    """A curve such as "train/loss" as a Series indexed by its step scale."""
    with h5py.File(path, "r") as f:
        values = f["runs"][run_id][name]
        scale = values.dims[0][0]
        index = pd.Index(scale[:], name=scale.name.rsplit("/", 1)[-1])
        return pd.Series(values[:], index=index, name=name)


def _check_root(f, problems):
    for name in ROOT_ATTRS:
        if name not in f.attrs:
            problems.append(f"root attribute {name!r} is missing")
            continue
        value = f.attrs[name]
        if name in _INTEGER_ROOT_ATTRS:
            if not np.issubdtype(np.asarray(value).dtype, np.integer):
                problems.append(f"root attribute {name!r} is not an integer")
        elif not isinstance(value, str):
            problems.append(f"root attribute {name!r} is not a string")
    if "schema_version" in f.attrs and f.attrs["schema_version"] != SCHEMA_VERSION:
        problems.append(f"schema_version is {f.attrs['schema_version']}, expected {SCHEMA_VERSION}")


def _check_index(f, problems):
    """Returns the decoded index, or None when there is none to check further."""
    if not isinstance(f.get("index"), h5py.Dataset) or f["index"].dtype.names is None:
        problems.append("/index is missing or not a compound table")
        return None
    dtype = f["index"].dtype
    names = dtype.names
    if names[: len(INDEX_COLUMNS)] != INDEX_COLUMNS:
        problems.append(f"/index starts with columns {names[:len(INDEX_COLUMNS)]}, expected {INDEX_COLUMNS}")
        return None
    fixed = len(INDEX_COLUMNS)
    if names[fixed:fixed + len(LATER_INDEX_COLUMNS)] == LATER_INDEX_COLUMNS:
        fixed += len(LATER_INDEX_COLUMNS)
    for name in _STRING_COLUMNS + tuple(names[len(INDEX_COLUMNS):fixed]):
        if dtype[name].kind != "S":
            problems.append(f"/index column {name!r} is not a fixed-length string")
    if dtype["seed"] != np.int64:
        problems.append("/index column 'seed' is not int64")
    for name in names[fixed:]:
        if dtype[name] != np.float64:
            problems.append(f"/index metric column {name!r} is not float64")
    if list(names[fixed:]) != sorted(names[fixed:]):
        problems.append("/index metric columns are not in name order")
    index = _decode_frame(pd.DataFrame(f["index"][:]))
    if index["run_id"].duplicated().any():
        problems.append("/index has duplicate run_ids")
    if list(index["run_id"]) != sorted(index["run_id"]):
        problems.append("/index rows are not sorted by run_id")
    for status in set(index["status"]) - set(STATUSES):
        problems.append(f"/index has unknown status {status!r}")
    return index


def _check_curve(group, name, problems, where):
    curve = group[name]
    if curve.ndim != 1 or curve.dtype != np.float64:
        problems.append(f"{where}/{name} is not a 1-D float64 curve")
        return
    if curve.maxshape != (None,) or curve.chunks is None:
        problems.append(f"{where}/{name} is not chunked and extendible")
    scales = list(curve.dims[0].values())
    if len(scales) != 1:
        problems.append(f"{where}/{name} has {len(scales)} step scales attached, expected 1")
        return
    scale = scales[0]
    if scale.parent.name != curve.parent.name:
        problems.append(f"{where}/{name}: its step scale {scale.name} is not in the same group")
    if scale.dtype != np.int64 or scale.shape != curve.shape:
        problems.append(f"{where}/{name}: its step scale {scale.name} is not int64 of the same length")


def _check_run(f, run_id, status, problems):
    where = f"/runs/{run_id}"
    run = f.get(where)
    if not isinstance(run, h5py.Group):
        problems.append(f"{where} is missing")
        return
    for name in ("config", "status", "error"):
        if not isinstance(run.attrs.get(name), str):
            problems.append(f"{where} has no string attribute {name!r}")
    if run.attrs.get("status") not in (None, status):
        problems.append(f"{where} status {run.attrs.get('status')!r} differs from /index ({status!r})")

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.dtype.names is None and obj.dtype.kind == "f":
            if "CLASS" not in obj.attrs:  # not a scale
                _check_curve(run, name, problems, where)

    run.visititems(visit)
    if status != "complete":
        return  # a failed run may have stopped before training
    for name in REQUIRED_CURVES:
        if not isinstance(run.get(name), h5py.Dataset):
            problems.append(f"{where}/{name} is missing")
    if isinstance(run.get("train/loss"), h5py.Dataset):
        scales = [s.name for s in run["train/loss"].dims[0].values()]
        if scales != [f"{where}/{PRIMARY_STEP}"]:
            problems.append(f"{where}/train/loss has step scales {scales}, expected {where}/{PRIMARY_STEP}")


def check_results_file(path):
    """Checks a shard or merged results file against docs/results_schema.md.

    Raises SchemaError naming the file and every problem found; returns the
    decoded /index DataFrame when the file is sound.
    """
    problems = []
    try:
        f = h5py.File(path, "r")
    except OSError as error:
        raise SchemaError(f"{path}: not a readable HDF5 file ({error})") from error
    with f:
        _check_root(f, problems)
        index = _check_index(f, problems)
        if index is not None:
            for run_id, status in zip(index["run_id"], index["status"]):
                _check_run(f, run_id, status, problems)
            extra = set(f.get("runs", {}).keys()) - set(index["run_id"])
            for run_id in sorted(extra):
                problems.append(f"/runs/{run_id} has no row in /index")
    if problems:
        raise SchemaError(f"{path}:\n  " + "\n  ".join(problems))
    return index
