"""Issue 13 §3, variant latent_kv end to end from the CLI: MLA trained as its
own checkpoint (latent.mode = trained) and the baseline's checkpoint
factorised by SVD (latent.mode = svd, Palu's defaults: K and V apart, whitened
on training windows), beside the baseline. The svd arm shares the baseline's
checkpoint, reports the factorised model's quality and the trained one's, and
both latent arms cache r values per token and layer (measured from the
cache), decode on the reference step and count the up-projections' FLOPs."""
import subprocess

import numpy as np

from conftest import ROOT, TINY_RUN, index_of, smoke_study, zerolayer_bin


def test_latent_kv_trained_and_svd_beside_the_baseline(tmp_path):
    study = smoke_study(tmp_path / "latent.ini", arms="variant = baseline, latent_kv, latent_kv\n"
                                                      "latent.mode = trained, trained, svd")
    out = tmp_path / "out"
    # r = 0.25 of the K/V width 2 x 32: 16 values per token and layer (svd: 8
    # for K and 8 for V); 16 calibration windows keep the test short.
    proc = subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", str(out), *TINY_RUN,
                           "--latent.rank", "0.25", "--latent.svd_calib_windows", "16"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = index_of(str(out / "results.h5"))
    assert len(df) == 3 and (df["status"] == "complete").all(), df["error"]
    base = df[df["variant"] == "baseline"].iloc[0]
    lat = df[df["variant"] == "latent_kv"]
    svd = lat[lat["setting"].str.contains("latent.mode=svd")].iloc[0]
    trained = lat[lat["setting"].str.contains("latent.mode=trained")].iloc[0]

    # svd decodes the baseline's checkpoint; trained has its own.
    assert svd["train_id"] == base["train_id"] != trained["train_id"]
    assert svd["val_loss_trained"] == base["val_loss"]
    assert np.isfinite(svd["val_loss"]) and svd["val_loss"] != base["val_loss"]
    assert svd["params"] < base["params"]  # [W_K; W_V] (2 x 32 x 32) became 16 x 32 down, 64 x 16 up
    assert 0 < svd["latent_svd_rel_error"] < 1
    assert np.isnan(trained["latent_svd_rel_error"])
    # The trained arm learns.
    assert trained["val_loss"] < trained["unigram_loss"] + 1.0
    # Cache: 1 layer of 16 fp32 latents, against K and V of 32 each.
    assert base["kv_bytes_per_token"] == 2 * 32 * 4
    for row in (svd, trained):
        assert row["latent_rank"] == 16
        assert row["kv_bytes_per_token"] == 16 * 4
        assert row["decode_fast_step"] == 0  # the fast step does not serve a latent cache
        assert row["flops_latent_kv"] > 0 and row["decode_tok_s"] > 0
    assert base["decode_fast_step"] == 1 and np.isnan(base["flops_latent_kv"])
