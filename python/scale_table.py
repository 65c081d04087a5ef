#!/usr/bin/env python3
"""The scale ladder's tables in Markdown (issue 15), as the README shows them:
each claim's verdict at every size, smallest first, and its trend across the
sizes (the slope per 10x parameters with its bootstrap and t intervals, the
direction against the claimed region). Reads /claims and /claims_trend, which
`zerolayer claims RESULTS` writes for a file of several model sizes.

    /usr/bin/python3 python/scale_table.py results/scale/results.h5
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from zerolayer import load_claim_trend, load_claims  # noqa: E402

SHORT = {"supported": "sup", "refuted": "ref", "inconclusive": "inc", "untestable": "untestable",
         "missing": "missing"}


def number(v):
    return "-" if not np.isfinite(v) else f"{v:+.3g}"


def interval(lo, hi):
    return "-" if not np.isfinite(lo) else f"[{lo:+.3g}, {hi:+.3g}]"


def markdown(path):
    """The two tables, as Markdown text."""
    claims, trend = load_claims(path), load_claim_trend(path)
    if "size" not in claims or claims["size"].nunique() < 2 or trend.empty:
        raise SystemExit(f"{path}: not a file of several model sizes judged by `zerolayer claims` "
                         "(no /claims_trend): run it first")
    sizes = claims[["size", "params"]].drop_duplicates().sort_values("params")
    trend = trend.set_index("id")
    head = " | ".join(f"{s} ({p / 1e6:.2g}M)" for s, p in sizes.itertuples(index=False))
    lines = [f"| claim | {head} | slope per 10x params [bootstrap] | t over seeds | claimed | trend |",
             "| --- |" + " --- |" * (len(sizes) + 4)]
    for cid, rows in claims.groupby("id", sort=False):
        by_size = rows.set_index("size")
        cells = []
        for size in sizes["size"]:
            if size not in by_size.index:
                cells.append("-")
                continue
            r = by_size.loc[size]
            value = "" if not np.isfinite(r["value"]) else f"{r['value']:.3g} "
            cells.append(f"{value}{SHORT.get(r['verdict'], r['verdict'])}")
        t = trend.loc[cid] if cid in trend.index else None
        has = t is not None and np.isfinite(t["slope"])
        slope = f"{number(t['slope'])} {interval(t['slope_lo'], t['slope_hi'])}" if has else "-"
        tci = interval(t["slope_t_lo"], t["slope_t_hi"]) if has else "-"
        lines.append(f"| {cid} | " + " | ".join(cells) + f" | {slope} | {tci} | {rows['claimed'].iloc[0]} | "
                     f"{(t['direction'] or '-') if has else '-'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="a results file of several model sizes, judged by `zerolayer claims`")
    print(markdown(parser.parse_args().results), end="")


if __name__ == "__main__":
    main()
