"""The standard plots (matplotlib): quality against throughput with interval
whiskers and the Pareto front; re-sampling rates by context length; the claims
table's per-seed values and intervals against each claimed region."""
import numpy as np

from .results import pareto_front


# One colour per variant, the same in every plot and file: the seeds' mechanisms in warm colours, the
# published methods in cool ones, sfvl's controls in reds and browns apart enough to tell (three shades of
# one red could not be told apart on the baselines study's plot). A variant not named here takes a colour
# no named variant uses.
VARIANT_COLORS = {
    "baseline": "#404040", "sfvl": "#d62728", "sfcl": "#ff7f0e", "oet": "#bcbd22", "fused": "#9467bd",
    "speculative": "#8c564b", "sfvl_best_of_n": "#ff9896", "sfvl_oracle": "#7b4173", "sfvl_random": "#8c6d31",
    "contrastive": "#2ca02c", "alibi": "#1f77b4", "gated_attn": "#17becf", "streaming": "#393b79", "h2o": "#6b6ecf",
    "latent_kv": "#e377c2"}
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
