"""The standard plots (matplotlib): quality against throughput with interval
whiskers and the Pareto front; re-sampling rates by context length."""
import numpy as np

from .results import pareto_front


def pareto_plot(summary, quality="violation_rate", throughput="decode_tok_s", label="setting", ax=None,
                lower_quality_is_better=True):
    """Scatter of a `summarize` frame: throughput (x) against quality (y), each
    point with its 95% whiskers on both axes, the Pareto front joined by a line.
    Rows without both values are left out (and listed in the title)."""
    import matplotlib.pyplot as plt
    ax = ax or plt.subplots(figsize=(7, 4.5))[1]
    ok = summary[np.isfinite(summary[quality].astype(float)) & np.isfinite(summary[throughput].astype(float))]
    for _, row in ok.iterrows():
        xerr = [[row[throughput] - row[f"{throughput}_lo"]], [row[f"{throughput}_hi"] - row[throughput]]]
        yerr = [[row[quality] - row[f"{quality}_lo"]], [row[f"{quality}_hi"] - row[quality]]]
        xerr = None if np.isnan(xerr).any() else xerr
        yerr = None if np.isnan(yerr).any() else yerr
        ax.errorbar(row[throughput], row[quality], xerr=xerr, yerr=yerr, fmt="o", capsize=3,
                    label=f"{row[label]} (n={row['n']})")
    if len(ok):
        front = ok[pareto_front(ok, quality, throughput, lower_quality_is_better)].sort_values(throughput)
        ax.plot(front[throughput], front[quality], "k--", lw=1, alpha=0.6, label="Pareto front")
    ax.set_xlabel(f"{throughput} (higher is better)")
    ax.set_ylabel(f"{quality} ({'lower' if lower_quality_is_better else 'higher'} is better)")
    left_out = sorted(set(summary[label]) - set(ok[label]))
    ax.set_title("quality vs throughput, mean and 95% bootstrap CI over seeds"
                 + (f"\nnot measured: {', '.join(map(str, left_out))}" if left_out else ""), fontsize=9)
    ax.legend(fontsize=7, loc="best")
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
