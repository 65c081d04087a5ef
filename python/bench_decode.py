#!/usr/bin/env python3
"""Decode throughput: zerolayer's C++ decoder (baseline and sfvl) against the
eager PyTorch twin's KV-cache loop on the same model shape.

Batch 8, random prompts of 32 tokens, 96 new tokens, temperature 0.8, each
side in its best configuration (the twin: torch.inference_mode, 2 threads,
OPENBLAS_NUM_THREADS=1 or default, whichever is faster). Weights are random:
tokens/s do not depend on them (no end-of-sequence stops a row). Prints
tokens/s, the ratio C++ / twin, and sfvl's verifier time share against its
FLOP share, on 2 threads and on 1. On 2 the model's step splits its
sequences across both cores while a check of 8 windows stays on one (split
in two it gained under 10%: a hand-over between cores costs 1-2 µs here,
of a 7 µs check), so the share on 1 thread is the like-for-like figure.

    /usr/bin/python3 python/bench_decode.py --zerolayer build/zerolayer
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHAPE = dict(layers=4, heads=4, dim=128, context=128, vocab=1024, batch=8, prompt=32, new=96, threads=2)


def twin_worker(repeats):
    import torch
    sys.path.insert(0, HERE)
    from zerolayer_twin import Twin, TwinConfig

    torch.set_num_threads(SHAPE["threads"])
    torch.manual_seed(0)
    model = Twin(TwinConfig(vocab=SHAPE["vocab"], layers=SHAPE["layers"], heads=SHAPE["heads"], dim=SHAPE["dim"],
                            context=SHAPE["context"])).eval()
    B = SHAPE["batch"]
    best = 0.0
    with torch.inference_mode():
        for _ in range(repeats + 1):  # the first pass warms up
            prompt = torch.randint(0, SHAPE["vocab"], (B, SHAPE["prompt"]))
            t0 = time.perf_counter()
            logits, past = model.forward_cached(prompt)
            nxt = torch.multinomial(torch.softmax(logits[:, -1] / 0.8, -1), 1)
            for _ in range(SHAPE["new"] - 1):
                logits, past = model.forward_cached(nxt, past)
                nxt = torch.multinomial(torch.softmax(logits[:, -1] / 0.8, -1), 1)
            seconds = time.perf_counter() - t0
            best = max(best, B * SHAPE["new"] / seconds)
    print(json.dumps({"tok_s": best}))


def run_twin(repeats, openblas_one):
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if openblas_one:
        env["OPENBLAS_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, __file__, "--twin-worker", "--repeats", str(repeats)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["tok_s"]


def run_cpp(binary, repeats, threads=SHAPE["threads"]):
    cmd = [binary, "bench-decode", os.path.join(ROOT, "ablations", "quick.ini"),
           "--prompt-tokens", str(SHAPE["prompt"]), "--repeats", str(repeats),
           "--decode.batch", str(SHAPE["batch"]), "--decode.max_new_tokens", str(SHAPE["new"]),
           "--decode.temperature", "0.8", "--train.threads", str(threads),
           "--data.vocab_size", str(SHAPE["vocab"])]
    for k in ("layers", "heads", "dim", "context"):
        cmd += [f"--model.{k}", str(SHAPE[k])]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zerolayer", default=os.path.join(ROOT, "build", "zerolayer"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--twin-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.twin_worker:
        return twin_worker(args.repeats)
    twin = max(run_twin(args.repeats, True), run_twin(args.repeats, False))
    cpp = run_cpp(args.zerolayer, args.repeats)
    alone = run_cpp(args.zerolayer, args.repeats, threads=1)
    print(f"decode, batch {SHAPE['batch']}, {SHAPE['layers']} layers x {SHAPE['dim']} wide, vocab {SHAPE['vocab']}, "
          f"{SHAPE['prompt']}+{SHAPE['new']} tokens, {SHAPE['threads']} threads")
    print(f"  twin (eager KV-cache loop)  {twin:9.0f} tok/s")
    print(f"  zerolayer baseline          {cpp['baseline_tok_s']:9.0f} tok/s   ratio {cpp['baseline_tok_s'] / twin:5.2f}")
    print(f"  zerolayer sfvl              {cpp['sfvl_tok_s']:9.0f} tok/s   ratio {cpp['sfvl_tok_s'] / twin:5.2f}"
          f"   (kept tokens; {cpp['sfvl_checks_per_token']:.2f} checks per kept token)")
    for name, r in ((f"{SHAPE['threads']} threads", cpp), ("1 thread ", alone)):
        print(f"  verifier time share, {name}: {r['verifier_time_share']:.3f} vs FLOP share "
              f"{r['verifier_flops_share']:.3f}   ratio {r['verifier_time_share'] / r['verifier_flops_share']:.2f}")


if __name__ == "__main__":
    main()
