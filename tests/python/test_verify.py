"""sfvl and speculative sampling end to end: a smoke-sized study of baseline,
sfvl and speculative runs writes every re-sampling and cost metric, the event
log and the by-context table, and the re-sampling notebook reads them. The
study has the independent judge on: trained once, shared by every run."""
import os
import subprocess

import h5py
import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, SHORT_VERIFIER, index_of, smoke_study, zerolayer_bin
from test_notebooks import execute

SFVL_METRICS = ["trigger_rate", "resample_same_rate", "resample_equiv_rate", "resample_equiv_rate_self",
                "resample_fix_rate",
                "trigger_rate_short", "trigger_rate_long", "trigger_rate_ood", "verifier_params", "verifier_auroc",
                "verifier_ece", "verifier_auroc_ood", "verifier_time_share", "verifier_flops_share",
                "flops_verifier", "checks_per_token", "decode_tok_s"]
SPEC_METRICS = ["spec_acceptance_rate", "spec_tokens_per_target_step", "draft_params", "flops_draft"]
# A judge larger than the smoke model (2 x 32): 2 x 96, briefly trained.
JUDGE = ["--judge.enabled", "on", "--judge.layers", "2", "--judge.dim", "96", "--judge.heads", "2",
         "--judge.steps", "60"]


# A study of a minute: the tests that read it are marked slow.
@pytest.fixture(scope="module")
def verify_results(tmp_path_factory):
    d = tmp_path_factory.mktemp("verify")
    study = smoke_study(d / "verify.ini", arms="variant = baseline, sfvl, speculative", extra=SHORT_VERIFIER)
    proc = subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", str(d / "out"),
                           "--data.eval_corpus", "licenses", "--seed", "1", *JUDGE],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return str(d / "out" / "results.h5")


@pytest.mark.slow
def test_every_variant_completes_with_its_metrics(verify_results):
    df = index_of(verify_results).set_index("variant")
    assert set(df.index) == {"baseline", "sfvl", "speculative"}
    assert (df["status"] == "complete").all()
    for m in SFVL_METRICS:
        assert np.isfinite(df.loc["sfvl", m]), m
    for m in SPEC_METRICS:
        assert np.isfinite(df.loc["speculative", m]), m
    assert 0 <= df.loc["sfvl", "trigger_rate"] <= 1
    assert 0 < df.loc["sfvl", "verifier_flops_share"] < 0.5
    # One language model for the three: the same validation loss, trained once.
    assert df["train_id"].nunique() == 1
    assert df["val_loss"].nunique() == 1
    assert 1 <= df.loc["speculative", "spec_tokens_per_target_step"] <= 5  # lookahead 4: at most 5 per step


@pytest.mark.slow
def test_event_log_and_context_table(verify_results):
    df = index_of(verify_results).set_index("variant")
    with h5py.File(verify_results, "r") as f:
        run = f["runs"][df.loc["sfvl", "run_id"]]
        events = pd.DataFrame(run["decode/events"][:])
        by = pd.DataFrame(run["sfvl/by_context"][:])
    passes = set(events["pass"].str.decode("utf-8"))
    assert passes == {"quality", "context", "ood"}
    quality = events[events["pass"] == b"quality"]
    # The index's trigger rate is the quality pass's share of fired checks.
    assert quality["fired"].mean() == pytest.approx(df.loc["sfvl", "trigger_rate"])
    resampled = events[events["resampled"] == 1]
    assert (resampled["dropped"].between(1, 2)).all()
    assert ((events["resampled"] == 1) <= (events["fired"] == 1)).all()  # only fired checks re-sample
    assert list(by["context_lo"]) == [0, 16, 32, 48] and by["checks"].sum() == (events["pass"] != b"ood").sum()


@pytest.mark.slow
def test_resampling_notebook_reads_the_event_log(verify_results, tmp_path):
    proc = execute("resampling", verify_results, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_one_judge_trained_once_and_shared_by_every_run(verify_results):
    df = index_of(verify_results)
    assert (df["judge_reused"] == 0).sum() == 1, "the first run trains the judge"
    assert (df["judge_reused"] == 1).sum() == len(df) - 1, "every later run loads it"
    assert df["judge_val_loss"].nunique() == 1 and np.isfinite(df["judge_val_loss"]).all()
    assert (df["judge_params"] >= 4 * df["params"]).all()
    assert np.isfinite(df["judge_nll"]).all() and (df["judge_nll"] > 0).all()
    # One judge checkpoint (its model section has the judge's width), trained to its 60 steps, beside the
    # language model the three variants share (and the speculative draft's).
    root = os.path.join(os.path.dirname(verify_results), "checkpoints")
    judges = []
    for name in os.listdir(root):
        with open(os.path.join(root, name, "config.ini")) as f:
            model = f.read().split("[model]")[1].split("[")[0]
        if "dim = 96" in model:
            judges.append(name)
    assert len(judges) == 1 and judges[0] not in set(df["train_id"])
    with open(os.path.join(root, judges[0], "state.ini")) as f:
        assert "step=60\ncomplete=1" in f.read()
    with h5py.File(verify_results, "r") as f:
        items = pd.DataFrame(f["runs"][df["run_id"].iloc[0]]["eval/items"][:])
    assert np.isfinite(items["judge_nll"]).any()


@pytest.mark.slow
def test_resamples_are_judged_by_the_judge_and_by_the_run_itself(verify_results):
    df = index_of(verify_results).set_index("variant")
    with h5py.File(verify_results, "r") as f:
        events = pd.DataFrame(f["runs"][df.loc["sfvl", "run_id"]]["decode/events"][:])
    resolved = events[(events["pass"] == b"quality") & (events["replacement"] >= 0) & (events["resampled"] == 1)]
    assert len(resolved) > 0
    for col in ["nll_before", "nll_after", "nll_before_self", "nll_after_self"]:
        assert np.isfinite(resolved[col]).all(), col
    # Two different models score the same spans: their NLLs differ.
    assert not np.allclose(resolved["nll_before"], resolved["nll_before_self"])


def test_a_judge_smaller_than_the_model_is_refused(tmp_path):
    proc = subprocess.run([zerolayer_bin(), "train", "ablations/smoke.ini", "--output.dir", str(tmp_path),
                           "--judge.enabled", "on", "--judge.layers", "1", "--judge.dim", "32", "--judge.heads", "2"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode != 0
    # 1 x 32 against the smoke model's 2 x 32: fewer parameters than the language model it would judge.
    assert "judge.dim" in proc.stderr + proc.stdout and "fewer than the model's" in proc.stderr + proc.stdout
