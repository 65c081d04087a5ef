"""Variant fused end to end: ablations/fused.ini runs from the CLI (shrunk to
seconds by overrides) and every run holds the fused metrics, NaN exactly where
a part is off."""
import configparser
import os

import numpy as np
import pytest

from conftest import index_of

pytestmark = pytest.mark.slow  # every run of ablations/fused.ini: tens of seconds

TINY = ["--seed", "1", "--model.layers", "1", "--model.heads", "2", "--model.dim", "32", "--model.context", "64",
        "--data.documents", "200", "--data.vocab_size", "512", "--train.steps", "20", "--train.warmup", "2",
        "--train.batch", "8", "--train.eval_every", "20", "--train.checkpoint_every", "20",
        "--train.eval_batches", "2", "--decode.prompts", "4", "--decode.batch", "4", "--decode.repeats", "1",
        "--decode.max_new_tokens", "8", "--train.threads", "2", "--output.verbosity", "0"]

MONITOR = {  # metric -> the part it needs
    "key_weight_stability": "key_weighting",
    "semantic_drift_score": "value_rank",
    "value_distill_orthogonality": "value_rank",
    "logits_gate_effectiveness": "gate",
    "gate_suppress_true_rate": "gate",
}


def parts_of(run_config):
    cp = configparser.ConfigParser()
    cp.read_string("[root]\n" + run_config)
    f = cp["fused"]
    return {"key_weighting": f["key_weighting"] != "off", "value_rank": float(f["value_rank"]) > 0,
            "gate": f["gate"] == "true"}


def test_fused_study_holds_every_fused_metric(zl, tmpdir_zl):
    import h5py
    out = os.path.join(tmpdir_zl, "fused")
    zl("ablate", "ablations/fused.ini", "--output.dir", out, *TINY)
    path = os.path.join(out, "results.h5")
    df = index_of(path)
    assert len(df) == 6 and set(df["status"]) == {"complete"}, df[["variant", "status"]]
    assert sorted(df["variant"]) == ["baseline"] + ["fused"] * 4 + ["sfvl"]
    base = df[df["variant"] == "baseline"].iloc[0]
    with h5py.File(path, "r") as f:
        configs = {rid: f["runs"][rid].attrs["config"] for rid in df["run_id"]}
    for _, row in df[df["variant"] == "fused"].iterrows():
        cfg = configs[row["run_id"]]
        parts = parts_of(cfg if isinstance(cfg, str) else cfg.decode())
        for metric, part in MONITOR.items():
            assert np.isfinite(row[metric]) == parts[part], (metric, parts, row[metric])
        # The baseline of the same config trained first: the KL is measured.
        assert np.isfinite(row["kl_from_baseline"]) and row["kl_from_baseline"] >= 0
        # Value distillation really shrinks the cache: V holds r = D/2 values.
        if parts["value_rank"]:
            assert row["kv_bytes_per_token_v"] == row["kv_bytes_per_token_k"] / 2
        else:
            assert row["kv_bytes_per_token_v"] == row["kv_bytes_per_token_k"]
        assert row["kv_bytes_per_token"] == (row["kv_bytes_per_token_k"] + row["kv_bytes_per_token_v"]
                                             + row["kv_bytes_per_token_state"])
        assert (row["kv_bytes_per_token_state"] > 0) == parts["key_weighting"]
        if parts["gate"]:
            assert 0 <= row["logits_gate_effectiveness"] <= 1 and row["flops_gate"] > 0
    assert base["kv_bytes_per_token"] == 2 * 32 * 4  # 1 layer, K and V of 32 floats
