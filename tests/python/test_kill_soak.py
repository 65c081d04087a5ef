"""Issue 16, the kill soak: a real study (baseline and sfvl, two seeds: two
language models with checkpoints, two verifiers, decoding, shards, the merge)
is killed with SIGKILL at 20 random moments, restarted after each, and must
end with the results of a study never killed: the same run ids, statuses and
metric values (timings aside), no temporary file anywhere, every checkpoint
loadable. It rests on training being deterministic on the CPU for a fixed
thread count, which the first test checks on its own."""
import os
import random
import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import ROOT, SHORT_VERIFIER, index_of, smoke_study, zerolayer_bin

pytestmark = pytest.mark.slow  # studies of 300 steps, one killed twenty times

ARGS = ["--train.steps", "300", "--train.checkpoint_every", "25", "--train.eval_every", "100",
        "--train.threads", "1", "--decode.repeats", "1"]
# Metrics that do not depend on time or memory: these must be equal to the last digit.
EXACT = ["val_loss", "val_ppl", "bpb", "unigram_loss", "violation_rate", "repetition_rate", "kv_bytes_per_token",
         "flops_per_token", "params", "trigger_rate", "resample_same_rate", "resample_equiv_rate_self",
         "resample_fix_rate", "verifier_auroc", "verifier_ece", "checks_per_token"]


def write_study(path):
    smoke_study(path, arms="variant = baseline, sfvl", extra=SHORT_VERIFIER)


def command(study, out):
    return [zerolayer_bin(), "ablate", study, "--output.dir", out, *ARGS]


def finished(study, out):
    proc = subprocess.run(command(study, out), capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return index_of(os.path.join(out, "results.h5"))


def test_the_same_study_twice_trains_the_same_losses_bit_for_bit(tmpdir_zl):
    study = os.path.join(tmpdir_zl, "soak.ini")
    write_study(study)
    a, b = finished(study, os.path.join(tmpdir_zl, "a")), finished(study, os.path.join(tmpdir_zl, "b"))
    np.testing.assert_array_equal(a["val_loss"].to_numpy(), b["val_loss"].to_numpy())
    import h5py
    with h5py.File(os.path.join(tmpdir_zl, "a", "results.h5")) as fa, \
            h5py.File(os.path.join(tmpdir_zl, "b", "results.h5")) as fb:
        for rid in fa["runs"]:
            np.testing.assert_array_equal(fa["runs"][rid]["train/loss"][:], fb["runs"][rid]["train/loss"][:])


def test_twenty_kills_then_results_equal_to_a_study_never_killed(tmpdir_zl):
    study = os.path.join(tmpdir_zl, "soak.ini")
    write_study(study)
    out = os.path.join(tmpdir_zl, "killed")
    rng = random.Random(16)
    kills, last_lines = 0, []
    while kills < 20:
        proc = subprocess.Popen(command(study, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT)
        time.sleep(rng.uniform(0.05, 1.5))
        if proc.poll() is not None:  # it finished first: start again (a no-op resume), and keep killing
            assert proc.returncode == 0, proc.stderr.read()[-3000:]
            if os.path.exists(os.path.join(out, "results.h5")) and kills >= 10:
                break
            continue
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
        last_lines.append(err.strip().splitlines()[-1] if err.strip() else "(starting)")
        kills += 1
    assert kills >= 10, f"only {kills} kills landed before the study finished"
    killed = finished(study, out)
    whole = finished(study, os.path.join(tmpdir_zl, "whole"))

    assert list(killed["run_id"]) == list(whole["run_id"])
    assert list(killed["status"]) == ["complete"] * len(whole)
    for metric in EXACT:
        if metric in whole.columns:
            np.testing.assert_array_equal(killed[metric].to_numpy(), whole[metric].to_numpy(), err_msg=metric)
    stray = [os.path.join(d, f) for d, _, files in os.walk(out) for f in files if ".tmp" in f]
    assert not stray, stray
    ckpts = os.path.join(out, "checkpoints")
    for name in os.listdir(ckpts):
        proc = subprocess.run([zerolayer_bin(), "generate", os.path.join(ckpts, name), "--prompt", "The",
                               "--max-new-tokens", "2"], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, (name, proc.stderr[-2000:])
    print(f"{kills} kills; last line before each: {last_lines}")
