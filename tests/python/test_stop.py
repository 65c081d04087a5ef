"""Issue 16: SIGTERM and SIGINT stop a study at the next safe point with a
message saying how to resume: the training checkpoint is saved at the step it
stopped, no shard or temporary file is left for the stopped run, and running
the command again ends with the same results as a study never stopped
(training is deterministic on the CPU for a fixed thread count)."""
import os
import signal
import subprocess
import time

import numpy as np
from conftest import ROOT, zerolayer_bin
from zerolayer.results import load_index

# One thread, so training is bit-for-bit deterministic; enough steps that the
# signal lands in the middle of training.
ARGS = ["--train.steps", "800", "--train.eval_every", "400", "--train.checkpoint_every", "400",
        "--train.threads", "1", "--decode.repeats", "1", "--seed", "1"]


def start(out):
    return subprocess.Popen([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, *ARGS],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def state(out):
    ckpts = os.path.join(out, "checkpoints")
    (name,) = os.listdir(ckpts)
    with open(os.path.join(ckpts, name, "state.ini")) as f:
        return dict(line.split("=", 1) for line in f.read().splitlines()[:2])


def stop(out, sig):
    """Starts the study, signals it once its run has begun, and returns its stderr after checking the stop."""
    proc = start(out)
    for line in proc.stderr:
        if line.startswith("[1/1]"):
            break
    time.sleep(1.0)  # inside the run: data, then training (about 10 s of it)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, stderr[-2000:]
    name = "SIGTERM" if sig == signal.SIGTERM else "SIGINT"
    assert f"stopped by {name} at training step" in stderr and "run the same command again to resume" in stderr
    s = state(out)
    assert s["complete"] == "0" and 0 < int(s["step"]) < 800  # saved where it stopped, not at a period
    assert not os.listdir(os.path.join(out, "runs"))  # no shard, no .tmp for the stopped run
    return stderr


def test_sigint_stops_at_a_safe_point(tmpdir_zl):
    stop(os.path.join(tmpdir_zl, "interrupted"), signal.SIGINT)


def test_sigterm_stops_and_the_study_resumes_to_the_results_of_one_never_stopped(tmpdir_zl):
    out = os.path.join(tmpdir_zl, "stopped")
    stop(out, signal.SIGTERM)
    resumed = subprocess.run([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, *ARGS],
                             capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    whole = os.path.join(tmpdir_zl, "whole")
    once = subprocess.run([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", whole, *ARGS],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert once.returncode == 0, once.stderr[-2000:]
    a, b = load_index(os.path.join(out, "results.h5")), load_index(os.path.join(whole, "results.h5"))
    assert list(a["run_id"]) == list(b["run_id"])
    for metric in ["val_loss", "bpb", "violation_rate", "repetition_rate", "kv_bytes_per_token"]:
        np.testing.assert_array_equal(a[metric].to_numpy(), b[metric].to_numpy(), err_msg=metric)
