"""Issue 13's KV cache eviction end to end: variants streaming (StreamingLLM,
Xiao et al., ICLR 2024) and h2o (Heavy-Hitter Oracle, Zhang et al., NeurIPS
2023) decode the baseline's checkpoint from the CLI on the fast step, hold
fewer cache bytes than it, and with a budget of the whole context write the
baseline's very continuations."""
import subprocess

import h5py
import numpy as np

from conftest import ROOT, TINY_RUN, index_of, smoke_study, zerolayer_bin

# Default windows, then the whole context (64 tokens) for each.
ARMS = """variant = baseline, streaming, h2o, streaming, h2o
streaming.window = 28, 28, 28, 64, 28
h2o.budget = 0.2, 0.2, 0.2, 0.2, 1
"""


def continuations(path, run_id):
    with h5py.File(path, "r") as f:
        return [c.decode() for c in f["runs"][run_id]["eval/items"]["continuation"][:]]


def test_streaming_and_h2o_decode_the_baseline_checkpoint(tmp_path):
    study = smoke_study(tmp_path / "evict.ini", arms=ARMS)  # one seed: TINY_RUN's
    out = tmp_path / "out"
    proc = subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", str(out), *TINY_RUN],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = str(out / "results.h5")
    df = index_of(path)
    assert len(df) == 5 and (df["status"] == "complete").all(), df["error"]
    assert len(set(df["train_id"])) == 1  # one checkpoint, the baseline's
    assert (df["decode_fast_step"] == 1).all()
    base = df[df["variant"] == "baseline"].iloc[0]
    full = df[(df["eviction_budget"] >= 64)]
    bounded = df[(df["eviction_budget"] < 64)].set_index("variant")
    assert len(full) == 2 and set(bounded.index) == {"streaming", "h2o"}
    assert bounded.loc["streaming", "eviction_budget"] == 32 and bounded.loc["h2o", "eviction_budget"] == 13
    # Bounded caches hold less, mean and peak (peak: the budget and the token attending).
    for v in ["streaming", "h2o"]:
        row = bounded.loc[v]
        assert row["kv_bytes_per_token"] < base["kv_bytes_per_token"], v
        assert row["kv_bytes_peak"] < base["kv_bytes_peak"], v
        per_token = base["kv_bytes_per_token"] + row["kv_bytes_per_token_eviction"]
        assert row["kv_bytes_peak"] == (row["eviction_budget"] + 1) * per_token, v
        assert row["flops_attention"] < base["flops_attention"] and row["flops_eviction"] > 0, v
        # Measured like the baseline (TINY_RUN's byte-level prompts are not contract prompts: NaN for both).
        assert np.isnan(row["violation_rate"]) == np.isnan(base["violation_rate"]), v
        assert np.isfinite(row["repetition_rate"]) and row["decode_tok_s"] > 0, v
    # The whole context: nothing evicted, the baseline's continuations token for token.
    want = continuations(path, base["run_id"])
    for _, row in full.iterrows():
        assert continuations(path, row["run_id"]) == want, row["variant"]
