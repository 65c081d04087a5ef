#!/usr/bin/env python3
"""Training throughput: zerolayer's C++ trainer against the eager PyTorch twin.

Same shape (4 layers, 4 heads, 128 wide, 128 context, byte tokenizer), batch
32, 2 threads, each side in its best configuration, in fp32 and bf16. The twin
is tried with default threading, with OPENBLAS_NUM_THREADS=1 (OpenBLAS's pool
otherwise fights LibTorch's), and with that and glibc's allocator told to keep
freed memory (GLIBC_TUNABLES: what zerolayer does itself, sim/runtime.h), and
its best is kept; zerolayer configures its threading and allocator itself.
Prints tokens/s and the ratio C++ / twin.

    /usr/bin/python3 python/bench_train.py --zerolayer build/zerolayer
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHAPE = dict(layers=4, heads=4, dim=128, context=128, batch=32, threads=2)


def twin_worker(precision, steps):
    import torch
    sys.path.insert(0, HERE)
    from zerolayer_twin import Twin, TwinConfig

    torch.set_num_threads(SHAPE["threads"])
    torch.manual_seed(0)
    model = Twin(TwinConfig(vocab=257, layers=SHAPE["layers"], heads=SHAPE["heads"], dim=SHAPE["dim"],
                            context=SHAPE["context"]))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    data = torch.randint(0, 256, (200_000,))
    B, T = SHAPE["batch"], SHAPE["context"]
    timed, tokens = 0.0, 0
    for step in range(steps):
        off = torch.randint(0, len(data) - T - 1, (B,))
        win = torch.stack([data[o:o + T + 1] for o in off.tolist()])
        x, y = win[:, :-1], win[:, 1:]
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model.loss(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()
        if step >= 2:
            timed += time.perf_counter() - t0
            tokens += B * T
    print(json.dumps({"tok_s": tokens / timed}))


# The twin's configurations: extra environment for its process.
KEEP_FREED = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=2147483647"
TWIN_SETTINGS = {
    "default": {},
    "OB=1": {"OPENBLAS_NUM_THREADS": "1"},
    "OB=1+malloc": {"OPENBLAS_NUM_THREADS": "1", "GLIBC_TUNABLES": KEEP_FREED},
}


def run_twin(precision, steps, setting):
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    env.pop("GLIBC_TUNABLES", None)
    env.update(TWIN_SETTINGS[setting])
    out = subprocess.run([sys.executable, __file__, "--twin-worker", precision, "--steps", str(steps)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["tok_s"]


def run_cpp(binary, precision, steps):
    import h5py
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)  # zerolayer sets its own threading and allocator
    env.pop("GLIBC_TUNABLES", None)
    with tempfile.TemporaryDirectory() as out:
        args = [binary, "train", os.path.join(ROOT, "ablations/smoke.ini"), "--output.dir", out,
                "--data.tokenizer", "byte", "--data.documents", "600",
                "--model.layers", str(SHAPE["layers"]), "--model.heads", str(SHAPE["heads"]),
                "--model.dim", str(SHAPE["dim"]), "--model.context", str(SHAPE["context"]),
                "--train.batch", str(SHAPE["batch"]), "--train.threads", str(SHAPE["threads"]),
                "--train.precision", precision, "--train.steps", str(steps), "--train.eval_every", str(steps),
                "--train.checkpoint_every", str(steps), "--train.warmup", "2",
                "--decode.prompts", "1", "--decode.repeats", "1", "--decode.max_new_tokens", "4",
                "--output.verbosity", "0"]
        subprocess.run(args, env=env, capture_output=True, text=True, check=True)
        with h5py.File(os.path.join(out, "results.h5"), "r") as f:
            return float(f["index"]["train_tok_s"][0])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zerolayer", default=os.path.join(ROOT, "build", "zerolayer"))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--twin-worker", choices=["fp32", "bf16"])
    args = ap.parse_args()
    if args.twin_worker:
        return twin_worker(args.twin_worker, args.steps)

    print(f"shape {SHAPE}, {args.steps} steps (first 2 untimed)")
    names = list(TWIN_SETTINGS)
    print(f"{'precision':10} " + " ".join(f"{'twin ' + n:>17}" for n in names) +
          f" {'twin best':>10} {'zerolayer':>10} {'ratio':>6}")
    for precision in ["fp32", "bf16"]:
        twin = [run_twin(precision, args.steps, n) for n in names]
        cpp = run_cpp(args.zerolayer, precision, args.steps)
        best = max(twin)
        print(f"{precision:10} " + " ".join(f"{t:17.0f}" for t in twin) +
              f" {best:10.0f} {cpp:10.0f} {cpp / best:6.2f}")


if __name__ == "__main__":
    main()
