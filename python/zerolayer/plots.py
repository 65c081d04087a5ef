"""The standard plots (matplotlib): quality against throughput with interval
whiskers and the Pareto front; re-sampling rates by context length; the claims
table's per-seed values and intervals against each claimed region; serving:
latency against throughput measured and simulated, the simulator's error, the
step cost model's fit, and the projections to named hardware."""
import json
import os

import numpy as np
import pandas as pd

from .results import pareto_front


# One colour per variant, the same in every plot and file, from the variant table (sim/variants.def, written
# to variants.json by `zerolayer variants --format json`; test_variants.py keeps the copy equal): the
# articles' mechanisms in warm colours, the published methods in cool ones, sfvl's controls in reds and
# browns apart enough to tell. A variant the table does not name takes a colour no named variant uses.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "variants.json")) as _f:
    VARIANT_COLORS = {v["name"]: v["colour"] for v in json.load(_f)}
_SPARE_COLORS = ("#7f7f7f", "#8ca252", "#bd9e39", "#ad494a", "#a55194", "#637939", "#843c39", "#5254a3")
# One marker per setting of a variant, in the order of its settings' labels.
_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "<", ">", "h", "p")


def variant_styles(labels):
    """{setting label: (variant, colour, marker)} for labels of the form "variant key=value ..." (the first
    word is the variant): one colour per variant, one marker per setting within it."""
    by_variant = {}
    for label in sorted(set(map(str, labels))):
        by_variant.setdefault(label.split(" ", 1)[0], []).append(label)
    spare = iter(c for c in _SPARE_COLORS * 4 if c not in VARIANT_COLORS.values())
    styles = {}
    for variant, settings in by_variant.items():
        colour = VARIANT_COLORS.get(variant) or next(spare)
        for i, label in enumerate(settings):
            styles[label] = (variant, colour, _MARKERS[i % len(_MARKERS)])
    return styles


def pareto_plot(summary, quality="violation_rate", throughput="decode_tok_s", label="setting", ax=None,
                lower_quality_is_better=True, higher_x_is_better=True, logx=False):
    """Scatter of a `summarize` frame: `throughput` (x; with higher_x_is_better=False a cost such as
    kv_bytes_per_token) against quality (y), each point with its 95% whiskers on both axes, coloured by
    variant and marked by setting (`variant_styles`), the Pareto front as a staircase with its points ringed,
    the legend outside the axes. Rows without both values are left out (and listed in the title)."""
    import matplotlib.pyplot as plt
    ax = ax or plt.subplots(figsize=(10, 5), layout="constrained")[1]
    ok = summary[np.isfinite(summary[quality].astype(float)) & np.isfinite(summary[throughput].astype(float))]
    styles = variant_styles(summary[label])
    one_n = summary["n"].nunique() == 1
    for _, row in ok.sort_values(label).iterrows():
        xerr = [[row[throughput] - row[f"{throughput}_lo"]], [row[f"{throughput}_hi"] - row[throughput]]]
        yerr = [[row[quality] - row[f"{quality}_lo"]], [row[f"{quality}_hi"] - row[quality]]]
        xerr = None if np.isnan(xerr).any() else xerr
        yerr = None if np.isnan(yerr).any() else yerr
        _, colour, marker = styles[str(row[label])]
        ax.errorbar(row[throughput], row[quality], xerr=xerr, yerr=yerr, fmt=marker, color=colour, ms=6,
                    mec="black", mew=0.4, elinewidth=0.8, capsize=2, alpha=0.9, zorder=3,
                    label=str(row[label]) + ("" if one_n else f" (n={row['n']})"))
    if len(ok):
        # The front of (quality, x): x negated where lower is better, so that pareto_front's rule applies.
        signed = ok.assign(_x=ok[throughput].astype(float) * (1 if higher_x_is_better else -1))
        front = ok[pareto_front(signed, quality, "_x", lower_quality_is_better)].sort_values(throughput)
        # The staircase bounds what the front attains: at a given x, the quality of the front point nearest
        # on the better side of x (higher x better: the next point up, "pre"; lower better: the last below).
        where = "pre" if higher_x_is_better else "post"
        ax.step(front[throughput], front[quality], where=where, color="black", lw=1.4, alpha=0.45, zorder=2,
                label="Pareto front")
        ax.scatter(front[throughput], front[quality], s=170, facecolors="none", edgecolors="black", lw=0.8,
                   alpha=0.6, zorder=2)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(f"{throughput} ({'higher' if higher_x_is_better else 'lower'} is better)")
    ax.set_ylabel(f"{quality} ({'lower' if lower_quality_is_better else 'higher'} is better)")
    left_out = sorted(set(summary[label]) - set(ok[label]))
    n_text = f", n = {summary['n'].iloc[0]} seeds" if one_n and len(summary) else ""
    ax.set_title(f"{quality} vs {throughput}: mean and 95% bootstrap CI over seeds{n_text}"
                 + (f"\nnot measured: {', '.join(map(str, left_out))}" if left_out else ""), fontsize=9)
    ax.grid(True, lw=0.4, alpha=0.4)
    entries = len(ok) + (1 if len(ok) else 0)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False,
              ncol=1 if entries <= 20 else 2, handletextpad=0.4, columnspacing=1.0)
    return ax


def rates_by_context(events, bins=8, by="variant", column="resampled"):
    """Share of events with `column` set, per context-length bin and group:
    a frame with columns group, context_lo, context_hi, context_mid, rate, events."""
    import pandas as pd
    if len(events) == 0:
        return pd.DataFrame(columns=[by, "context_lo", "context_hi", "context_mid", "rate", "events"])
    ctx = events["context_len"].astype(float)
    edges = np.unique(np.linspace(ctx.min(), ctx.max() + 1, bins + 1).round())
    cut = pd.cut(ctx, edges, right=False, include_lowest=True)
    flag = (events[column].astype(float) != 0).astype(float)
    out = (pd.DataFrame({by: events[by], "bin": cut, "flag": flag})
           .groupby([by, "bin"], observed=True)["flag"].agg(["mean", "size"]).reset_index())
    out["context_lo"] = [float(b.left) for b in out["bin"]]
    out["context_hi"] = [float(b.right) for b in out["bin"]]
    out["context_mid"] = (out["context_lo"] + out["context_hi"]) / 2
    return out.rename(columns={"mean": "rate", "size": "events"}).drop(columns="bin")


def rates_by_context_plot(events, bins=8, by="variant", column="resampled", ax=None):
    """Re-sampling (or trigger) rate against context length, one line per group."""
    import matplotlib.pyplot as plt
    ax = ax or plt.subplots(figsize=(7, 4))[1]
    rates = rates_by_context(events, bins, by, column)
    for key, g in rates.groupby(by):
        ax.plot(g["context_mid"], g["rate"], "o-", label=str(key))
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel(f"share of tokens with {column}")
    ax.set_title("no decode/events in this file" if len(rates) == 0 else f"{column} rate by context length")
    if len(rates):
        ax.legend(fontsize=8)
    return ax


# The claims table (docs/results_schema.md, /claims and /claims_seeds): verdict colours, and the intervals
# drawn per row: (method name in /claims "method", low and high columns, legend label, colour, offset in rows).
VERDICT_COLORS = {"supported": "tab:green", "refuted": "tab:red", "inconclusive": "tab:orange"}
_INTERVALS = (("t", "t_lo", "t_hi", "Student-t 95%", "tab:blue", -0.22),
              ("percentile", "boot_lo", "boot_hi", "percentile bootstrap 95%", "tab:purple", 0.22),
              ("bca", "bca_lo", "bca_hi", "BCa bootstrap 95% (verdict's)", "tab:brown", 0.0))
_THIN, _THICK = 1.2, 3.4


def _claim_groups(claims):
    """Splits the claims with a finite value into those with a two-sided region of positive width (drawn on
    the region's scale) and the others (one-sided: on their own scale); the rest have no value."""
    value, lo, hi = (claims[c].astype(float) for c in ("value", "region_lo", "region_hi"))
    has_value = np.isfinite(value)
    two_sided = has_value & np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    return claims[two_sided], claims[has_value & ~two_sided], claims[~has_value]


def _per_seed(seeds):
    """{claim id: array of per-seed values} from a /claims_seeds frame (None or empty: no dots)."""
    if seeds is None or len(seeds) == 0:
        return {}
    return {cid: g["value"].to_numpy(float) for cid, g in seeds.groupby("id", sort=False)}


def _intervals(row):
    """[(name, lo, hi, label, colour, offset, is the verdict's)] of a claims row with finite bounds. A file
    from before the per-method columns has only ci_lo/ci_hi: that interval alone, unnamed."""
    method = getattr(row, "method", None)
    if method is None or not hasattr(row, "t_lo"):
        return [("ci", row.ci_lo, row.ci_hi, "95% interval (file without per-method intervals)", "0.35", 0.0,
                 True)]
    out = []
    for name, lo, hi, label, colour, offset in _INTERVALS:
        lo, hi = float(getattr(row, lo, np.nan)), float(getattr(row, hi, np.nan))
        # BCa only when the verdict used it: at 3-5 seeds it is NaN or left out to keep rows readable.
        if np.isfinite(lo) and np.isfinite(hi) and (name != "bca" or method == "bca"):
            out.append((name, lo, hi, label, colour, offset, name == method))
    return out


def _draw_claim(ax, y, row, values, scale):
    """One claim at height y: per-seed dots and the mean marker (coloured by verdict) on the row, the
    intervals as bars above and below it, the verdict's one thick. `scale` maps raw values to the x axis."""
    for name, lo, hi, _, colour, offset, chosen in _intervals(row):
        if np.isfinite(lo) and np.isfinite(hi):
            ax.plot(scale(np.array([lo, hi])), [y + offset] * 2, color=colour, lw=_THICK if chosen else _THIN,
                    solid_capstyle="butt", marker="|", ms=5 if chosen else 4, mew=1, zorder=2,
                    alpha=0.75 if chosen else 1.0, gid=f"interval:{name}")
    if len(values):
        ax.plot(scale(values), np.full(len(values), float(y)), "o", ms=3, color="0.2", alpha=0.7, mew=0,
                zorder=3, gid="seeds")
    ax.plot(scale(np.array([float(row.value)])), [y], "D", ms=5.5, mec="black", mew=0.6, zorder=4,
            color=VERDICT_COLORS.get(row.verdict, "0.6"), gid="mean")


def _legend_handles(drawn):
    """Legend entries for what was drawn: `drawn` holds the interval names, "seeds" when a per-seed dot was,
    and "verdict:<verdict>" per verdict shown."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles = []
    if "seeds" in drawn:
        handles.append(Line2D([], [], ls="", marker="o", ms=3, color="0.2", label="per-seed value"))
    handles.append(Line2D([], [], ls="", marker="D", ms=5.5, mec="black", mew=0.6, color="white",
                          label="mean (filled by verdict)"))
    for name, _, _, label, colour, _ in _INTERVALS + (("ci", 0, 0, "95% interval", "0.35", 0),):
        if name in drawn:
            handles.append(Line2D([], [], color=colour, lw=_THIN if name in ("t", "percentile") else _THICK,
                                  marker="|", label=label))
    if {"t", "percentile"} & drawn:
        handles.append(Line2D([], [], color="0.4", lw=_THICK, alpha=0.75, label="thick: the verdict's interval"))
    handles.append(Patch(color="tab:green", alpha=0.12, label="claimed region"))
    handles += [Patch(color=c, label=v) for v, c in VERDICT_COLORS.items() if f"verdict:{v}" in drawn]
    # An untestable row can still carry a value (what it would be): grey, like any other verdict.
    handles += [Patch(color="0.6", label=d[8:]) for d in sorted(drawn)
                if d.startswith("verdict:") and d[8:] not in VERDICT_COLORS]
    return handles


def _verdict_note(row):
    """The right-margin text of a row: verdict, Holm verdict where it differs, n and method, seeds to decide."""
    text = str(row.verdict)
    holm = getattr(row, "verdict_holm", "")
    if isinstance(holm, str) and holm and holm != row.verdict:
        text += f" (Holm: {holm})"
    n, method = getattr(row, "seeds", None), getattr(row, "method", "")
    if n is not None:
        text += f"   n={int(n)}" + (f", {method}" if isinstance(method, str) and method else "")
    needed = getattr(row, "seeds_needed", 0)
    if np.isfinite(float(needed)) and int(needed) > 0:
        text += f"; ~{int(needed)} seeds to decide"
    return text


def claim_seeds_plot(claims, seeds, ax=None):
    """Every claim with a value and a two-sided claimed region, one row each on the region's scale (the
    region mapped to [-1, 1], shaded; symmetric-log beyond ±2 so far misses stay on the axis): its per-seed
    values (`seeds`, the /claims_seeds frame: id, seed, value; None or empty: no dots), the mean coloured by
    verdict, the Student-t and percentile bootstrap intervals as thin bars above and below, the verdict's
    interval thick. Verdict, Holm verdict, n, method and seeds needed are written beside each row.
    One-sided claims go to `claim_one_sided_plot`; both are named in the title with the claims without a
    value. A /claims table without the per-method columns (older files) gets its ci_lo/ci_hi alone.
    Returns the axes; each drawn artist has a gid ("interval:t", "interval:percentile", "seeds", "mean")."""
    import textwrap

    import matplotlib.pyplot as plt
    from matplotlib.transforms import blended_transform_factory, offset_copy
    two_sided, one_sided, no_value = _claim_groups(claims)
    if ax is None:
        ax = plt.subplots(figsize=(10, 0.3 * len(two_sided) + 2.4), layout="constrained")[1]
    per_seed = _per_seed(seeds)
    drawn, extent = set(), [-1.0, 1.0]
    for y, row in enumerate(two_sided.itertuples(index=False)):
        centre, half = (row.region_lo + row.region_hi) / 2, (row.region_hi - row.region_lo) / 2

        def scale(x):
            return (np.asarray(x, float) - centre) / half
        values = per_seed.get(row.id, np.array([]))
        _draw_claim(ax, y, row, values, scale)
        drawn |= {i[0] for i in _intervals(row)} | {f"verdict:{row.verdict}"}
        drawn |= {"seeds"} if len(values) else set()
        xs = scale(np.concatenate([values, [row.value], [i[1] for i in _intervals(row)],
                                   [i[2] for i in _intervals(row)]]))
        extent = [min(extent[0], np.nanmin(xs)), max(extent[1], np.nanmax(xs))]
    ax.axvspan(-1, 1, color="tab:green", alpha=0.12, lw=0, zorder=0)
    for x in (-1, 1):
        ax.axvline(x, color="tab:green", lw=0.8, alpha=0.6, zorder=1)
    ax.axvline(0, color="0.5", lw=0.6, ls=":", zorder=1)
    ax.set_xscale("symlog", linthresh=2, linscale=1.2)
    forward = ax.xaxis.get_transform()  # a margin of 4% of the drawn width on either side
    lo, hi = forward.transform(np.array(extent))
    ax.set_xlim(*forward.inverted().transform(np.array([lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo)])))
    ticks = [t for t in (-1000, -100, -10, -2, -1, 0, 1, 2, 10, 100, 1000)
             if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.grid(axis="x", color="0.9", lw=0.6, zorder=0)
    ax.set_ylim(len(two_sided) - 0.4, -0.6)  # first claim on top
    ax.set_yticks(range(len(two_sided)), two_sided["id"], fontsize=8)
    for label, verdict in zip(ax.get_yticklabels(), two_sided["verdict"]):
        label.set_color(VERDICT_COLORS.get(verdict, "0.35"))
    margin = blended_transform_factory(ax.transAxes, ax.transData)
    for y, row in enumerate(two_sided.itertuples(index=False)):
        ax.text(1.01, y, _verdict_note(row), transform=margin, va="center", fontsize=7.5,
                color=VERDICT_COLORS.get(row.verdict, "0.35"))
    ax.set_xlabel("measured, in units of the claimed region: its bounds at -1 and +1 (linear within ±2, "
                  "logarithmic beyond)", fontsize=8.5)
    notes = []
    if len(one_sided):
        notes.append("one-sided, on their own scale in claim_one_sided_plot: " + ", ".join(one_sided["id"]))
    if 0 < len(no_value) <= 6:
        notes.append("no value: " + ", ".join(f"{i} ({v})" for i, v in zip(no_value["id"], no_value["verdict"])))
    elif len(no_value):
        counts = no_value["verdict"].value_counts()
        notes.append("no value (see the table): " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    title = "claims: per-seed values and 95% intervals against the claimed region"
    if not len(two_sided):
        title += "\n(no claim with a two-sided region has a measured value here)"
    ax.set_title("\n".join([title] + [textwrap.fill(n, 130) for n in notes]), fontsize=9, loc="left")
    handles = _legend_handles(drawn)  # in two rows
    ax.legend(handles=handles, loc="upper center", ncol=-(-len(handles) // 2), fontsize=7.5, frameon=False,
              bbox_to_anchor=(0.5, 0), bbox_transform=offset_copy(ax.transAxes, ax.figure, y=-30, units="points"))
    return ax


def claim_one_sided_plot(claims, seeds, ncols=3):
    """The claims with a value whose region is one-sided (an infinite bound; or of zero width), as small
    multiples on their own scale, marked like `claim_seeds_plot`: the claimed side shaded from the bound.
    Returns the figure, or None when there is no such claim."""
    import matplotlib.pyplot as plt
    _, rows, _ = _claim_groups(claims)
    if not len(rows):
        return None
    ncols = min(ncols, len(rows))
    nrows = -(-len(rows) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 1.45 * nrows + 0.7), layout="constrained",
                             squeeze=False)
    per_seed = _per_seed(seeds)
    drawn = set()
    for ax, row in zip(axes.flat, rows.itertuples(index=False)):
        values = per_seed.get(row.id, np.array([]))
        _draw_claim(ax, 0, row, values, lambda x: np.asarray(x, float))
        drawn |= {i[0] for i in _intervals(row)} | {f"verdict:{row.verdict}"}
        drawn |= {"seeds"} if len(values) else set()
        xs = np.concatenate([values, [row.value], [b for i in _intervals(row) for b in i[1:3]]])
        bounds = [b for b in (row.region_lo, row.region_hi) if np.isfinite(b)]
        lo, hi = np.nanmin(np.concatenate([xs, bounds])), np.nanmax(np.concatenate([xs, bounds]))
        pad = 0.12 * (hi - lo) if hi > lo else max(abs(hi), 1.0) * 0.1
        ax.set_xlim(lo - pad, hi + pad)
        ax.axvspan(max(row.region_lo, lo - pad), min(row.region_hi, hi + pad), color="tab:green", alpha=0.12,
                   lw=0, zorder=0)
        for b in bounds:
            ax.axvline(b, color="tab:green", lw=0.8, alpha=0.6, zorder=1)
        ax.set_ylim(0.6, -0.6)
        ax.set_yticks([])
        ax.tick_params(axis="x", labelsize=7.5)
        lo_ok, hi_ok = np.isfinite(row.region_lo), np.isfinite(row.region_hi)
        claimed = (f"{row.region_lo:g} .. {row.region_hi:g}" if lo_ok and hi_ok else f"at most {row.region_hi:g}"
                   if hi_ok else f"at least {row.region_lo:g}" if lo_ok else "any value")
        ax.set_title(f"{row.id}: claimed {claimed}\n{_verdict_note(row)}", fontsize=8,
                     color=VERDICT_COLORS.get(row.verdict, "0.35"))
    for ax in list(axes.flat)[len(rows):]:
        ax.set_visible(False)
    fig.suptitle("one-sided claims, on their own scale (marks as in the two-sided plot)", fontsize=9)
    handles = _legend_handles(drawn)
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=-(-len(handles) // 2),
               fontsize=7.5, frameon=False)
    return fig


def claim_sensitivity_plot(sensitivity, ncols=3, x="setting"):
    """Each claim of a /claims_sensitivity frame (load_claim_sensitivity) against the operating point it
    depends on: per setting the value and its 95% interval, the marker filled by the plain verdict there,
    the claimed region shaded. `x` is "setting" (the target) or "reached" (the target's metric on the test
    prompts). Returns the figure, or None for an empty frame."""
    import matplotlib.pyplot as plt
    if sensitivity is None or not len(sensitivity):
        return None
    # A claim with no value at any setting (its runs lack the metric: no judge, say) has nothing to draw.
    groups = [(k, g) for k, g in sensitivity.groupby(["id", "key"], sort=False)
              if np.isfinite(g["value"].to_numpy(float)).any()]
    if not groups:
        return None
    ncols = min(ncols, len(groups))
    nrows = -(-len(groups) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.5 * ncols, 2.6 * nrows + 0.5), layout="constrained",
                             squeeze=False)
    shown = set()
    for ax, ((cid, key), g) in zip(axes.flat, groups):
        g = g.sort_values("setting")
        xs = g[x].to_numpy(float)
        value, lo, hi = (g[c].to_numpy(float) for c in ("value", "ci_lo", "ci_hi"))
        ok = np.isfinite(lo) & np.isfinite(hi)
        ax.errorbar(xs[ok], value[ok], yerr=[value[ok] - lo[ok], hi[ok] - value[ok]], fmt="none", ecolor="0.35",
                    capsize=3, lw=1, zorder=2)
        ax.plot(xs, value, "-", color="0.6", lw=0.8, zorder=1)
        for xi, v, verdict in zip(xs, value, g["verdict"]):
            ax.plot([xi], [v], "D", ms=6, mec="black", mew=0.6, color=VERDICT_COLORS.get(verdict, "0.6"), zorder=3)
            shown.add(verdict)
        r_lo, r_hi = float(g["region_lo"].iloc[0]), float(g["region_hi"].iloc[0])
        ymin = np.nanmin(np.concatenate([lo[ok], value, [r_lo] if np.isfinite(r_lo) else []]))
        ymax = np.nanmax(np.concatenate([hi[ok], value, [r_hi] if np.isfinite(r_hi) else []]))
        pad = 0.1 * (ymax - ymin) if ymax > ymin else 0.1
        ax.set_ylim(ymin - pad, ymax + pad)
        ax.axhspan(max(r_lo, ymin - pad), min(r_hi, ymax + pad), color="tab:green", alpha=0.12, lw=0, zorder=0)
        if x == "setting" and "reached" in g:
            # The article's operating point of sfvl (seed 002 §2.2), where the study sits.
            ax.axvline(0.18, color="0.5", lw=0.7, ls=":", zorder=0)
        ax.set_title(f"{cid}\nclaimed {g['claimed'].iloc[0]}", fontsize=8)
        ax.set_xlabel(key if x == "setting" else f"{key} (reached on the test prompts)", fontsize=7.5)
        ax.tick_params(labelsize=7.5)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    from matplotlib.patches import Patch
    handles = [Patch(color=VERDICT_COLORS.get(v, "0.6"), label=v) for v in sorted(shown)]
    handles.append(Patch(color="tab:green", alpha=0.12, label="claimed region"))
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=len(handles), fontsize=7.5,
               frameon=False)
    fig.suptitle("each verdict along its operating point (value, 95% interval, plain verdict)", fontsize=9)
    return fig


# Serving (issue 14; sim/serving/serving_run.h, load_serving): serve/loads (measured beside simulated at each
# load), serve/steps (each measured step with the calibrated cost model's prediction) and serve/projected (named
# accelerators and model shapes by roofline, every row "projected").

# The figures python/bench_serving.py validates the simulator on.
VALIDATION_FIGURES = ("median_ttft_ms", "p90_ttft_ms", "median_tpot_ms", "request_throughput")
# serve/projected's figures written on the reference-rate row alone (sim/serving/projection.cpp): the rate is
# half the plain baseline's capacity on that accelerator and shape, the same for every variant.
REFERENCE_FIGURES = ("kv_peak_gb", "memory_gb", "power_w", "max_rate_slo")
# max_rate_meeting searches up to 1.5 x capacity (sim/serving/simulator.cpp): a rate there is the ceiling.
MAX_RATE_CEILING = 1.5
# Axis labels, with units, of the figures that are not latencies (those, STATISTIC_NAME_ms, are spelled out by
# serving_label); the names are vLLM benchmark_serving's.
_SERVING_LABELS = {
    "request_throughput": "request throughput (req/s)", "output_throughput": "output throughput (tok/s)",
    "total_token_throughput": "total throughput (tok/s)", "goodput": "goodput (req/s)",
    "slo_attainment": "SLO attainment (share of requests)", "rate": "offered rate (req/s)",
    "capacity_rps": "capacity (req/s)", "max_rate_slo": "max rate under SLO (req/s)",
    "kv_peak_gb": "KV cache peak (GB)", "memory_gb": "memory, weights + KV (GB)",
    "power_w": "power per GPU (W)", "preemptions": "preemptions (requests)", "duration_s": "duration (s)"}
_STATISTICS = {"mean": "mean", "median": "p50", "std": "std", "p90": "p90", "p99": "p99"}
_SIDES = {"measured": dict(ls="-", filled=True), "simulated": dict(ls="--", filled=False)}


def serving_label(figure, units=True):
    """The axis label of a serve/loads or serve/projected figure, with its units unless units=False:
    "median_ttft_ms" -> "TTFT p50 (ms)", "request_throughput" -> "request throughput (req/s)"; other names as
    they are."""
    words = figure.split("_")
    if len(words) == 3 and words[0] in _STATISTICS and words[2] == "ms":
        label = f"{words[1].upper()} {_STATISTICS[words[0]]} (ms)"
    else:
        label = _SERVING_LABELS.get(figure, figure)
    return label if units else label.split(" (")[0]


def serving_means(frame, keys, figures):
    """The mean over seeds (and a load's repeats, serve.repeats) of each of `figures` per `keys` (a row per key; NaN
    keys, a trace's load, kept), with `seeds`: the seeds (runs) behind each mean."""
    groups = frame.groupby(list(keys), dropna=False, sort=True)
    seeds = groups["seed"].nunique() if "seed" in frame else groups.size()
    return groups[list(figures)].mean().assign(seeds=seeds).reset_index()


def loads_table(loads, figures=("request_throughput", "output_throughput", "median_ttft_ms", "p90_ttft_ms",
                                "p99_ttft_ms", "median_tpot_ms", "goodput", "slo_attainment", "preemptions"),
                by="variant"):
    """serve/loads as one row per variant and load, each figure's measured and simulated means over seeds side by
    side (columns: figure, then side); NaN where a variant lacks a side (a simulate-only run measures nothing)."""
    means = serving_means(loads, [by, "load", "side"], [f for f in figures if f in loads]).drop(columns="seeds")
    return means.pivot(index=[by, "load"], columns="side").rename_axis(["figure", "side"], axis=1)


def simulator_error_table(loads, figures=VALIDATION_FIGURES, by="variant", sensitivity=None):
    """The simulator against the real server (python/bench_serving.py prints it): per variant, load and figure,
    the mean over seeds (and repeats) of each side and error_pct = 100 (simulated - measured) / measured. Only where
    both sides were served (a run with serve.measure off has no measured rows). With serve.repeats > 1,
    repeat_spread_pct is the measurement's own noise: the largest distance of one repeat's figure (mean over seeds)
    from the repeats' mean, in % of it (NaN with one repeat). Given serve/sensitivity (load_serving(path,
    "sensitivity")), band_lo and band_hi bound what the simulator predicts (mean over seeds) with every step up to
    2% shorter or longer than its cost model says (its own figure included): the error a profile leaves in step
    time, on this machine, moves a near-saturated cell across that band (NaN without it). at_speed and
    at_speed_error_pct: a diagnosis, not a prediction: the simulator at the speed each measured repeat ran at against
    its cost model (serve/sensitivity rows with matched >= 0), mean over seeds and repeats, and its error (NaN in a
    file from before them). Columns: variant, load, figure, measured, simulated, error_pct, repeat_spread_pct,
    band_lo, band_hi, at_speed, at_speed_error_pct, seeds, repeats."""
    if sensitivity is None or sensitivity.empty:
        sensitivity = pd.DataFrame({c: pd.Series(dtype=float) for c in [by, "load", "step_scale", *figures]})
    if "matched" not in sensitivity:
        sensitivity = sensitivity.assign(matched=-1)
    means = serving_means(loads, [by, "load", "side"], figures)
    measured = loads[loads["side"] == "measured"]
    if "repeat" not in measured:  # a file from before serve.repeats
        measured = measured.assign(repeat=0)

    def at_cell(frame, key, load):  # a trace's load is NaN, which no == (nor a groupby key lookup) finds
        same_load = frame["load"].isna() if pd.isna(load) else frame["load"] == load
        return frame[(frame[by] == key) & same_load]

    rows = []
    for (key, load), group in means.groupby([by, "load"], dropna=False, sort=True):
        side = group.set_index("side")
        if {"measured", "simulated"} <= set(side.index):
            reps = at_cell(measured, key, load).groupby("repeat")[list(figures)].mean()
            cell = at_cell(sensitivity, key, load)
            present = [f for f in figures if f in cell]
            scaled = cell[cell["matched"] < 0].groupby("step_scale")[present].mean()  # mean over seeds per scale
            at_speed = cell[cell["matched"] >= 0][present].mean()  # NaN without such rows
            for f in figures:
                m, s = side.at["measured", f], side.at["simulated", f]
                spread = 100.0 * (reps[f] - reps[f].mean()).abs().max() / reps[f].mean() if len(reps) > 1 else np.nan
                band = [s, *scaled[f]] if f in scaled else []
                lo, hi = (min(band), max(band)) if len(band) > 1 else (np.nan, np.nan)
                a = at_speed.get(f, np.nan)
                rows.append({by: key, "load": load, "figure": f, "measured": m, "simulated": s,
                             "error_pct": 100.0 * (s - m) / m, "repeat_spread_pct": spread, "band_lo": lo,
                             "band_hi": hi, "at_speed": a, "at_speed_error_pct": 100.0 * (a - m) / m,
                             "seeds": side.at["measured", "seeds"], "repeats": len(reps)})
    return pd.DataFrame(rows, columns=[by, "load", "figure", "measured", "simulated", "error_pct",
                                       "repeat_spread_pct", "band_lo", "band_hi", "at_speed", "at_speed_error_pct",
                                       "seeds", "repeats"])


def _axes(ax, figsize):
    import matplotlib.pyplot as plt
    return ax or plt.subplots(figsize=figsize, layout="constrained")[1]


def _log_scale(ax, which="xy"):
    """Log scale on the axes named in `which` ("x", "y" or both), the ticks plain numbers: 1, 2 and 5 per decade
    over two decades or less, the decades alone beyond. Call after drawing."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    for name in which:
        getattr(ax, f"set_{name}scale")("log")
        lo, hi = sorted(getattr(ax, f"get_{name}lim")())
        axis = getattr(ax, f"{name}axis")
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if hi <= 100 * lo else (1.0,)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def _legend_right(ax, handles=None, **kw):
    """The legend outside the axes, on their right (as pareto_plot's)."""
    ax.legend(handles=handles, fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
              frameon=False, **kw)


def _variant_handles(styles):
    """Legend handles: one per label of `styles` (variant_styles), its colour and marker."""
    from matplotlib.lines import Line2D
    return [Line2D([], [], color=c, marker=m, ls="", ms=6, mec="black", mew=0.4, label=label)
            for label, (_, c, m) in sorted(styles.items())]


def _side_handles():
    """Legend handles of the two sides of serve/loads: measured solid and filled, simulated dashed and hollow."""
    from matplotlib.lines import Line2D
    return [Line2D([], [], color="0.3", ls=s["ls"], marker="o", mfc="0.3" if s["filled"] else "white",
                   label=side) for side, s in _SIDES.items()]


def latency_throughput_plot(loads, figure="median_ttft_ms", by="variant", ax=None, legend=True, log=True):
    """Request throughput (x) against a latency figure (y) of serve/loads, each variant's loads joined in order
    (one colour per variant, variant_styles): measured solid with filled markers, simulated dashed with hollow
    ones, each point the mean over seeds. Log axes by default: latency grows by orders near saturation."""
    ax = _axes(ax, (7, 4.2))
    means = serving_means(loads, [by, "side", "load"], ["request_throughput", figure])
    styles = variant_styles(means[by])
    for (key, side), g in means.groupby([by, "side"]):
        _, colour, marker = styles[str(key)]
        s = _SIDES.get(side, _SIDES["simulated"])
        ax.plot(g["request_throughput"], g[figure], ls=s["ls"], marker=marker, color=colour, lw=1.3, ms=6,
                mfc=colour if s["filled"] else "white", mec=colour, mew=1.2, alpha=0.9, label=f"{key} {side}")
    if log:
        _log_scale(ax)
    ax.set_xlabel(serving_label("request_throughput"))
    ax.set_ylabel(serving_label(figure))
    loads_text = ", ".join(f"{x:g}" for x in sorted(means["load"].dropna().unique()))
    ax.set_title(f"{serving_label(figure, units=False)} against request throughput, measured and simulated\n"
                 f"at loads {loads_text} of capacity; mean over seeds", fontsize=9)
    ax.grid(True, which="both", lw=0.4, alpha=0.4)
    if legend:
        _legend_right(ax, _variant_handles(styles) + _side_handles())
    return ax


def simulator_error_plot(errors, tolerance=10.0, by="variant", ax=None):
    """simulator_error_table as a grid: a row per variant and load, a column per figure, each cell's error %
    written in it and coloured (blue: simulator low, red: high; saturated at 5 x tolerance), the cells beyond
    ±tolerance boxed. The title counts the cells within."""
    from matplotlib.patches import Rectangle
    grid = errors.pivot(index=[by, "load"], columns="figure", values="error_pct")
    grid = grid[list(errors["figure"].unique())]  # in the order given
    ax = _axes(ax, (1.6 * grid.shape[1] + 2.5, 0.32 * len(grid) + 1.4))
    ax.imshow(grid.to_numpy(float), cmap="RdBu_r", vmin=-5 * tolerance, vmax=5 * tolerance, aspect="auto")
    for (i, j), v in np.ndenumerate(grid.to_numpy(float)):
        far = not abs(v) <= tolerance
        ax.text(j, i, "-" if np.isnan(v) else f"{v:+.1f}%", ha="center", va="center", fontsize=7.5,
                fontweight="bold" if far else "normal", color="white" if abs(v) > 3.5 * tolerance else "black")
        if far:
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="black", lw=1.2))
    ax.set_xticks(range(grid.shape[1]), [serving_label(f) for f in grid.columns], fontsize=8)
    ax.set_yticks(range(len(grid)), [f"{k}, " + (f"load {l:g}" if np.isfinite(l) else "trace") for k, l in grid.index],
                  fontsize=8)
    within = int((errors["error_pct"].abs() <= tolerance).sum())
    ax.set_title(f"simulator error: (simulated - measured) / measured, mean over seeds per side\n"
                 f"{within}/{len(errors)} cells within ±{tolerance:g}% (beyond: boxed, bold)", fontsize=9)
    return ax


def _step_durations(steps):
    """(measured, predicted) duration in ns of each serve/steps row, as floats."""
    return (steps["end_ns"] - steps["start_ns"]).astype(float), steps["predicted_ns"].astype(float)


def step_fit_table(steps, by="variant"):
    """The cost model's fit on the measured steps (serve/steps): per variant the steps, median measured duration,
    median and p90 of |predicted - measured| / measured, and the bias of the sum (sum predicted / sum measured - 1)."""
    measured, predicted = _step_durations(steps)
    frame = pd.DataFrame({by: steps[by], "measured": measured, "predicted": predicted,
                          "rel": (predicted - measured).abs() / measured})
    g = frame.groupby(by)
    return pd.DataFrame({"steps": g.size(), "median_step_ms": g["measured"].median() / 1e6,
                         "median_abs_error_pct": 100 * g["rel"].median(),
                         "p90_abs_error_pct": 100 * g["rel"].quantile(0.9),
                         "sum_bias_pct": 100 * (g["predicted"].sum() / g["measured"].sum() - 1)})


def step_speed_table(steps, by="variant", stall=1.5):
    """How fast the real server ran against its cost model, per served load and repeat (serve/steps): one row per
    `by`, seed, load and repeat with slowdown_pct (100 * (sum measured / sum predicted - 1): + is slower than the
    model), the stalls (steps over `stall` times their prediction) and the time they lost (ms). Near saturation a
    1-2% slowdown moves TTFT p90 by tens of %: repeats of one seed that differ here measure different servers."""
    measured, predicted = _step_durations(steps)
    frame = pd.DataFrame({by: steps[by], "seed": steps["seed"], "load": steps["load"],
                          "repeat": steps["repeat"] if "repeat" in steps else 0,
                          "measured": measured, "predicted": predicted})
    frame["stall"] = frame["measured"] > stall * frame["predicted"]
    frame["lost"] = np.where(frame["stall"], frame["measured"] - frame["predicted"], 0.0)
    g = frame.groupby([by, "seed", "load", "repeat"], dropna=False)  # a trace's load is NaN
    return pd.DataFrame({"steps": g.size(),
                         "slowdown_pct": 100 * (g["measured"].sum() / g["predicted"].sum() - 1),
                         "stalls": g["stall"].sum().astype(int),
                         "stall_ms": g["lost"].sum() / 1e6}).reset_index()


def step_fit_plot(steps, by="variant", ncols=3):
    """The cost model's prediction of each measured step (serve/steps predicted_ns, y) against its measured
    duration (end_ns - start_ns, x), log axes, a panel per variant in its colour, the diagonal and ±10% drawn;
    each panel's title gives its median |error|. Returns the figure."""
    import matplotlib.pyplot as plt
    fit = step_fit_table(steps, by)
    ncols = max(1, min(ncols, len(fit)))
    nrows = max(1, -(-len(fit) // ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 3.0 * nrows), layout="constrained", squeeze=False,
                             sharex=True, sharey=True)
    styles = variant_styles(fit.index)
    measured, predicted = (d / 1e6 for d in _step_durations(steps))  # ms
    both = np.concatenate([measured, predicted])
    both = both[both > 0]
    line = np.geomspace(both.min(), both.max(), 50) if len(both) else np.array([])
    for ax, (key, row) in zip(axes.flat, fit.iterrows()):
        mine = (steps[by] == key).to_numpy()
        ax.scatter(measured[mine], predicted[mine], s=3, alpha=0.25, lw=0, color=styles[str(key)][1], rasterized=True)
        ax.plot(line, line, color="black", lw=0.8)
        ax.fill_between(line, line * 0.9, line * 1.1, color="0.5", alpha=0.25, lw=0)
        _log_scale(ax)
        ax.set_title(f"{key}: {int(row['steps'])} steps, median |error| {row['median_abs_error_pct']:.1f}%",
                     fontsize=8.5)
        ax.grid(True, which="both", lw=0.3, alpha=0.4)
    for ax in list(axes.flat)[len(fit):]:
        ax.set_visible(False)
    fig.supxlabel("measured step duration (ms)", fontsize=9)
    fig.supylabel("cost model's prediction (ms)", fontsize=9)
    fig.suptitle("the calibrated step cost model on every measured step (diagonal: exact; band: ±10%)", fontsize=9)
    return fig


def projected_reference(projected):
    """The reference-rate rows of serve/projected: the one row per run, accelerator and shape with the memory,
    power and max-rate figures (REFERENCE_FIGURES), all variants at the same rate there."""
    present = [f for f in REFERENCE_FIGURES if f in projected]
    return projected[projected[present].notna().any(axis=1)] if present else projected.iloc[:0]


def max_rate_at_ceiling(rows):
    """Whether each reference row's max_rate_slo is the search's ceiling, MAX_RATE_CEILING x capacity_rps
    (sim/serving/simulator.cpp max_rate_meeting): the SLOs still held there, the rate is a lower bound."""
    return rows["max_rate_slo"] >= MAX_RATE_CEILING * rows["capacity_rps"] * (1 - 1e-9)


def projected_plot(projected, figure="capacity_rps", by="variant", ax=None, legend=True):
    """A projected figure (serve/projected, roofline) per accelerator and shape: each variant's mean over seeds
    (its colour, variant_styles), its seeds as small dots when there are several, side by side within an
    accelerator and shape. Read on the reference-rate rows (projected_reference), where every variant is offered
    the same rate. A max_rate_slo at the search's ceiling (MAX_RATE_CEILING x capacity) is marked "≥": a lower
    bound. Log y when the values span more than 20x. "projected" is in the title and the axis label."""
    ax = _axes(ax, (7, 3.6))
    rows = projected_reference(projected)
    values = rows[figure].astype(float) if figure in rows else pd.Series(np.nan, index=rows.index)
    rows, values = rows[np.isfinite(values)], values[np.isfinite(values)]
    places = list(dict.fromkeys(zip(rows["accelerator"], rows["shape"])))
    styles = variant_styles(rows[by])
    width = 0.8 / max(1, len(styles))
    for i, (key, (_, colour, marker)) in enumerate(sorted(styles.items())):
        for j, place in enumerate(places):
            mine = rows[(rows[by].astype(str) == key) & (rows["accelerator"] == place[0]) & (rows["shape"] == place[1])]
            seeds, x = values[mine.index], j + (i - (len(styles) - 1) / 2) * width
            if len(seeds) > 1:
                ax.plot([x] * len(seeds), seeds, ".", color="0.25", ms=3, zorder=3)
            ax.plot([x], [seeds.mean()], marker, color=colour, ms=7, mec="black", mew=0.5, ls="", zorder=2)
            if figure == "max_rate_slo" and max_rate_at_ceiling(mine).any():
                ax.annotate("≥", (x, seeds.mean()), xytext=(0, 5), textcoords="offset points", ha="center",
                            va="bottom", fontsize=8)
    for j in range(1, len(places)):
        ax.axvline(j - 0.5, color="0.85", lw=0.8)
    ax.margins(y=0.12)  # room for the "≥" marks
    if len(values) and values.min() > 0 and values.max() / values.min() > 20:
        _log_scale(ax, "y")
    ax.set_xticks(range(len(places)), [f"{a}\n{s}" for a, s in places], fontsize=8)
    ax.set_xlim(-0.5, max(len(places), 1) - 0.5)
    ax.set_ylabel(f"projected {serving_label(figure)}", fontsize=8.5)
    note = "; ≥: at the search's ceiling" if figure == "max_rate_slo" else ""
    empty = "" if len(rows) else "\n(no projected rows with this figure)"
    ax.set_title(f"projected {serving_label(figure, units=False)}\n(roofline, at the reference rate{note}){empty}",
                 fontsize=9)
    ax.grid(True, axis="y", which="major", lw=0.4, alpha=0.4)
    if legend and styles:
        _legend_right(ax, _variant_handles(styles))
    return ax


# The scale ladder (issue 15; /claims with several sizes, /claims_trend): each claim's value against the
# model's parameters.
def trend_label(row):
    """'toward, +0.12 [+0.05, +0.2] per 10x' from a /claims_trend row (or 'no trend' when it has none)."""
    if not np.isfinite(row.slope):
        return "no trend"
    interval = f" [{row.slope_lo:+.3g}, {row.slope_hi:+.3g}]" if np.isfinite(row.slope_lo) else ""
    return f"{row.direction or '-'}, {row.slope:+.3g}{interval} per 10x"


def claim_scaling_plot(claims, trend, seeds=None, ncols=4):
    """Small multiples, one per claim with a value at two sizes or more: the value (mean over seeds, coloured
    by that size's verdict) with its interval against the parameter count (log axis), the per-seed values as
    dots (`seeds`: the /claims_seeds frame with its size column; None: no dots), the least-squares line on
    log10(parameters) the trend is the slope of, and the claimed region shaded. The title gives the trend
    (toward / away / flat, the slope per 10x parameters and its bootstrap interval). Returns the figure, or
    None when no claim has two sizes."""
    import matplotlib.pyplot as plt
    rows = claims[np.isfinite(claims["value"].astype(float))]
    ids = [i for i, g in rows.groupby("id", sort=False) if g["size"].nunique() >= 2]
    if not ids:
        return None
    trend = trend.set_index("id") if len(trend) else None
    ncols = min(ncols, len(ids))
    nrows = -(-len(ids) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 2.5 * nrows + 0.4), layout="constrained",
                             squeeze=False)
    for ax, cid in zip(axes.flat, ids):
        g = rows[rows["id"] == cid].sort_values("params")
        x, y = g["params"].to_numpy(float), g["value"].to_numpy(float)
        if seeds is not None and len(seeds) and "size" in seeds:
            mine = (seeds[seeds["id"] == cid].drop(columns="params", errors="ignore")
                    .merge(g[["size", "params"]], on="size"))  # the size's parameter count, as the means use
            ax.plot(mine["params"], mine["value"], "o", ms=3, color="0.45", alpha=0.8, zorder=5)
        lo, hi = g["ci_lo"].to_numpy(float), g["ci_hi"].to_numpy(float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        ax.errorbar(x[ok], y[ok], yerr=[y[ok] - lo[ok], hi[ok] - y[ok]], fmt="none", ecolor="0.3", lw=1, zorder=3)
        ax.scatter(x, y, c=[VERDICT_COLORS.get(v, "0.35") for v in g["verdict"]], marker="D", s=26,
                   edgecolor="k", lw=0.5, zorder=4)
        fit = np.polyfit(np.log10(x), y, 1)
        xs = np.geomspace(x.min(), x.max(), 20)
        ax.plot(xs, np.polyval(fit, np.log10(xs)), "-", color="tab:blue", lw=1, alpha=0.8, zorder=3)
        ax.set_xscale("log")
        y_lo, y_hi = ax.get_ylim()
        r_lo, r_hi = float(g["region_lo"].iloc[0]), float(g["region_hi"].iloc[0])
        if r_hi >= y_lo and r_lo <= y_hi:
            ax.axhspan(max(r_lo, y_lo), min(r_hi, y_hi), color="tab:green", alpha=0.15, lw=0, zorder=0)
        else:  # the region off the axis: say where it lies
            ax.annotate(f"claimed region {'above' if r_lo > y_hi else 'below'}", (0.02, 0.95 if r_lo > y_hi else 0.03),
                        xycoords="axes fraction", fontsize=7, color="tab:green", va="top" if r_lo > y_hi else "bottom")
        ax.set_ylim(y_lo, y_hi)
        label = trend_label(trend.loc[cid]) if trend is not None and cid in trend.index else "no trend"
        ax.set_title(f"{cid}\n{label}", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(ids):]:
        ax.set_visible(False)
    fig.supxlabel("parameters (the size's plain baseline)", fontsize=8)
    fig.suptitle("each claim against model size: value [interval] by the size's verdict, the claimed region "
                 "green, the least-squares line on log10(parameters)", fontsize=9)
    return fig


# The claims as one forest plot (issue 31; `zerolayer report`): every row of /claims on one axis, each against its
# own claimed region, the known methods and projections beside the claim they answer, the rows true by
# construction apart.
_HOLM_COLORS = {**VERDICT_COLORS, "by construction": "0.45"}
_COMPANION_KINDS = {"known": "known method", "projected": "projected", "served": "served here"}


def _text_column(frame, name):
    """A string column of a claims frame as str ('' where absent or NaN: files from before the column)."""
    if name not in frame:
        return pd.Series("", index=frame.index)
    return frame[name].fillna("").astype(str)


def claim_row_kind(row):
    """What a /claims row is: "claim" (an article's claim, or one true by construction), "known" (a known method
    or control beside a claim: known_method set), "projected" (a projected metric of the serving simulator:
    projection set) or "served" (a metric of the real server here, serve_*: projection set)."""
    if str(getattr(row, "known_method", "") or "") not in ("", "nan"):
        return "known"
    if str(getattr(row, "projection", "") or "") not in ("", "nan"):
        return "served" if str(getattr(row, "metric", "")).startswith("serve_") else "projected"
    return "claim"


def claim_forest_rows(claims):
    """The rows of a /claims frame (the articles' claims and the known, projected and served rows, in any order) in
    the forest plot's order: each claim followed by the rows beside it (of_claim), the findings first, then the rows
    true by construction (by_construction set) with theirs; rows beside a claim that is not in the frame come last.
    Returns a frame with `kind` (claim_row_kind) and `group` ("finding" | "by construction") added."""
    frame = claims.reset_index(drop=True).copy()
    frame["kind"] = [claim_row_kind(r) for r in frame.itertuples(index=False)]
    of_claim = _text_column(frame, "of_claim")
    built = _text_column(frame, "by_construction") != ""
    heads = frame[frame["kind"] == "claim"]
    order, groups, placed = [], [], set()
    for group, chosen in (("finding", ~built), ("by construction", built)):
        for i in heads.index[chosen[heads.index]]:
            companions = frame.index[(frame["kind"] != "claim") & (of_claim == frame.at[i, "id"])]
            for j in [i, *companions]:
                if j not in placed:
                    order.append(j), groups.append(group), placed.add(j)
    for j in frame.index:
        if j not in placed:
            order.append(j), groups.append("finding" if not built[j] else "by construction")
    return frame.loc[order].assign(group=groups).reset_index(drop=True)


def _forest_scale(row, values):
    """(centre, half, region) mapping a row's raw values to the forest plot's axis, x -> (x - centre) / half: a
    two-sided region's bounds land on -1 and +1; a one-sided region's bound on -1 (at least) or +1 (at most), a unit
    being half the row's spread (values, mean, interval and bound); a region of no width (or none) at 0. `region`
    is the region's (lo, hi) on the axis (±inf for an open side; None without one)."""
    lo, hi = float(row.region_lo), float(row.region_hi)
    points = np.asarray([*values, row.value, getattr(row, "ci_lo", np.nan), getattr(row, "ci_hi", np.nan)], float)
    points = points[np.isfinite(points)]

    def unit(anchor):
        spread = np.max(np.abs(points - anchor)) if len(points) else 0.0
        return spread / 2 if spread > 0 else max(abs(anchor), 1.0) * 0.1
    if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
        return (lo + hi) / 2, (hi - lo) / 2, (-1.0, 1.0)
    if np.isfinite(lo) and not np.isfinite(hi) and hi > 0:
        half = unit(lo)
        return lo + half, half, (-1.0, np.inf)
    if np.isfinite(hi) and not np.isfinite(lo) and lo < 0:
        half = unit(hi)
        return hi - half, half, (-np.inf, 1.0)
    if np.isfinite(lo) and lo == hi:
        return lo, unit(lo), (0.0, 0.0)
    centre = float(row.value) if np.isfinite(row.value) else 0.0
    return centre, unit(centre), None


def claim_measured_text(row, digits=4):
    """'0.139 [-0.235, 0.513]' (the mean and its 95% interval, `digits` significant digits) of a /claims row; '-'
    without a value."""
    def fmt(v):
        return "-" if not np.isfinite(v) else f"{v:.{digits}g}"
    value, lo, hi = (float(getattr(row, c, np.nan)) for c in ("value", "ci_lo", "ci_hi"))
    if not np.isfinite(value):
        return "-"
    return fmt(value) + (f" [{fmt(lo)}, {fmt(hi)}]" if np.isfinite(lo) and np.isfinite(hi) else "")


def claim_forest_plot(claims, seeds=None, title=None):
    """The claims as a forest plot: one row per /claims row (claim_forest_rows' order: each claim with its known
    methods and projections indented under it, the rows true by construction apart under their own heading), each
    drawn against its own claimed region (shaded green; a two-sided region's bounds at -1 and +1, a one-sided one's
    bound at ±1; symmetric log beyond ±2, so far misses stay on the axis): the per-seed values as dots (`seeds`, the
    /claims_seeds frame; None: none), the mean as a diamond filled by the verdict's colour and the interval the
    verdict used as a bar. Beside each row, in its own units, the measured value and interval, the verdict and the
    Holm verdict (each in its colour), and n with the interval's method. Rows without a value keep their line with
    their verdict. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.transforms import blended_transform_factory, offset_copy
    rows = claim_forest_rows(claims)
    per_seed = _per_seed(seeds)
    # y positions: a gap and a heading line before the rows true by construction.
    ys, y, headings = [], 0.0, []
    for i, group in enumerate(rows["group"]):
        if group == "by construction" and (i == 0 or rows.at[i - 1, "group"] != group):
            y += 0.6 if i else 0.0
            headings.append(y)
            y += 1.0
        ys.append(y)
        y += 1.0
    height = max(y, 1.0)
    fig, ax = plt.subplots(figsize=(13, 0.27 * height + 2.0), layout="constrained")
    drawn_verdicts, extent, marks = set(), [-1.5, 1.5], []
    for yi, row in zip(ys, rows.itertuples(index=False)):
        values = per_seed.get(row.id, np.array([]))
        centre, half, region = _forest_scale(row, values)

        def scale(x, centre=centre, half=half):
            return (np.asarray(x, float) - centre) / half
        chosen = [iv for iv in _intervals(row) if iv[6]] if np.isfinite(row.value) else []
        marks.append((yi, row, values, scale, region, chosen))
        xs = scale(np.concatenate([values, [row.value], [b for iv in chosen for b in iv[1:3]]]))
        xs = xs[np.isfinite(xs)]
        if len(xs):
            extent = [min(extent[0], xs.min()), max(extent[1], xs.max())]
    ax.set_xscale("symlog", linthresh=2, linscale=1.2)
    forward = ax.xaxis.get_transform()
    lo, hi = forward.transform(np.array(extent))
    xlim = forward.inverted().transform(np.array([lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo)]))
    ax.set_xlim(*xlim)
    for yi, row, values, scale, region, chosen in marks:
        if region is not None:
            r_lo, r_hi = max(region[0], xlim[0]), min(region[1], xlim[1])
            width = max(r_hi - r_lo, 0.0)
            ax.add_patch(Rectangle((r_lo - (0.02 if width == 0 else 0), yi - 0.42), width or 0.04, 0.84,
                                   color="tab:green", alpha=0.16, lw=0, zorder=0))
        faded = row.kind != "claim"
        for _, lo_, hi_, _, _, _, _ in chosen:
            ax.plot(scale([lo_, hi_]), [yi, yi], color="0.25" if not faded else "0.5", lw=2.6, solid_capstyle="butt",
                    marker="|", ms=6, mew=1.2, zorder=2, gid="interval")
        if len(values):
            ax.plot(scale(values), np.full(len(values), yi), "o", ms=3.2, color="0.15", alpha=0.55, mew=0, zorder=3,
                    gid="seeds")
        if np.isfinite(row.value):
            ax.plot(scale([row.value]), [yi], "D" if not faded else "s", ms=6 if not faded else 5, mec="black",
                    mew=0.6, color=VERDICT_COLORS.get(row.verdict, "0.6"), zorder=4, gid="mean")
            drawn_verdicts.add(row.verdict)
        else:
            ax.text(0, yi, f"no value ({row.verdict})", ha="center", va="center", fontsize=7, color="0.45",
                    style="italic")
    for x in (-1, 1):
        ax.axvline(x, color="tab:green", lw=0.6, alpha=0.5, zorder=1)
    ax.axvline(0, color="0.6", lw=0.5, ls=":", zorder=1)
    for h in headings:
        ax.axhline(h - 0.8, color="0.5", lw=0.6)
        ax.text(0.0, h, "by construction: the design fixes these values (manipulation checks, outside the Holm family)",
                transform=blended_transform_factory(ax.transAxes, ax.transData), fontsize=8, style="italic",
                va="center", color="0.3")
    ticks = [t for t in (-1000, -100, -10, -2, -1, 0, 1, 2, 10, 100, 1000) if xlim[0] <= t <= xlim[1]]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.grid(axis="x", color="0.92", lw=0.6, zorder=0)
    ax.set_ylim(height - 0.4, -0.8)
    labels = [row.id if row.kind == "claim" else f"    @{row.id.split('@', 1)[-1]} ({_COMPANION_KINDS[row.kind]})"
              for row in rows.itertuples(index=False)]
    ax.set_yticks(ys, labels, fontsize=7.5)
    for label, row in zip(ax.get_yticklabels(), rows.itertuples(index=False)):
        label.set_color(VERDICT_COLORS.get(row.verdict, "0.35") if row.kind == "claim" else "0.35")
        if row.kind != "claim":
            label.set_style("italic")
    # The columns beside the plot, at fixed offsets (points) right of the axes.
    right = blended_transform_factory(ax.transAxes, ax.transData)
    columns = [(offset_copy(right, fig, x=x, units="points"), name)
               for x, name in ((6, "measured [95% CI]"), (150, "verdict"), (212, "Holm"), (282, "n, interval"))]
    for transform, name in columns:
        ax.text(1.0, -0.8, name, transform=transform, fontsize=7.5, fontweight="bold", va="bottom")
    for yi, row in zip(ys, rows.itertuples(index=False)):
        holm = str(getattr(row, "verdict_holm", "") or "")
        holm = "" if holm == "nan" else holm
        method = str(getattr(row, "method", "") or "")
        n = f"n={int(row.seeds)}" + (f", {method}" if method and method != "nan" else "")
        cells = ((claim_measured_text(row, 3), "0.15"), (str(row.verdict), VERDICT_COLORS.get(row.verdict, "0.45")),
                 (holm or "-", _HOLM_COLORS.get(holm, "0.45")), (n, "0.3"))
        for (transform, _), (text, colour) in zip(columns, cells):
            ax.text(1.0, yi, text, transform=transform, fontsize=7.2, va="center", color=colour)
    ax.set_xlabel("position against the claimed region (green): a two-sided region's bounds at -1 and +1,\n"
                  "a one-sided region's bound at ±1 (a unit: half the row's spread); linear within ±2, logarithmic "
                  "beyond", fontsize=8)
    ax.set_title(title or "the claims against their claimed regions", fontsize=9.5, loc="left")
    handles = [Line2D([], [], ls="", marker="o", ms=3.2, color="0.15", alpha=0.55, label="per-seed value"),
               Line2D([], [], color="0.25", lw=2.6, marker="|", label="95% interval (the verdict's method)"),
               Line2D([], [], ls="", marker="D", ms=6, mec="black", mew=0.6, color="white",
                      label="mean (filled by verdict)"),
               Line2D([], [], ls="", marker="s", ms=5, mec="black", mew=0.6, color="white",
                      label="known method / projection (where it lies)"),
               Patch(color="tab:green", alpha=0.16, label="claimed region")]
    handles += [Patch(color=VERDICT_COLORS.get(v, "0.6"), label=v) for v in sorted(drawn_verdicts)]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.09 * 12 / max(height, 12) - 0.02),
              ncol=-(-len(handles) // 2), fontsize=7.5, frameon=False)
    return fig


def training_curve_plot(loss, val_loss=None, ax=None, title=None):
    """A run's training curves: the training loss (a Series indexed by step: load_curve(path, run, "train/loss")),
    thin, and the validation loss at its own steps (val_loss, likewise; None or empty: none) as dots joined.
    Returns the axes."""
    ax = _axes(ax, (6, 2.4))
    if loss is not None and len(loss):
        ax.plot(loss.index, loss.to_numpy(float), color="tab:blue", lw=0.8, alpha=0.85, label="train loss")
    if val_loss is not None and len(val_loss):
        ax.plot(val_loss.index, val_loss.to_numpy(float), "o-", color="tab:red", ms=3.5, lw=1, label="val loss")
    ax.set_xlabel("step", fontsize=8)
    ax.set_ylabel("loss (nats/token)", fontsize=8)
    ax.tick_params(labelsize=7.5)
    ax.grid(True, lw=0.4, alpha=0.4)
    if (loss is not None and len(loss)) or (val_loss is not None and len(val_loss)):
        ax.legend(fontsize=7.5, frameon=False)
    if title:
        ax.set_title(title, fontsize=8.5)
    return ax


def simulator_scatter_plot(errors, tolerance=10.0, by="variant", ncols=4):
    """The simulator's prediction (y) against the real server's measurement (x) of each figure of
    simulator_error_table (a panel per figure, log axes when it spans more than 10x), a point per variant (its
    colour) and load (written beside it), mean over seeds: the horizontal bar is the repeats' spread
    (repeat_spread_pct of the measurement: the real server's own noise), the vertical bar the band a ±2% step-time
    error moves the prediction across (band_lo..band_hi, where the file has serve/sensitivity); the diagonal is
    exact, the grey band ±tolerance %. Returns the figure, or None for an empty table."""
    import matplotlib.pyplot as plt
    if errors is None or not len(errors):
        return None
    figures = list(dict.fromkeys(errors["figure"]))
    ncols = max(1, min(ncols, len(figures)))
    nrows = -(-len(figures) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols + 1.6, 3.0 * nrows + 0.4), layout="constrained",
                             squeeze=False)
    styles = variant_styles(errors[by])
    for ax, figure in zip(axes.flat, figures):
        g = errors[errors["figure"] == figure]
        m, s = g["measured"].to_numpy(float), g["simulated"].to_numpy(float)
        spread = np.abs(m) * g["repeat_spread_pct"].to_numpy(float) / 100
        band = np.vstack([s - g["band_lo"].to_numpy(float), g["band_hi"].to_numpy(float) - s])
        for k, (_, row) in enumerate(g.iterrows()):
            _, colour, marker = styles[str(row[by])]
            ax.errorbar([m[k]], [s[k]], xerr=None if not np.isfinite(spread[k]) else [[spread[k]], [spread[k]]],
                        yerr=None if not np.isfinite(band[:, k]).all() else band[:, [k]], fmt=marker, color=colour,
                        ms=5, mec="black", mew=0.4, elinewidth=0.9, capsize=2, zorder=3)
            load = row["load"]
            ax.annotate(f"{load:g}" if np.isfinite(load) else "trace", (m[k], s[k]), xytext=(4, -3),
                        textcoords="offset points", fontsize=6.5, color="0.3")
        both = np.concatenate([m, s])
        both = both[np.isfinite(both) & (both > 0)]
        if len(both):
            line = np.geomspace(both.min() * 0.8, both.max() * 1.25, 50)
            ax.plot(line, line, color="black", lw=0.7)
            ax.fill_between(line, line * (1 - tolerance / 100), line * (1 + tolerance / 100), color="0.5", alpha=0.2,
                            lw=0)
            if both.max() > 10 * both.min():
                _log_scale(ax)
        within = int((g["error_pct"].abs() <= tolerance).sum())
        ax.set_title(f"{serving_label(figure)}: {within}/{len(g)} within ±{tolerance:g}%", fontsize=8)
        ax.set_xlabel("measured", fontsize=7.5)
        ax.set_ylabel("simulated", fontsize=7.5)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", lw=0.3, alpha=0.4)
    for ax in list(axes.flat)[len(figures):]:
        ax.set_visible(False)
    _legend_right(axes.flat[len(figures) - 1], _variant_handles(styles))
    fig.suptitle("simulated against measured per load (number: load as a share of capacity); mean over seeds; "
                 "bars: the repeats' spread (x), ±2% step time (y)", fontsize=9)
    return fig
