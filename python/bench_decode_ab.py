#!/usr/bin/python3
"""Two builds of zerolayer, A and B, decoding the same models: B's speed over A's, per variant and step.

A refactor of the decode path (a mechanism moved behind a hook, docs/design.md#known-seams) must leave
every variant as fast as before (docs/performance.md). This runs `zerolayer bench-decode` with each
binary in turn, rounds times, alternating which goes first, so that a shared machine's drift falls on
both; it prints the median of each round's ratio B/A and the rounds' spread.

    /usr/bin/python3 python/bench_decode_ab.py --a OLD/build/zerolayer --b build/zerolayer \\
        ablations/quick.ini --rounds 5 -- --decode.batch 8

Arguments after `--` go to both bench-decode calls. OPENBLAS_NUM_THREADS is set to 1, as in
docs/performance.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

VARIANTS = "baseline,sfcl,oet,fused,speculative"


def bench(binary, config, variants, extra):
    """One bench-decode call: {(variant, step): tokens per second}."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([binary, "bench-decode", config, "--variants", variants, *extra], env=env,
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    speeds = {("baseline (sfvl bench)", "fast"): r["baseline_tok_s"], ("sfvl", "fast"): r["sfvl_tok_s"]}
    for v in r["variants"]:
        speeds[(v["variant"], "fast" if v["fast_step"] else "reference*")] = v["fast_tok_s"]
        speeds[(v["variant"], "reference")] = v["reference_tok_s"]
    return speeds


def ratios(rounds):
    """{key: [B/A of each round]} over the keys both builds report."""
    out = {}
    for a, b in rounds:
        for key in a.keys() & b.keys():
            if a[key] > 0:
                out.setdefault(key, []).append(b[key] / a[key])
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="the reference build's zerolayer")
    p.add_argument("--b", required=True, help="the build measured against it")
    p.add_argument("config", help="study file giving the shape")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--variants", default=VARIANTS)
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:cut])
    args.extra = argv[cut + 1:]  # after --: options for both bench-decode calls
    rounds = []
    for i in range(args.rounds):
        order = [("a", args.a), ("b", args.b)] if i % 2 == 0 else [("b", args.b), ("a", args.a)]
        got = {side: bench(binary, args.config, args.variants, args.extra) for side, binary in order}
        rounds.append((got["a"], got["b"]))
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{'variant':24s} {'step':11s} {'A tok/s':>9s} {'B tok/s':>9s} {'B/A median':>11s} {'B/A range':>13s}")
    for key, rs in sorted(ratios(rounds).items()):
        a = statistics.median(r[0][key] for r in rounds)
        b = statistics.median(r[1][key] for r in rounds)
        print(f"{key[0]:24s} {key[1]:11s} {a:9.0f} {b:9.0f} {statistics.median(rs):11.3f} "
              f"{min(rs):6.3f}-{max(rs):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
