#!/usr/bin/env python3
"""The serving simulator against real serving (issue 14): for each variant
and load of a served study, the simulator's prediction (on the cost model
calibrated on the real step, sim/serving/calibration.h) beside what the real
server measured on the same requests, and the error in %. The figures are
those the validation asks for: TTFT p50 and p90, TPOT p50 and request
throughput; each is the mean over the study's seeds of the per-seed figure,
and the error is (predicted - measured) / measured
(zerolayer.plots.simulator_error_table, which the serving notebook draws).

Each cell's conditioning beside it: the band the simulated figure sweeps
when every step is up to 2% shorter or longer than the cost model says
(serve/sensitivity). Near saturation a queue turns 1% of step time into
tens of % of TTFT p90, and this machine's speed moves by a few % between a
profile and a load: a measurement inside the band is as close as the step
model's accuracy here can say.

With serve.repeats > 1 the real server served each load's requests several
times back to back: the measured figure is the mean over seeds and
repeats, and the repeat spread, the largest distance of one repeat's
figure (mean over seeds) from the repeats' mean, is the measurement's own
noise on this machine: a simulator that predicted the server exactly would
still miss a single repeat by that much.

And, as a diagnosis, the simulator run at the speed each measured repeat
ran at against its cost model (read off the repeat's own steps): what it
still misses is the scheduler and the cost model's shape, not this
machine's drift during the load.

Then how fast the real server ran against its cost model at each load
(zerolayer.plots.step_speed_table on serve/steps): the range of the
time-weighted slowdown over seeds and repeats, the largest gap between two
repeats of one seed, and the stalls (steps over 1.5x their prediction). A
repeat gap of a few % near saturation is what no cost model fitted before
the load can follow.

    /usr/bin/python3 python/bench_serving.py results/serving/results.h5
    /usr/bin/python3 python/bench_serving.py --run ablations/serving.ini   # runs the study first

Exits 1 when a cell is off by more than --tolerance (10% by default), so
that a script can gate on it; the table is printed either way.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from zerolayer import load_serving  # noqa: E402
from zerolayer.plots import simulator_error_table, step_speed_table  # noqa: E402

FIGURES = {"median_ttft_ms": "TTFT p50 ms", "p90_ttft_ms": "TTFT p90 ms", "median_tpot_ms": "TPOT p50 ms",
           "request_throughput": "req/s"}


def validation_table(path):
    """One row per variant, load and figure: predicted, measured, error (%) and the repeat spread (%)."""
    loads = load_serving(path, "loads")
    if loads.empty:
        raise SystemExit(f"{path}: no served runs (serve.enabled) in this file")
    sensitivity = load_serving(path, "sensitivity")  # empty in a file from before it
    table = simulator_error_table(loads, tuple(FIGURES), sensitivity=sensitivity)
    return [dict(r, figure=FIGURES[r["figure"]], predicted=r["simulated"]) for r in table.to_dict("records")]


def within_noise(row, tolerance):
    """Within the tolerance, or no further off than the real server's own repeats."""
    spread = row["repeat_spread_pct"]
    return abs(row["error_pct"]) <= max(tolerance, 0 if spread != spread else spread)


def in_band(row):
    """The measurement inside what the simulator predicts for steps within ±2% of its model."""
    return row["band_lo"] <= row["measured"] <= row["band_hi"]


def markdown(rows):
    out = ["| variant | load | figure | predicted | measured | error | ±2% step time | repeat spread |",
           "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        out.append(f"| {r['variant']} | {r['load']:.2f} | {r['figure']} | {r['predicted']:.3f} | {r['measured']:.3f} | "
                   f"{r['error_pct']:+.1f}% | {_band(r)} | {_spread(r)} |")
    return "\n".join(out)


def _band(row):
    return "" if row["band_lo"] != row["band_lo"] else f"{row['band_lo']:.3g}–{row['band_hi']:.3g}"


def _spread(row):
    return "" if row["repeats"] < 2 else f"±{row['repeat_spread_pct']:.1f}%"


def _cell(row):
    """predicted / measured (error; ±repeat spread) [the prediction's ±2% step-time band]."""
    notes = [f"{row['error_pct']:+.1f}%"] + ([_spread(row)] if row["repeats"] > 1 else [])
    band = f" [{_band(row)}]" if row["band_lo"] == row["band_lo"] else ""
    return f"{row['predicted']:.3g} / {row['measured']:.3g} ({'; '.join(notes)}){band}"


def wide_markdown(rows):
    """One row per variant and load; each figure as "predicted / measured (error; ±repeat spread) [band]"."""
    names = list(FIGURES.values())
    out = ["| variant | load | " + " | ".join(names) + " |", "| --- | ---: |" + " ---: |" * len(names)]
    cells = {}
    for r in rows:
        cells.setdefault((r["variant"], r["load"]), {})[r["figure"]] = r
    for (variant, load), by in cells.items():
        out.append(f"| {variant} | {load:.2f} | " + " | ".join(_cell(by[n]) for n in names) + " |")
    return "\n".join(out)


def speed_markdown(path):
    """Per variant and load: the real server's slowdown against its cost model over seeds and repeats, the
    largest gap between repeats of one seed, and its stalls."""
    steps = load_serving(path, "steps")
    if steps.empty:
        return ""
    speed = step_speed_table(steps)
    out = ["| variant | load | slowdown against the cost model | largest gap between repeats | stalls (ms lost) |",
           "| --- | ---: | ---: | ---: | ---: |"]
    for (variant, load), g in speed.groupby(["variant", "load"], dropna=False):
        gaps = g.groupby("seed")["slowdown_pct"].agg(lambda x: x.max() - x.min())
        out.append(f"| {variant} | {load:.2f} | {g.slowdown_pct.min():+.1f}% to {g.slowdown_pct.max():+.1f}% | "
                   f"{gaps.max():.1f} pts (seed {gaps.idxmax()}) | {int(g.stalls.sum())} ({g.stall_ms.sum():.0f}) |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", help="a served study's results.h5")
    ap.add_argument("--run", help="run this study file first (zerolayer ablate), then read its results")
    ap.add_argument("--zerolayer", default=os.path.join(ROOT, "build", "zerolayer"))
    ap.add_argument("--tolerance", type=float, default=10.0, help="largest |error| in %% that passes")
    ap.add_argument("--wide", action="store_true", help="one row per variant and load (the README's table)")
    args = ap.parse_args()
    path = args.results
    if args.run:
        subprocess.run([args.zerolayer, "ablate", args.run], check=True)
        out = subprocess.run([args.zerolayer, "ablate", args.run, "--dry-run"], check=True, capture_output=True,
                             text=True).stdout
        path = path or next(line.split()[-1] for line in out.splitlines() if line.startswith("results"))
    if not path:
        ap.error("give a results file or --run STUDY")
    rows = validation_table(path)
    if not rows:
        raise SystemExit(f"{path}: no run has both measured and simulated figures (run serve-bench, not simulate)")
    print(wide_markdown(rows) if args.wide else markdown(rows))
    worst = max(rows, key=lambda r: abs(r["error_pct"]))
    within = sum(abs(r["error_pct"]) <= args.tolerance for r in rows)
    print(f"\n{within}/{len(rows)} cells within ±{args.tolerance:g}%; worst {worst['error_pct']:+.1f}% "
          f"({worst['variant']}, load {worst['load']:.2f}, {worst['figure']})")
    if any(r["band_lo"] == r["band_lo"] for r in rows):
        banded = sum(abs(r["error_pct"]) <= args.tolerance or in_band(r) for r in rows)
        print(f"{banded}/{len(rows)} cells within ±{args.tolerance:g}% or measured inside the prediction's band for "
              f"steps ±2% off its cost model")
    if any(r["repeats"] > 1 for r in rows):
        noise = sum(within_noise(r, args.tolerance) for r in rows)
        print(f"{noise}/{len(rows)} cells within ±{args.tolerance:g}% or within the real server's own repeat spread")
    diagnosed = [r for r in rows if r["at_speed"] == r["at_speed"]]
    if diagnosed:
        worst = max(diagnosed, key=lambda r: abs(r["at_speed_error_pct"]))
        at_speed = sum(abs(r["at_speed_error_pct"]) <= args.tolerance for r in diagnosed)
        print(f"{at_speed}/{len(diagnosed)} cells within ±{args.tolerance:g}% for the simulator run at the speed each "
              f"repeat ran at (a diagnosis, not the prediction); worst {worst['at_speed_error_pct']:+.1f}% "
              f"({worst['variant']}, load {worst['load']:.2f}, {worst['figure']})")
    speed = speed_markdown(path)
    if speed:
        print("\nThe real server against its cost model, per load (time-weighted; + is slower than the model):\n")
        print(speed)
    return 0 if within == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
