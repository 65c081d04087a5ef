#!/usr/bin/env python3
"""Nucleus sampling's cost on the fast decode step: a trained study's model
decoded at top_p 1 and at top_p < 1, rounds alternating which goes first, in
one script.

The models must be trained (a random model's distribution is nearly flat, so
its nucleus is most of the vocabulary: not what a trained model decodes).
Each decode is one `zerolayer train` run in a fresh folder whose checkpoints,
data cache and operating points are the study's own (symbolic links), so
nothing is trained and the study's folder gets no new run. Prints each
round's decode tokens/s and the median ratio top_p / top_p 1 with the
rounds' spread.

    /usr/bin/python3 python/bench_top_p.py results/claims --variant oet --seed 1 --rounds 5
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = ("checkpoints", "cache", "operating_points")


def decode_tok_s(binary, config, study, variant, seed, temperature, top_p, repeats):
    import h5py
    with tempfile.TemporaryDirectory() as out:
        for name in SHARED:
            if os.path.exists(os.path.join(study, name)):
                os.symlink(os.path.abspath(os.path.join(study, name)), os.path.join(out, name))
        args = [binary, "train", config, "--output.dir", out, "--variant", variant, "--seed", str(seed),
                "--decode.temperature", str(temperature), "--decode.top_p", str(top_p),
                "--decode.repeats", str(repeats), "--decode.timing", "run", "--output.verbosity", "0"]
        before = checkpoint_files(study)
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(args)}\n{done.stderr}")
        if checkpoint_files(study) != before:
            sys.exit(f"{study}: the run trained a model; point the script at a study whose models are trained")
        with h5py.File(os.path.join(out, "results.h5"), "r") as f:
            return float(f["index"]["decode_tok_s"][0])


def checkpoint_files(study):
    """Every checkpoint file's name and size: a run that trains changes them."""
    found = set()
    for top, _, files in os.walk(os.path.join(study, "checkpoints")):
        found.update((os.path.join(top, f), os.path.getsize(os.path.join(top, f))) for f in files if f != "lock")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("study", help="a trained study's output folder (results/claims)")
    ap.add_argument("--config", default=os.path.join(ROOT, "ablations", "claims.ini"))
    ap.add_argument("--zerolayer", default=os.path.join(ROOT, "build", "zerolayer"))
    ap.add_argument("--variant", default="oet")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--temperature", type=float, default=0.5)
    ap.add_argument("--top-p", type=float, default=0.95)
    ap.add_argument("--repeats", type=int, default=5, help="timed passes a run keeps the best of")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"{args.variant} seed {args.seed}, temperature {args.temperature}: top_p {args.top_p} against 1")
    ratios = []
    for r in range(args.rounds):
        order = [1.0, args.top_p] if r % 2 == 0 else [args.top_p, 1.0]
        speed = {p: decode_tok_s(args.zerolayer, args.config, args.study, args.variant, args.seed, args.temperature,
                                 p, args.repeats) for p in order}
        ratios.append(speed[args.top_p] / speed[1.0])
        print(f"round {r + 1}: top_p 1 {speed[1.0]:9.0f} tok/s, top_p {args.top_p} {speed[args.top_p]:9.0f} tok/s, "
              f"ratio {ratios[-1]:.3f}")
    print(f"median ratio {statistics.median(ratios):.3f} (rounds {min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
