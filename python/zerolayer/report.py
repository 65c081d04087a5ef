"""`zerolayer report RESULTS.h5 [-o FILE] [--format html|md]`: a study's results as one page to share (issue 31).

Built from the results file alone (docs/results_schema.md), never by running anything again: its provenance (study,
command, commit, build, machine, date, runs complete and failed, time spent); the claims as a forest plot with their
table (/claims, /claims_seeds); the verdicts along an operating point (/claims_sensitivity); quality against
throughput and KV bytes (the Pareto plots of /index); each claim across model sizes (/claims_trend); serving, the
simulator against the real server per load and the projections (serve/*); and each training's curves, folded.
A section whose tables the file lacks is left out with one line that says so. Every plot is zerolayer.plots',
the notebooks' code path.

HTML (the default) is one self-contained file: inline CSS, every figure a base64 PNG, no script and no network
request, so it opens from disk anywhere. --format md writes Markdown with the figures as PNG files in a folder
beside it (FILE_files/). Run as `zerolayer report` or `/usr/bin/python3 -m zerolayer.report` with python/ on
PYTHONPATH.
"""
import argparse
import base64
import contextlib
import html
import io
import os
import re
import shlex
import sys
import time
from dataclasses import dataclass, field

import h5py
import numpy as np
import pandas as pd

from . import results as zr
from zerolayer_results.schema import _decode_frame

SCHEMA_VERSION = 1
# The figures' resolution: enough to read 7-point text on a laptop screen, small enough for a page of 20 of them.
DPI = 100
VERDICT_CLASSES = ("supported", "refuted", "inconclusive", "untestable", "missing", "by construction")


class ReportError(Exception):
    """A results file the report cannot read (missing, damaged, truncated or foreign); the message names it."""


# --- the page, as blocks both renderers write -------------------------------------------------------------------

@dataclass
class Text:
    text: str
    kind: str = "p"  # p | left-out | caption | note


@dataclass
class Heading:
    text: str


@dataclass
class Code:
    text: str


@dataclass
class Figure:
    png: bytes
    caption: str
    name: str


@dataclass
class Table:
    header: list
    rows: list  # of lists of (text, css class or "")
    caption: str = ""


@dataclass
class Details:
    summary: str
    blocks: list


@dataclass
class Section:
    title: str
    anchor: str
    blocks: list = field(default_factory=list)
    left_out: str = ""  # why the section is not there; empty when it is

    @property
    def present(self):
        return not self.left_out


def figure_block(fig, caption, name, dpi=DPI):
    """A matplotlib figure as a Figure block (PNG bytes; the figure is closed)."""
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    return Figure(buf.getvalue(), caption, name)


def cell(text, css=""):
    return (str(text), css)


def verdict_cell(verdict):
    verdict = "" if verdict is None or (isinstance(verdict, float) and np.isnan(verdict)) else str(verdict)
    return cell(verdict or "-", "v-" + verdict.replace(" ", "-") if verdict in VERDICT_CLASSES else "")


def number(v, digits=4):
    try:
        v = float(v)
    except (TypeError, ValueError):
        return str(v)
    return "-" if not np.isfinite(v) else f"{v:.{digits}g}"


def interval_text(value, lo, hi, digits=4):
    if not np.isfinite(float(value)):
        return "-"
    if np.isfinite(float(lo)) and np.isfinite(float(hi)):
        return f"{number(value, digits)} [{number(lo, digits)}, {number(hi, digits)}]"
    return number(value, digits)


def frame_table(frame, columns=None, caption=""):
    """A DataFrame as a Table of its `columns` (all by default), numbers to 4 significant digits."""
    columns = list(frame.columns) if columns is None else [c for c in columns if c in frame]
    rows = [[cell(number(v) if isinstance(v, (float, np.floating)) else v) for v in r]
            for r in frame[columns].itertuples(index=False)]
    return Table([str(c) for c in columns], rows, caption)


# --- the results file ---------------------------------------------------------------------------------------------

@dataclass
class Results:
    path: str
    attrs: dict
    index: pd.DataFrame
    root_tables: set   # /claims, /claims_seeds, /claims_trend, /claims_sensitivity present
    run_tables: dict   # table name (train/loss, serve/loads, ...) -> run_ids that have it


RUN_TABLES = ("train/loss", "train/val_loss", "serve/loads", "serve/projected", "serve/sensitivity")
ROOT_TABLES = ("claims", "claims_seeds", "claims_trend", "claims_sensitivity")


def open_results(path):
    """Reads what the report needs to plan its sections, or raises ReportError naming the file: one that is
    missing, not HDF5, damaged or truncated, foreign (no schema_version) or without an /index table."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ReportError(f"{path}: a directory, not a results file (a study writes OUTPUT_DIR/results.h5)")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ReportError(f"{path}: cannot be read as an HDF5 file ({_h5_reason(e)}): a damaged or truncated file, "
                          "or not a results file") from None
    with f:
        if "schema_version" not in f.attrs:
            raise ReportError(f"{path}: not a zerolayer results file: no schema_version attribute (a foreign HDF5 "
                              "file)")
        version = int(np.asarray(f.attrs["schema_version"]))
        if version != SCHEMA_VERSION:
            raise ReportError(f"{path}: schema_version {version}, this report reads {SCHEMA_VERSION}")
        node = f.get("index")
        if not isinstance(node, h5py.Dataset) or not node.dtype.names:
            raise ReportError(f"{path}: no /index table: not a study's results file (docs/results_schema.md)")
        try:
            attrs = {k: zr._text(v) for k, v in f.attrs.items()}
            index = _decode_frame(pd.DataFrame(node[:]))
            roots = {name for name in ROOT_TABLES if isinstance(f.get(name), h5py.Dataset)}
            run_tables = {name: [] for name in RUN_TABLES}
            runs = f.get("runs")
            for rid in index["run_id"]:
                group = runs.get(rid) if runs is not None else None
                for name in RUN_TABLES:
                    if group is not None and isinstance(group.get(name), h5py.Dataset):
                        run_tables[name].append(rid)
        except (OSError, KeyError, ValueError) as e:
            raise ReportError(f"{path}: damaged: {_h5_reason(e)}") from None
    return Results(path, attrs, index, roots, run_tables)


def _h5_reason(error):
    """h5py's message without its noise: 'Unable to open file (truncated file: eof = 1, ...)' -> the parenthesis."""
    text = str(error)
    inner = re.search(r"\((.*)\)\s*$", text)
    return inner.group(1) if inner else text


@contextlib.contextmanager
def reading(res, what):
    """Turns an error reading the file (h5py's OSError) into a ReportError naming it and what was being read."""
    try:
        yield
    except OSError as e:
        raise ReportError(f"{res.path}: damaged: reading {what}: {_h5_reason(e)}") from None


def _text_col(frame, name):
    return frame[name].fillna("").astype(str) if name in frame else pd.Series("", index=frame.index)


def load_all_claims(res):
    """Every row of /claims (the articles' claims, the known methods' and the projections'), with the columns a file
    from before them lacks filled in as empty."""
    table = zr._root_table(res.path, "claims", zr.CLAIM_COLUMNS)
    for name in ("known_method", "projection", "of_claim", "by_construction", "verdict_holm", "method",
                 "operating_point", "size", "source", "claim", "claimed", "note", "requires", "commit_list", "revised"):
        table[name] = _text_col(table, name)
    for name in ("seeds", "seeds_needed", "commits"):
        table[name] = pd.to_numeric(table[name], errors="coerce").fillna(0).astype(int) if name in table else 0
    if "params" not in table:
        table["params"] = np.nan
    table["competence"] = pd.to_numeric(table["competence"], errors="coerce") if "competence" in table else np.nan
    return table


# --- provenance -----------------------------------------------------------------------------------------------

STUDY_COMMANDS = ("ablate", "train", "serve-bench", "simulate", "submit")


def study_of(command_line):
    """The study file and the command that wrote the file, from its recorded command line."""
    try:
        words = shlex.split(command_line)
    except ValueError:  # unbalanced quotes
        words = command_line.split()
    for i, word in enumerate(words[:-1]):
        if word in STUDY_COMMANDS:
            return words[i + 1], word
        if word == "merge":
            return f"merged from {words[i + 1]}/runs", word
    return "(not recorded)", ""


def _utc(series):
    return pd.to_datetime(series.replace("", np.nan), utc=True, errors="coerce")


def duration_text(seconds):
    if not np.isfinite(seconds):
        return "-"
    seconds = int(round(seconds))
    h, m, s = seconds // 3600, seconds % 3600 // 60, seconds % 60
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s" if m else f"{s} s"


def run_time_text(index):
    """'first run started ..., last finished ...: 25 min 3 s; the runs' own times add up to ...'."""
    start, end = _utc(index["started_utc"]), _utc(index["finished_utc"])
    if start.isna().all() or end.isna().all():
        return "-"
    span = (end.max() - start.min()).total_seconds()
    own = (end - start).dt.total_seconds().clip(lower=0).sum()
    return (f"{duration_text(span)} from the first run's start ({start.min():%Y-%m-%d %H:%M} UTC) to the last run's "
            f"end ({end.max():%Y-%m-%d %H:%M} UTC); the runs' own times add up to {duration_text(own)}")


def provenance_section(res):
    a, index = res.attrs, res.index
    study, command = study_of(a.get("command_line", ""))
    status = index["status"].value_counts()
    variants = index["variant"].value_counts().sort_index()
    dirty = " (built with uncommitted changes)" if str(a.get("git_dirty", "0")) not in ("0", "") else ""
    facts = [
        ("study", study + (f" (zerolayer {command})" if command else "")),
        ("command", a.get("command_line", "-")),
        ("results file", f"{os.path.abspath(res.path)} ({os.path.getsize(res.path) / 1e6:.1f} MB)"),
        ("commit", a.get("git_commit", "-") + dirty),
        ("build", f"zerolayer {a.get('zerolayer_version', '-')}, LibTorch {a.get('torch_version', '-')}, "
                  f"HDF5 {a.get('hdf5_version', '-')}, CUDA {a.get('cuda_version') or 'none'}"),
        ("machine", f"{a.get('host', '-')}: {a.get('cpu_model', '-')}, GPU {a.get('gpu_model') or 'none'}, "
                    f"{a.get('threads', '-')} threads"),
        ("written", a.get("created_utc", "-")),
        ("runs", f"{len(index)}: {int(status.get('complete', 0))} complete, {int(status.get('failed', 0))} failed"
                 + "".join(f", {int(n)} {s}" for s, n in status.items() if s not in ("complete", "failed"))),
        ("variants", ", ".join(f"{v} ({n})" for v, n in variants.items())),
        ("seeds", ", ".join(str(s) for s in sorted(index["seed"].unique()))),
        ("time spent", run_time_text(index)),
    ]
    blocks = [Table(["", ""], [[cell(k, "key"), cell(v)] for k, v in facts])]
    failed = index[index["status"] != "complete"]
    if len(failed):
        blocks.append(Text(f"{len(failed)} run(s) did not complete:"))
        blocks.append(frame_table(failed, ["run_id", "variant", "seed", "status", "error"]))
    blocks += config_blocks(res)
    return Section("Provenance", "provenance", blocks)


def config_blocks(res):
    """The keys that vary between runs, and the first run's resolved config, folded."""
    with reading(res, "the runs' configs"):
        configs = zr.load_configs(res.path)
    if not len(configs):
        return [Text("No run group holds a config.", "note")]
    varying = [k for k in configs.columns if configs[k].nunique(dropna=False) > 1 and not k.startswith("output.")]
    first = configs.index[0]
    with reading(res, f"runs/{first}'s config"), h5py.File(res.path, "r") as f:
        ini = zr._text(f["runs"][first].attrs["config"])
    return [Text("Config keys that vary between runs: " + (", ".join(varying) if varying else "none") + "."),
            Details(f"the resolved config of run {first} (every run's is in its group's config attribute)",
                    [Code(ini)])]


# --- the claims -----------------------------------------------------------------------------------------------

def claims_section(res):
    if "claims" not in res.root_tables:
        return Section("Claims", "claims", left_out="this file has no /claims table: `zerolayer claims "
                       f"{res.path}` judges the claims and writes it")
    from . import plots
    with reading(res, "/claims"):
        claims = load_all_claims(res)
        seeds = zr.load_claim_seeds(res.path)
    if not len(claims):
        return Section("Claims", "claims", [Text("The /claims table is empty: the registry had no claim to judge.",
                                                 "note")])
    blocks = [Text(registry_line(res.path, claims))]
    sizes = claims[["size", "params"]].drop_duplicates()
    sizes = sizes.sort_values("params") if len(sizes) > 1 else sizes
    if len(sizes) > 1:
        blocks.append(Text(f"A file of {len(sizes)} model sizes: each size is judged on its own runs, with its own "
                           "Holm family; the trends across sizes are under Scale ladder."))
    for size, params in sizes.itertuples(index=False):
        mine = claims[claims["size"] == size] if len(sizes) > 1 else claims
        mine_seeds = seeds[seeds["size"] == size] if len(sizes) > 1 and "size" in seeds else seeds
        label = f"size {size} ({float(params) / 1e6:.3g}M parameters)" if len(sizes) > 1 else ""
        blocks += claims_blocks(plots, mine.reset_index(drop=True), mine_seeds, label)
    return Section("Claims", "claims", blocks)


def registry_line(path, claims):
    """Which registry judged the table (its content hash, stored by `zerolayer claims`), and the rows whose
    reading changed after their data was seen (docs/claims.md#pre-registration)."""
    registry, digest = zr.load_claims_registry(path)
    head = (f"Judged by the registry {registry} (content hash {digest})." if digest
            else "Judged before the table stored its registry's content hash.")
    revised = claims[(claims["revised"] != "") & (claims["known_method"] == "") & (claims["projection"] == "")]
    if len(revised):
        head += (" Readings revised after their data was seen: "
                 + "; ".join(f"{r.id} ({r.revised})" for r in revised.itertuples()) + ".")
    return head


def verdict_counts(rows, column):
    counts = rows[column].replace("", "-").value_counts()
    return ", ".join(f"{n} {v}" for v, n in counts.items())


def forest_caption(rows):
    """The forest plot's caption: what is drawn, and each interval method and n with the rows that used them."""
    valued = rows[np.isfinite(rows["value"].astype(float))]
    pairs = valued.groupby([valued["method"].replace("", "-"), valued["seeds"]]).size()
    methods = {"t": "Student-t", "percentile": "percentile bootstrap", "bca": "BCa bootstrap", "-": "no interval"}
    uses = "; ".join(f"{methods.get(m, m)} at n = {n} seeds: {k} row(s)" for (m, n), k in pairs.items())
    return ("Each row: the mean over seeds (diamond, filled by the verdict's colour; a square for a known method's or "
            "a projection's row, beside the claim it answers), the 95% interval the verdict used (bar), the per-seed "
            "values (dots), the claimed region (green). Verdict and Holm verdict in colour and word at the right. "
            f"Intervals: {uses or 'none'}. Rows true by construction are apart, below.")


CLAIM_TABLE = (("id", "id"), ("source", "source"), ("claim", "claim"), ("claimed", "claimed"),
               ("measured [95% CI]", None), ("n", "seeds"), ("interval", "method"), ("verdict", "verdict"),
               ("Holm", "verdict_holm"), ("seeds to decide", "seeds_needed"), ("operating point", "operating_point"),
               ("competence floor", "requires"), ("commits", "commits"),
               ("reading revised after its data (dates)", "revised"), ("note", "note"))


LONG_TEXT = ("claim", "operating_point", "note")


def claims_table(rows, caption=""):
    """The claims rows in the forest plot's order as a table; known and projected rows indented under their claim.
    Columns empty in every row are left out."""
    from .plots import claim_measured_text
    kept = [(name, col) for name, col in CLAIM_TABLE
            if col is None or (col in rows and (rows[col].astype(str).replace({"0": "", "nan": ""}) != "").any())]
    out = []
    for r in rows.itertuples(index=False):
        companion = r.kind != "claim"
        line = []
        for name, col in kept:
            if col is None:
                line.append(cell(claim_measured_text(r), "num"))
            elif col in ("verdict", "verdict_holm"):
                line.append(verdict_cell(getattr(r, col)))
            elif col == "id":
                kind = {"known": "known method", "projected": "projected", "served": "served here"}.get(r.kind, "")
                line.append(cell(f"{r.id} ({kind})" if companion else r.id, "companion" if companion else "id"))
            elif col == "seeds_needed":
                line.append(cell(int(r.seeds_needed) if int(r.seeds_needed) > 0 else "", "num"))
            elif col == "commits":  # how many commits its runs and their models came from; more than one is flagged
                n = int(r.commits)
                line.append(cell("" if n == 0 else f"{n} (mixed: {r.commit_list})" if n > 1 else "1",
                                 "num" if n <= 1 else "long"))
            elif col == "requires":  # the floor and what its side reached
                reached = "" if not r.requires or not np.isfinite(r.competence) else f" (reached {number(r.competence, 3)})"
                line.append(cell(f"{r.requires}{reached}", "long"))
            else:
                line.append(cell(getattr(r, col), "num" if col == "seeds" else "long" if col in LONG_TEXT else ""))
        out.append(line)
    return Table([name for name, _ in kept], out, caption)


def claims_blocks(plots, claims, seeds, label):
    rows = plots.claim_forest_rows(claims)
    title = "the claims against their claimed regions" + (f": {label}" if label else "")
    blocks = ([Heading(label[0].upper() + label[1:])] if label else []) + [Text(summary_line(rows))]
    blocks.append(figure_block(plots.claim_forest_plot(claims, seeds, title=title), forest_caption(rows),
                               "claims-forest" + (f"-{label.split()[1]}" if label else "")))
    findings = rows[rows["group"] == "finding"]
    built = rows[rows["group"] == "by construction"]
    blocks.append(claims_table(findings, "The claims and the known methods and projections beside them"))
    if len(built):
        blocks.append(claims_table(built, "True by construction (manipulation checks, outside the Holm family): "
                                          + "; ".join(f"{r.id}: {r.by_construction}"
                                                      for r in built.itertuples() if r.kind == "claim")))
    return blocks


def summary_line(rows):
    heads = rows[(rows["kind"] == "claim") & (rows["group"] == "finding")]
    companions = rows[rows["kind"] != "claim"]
    built = rows[(rows["kind"] == "claim") & (rows["group"] == "by construction")]
    text = f"{len(heads)} claim rows: {verdict_counts(heads, 'verdict')}"
    if (heads["verdict_holm"] != "").any():
        text += f"; under Holm's correction: {verdict_counts(heads, 'verdict_holm')}"
    text += f". {len(built)} row(s) true by construction, {len(companions)} known-method or projected row(s)."
    return text


# --- sensitivity, the ladder ------------------------------------------------------------------------------------

def sensitivity_section(res):
    title, anchor = "Sensitivity: each verdict along its operating point", "sensitivity"
    if "claims_sensitivity" not in res.root_tables:
        return Section(title, anchor, left_out="this file has no /claims_sensitivity table (`zerolayer claims FILE "
                       "--sensitivity` writes it for a file whose runs differ in calibrate.VARIANT.target, as "
                       "ablations/sensitivity.ini's do)")
    from . import plots
    with reading(res, "/claims_sensitivity"):
        sens = zr.load_claim_sensitivity(res.path)
    blocks = []
    fig = plots.claim_sensitivity_plot(sens)
    if fig is None:
        blocks.append(Text("No claim has a value at any setting in /claims_sensitivity.", "note"))
    else:
        blocks.append(figure_block(fig, "Each claim that compares a calibrated variant, at every setting of its "
                                        "target: the value, its 95% interval, the plain verdict there (no Holm: one "
                                        "question along a curve), the claimed region shaded; dotted: the article's "
                                        "operating point.", "sensitivity"))
    rows = [[cell(r.id, "id"), cell(r.key), cell(number(r.setting)), cell(number(r.reached), "num"),
             cell(interval_text(r.value, r.ci_lo, r.ci_hi), "num"), cell(int(r.seeds), "num"), verdict_cell(r.verdict),
             cell(r.claimed)] for r in sens.itertuples(index=False)]
    blocks.append(Table(["id", "target", "setting", "reached", "measured [95% CI]", "n", "verdict", "claimed"], rows))
    return Section(title, anchor, blocks)


def trend_section(res):
    title, anchor = "Scale ladder: each claim against model size", "ladder"
    if "claims_trend" not in res.root_tables:
        return Section(title, anchor, left_out="this file has no /claims_trend table (`zerolayer claims` writes it "
                       "for a file of several model sizes, as ablations/scale.ini's)")
    from . import plots
    with reading(res, "/claims_trend"):
        trend = zr.load_claim_trend(res.path)
        claims = load_all_claims(res)
        seeds = zr.load_claim_seeds(res.path)
    heads = claims[(claims["known_method"] == "") & (claims["projection"] == "")]
    blocks = []
    fig = plots.claim_scaling_plot(heads, trend, seeds) if len(trend) else None
    if fig is None:
        blocks.append(Text("No claim has a value at two sizes or more.", "note"))
    else:
        blocks.append(figure_block(fig, "Each claim's value against parameters: per size the mean (coloured by that "
                                        "size's verdict), its interval and the per-seed values, the least-squares line "
                                        "on log10(parameters) whose slope is the trend, the claimed region green.",
                                   "ladder"))
    rows = [[cell(r.id, "id"), cell(r.sizes), cell(f"{number(r.value_smallest)} -> {number(r.value_largest)}", "num"),
             cell(interval_text(r.slope, r.slope_lo, r.slope_hi, 3), "num"),
             cell(interval_text(r.slope, r.slope_t_lo, r.slope_t_hi, 3), "num"),
             cell(r.direction or "-", {"toward": "v-supported", "away": "v-refuted"}.get(r.direction, "")),
             cell(r.note)] for r in trend.itertuples(index=False)]
    blocks.append(Table(["id", "sizes", "smallest -> largest", "slope per 10x [bootstrap 95%]",
                         "slope [t over seeds 95%]", "trend", "note"], rows,
                        "The trend: the slope of each claim's value per 10x parameters, seeds resampled whole; "
                        "toward or away from the claimed region when its bootstrap interval excludes 0, flat when it "
                        "holds it."))
    return Section(title, anchor, blocks)


# --- quality against throughput -------------------------------------------------------------------------------

QUALITY = ("violation_rate", "judge_nll")
SUMMARY_METRICS = ("violation_rate", "judge_nll", "val_loss", "decode_tok_s", "kv_bytes_per_token", "kv_bytes_peak")


def _finite(summary, column):
    return column in summary and np.isfinite(summary[column].astype(float)).any()


def pareto_section(res):
    title, anchor = "Quality against throughput and KV bytes", "pareto"
    index = res.index.copy()
    has = [m for m in ("decode_tok_s", "kv_bytes_per_token")
           if m in index and np.isfinite(index[m].astype(float)).any()]
    if not has:
        return Section(title, anchor, left_out="no run of this file measured decode_tok_s or kv_bytes_per_token")
    from . import plots
    with reading(res, "the runs' configs"):
        index["setting"] = index["run_id"].map(zr.settings(res.path, index))
    summary = zr.summarize(index, [m for m in SUMMARY_METRICS if m in index], by="setting")
    quality = [q for q in QUALITY if _finite(summary, q)] or ["val_loss"]
    blocks = []
    for q in quality:
        for x in has:
            cost = x == "kv_bytes_per_token"
            ax = plots.pareto_plot(summary, quality=q, throughput=x, higher_x_is_better=not cost)
            blocks.append(figure_block(ax.figure, f"{q} against {x} per setting ({'lower' if cost else 'higher'} is "
                                                  "better): mean and 95% bootstrap interval over seeds, the Pareto "
                                                  "front ringed.", f"pareto-{q}-{x}"))
    missing = [m for m in ("decode_tok_s", "kv_bytes_per_token") if m not in has]
    if missing:
        blocks.append(Text(f"Not measured in this file: {', '.join(missing)}.", "note"))
    shown = [m for m in SUMMARY_METRICS if _finite(summary, m)]
    rows = [[cell(r["setting"], "id"), cell(int(r["n"]), "num")]
            + [cell(interval_text(r[m], r[f"{m}_lo"], r[f"{m}_hi"]), "num") for m in shown]
            for _, r in summary.iterrows()]
    blocks.append(Table(["setting", "n"] + [f"{m} [95% CI]" for m in shown], rows,
                        "Per setting, the mean over its complete runs' seeds with the percentile bootstrap interval."))
    return Section(title, anchor, blocks)


# --- serving ----------------------------------------------------------------------------------------------------

PROJECTED_FIGURES = ("capacity_rps", "max_rate_slo", "memory_gb", "median_ttft_ms")


def serving_section(res, claims=None):
    title, anchor = "Serving: the simulator against the real server, and projections", "serving"
    if not res.run_tables["serve/loads"] and not res.run_tables["serve/projected"]:
        return Section(title, anchor, left_out="no run of this file was served (serve.enabled: `zerolayer ablate "
                       "ablations/serving.ini`, or serve-bench)")
    from . import plots
    with reading(res, "serve/*"):
        loads = zr.load_serving(res.path, "loads")
        sens = zr.load_serving(res.path, "sensitivity")
        projected = zr.load_serving(res.path, "projected")
    blocks = []
    errors = plots.simulator_error_table(loads, sensitivity=sens) if len(loads) else pd.DataFrame()
    if len(errors):
        blocks += simulator_blocks(plots, loads, errors)
    elif len(loads):
        blocks.append(Text("No variant was both measured and simulated: no simulator error to show.", "note"))
    else:
        blocks.append(Text("No serve/loads: nothing was served here, only projected.", "note"))
    blocks += projected_blocks(plots, res, projected)
    return Section(title, anchor, blocks)


def simulator_blocks(plots, loads, errors):
    within = int((errors["error_pct"].abs() <= 10).sum())
    blocks = [Text(f"The simulator, calibrated on the real step, predicts the real server's figures per load: "
                   f"{within} of {len(errors)} cells within ±10%.")]
    fig = plots.simulator_scatter_plot(errors)
    blocks.append(figure_block(fig, "Predicted (simulated) against measured, per variant and load, mean over seeds; "
                                    "horizontal bars: the spread of the real server's repeats of the same requests; "
                                    "vertical bars: what a ±2% step-time error moves the prediction across.",
                               "serving-predicted-measured"))
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), layout="constrained")
    plots.latency_throughput_plot(loads, "median_ttft_ms", ax=axes[0], legend=False)
    plots.latency_throughput_plot(loads, "median_tpot_ms", ax=axes[1])
    blocks.append(figure_block(fig, "Latency against request throughput: measured solid, simulated dashed.",
                               "serving-latency"))
    rows = [[cell(r.variant, "id"), cell("trace" if not np.isfinite(r.load) else number(r.load), "num"),
             cell(plots.serving_label(r.figure)), cell(number(r.measured), "num"), cell(number(r.simulated), "num"),
             cell(f"{r.error_pct:+.1f}%", "num" + (" far" if abs(r.error_pct) > 10 else "")),
             cell("-" if not np.isfinite(r.repeat_spread_pct) else f"{r.repeat_spread_pct:.1f}%", "num"),
             cell("-" if not np.isfinite(r.band_lo) else f"{number(r.band_lo)} .. {number(r.band_hi)}", "num"),
             cell(int(r.seeds), "num"), cell(int(r.repeats), "num")] for r in errors.itertuples(index=False)]
    blocks.append(Table(["variant", "load", "figure", "measured", "simulated", "error", "repeat spread",
                         "±2% step band", "seeds", "repeats"], rows,
                        "Per variant, load and figure: the means over seeds (and repeats), the simulator's error, the "
                        "largest distance of one repeat from the repeats' mean, and the band of a ±2% step time."))
    return blocks


def projected_blocks(plots, res, projected):
    ref = plots.projected_reference(projected) if len(projected) else projected
    if not len(ref):
        return [Text("No serve/projected reference rows: nothing projected (serve.hardware and serve.shapes unset).",
                     "note")]
    import matplotlib.pyplot as plt
    figures = [f for f in PROJECTED_FIGURES if f in ref and np.isfinite(ref[f].astype(float)).any()]
    blocks = []
    if figures:
        fig, axes = plt.subplots(-(-len(figures) // 2), 2, figsize=(12, 3.3 * -(-len(figures) // 2)),
                                 layout="constrained", squeeze=False)
        for i, (ax, f) in enumerate(zip(axes.flat, figures)):
            plots.projected_plot(projected, f, ax=ax, legend=(i == 1))
        for ax in list(axes.flat)[len(figures):]:
            ax.set_visible(False)
        blocks.append(figure_block(fig, "PROJECTED, not measured: each variant per accelerator and shape by roofline, "
                                        "at the reference rate (every variant offered the same rate); small dots: "
                                        "seeds.", "serving-projected"))
    table = plots.serving_means(ref, ["accelerator", "shape", "variant"], ["load", "rate"] + figures)
    blocks.append(frame_table(table.rename(columns={f: f"projected {plots.serving_label(f)}" for f in figures}),
                              caption="Projected, at the reference rate: means over seeds."))
    if "claims" in res.root_tables:
        claims = load_all_claims(res)
        mine = claims[claims["projection"] != ""]
        if len(mine):
            from .plots import claim_measured_text
            rows = [[cell(r.id, "id"), cell(r.of_claim), cell(r.metric), cell(claim_measured_text(r), "num"),
                     cell(r.claimed), verdict_cell(r.verdict)] for r in mine.itertuples(index=False)]
            blocks.append(Table(["id", "beside claim", "metric", "measured [95% CI]", "claimed", "where it lies"], rows,
                                "The claims' projected and served rows (also in the claims' forest plot)."))
    return blocks


# --- training ---------------------------------------------------------------------------------------------------

def training_section(res):
    title, anchor = "Training curves", "training"
    have = set(res.run_tables["train/loss"])
    if not have:
        return Section(title, anchor, left_out="no run of this file has a train/loss curve")
    from . import plots
    index = res.index
    blocks = [Text("One per training (runs that share a train_id decode the same checkpoint, and hold the same "
                   "curves); each folded: open it to see the curve.")]
    groups = sorted(index.groupby("train_id", sort=False),
                    key=lambda g: (sorted(g[1]["variant"]), int(g[1]["seed"].iloc[0]), g[0]))
    for train_id, runs in groups:
        rid = next((r for r in runs["run_id"] if r in have), None)
        if rid is None:
            continue
        with reading(res, f"runs/{rid}/train"):
            loss = zr.load_curve(res.path, rid, "train/loss")
            val = zr.load_curve(res.path, rid, "train/val_loss") if rid in res.run_tables["train/val_loss"] else None
        variants = ", ".join(dict.fromkeys(sorted(runs["variant"])))
        seeds = ", ".join(str(s) for s in sorted(runs["seed"].unique()))
        who = ", ".join(f"{r.variant} seed {r.seed} ({r.run_id})" for r in runs.itertuples())
        ax = plots.training_curve_plot(loss, val, title=f"training {train_id}: {variants}, seed {seeds}")
        end = f"final train loss {number(loss.iloc[-1])}" + (f", val loss {number(val.iloc[-1])}"
                                                             if val is not None and len(val) else "")
        blocks.append(Details(f"training {train_id} ({variants}, seed {seeds}): to step {loss.index[-1]}, {end}; "
                              f"runs: {who}", [figure_block(ax.figure, f"training {train_id}", f"train-{train_id}",
                                                            dpi=80)]))
    return Section(title, anchor, blocks)


SECTIONS = (provenance_section, claims_section, sensitivity_section, pareto_section, trend_section, serving_section,
            training_section)


def build(path):
    """The report of a results file: (title, sections). Raises ReportError for a file it cannot read."""
    import matplotlib
    matplotlib.use("Agg")
    res = open_results(path)
    study, _ = study_of(res.attrs.get("command_line", ""))
    return f"zerolayer report: {study}", [make(res) for make in SECTIONS]


# --- HTML -------------------------------------------------------------------------------------------------------

CSS = """
body { font: 14px/1.45 -apple-system, "Segoe UI", "DejaVu Sans", Arial, sans-serif; color: #222; margin: 0 auto;
       max-width: 1400px; padding: 1em 2em; background: #fff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.8em; }
nav ul { columns: 2; padding-left: 1.2em; } .generated { color: #666; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.key { font-weight: bold; white-space: nowrap; } td.id { white-space: nowrap; font-weight: 600; }
td.companion { white-space: nowrap; padding-left: 1.6em; font-style: italic; color: #555; }
td.far { font-weight: bold; color: #b00; } td.long { min-width: 16em; } .scroll { overflow-x: auto; }
caption { caption-side: bottom; text-align: left; color: #555; font-size: 12px; padding-top: 3px; }
.v-supported { background: #dff0d8; color: #1d6b1d; } .v-refuted { background: #f8d7d4; color: #a01c14; }
.v-inconclusive { background: #fdebd0; color: #9a5a00; } .v-untestable, .v-missing { background: #eee; color: #555; }
.v-by-construction { background: #eee; color: #444; font-style: italic; }
figure { margin: 0.8em 0 1.4em; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 12px; max-width: 1100px; }
.left-out { color: #777; font-style: italic; } .note { color: #555; }
details { margin: 0.3em 0; } summary { cursor: pointer; font-size: 13px; }
pre { background: #f7f7f7; padding: 0.6em; font-size: 11px; overflow-x: auto; max-height: 30em; }
"""


def html_block(block):
    e = html.escape
    if isinstance(block, Text):
        return f'<p class="{e(block.kind)}">{e(block.text)}</p>'
    if isinstance(block, Heading):
        return f"<h3>{e(block.text)}</h3>"
    if isinstance(block, Code):
        return f"<pre>{e(block.text)}</pre>"
    if isinstance(block, Figure):
        data = base64.b64encode(block.png).decode("ascii")
        return (f'<figure><img src="data:image/png;base64,{data}" alt="{e(block.name)}">'
                f"<figcaption>{e(block.caption)}</figcaption></figure>")
    if isinstance(block, Table):
        head = "".join(f"<th>{e(h)}</th>" for h in block.header) if any(block.header) else ""
        body = "".join("<tr>" + "".join(f'<td class="{e(c)}">{e(t)}</td>' if c else f"<td>{e(t)}</td>"
                                        for t, c in row) + "</tr>" for row in block.rows)
        caption = f"<caption>{e(block.caption)}</caption>" if block.caption else ""
        return (f'<div class="scroll"><table>{caption}{f"<thead><tr>{head}</tr></thead>" if head else ""}'
                f"<tbody>{body}</tbody></table></div>")
    if isinstance(block, Details):
        return f"<details><summary>{e(block.summary)}</summary>{''.join(map(html_block, block.blocks))}</details>"
    raise TypeError(block)


def render_html(title, sections, command, elapsed=None):
    e = html.escape
    nav = "".join(f'<li><a href="#{s.anchor}">{e(s.title)}</a>' + ("" if s.present else " (left out)") + "</li>"
                  for s in sections)
    parts = [f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
             f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head><body>',
             f"<h1>{e(title)}</h1>",
             f'<p class="generated">Generated from the results file alone by <code>{e(command)}</code> on '
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.</p>",
             f"<nav><ul>{nav}</ul></nav>"]
    for s in sections:
        parts.append(f'<section id="{s.anchor}"><h2>{e(s.title)}</h2>')
        if s.present:
            parts += [html_block(b) for b in s.blocks]
        else:
            parts.append(f'<p class="left-out">Left out: {e(s.left_out)}.</p>')
        parts.append("</section>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


# --- Markdown ---------------------------------------------------------------------------------------------------

def md_escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_block(block, figures):
    """Markdown of a block; a figure is appended to `figures` as (name, png) and linked at figures' folder."""
    if isinstance(block, Text):
        return f"*{block.text}*" if block.kind in ("left-out", "caption") else block.text
    if isinstance(block, Heading):
        return f"### {block.text}"
    if isinstance(block, Code):
        return "```ini\n" + block.text.rstrip() + "\n```"
    if isinstance(block, Figure):
        name = f"{len(figures.items) + 1:02d}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', block.name)}.png"
        figures.items.append((name, block.png))
        return f"![{md_escape(block.name)}]({figures.folder}/{name})\n\n*{block.caption}*"
    if isinstance(block, Table):
        header = block.header if any(block.header) else [" "] * len(block.header)
        lines = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(md_escape(t) for t, _ in row) + " |" for row in block.rows]
        return "\n".join(lines) + (f"\n\n*{block.caption}*" if block.caption else "")
    if isinstance(block, Details):
        inner = "\n\n".join(md_block(b, figures) for b in block.blocks)
        return f"<details><summary>{html.escape(block.summary)}</summary>\n\n{inner}\n\n</details>"
    raise TypeError(block)


@dataclass
class MdFigures:
    folder: str
    items: list = field(default_factory=list)


def render_md(title, sections, command, folder):
    """(markdown text, [(file name, png)]): the figures go to `folder`, relative to the Markdown file."""
    figures = MdFigures(folder)
    parts = [f"# {title}", f"Generated from the results file alone by `{command}` on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."]
    for s in sections:
        parts.append(f"## {s.title}")
        parts += [md_block(b, figures) for b in s.blocks] if s.present else [f"*Left out: {s.left_out}.*"]
    return "\n\n".join(parts) + "\n", figures.items


# --- the command ------------------------------------------------------------------------------------------------

def default_output(results, fmt):
    return os.path.join(os.path.dirname(os.path.abspath(results)), "report." + fmt)


def write_report(results, output=None, fmt=None, command=None):
    """Writes the report of `results` to `output` (default: report.html or report.md beside it); returns
    (output path, sections, figure files written)."""
    fmt = fmt or ("md" if output and output.endswith(".md") else "html")
    output = output or default_output(results, fmt)
    command = command or f"zerolayer report {shlex.join([results] + (['--format', fmt] if fmt != 'html' else []))}"
    title, sections = build(results)
    try:
        return output, sections, write_files(output, fmt, title, sections, command)
    except OSError as e:
        raise ReportError(f"cannot write {output}: {e.strerror or e}") from None


def write_files(output, fmt, title, sections, command):
    """Writes the page (and for Markdown its figures); returns the figure files written."""
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    written = []
    if fmt == "html":
        text = render_html(title, sections, command)
    else:
        stem = os.path.splitext(os.path.basename(output))[0] + "_files"
        text, figures = render_md(title, sections, command, stem)
        folder = os.path.join(os.path.dirname(os.path.abspath(output)), stem)
        os.makedirs(folder, exist_ok=True)
        for name, png in figures:
            with open(os.path.join(folder, name), "wb") as f:
                f.write(png)
            written.append(os.path.join(folder, name))
    tmp = output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, output)
    return written


def parse_args(argv):
    p = argparse.ArgumentParser(prog="zerolayer report", description="A results file as one page to share: HTML "
                                "with every figure embedded (no network access; opens from disk), or Markdown with "
                                "the figures as PNG files beside it.")
    p.add_argument("results", metavar="RESULTS.h5", help="a merged results file")
    p.add_argument("-o", "--output", metavar="FILE", help="the report (default: report.html, or report.md, beside "
                   "RESULTS)")
    p.add_argument("--format", choices=("html", "md"), help="html (default; md when FILE ends in .md) or md")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.time()
    words = [args.results] + (["-o", args.output] if args.output else []) + (["--format", args.format]
                                                                             if args.format else [])
    try:
        output, sections, written = write_report(args.results, args.output, args.format,
                                                 "zerolayer report " + shlex.join(words))
    except ReportError as e:
        print(f"zerolayer report: {e}", file=sys.stderr)
        return 1
    left_out = [s.title.split(":")[0] for s in sections if not s.present]
    print(f"wrote {output} ({os.path.getsize(output) / 1e6:.2f} MB"
          + (f", {len(written)} figures in {os.path.dirname(written[0])}" if written else "")
          + f") in {time.time() - started:.1f} s" + (f"; left out: {', '.join(left_out)}" if left_out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
