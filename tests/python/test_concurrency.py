"""Issue 16: processes that share an output folder share the work. Two
`ablate`s started on one folder at once each finish with the whole study,
every run done once; a run whose lock another process holds is waited for and,
when that holder goes away without finishing it (killed), run here."""
import fcntl
import os
import re
import signal
import subprocess
import time

import numpy as np

from conftest import ROOT, SHORT_RUN, zerolayer_bin
from zerolayer.results import load_index


def ablate(out, *extra):
    return subprocess.Popen([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, *SHORT_RUN, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def run_ids(out):
    proc = subprocess.run([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, *SHORT_RUN,
                           "--dry-run"], capture_output=True, text=True, cwd=ROOT, check=True)
    return [line.split()[0] for line in proc.stdout.splitlines() if re.match(r"^[0-9a-f]{12} ", line)]


def test_two_ablates_on_one_folder_share_the_work(tmpdir_zl):
    out = os.path.join(tmpdir_zl, "shared")
    procs = [ablate(out), ablate(out)]
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (stdout, stderr) in zip(procs, outputs):
        assert p.returncode == 0, stderr[-3000:]
        assert "results:" in stdout
    ids = run_ids(out)
    assert len(ids) == 2
    # Each run was executed by exactly one of the two processes.
    started = [rid for _, stderr in outputs for rid in re.findall(r"\[\d+/\d+\] ([0-9a-f]{12})", stderr)]
    assert sorted(started) == sorted(ids), started
    index = load_index(os.path.join(out, "results.h5"))
    assert sorted(index["run_id"]) == sorted(ids) and (index["status"] == "complete").all()
    assert np.isfinite(index["val_loss"]).all()
    assert not [f for f in os.listdir(os.path.join(out, "runs")) if f.endswith(".tmp")]


def test_a_run_held_by_another_process_is_waited_for_then_run_if_left_unfinished(tmpdir_zl):
    out = os.path.join(tmpdir_zl, "held")
    first = run_ids(out)[0]
    lock_path = os.path.join(out, "locks", f"{first}.lock")
    os.makedirs(os.path.dirname(lock_path), exist_ok=True)
    # A holder that claims the first run and dies without finishing it, as a killed study would.
    holder = subprocess.Popen(["/usr/bin/python3", "-c",
                               "import fcntl, sys, time\n"
                               f"f = open({lock_path!r}, 'w'); fcntl.flock(f, fcntl.LOCK_EX)\n"
                               "f.write('pid 4242 on the-other-machine\\n'); f.flush()\n"
                               "print('locked', flush=True); time.sleep(60)\n"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    proc = ablate(out)
    # The study runs the second run, then says it waits on the first (and does).
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "waiting for run" in line:
            break
    assert f"waiting for run {first}, held by pid 4242 on the-other-machine" in seen[-1], "".join(seen)[-3000:]
    time.sleep(1)
    assert proc.poll() is None, "the study did not wait for the held run"
    holder.kill()  # the holder dies with the run unfinished: its lock is free, the study runs it
    holder.wait()
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    index = load_index(os.path.join(out, "results.h5"))
    assert len(index) == 2 and (index["status"] == "complete").all()
    # The lock is free again: nothing is left waiting or held.
    with open(lock_path) as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_stop_request_ends_the_wait_for_a_held_run(tmpdir_zl):
    out = os.path.join(tmpdir_zl, "waiting")
    first = run_ids(out)[0]
    lock_path = os.path.join(out, "locks", f"{first}.lock")
    os.makedirs(os.path.dirname(lock_path), exist_ok=True)
    with open(lock_path, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = ablate(out)
        for line in proc.stderr:
            if "waiting for run" in line:
                break
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)  # at once, not when the holder lets go
        assert proc.returncode == 128 + signal.SIGTERM, stderr[-2000:]
        assert f"stopped by SIGTERM while waiting for run {first}" in stderr
