"""sfvl's controls and contrastive search end to end (issue 13 §7 and §5): a
smoke-sized study of sfvl beside sfvl_oracle, sfvl_random, sfvl_best_of_n and
contrastive. All decode the baseline's one checkpoint; each reports sfvl's
metrics where they apply; contrastive records that it ran the reference step."""
import subprocess

import h5py
import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, SHORT_VERIFIER, index_of, smoke_study, zerolayer_bin

pytestmark = pytest.mark.slow  # the study every test reads takes half a minute

ARMS = ["baseline", "sfvl", "sfvl_oracle", "sfvl_random", "sfvl_best_of_n", "contrastive"]
RESAMPLING = ["trigger_rate", "resample_same_rate", "checks_per_token", "retries_exhausted_rate", "resamples"]


@pytest.fixture(scope="module")
def controls(tmp_path_factory):
    d = tmp_path_factory.mktemp("controls")
    study = smoke_study(d / "controls.ini", arms="variant = " + ", ".join(ARMS),
                        extra=SHORT_VERIFIER + "\n[control]\ntrigger_rate = 0.25\nbest_of_n = 2\n"
                                               "\n[contrastive]\nk = 4\n")
    proc = subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", str(d / "out"), "--seed", "1"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return str(d / "out" / "results.h5"), proc.stderr


def index(path):
    return index_of(path).set_index("variant")


def events(path, run_id):
    with h5py.File(path, "r") as f:
        return pd.DataFrame(f["runs"][run_id]["decode/events"][:])


def test_every_arm_decodes_the_baseline_checkpoint(controls):
    df = index(controls[0])
    assert set(df.index) == set(ARMS)
    assert (df["status"] == "complete").all()
    assert df["train_id"].nunique() == 1 and df["val_loss"].nunique() == 1
    for m in ["violation_rate", "decode_tok_s", "repetition_rate"]:
        assert np.isfinite(df[m]).all(), m


def test_oracle_and_random_report_sfvls_resampling_metrics(controls):
    path = controls[0]
    df = index(path)
    for arm in ["sfvl_oracle", "sfvl_random"]:
        for m in RESAMPLING + ["check_time_share"]:
            assert np.isfinite(df.loc[arm, m]), (arm, m)
        assert np.isnan(df.loc[arm].get("verifier_time_share", np.nan))  # no verifier
    ev = events(path, df.loc["sfvl_random", "run_id"])
    quality = ev[ev["pass"] == b"quality"]
    n = len(quality)
    assert abs(quality["fired"].mean() - 0.25) <= 4.5 * np.sqrt(0.25 * 0.75 / n)
    ev = events(path, df.loc["sfvl_oracle", "run_id"])
    assert ((ev["resampled"] == 1) <= (ev["fired"] == 1)).all()
    assert (ev.loc[ev["resampled"] == 1, "dropped"] >= 1).all()


def test_best_of_n_checks_about_n_per_kept_token(controls):
    df = index(controls[0])
    assert df.loc["sfvl_best_of_n", "best_of_n"] == 2
    # n samples, each token checked (and an eos that ended a sample): at least n per kept token.
    assert 2 <= df.loc["sfvl_best_of_n", "checks_per_token"] < 3
    assert np.isfinite(df.loc["sfvl_best_of_n", "verifier_auroc"])
    assert np.isfinite(df.loc["sfvl", "checks_per_token"])


def test_contrastive_runs_on_the_reference_step_and_says_why(controls):
    path, stderr = controls
    df = index(path)
    assert df.loc["contrastive", "decode_fast_step"] == 0
    assert "variant contrastive decodes on the reference step" in stderr
    assert df.loc["contrastive", "flops_degeneration_penalty"] > 0
    # k = 4 candidates: the model's modules cost 4 times the baseline's per token.
    assert df.loc["contrastive", "flops_mlp"] == pytest.approx(4 * df.loc["baseline", "flops_mlp"])
    assert df.loc["contrastive", "kv_bytes_per_token"] > 4 * df.loc["baseline", "kv_bytes_per_token"]
