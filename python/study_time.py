#!/usr/bin/env python3
"""Where a study's training time went: its checkpoints' own timings.

Reads OUTPUT_DIR/checkpoints/*/state.ini (train_seconds, the timed tokens) and
config.ini (variant, shape, steps, train.branch) and prints, per trained
family, the models, the steps each trained itself (a branch trains only the
steps after its branch point, docs/design.md#branches-uptraining-from-the-baseline),
the minutes and the tokens per second; the judge is the model of the judge's
own seed (sim/judge.h). Steps the timing skips (the first two) and
validation are outside train_seconds, so the sum is a little under the wall
time.

    /usr/bin/python3 python/study_time.py results/claims
"""
import argparse
import configparser
import json
import os
import sys

JUDGE_SEED = "104729"  # sim/judge.h kJudgeSeed: no study's seed
# The variant table (sim/variants.def, copied to variants.json and kept equal by test_variants.py): the family
# whose network each variant trains. A checkpoint's config.ini names the variant of the run that trained it.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "zerolayer", "variants.json")) as _f:
    FAMILY = {v["name"]: v["family"] for v in json.load(_f)}


def read_state(path):
    out = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.rstrip("\n").partition("=")
            if sep and not key.startswith("curve."):
                out[key] = value
    return out


def read_config(path):
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    with open(path) as f:
        text = f.read()
    # config.ini starts with top-level keys (variant, seed) before any section.
    cp.read_string("[top]\n" + text)
    get = lambda section, key, default="": cp.get(section, key, fallback=default)
    return {
        "variant": get("top", "variant", "baseline"),
        "latent_mode": get("latent", "mode"),
        "seed": get("top", "seed"),
        "shape": f"{get('model', 'layers')}x{get('model', 'dim')}",
        "steps": int(get("train", "steps", "0")),
        "branch": float(get("train", "branch", "0") or 0),
    }


def own_steps(cfg, family):
    if family == "baseline" or cfg["branch"] <= 0:
        return cfg["steps"]
    return max(1, round(cfg["branch"] * cfg["steps"]))


def family_of(cfg):
    """trained_family (sim/config.cpp): latent_kv in svd mode decodes the baseline's network."""
    if cfg["variant"] == "latent_kv" and cfg["latent_mode"] == "svd":
        return "baseline"
    return FAMILY.get(cfg["variant"], cfg["variant"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("output_dir")
    args = ap.parse_args()
    root = os.path.join(args.output_dir, "checkpoints")
    if not os.path.isdir(root):
        sys.exit(f"{root}: no checkpoints folder (is {args.output_dir} a study's output.dir?)")
    rows = {}
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        state, config = os.path.join(d, "state.ini"), os.path.join(d, "config.ini")
        if not (os.path.isfile(state) and os.path.isfile(config)):
            continue
        s, c = read_state(state), read_config(config)
        family = family_of(c)
        judge = c["seed"] == JUDGE_SEED
        label = f"judge {c['shape']}" if judge else f"{family} {c['shape']}"
        r = rows.setdefault(label, {"models": 0, "steps": 0, "seconds": 0.0, "tokens": 0, "complete": 0})
        r["models"] += 1
        r["steps"] += own_steps(c, "baseline" if judge else family)
        r["seconds"] += float(s.get("train_seconds", 0))
        r["tokens"] += int(s.get("timed_tokens", 0))
        r["complete"] += s.get("complete") == "1"
    if not rows:
        sys.exit(f"{root}: no checkpoint with a state.ini")
    print(f"{'trained':24} {'models':>6} {'own steps':>10} {'minutes':>8} {'tokens/s':>9}")
    total = 0.0
    for label, r in rows.items():
        rate = r["tokens"] / r["seconds"] if r["seconds"] > 0 else float("nan")
        note = "" if r["complete"] == r["models"] else f"  ({r['models'] - r['complete']} incomplete)"
        print(f"{label:24} {r['models']:6d} {r['steps']:10d} {r['seconds'] / 60:8.1f} {rate:9.0f}{note}")
        total += r["seconds"]
    print(f"{'training, all':24} {'':6} {'':10} {total / 60:8.1f}")


if __name__ == "__main__":
    main()
