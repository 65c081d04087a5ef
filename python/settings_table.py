#!/usr/bin/env python3
"""A study's settings in Markdown, as the README's study tables show them: per
setting (the variant and the keys that vary among its runs) the mean over
seeds of each metric with its 95% bootstrap interval, or the mean alone for
the metrics named plain (speeds, bytes, FLOPs: one figure per setting reads
better, their spread is in the notebooks).

    /usr/bin/python3 python/settings_table.py results/baselines/results.h5 \\
        --metrics violation_rate judge_nll --plain decode_tok_s kv_bytes_per_token flops_per_token
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from zerolayer import load_index, settings, summarize  # noqa: E402


def cell(mean, lo=np.nan, hi=np.nan):
    if not np.isfinite(mean):
        return "-"
    text = f"{mean:,.0f}" if abs(mean) >= 100 else f"{mean:.3f}"
    return text if not (np.isfinite(lo) and np.isfinite(hi)) else f"{text} [{lo:.3f}, {hi:.3f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results")
    parser.add_argument("--metrics", nargs="*", default=["violation_rate", "judge_nll"],
                        help="metrics shown with their interval")
    parser.add_argument("--plain", nargs="*", default=["decode_tok_s"], help="metrics shown as the mean alone")
    args = parser.parse_args()
    index = load_index(args.results)
    index["setting"] = index["run_id"].map(settings(args.results, index))
    table = summarize(index, args.metrics + args.plain)
    names = args.metrics + args.plain
    print("| setting | n | " + " | ".join(names) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in names) + " |")
    for _, r in table.iterrows():
        cells = [cell(r[m], r[f"{m}_lo"], r[f"{m}_hi"]) for m in args.metrics] + [cell(r[m]) for m in args.plain]
        print(f"| {r['setting']} | {int(r['n'])} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
