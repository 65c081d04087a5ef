"""Results files into pandas (docs/results_schema.md): the index, each run's
config, curves, per-token decode events and the claims table, plus the
statistics the notebooks show (bootstrap intervals over seeds, Pareto front).
Every loader tolerates what a study did not produce: a file without sfvl runs
gives an empty events frame with the documented columns, not an error.
"""
import h5py
import numpy as np
import pandas as pd

from zerolayer_results import check_results_file, load_curve, load_index, load_table  # noqa: F401
from zerolayer_results.schema import _decode_frame

# sfvl's per-token event log, /runs/<id>/decode/events (issue 6).
EVENT_COLUMNS = ("item", "position", "context_len", "proposed", "score", "fired", "first", "resampled", "replacement",
                 "violation_before", "violation_after")
# /claims and /claims_seeds, written by `zerolayer claims` (docs/results_schema.md). Files from before
# the per-method intervals have the columns up to "note" only, files from before the scale ladder
# (issue 15) no size and params.
CLAIM_COLUMNS = ("id", "source", "claim", "metric", "comparison", "treatment", "control", "claimed",
                 "region_lo", "region_hi", "value", "ci_lo", "ci_hi", "seeds", "verdict", "note",
                 "method", "t_lo", "t_hi", "boot_lo", "boot_hi", "bca_lo", "bca_hi", "p_support", "p_refute",
                 "verdict_holm", "seeds_needed", "known_method", "projection", "of_claim", "by_construction",
                 "operating_point", "requires", "competence", "commits", "commit_list", "revised", "size", "params")
CLAIM_SEED_COLUMNS = ("id", "seed", "value", "size", "params")
# /claims_sensitivity, written by `zerolayer claims --sensitivity`: each claim at every setting of the
# operating point it depends on (sim/claims/sensitivity.h).
CLAIM_SENSITIVITY_COLUMNS = ("id", "key", "setting", "reached", "value", "ci_lo", "ci_hi", "seeds", "verdict",
                             "claimed", "region_lo", "region_hi", "method", "note")
# /claims_trend: each claim's slope against log10(parameters) across the sizes of a scale ladder.
CLAIM_TREND_COLUMNS = ("id", "sizes", "n_sizes", "seeds", "slope", "slope_lo", "slope_hi", "slope_t_lo",
                       "slope_t_hi", "params_smallest", "params_largest", "value_smallest", "value_largest",
                       "region_lo", "region_hi", "direction", "note")


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


def parse_config(ini):
    """INI text of a run's resolved config -> {dotted key: value string}."""
    out, section = {}, ""
    for line in _text(ini).splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if "=" in line:
            key, value = (s.strip() for s in line.split("=", 1))
            out[f"{section}.{key}" if section else key] = value
    return out


def load_configs(path):
    """One row per run (index: run_id), one column per dotted config key, as strings."""
    with h5py.File(path, "r") as f:
        runs = f.get("runs", {})
        rows = {rid: parse_config(runs[rid].attrs["config"]) for rid in runs}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("run_id")


def settings(path, index=None):
    """A label per run: its variant plus the config keys that vary between runs
    of that variant (seed and output keys excluded), e.g. "sfvl verify.threshold=0.82". A knob
    solved for an operating point ([calibrate.VARIANT]) is left out: its target names the setting.
    Returned as a Series indexed by run_id."""
    index = load_index(path) if index is None else index
    configs = load_configs(path)
    labels = {}
    for variant, runs in index.groupby("variant"):
        cfg = configs.loc[configs.index.intersection(runs["run_id"])]
        # A knob solved for an operating point differs by seed as an outcome, not a setting:
        # the variant's own target's, or (oet decoding sfcl's solved width) its family's.
        solved = set()
        for target in [k for k in cfg.columns if k.startswith("calibrate.") and k.endswith(".target")]:
            knob = target[: -len("target")] + "knob"
            if knob in cfg:
                calibrated = pd.to_numeric(cfg[target], errors="coerce").fillna(0) != 0
                solved |= set(cfg.loc[calibrated, knob])
        varying = [k for k in cfg.columns if k != "seed" and not k.startswith("output.") and k not in solved
                   and cfg[k].nunique(dropna=False) > 1]
        for rid in runs["run_id"]:
            parts = [variant] + ([f"{k}={cfg.at[rid, k]}" for k in varying] if rid in cfg.index else [])
            labels[rid] = " ".join(parts)
    return pd.Series(labels, name="setting").rename_axis("run_id")


def checkpoint_dir(path, run_id):
    """The checkpoint directory of a run of a results file: output.dir/checkpoints/<train_id>,
    with output.dir taken as the results file's folder (where a study writes results.h5).
    For zerolayer.Generator(...) and zerolayer.Tokenizer.from_checkpoint(...)."""
    import os
    index = load_index(path).set_index("run_id")
    if run_id not in index.index:
        raise KeyError(f"{path}: no run {run_id!r}")
    d = os.path.join(os.path.dirname(os.path.abspath(path)), "checkpoints", index.at[run_id, "train_id"])
    if not os.path.isdir(d):
        raise FileNotFoundError(f"{d}: the checkpoint of run {run_id} is not beside {path}")
    return d


def _per_run_table(path, name, columns=(), run_ids=None):
    """Table `name` of every run (or of `run_ids`) that has it, concatenated
    with run_id, variant and seed columns first; empty with those and
    `columns` when none has it."""
    index = load_index(path).set_index("run_id")
    frames = []
    with h5py.File(path, "r") as f:
        for rid in (index.index if run_ids is None else run_ids):
            node = f.get(f"runs/{rid}/{name}")
            if isinstance(node, h5py.Dataset) and node.dtype.names:
                df = _decode_frame(pd.DataFrame(node[:]))
                df.insert(0, "run_id", rid)
                df.insert(1, "variant", index.at[rid, "variant"])
                df.insert(2, "seed", index.at[rid, "seed"])
                frames.append(df)
    if not frames:
        return pd.DataFrame(columns=["run_id", "variant", "seed", *columns])
    return pd.concat(frames, ignore_index=True)


def load_events(path, run_ids=None):
    """Every run's decode/events table, concatenated with run_id, variant and
    seed columns. Empty (with the documented columns) when no run logged events."""
    return _per_run_table(path, "decode/events", EVENT_COLUMNS, run_ids)


SERVING_TABLES = ("loads", "steps", "profile", "review", "sensitivity", "projected")


def load_serving(path, table="loads"):
    """Every served run's serve/<table>, concatenated with run_id, variant and
    seed columns (runs with serve.enabled; sim/serving/serving_run.h):

    - "loads": one row per load and side ("measured" on the real server,
      "simulated" on the cost model calibrated on it), every figure under
      vLLM benchmark_serving's names (median_ttft_ms, p90_tpot_ms, ...);
    - "steps": every measured step (start_ns, end_ns, predicted_ns, shape);
    - "profile": the calibration profiles (one before the loads, one after
      each) and the first fitted model's figures;
    - "review": sfvl's fire rates by output position band and where a token
      stands (fresh, just past a fire, behind one, at one), what the
      simulator draws;
    - "sensitivity": per load, the simulated figures again with every step
      `step_scale` (0.98, 0.99, 1.01, 1.02) times as long as the cost model
      says: how far 2% of step time moves each prediction (matched = -1),
      and one row per measured repeat at the speed it ran at against the
      cost model (matched = the repeat): a diagnosis, not a prediction;
    - "projected": named accelerators and model shapes by roofline, every
      row labelled "projected".
    Empty when no run was served."""
    if table not in SERVING_TABLES:
        raise ValueError(f"table must be one of {SERVING_TABLES}, got {table!r}")
    return _per_run_table(path, f"serve/{table}")


def load_claims(path, known_methods=False):
    """The /claims table written by `zerolayer claims`: the articles' claims, or with
    known_methods=True the rows of the known methods beside them instead (id CLAIM@NAME,
    known_method, of_claim; registry key known.NAME). Empty (with its columns) if not there yet;
    a file from before the known methods has claims only."""
    with h5py.File(path, "r") as f:
        node = f.get("claims")
        if not isinstance(node, h5py.Dataset):
            return pd.DataFrame(columns=list(CLAIM_COLUMNS))
        table = _decode_frame(pd.DataFrame(node[:]))
    known = table["known_method"].fillna("") != "" if "known_method" in table else pd.Series(False, index=table.index)
    return table[known if known_methods else ~known].reset_index(drop=True)


def load_claims_registry(path):
    """(registry, registry_hash): which registry judged the file's /claims, as `zerolayer claims` stored it
    (docs/claims.md#pre-registration); ("", "") for a file judged before it stored them, or without /claims."""
    with h5py.File(path, "r") as f:
        node = f.get("claims")
        attrs = node.attrs if isinstance(node, h5py.Dataset) else {}
        return tuple(_text(attrs[k]) if k in attrs else "" for k in ("registry", "registry_hash"))


def load_claim_seeds(path):
    """The /claims_seeds table written beside /claims: one row per claim and seed that gave
    a value (id, seed, value, and size, params: the model shape of the row); empty (with its
    columns) in a file without it."""
    return _root_table(path, "claims_seeds", CLAIM_SEED_COLUMNS)


def load_claim_trend(path):
    """The /claims_trend table `zerolayer claims` writes for a file of several model sizes
    (ablations/scale.ini): per claim the slope of its value per decade of parameters with its
    bootstrap (seeds resampled whole) and t intervals, the values at the smallest and largest
    size, the claimed region, and direction (toward | away | flat). Empty (with its columns) for
    a file of one size."""
    return _root_table(path, "claims_trend", CLAIM_TREND_COLUMNS)


def load_claim_sensitivity(path):
    """The /claims_sensitivity table `zerolayer claims --sensitivity` writes: per claim that
    compares a calibrated variant (ablations/sensitivity.ini: sfvl at four trigger rates), one row
    per setting of its target (key, setting; reached: the target's metric on the test prompts) with
    the value, its interval and the plain verdict there. Empty (with its columns) if not there."""
    return _root_table(path, "claims_sensitivity", CLAIM_SENSITIVITY_COLUMNS)


def _root_table(path, name, columns):
    with h5py.File(path, "r") as f:
        node = f.get(name)
        if not isinstance(node, h5py.Dataset):
            return pd.DataFrame(columns=list(columns))
        return _decode_frame(pd.DataFrame(node[:]))


def bootstrap_ci(values, level=0.95, resamples=10000, seed=12345):
    """(mean, lo, hi) of the finite values: the percentile bootstrap of the
    mean, as the C++ side computes it (sim/claims/stats.cpp). lo/hi are NaN for one value."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return (np.nan, np.nan, np.nan)
    if len(v) == 1:
        return (float(v[0]), np.nan, np.nan)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(resamples, len(v)))].mean(axis=1)
    a = (1 - level) / 2
    return (float(v.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1 - a)))


def summarize(index, metrics, by="setting", level=0.95):
    """Mean and bootstrap interval over seeds of each metric, one row per group
    of complete runs. Columns: n, then METRIC, METRIC_lo, METRIC_hi per metric
    (NaN where the group did not measure it)."""
    df = index[index["status"] == "complete"]
    rows = []
    for key, group in df.groupby(by, sort=True):
        row = {by if isinstance(by, str) else "group": key, "n": len(group)}
        for m in metrics:
            mean, lo, hi = bootstrap_ci(group[m] if m in group else [], level)
            row.update({m: mean, f"{m}_lo": lo, f"{m}_hi": hi})
        rows.append(row)
    return pd.DataFrame(rows)


def pareto_front(frame, quality, throughput, lower_quality_is_better=True):
    """Boolean Series: the rows not dominated in (quality, throughput).
    A row is dominated when another is at least as good on both and better on one."""
    q = frame[quality].to_numpy(dtype=float)
    t = frame[throughput].to_numpy(dtype=float)
    if not lower_quality_is_better:
        q = -q
    front = []
    for i in range(len(frame)):
        if not (np.isfinite(q[i]) and np.isfinite(t[i])):
            front.append(False)
            continue
        dominated = np.any((q <= q[i]) & (t >= t[i]) & ((q < q[i]) | (t > t[i])))
        front.append(not dominated)
    return pd.Series(front, index=frame.index, name="pareto")
