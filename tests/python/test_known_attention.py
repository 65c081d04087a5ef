"""Issue 13's trained known methods end to end: variants alibi (Press et al.,
ICLR 2022) and gated_attn (Qiu et al., 2025) train a few steps from the CLI
beside the baseline, each its own checkpoint, decode on the fast step, and
report their FLOPs per module."""
import subprocess

import numpy as np

from conftest import ROOT, TINY_RUN, index_of, smoke_study, zerolayer_bin


def test_alibi_and_gated_attn_train_decode_and_count(tmp_path):
    study = smoke_study(tmp_path / "known.ini", arms="variant = baseline, alibi, gated_attn")
    out = tmp_path / "out"
    proc = subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", str(out), *TINY_RUN],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = index_of(str(out / "results.h5")).set_index("variant")
    assert set(df.index) == {"baseline", "alibi", "gated_attn"}
    assert (df["status"] == "complete").all(), df["error"]
    assert len(set(df["train_id"])) == 3  # three checkpoints
    for v in df.index:
        assert np.isfinite(df.loc[v, "val_loss"]) and df.loc[v, "val_loss"] < df.loc[v, "unigram_loss"] + 1.0, v
        assert np.isfinite(df.loc[v, "decode_tok_s"]) and df.loc[v, "decode_tok_s"] > 0, v
        assert df.loc[v, "decode_fast_step"] == 1, v  # the hand-written step serves both
    # ALiBi has no position embedding (64 positions x 32 wide) and pays one add per score.
    assert df.loc["alibi", "params"] == df.loc["baseline", "params"] - 64 * 32
    assert df.loc["alibi", "flops_alibi"] > 0 and df.loc["alibi", "flops_embedding"] == 0
    # The gate: W_theta [C,C] per layer, and its FLOPs.
    assert df.loc["gated_attn", "params"] == df.loc["baseline", "params"] + 32 * 32
    assert df.loc["gated_attn", "flops_attn_gate"] > 2 * 32 * 32
    assert np.isnan(df.loc["baseline", "flops_attn_gate"]) and np.isnan(df.loc["gated_attn", "flops_alibi"])
