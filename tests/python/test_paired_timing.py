"""Issue 12: paired timing (decode.timing = paired, sim/study/paired_timing.h). A
seed's arms are timed together after every run, pass by pass in an order
drawn afresh each round; the passes decode exactly what a run's own timed passes decode, and a
study stopped while timing times that seed again when restarted."""
import os
import signal
import subprocess
import time

import h5py
import numpy as np
import pandas as pd

from conftest import ROOT, zerolayer_bin
from zerolayer.results import load_index

# Two arms per seed (two temperatures share one model), two seeds, short training.
ARGS = ["--train.steps", "30", "--train.eval_every", "30", "--train.checkpoint_every", "30", "--train.threads", "1",
        "--decode.temperature", "0.8,1.0"]


def ablate(out, *extra, repeats=3, check=True):
    return subprocess.run([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, *ARGS,
                           "--decode.repeats", str(repeats), *extra],
                          capture_output=True, text=True, cwd=ROOT, check=check, timeout=600)


def requests(path, run_id):
    with h5py.File(path, "r") as f:
        return pd.DataFrame(f["runs"][run_id]["decode/requests"][:])


def test_paired_passes_decode_what_a_run_alone_decodes(tmpdir_zl):
    paired, alone = os.path.join(tmpdir_zl, "paired"), os.path.join(tmpdir_zl, "alone")
    p = ablate(paired)
    assert "timed seed 1: 2 arms, 3 passes each, interleaved" in p.stderr, p.stderr
    assert "timed seed 2: 2 arms" in p.stderr, p.stderr
    ablate(alone, "--decode.timing", "run")
    a = load_index(os.path.join(paired, "results.h5")).sort_values("setting").sort_values("seed", kind="stable")
    b = load_index(os.path.join(alone, "results.h5")).sort_values("setting").sort_values("seed", kind="stable")
    assert len(a) == len(b) == 4
    assert list(a["decode_timing_arms"]) == [2, 2, 2, 2] and list(b["decode_timing_arms"]) == [1, 1, 1, 1]
    for m in ["decode_tok_s", "ttft_ms_p50", "tpot_ms_p50", "itl_ms_p99"]:
        assert np.isfinite(a[m]).all() and (a[m] > 0).all(), m
    # Quality does not depend on when the timing ran.
    for m in ["val_loss", "violation_rate", "repetition_rate", "judge_nll"]:
        if m in a:
            np.testing.assert_array_equal(a[m].to_numpy(), b[m].to_numpy(), err_msg=m)
    # Interleaved, each pass keeps its own sampling stream: every request of
    # every pass has the length it has when the run times itself.
    for ra, rb in zip(a["run_id"], b["run_id"]):
        qa, qb = requests(os.path.join(paired, "results.h5"), ra), requests(os.path.join(alone, "results.h5"), rb)
        assert len(qa) == 3 * 8  # 3 passes of 8 prompts
        assert list(qa["repeat"]) == list(qb["repeat"]) and list(qa["item"]) == list(qb["item"])
        assert list(qa["tokens"]) == list(qb["tokens"])


def test_a_study_stopped_while_timing_times_that_seed_again(tmpdir_zl):
    out = os.path.join(tmpdir_zl, "stopped")
    ablate(out, "--decode.timing", "run")  # trains the models; its runs are another study's (other run ids)
    runs = os.path.join(out, "runs")
    before = set(os.listdir(runs))
    # Many passes, so that the timing phase is long enough to stop in.
    proc = subprocess.Popen([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, *ARGS,
                             "--decode.repeats", "400"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    log = ""
    deadline = time.time() + 120
    while "timed seed 1" not in log:  # seed 1 timed and written; seed 2's timing has begun
        assert time.time() < deadline and proc.poll() is None, log
        log += proc.stderr.readline()
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=120)[1]
    assert proc.returncode == 128 + signal.SIGTERM, log + rest
    assert "stopped by SIGTERM" in rest, rest
    new = sorted(set(os.listdir(runs)) - before)
    assert len(new) == 4
    timed = set()
    for f in new:
        row = load_index(os.path.join(runs, f))
        timed.add((int(row["seed"].iloc[0]), "decode_tok_s" in row.columns))
    assert timed == {(1, True), (2, False)}, timed
    again = ablate(out, repeats=400)
    assert "[1/4]" not in again.stderr, again.stderr  # no run again: only the timing, of seed 2 alone
    assert "timed seed 2: 2 arms" in again.stderr and "timed seed 1" not in again.stderr, again.stderr
    index = load_index(os.path.join(out, "results.h5"))
    mine = index[index["run_id"].isin([f[:-3] for f in new])]
    assert len(mine) == 4 and (mine["decode_tok_s"] > 0).all() and (mine["decode_timing_arms"] == 2).all()


def test_arms_on_the_two_steps_are_timed_apart(tmpdir_zl):
    # Interleaved, a fast-step arm and a reference-step arm slowed each other
    # several-fold; each kind is timed among itself, fast first.
    out = os.path.join(tmpdir_zl, "steps")
    p = subprocess.run([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, *ARGS[:-2],
                        "--decode.repeats", "3", "--decode.step", "fast,reference", "--seed", "1"],
                       capture_output=True, text=True, cwd=ROOT, check=True, timeout=600)
    fast = p.stderr.find("timed seed 1: 1 arm on the fast step, 3 passes each")
    reference = p.stderr.find("timed seed 1: 1 arm on the reference step, 3 passes each")
    assert 0 <= fast < reference, p.stderr
    index = load_index(os.path.join(out, "results.h5"))
    assert sorted(index["decode_fast_step"]) == [0, 1] and (index["decode_timing_arms"] == 1).all()
    assert (index["decode_tok_s"] > 0).all()
