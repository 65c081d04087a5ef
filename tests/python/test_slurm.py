"""Issue 15: `zerolayer submit` on a real SLURM. A one-node cluster is started
here (munged, slurmctld, slurmd from Debian's packages, all in the
foreground, all private to the test: their own config, state, ports and munge
socket), a study goes through it as a job array of `ablate --shard i/N`
slices plus a merge job, and the merged results equal an unsharded run. A task
killed midway is finished by submitting again, without redoing complete runs.
"""
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time

import h5py
import numpy as np
import pytest

from conftest import ROOT, SHORT_RUN, zerolayer_bin
from test_sharding import configs, write_study
from zerolayer.results import load_index

pytestmark = pytest.mark.slow  # a SLURM cluster started, and studies run through it

PROGRAMS = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"]
# Job states after which a job does nothing more (squeue(1), JOB STATE CODES).
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
        "DEADLINE"}
# Index columns that measure time or memory: they differ between any two runs.
TIMING = re.compile(r"(_tok_s|_utc|_ns|_seconds)$|^(ttft|tpot|itl|e2el)_ms|^peak_rss|^time_share_")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def started(shard):
    return load_index(shard)["started_utc"].iloc[0]


def tail(path, n=3000):
    try:
        with open(path, errors="replace") as f:
            return f"--- {path}:\n{f.read()[-n:]}"
    except OSError:
        return f"--- {path}: (none)"


class Slurm:
    """A running one-node cluster: `env` points SLURM's clients at it."""

    def __init__(self, root, env):
        self.root, self.env = root, env

    def run(self, *args, check=True):
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, check=check, timeout=60)

    def states(self, job_id):
        """{"<job>_<task>" or "<job>": state} for a job or every task of an array."""
        out = self.run("scontrol", "-o", "show", "job", job_id, check=False).stdout
        states = {}
        for line in out.splitlines():
            f = dict(w.split("=", 1) for w in line.split() if "=" in w)
            key = f["JobId"] if "ArrayTaskId" not in f else f"{f['ArrayJobId']}_{f['ArrayTaskId']}"
            states[key] = f["JobState"]
        return states

    def wait(self, *job_ids, timeout=300):
        """Polls until every job (every task of an array) has ended; returns their states.
        Not `sbatch --wait`: it polls every 10 s, longer than these jobs run."""
        deadline = time.time() + timeout
        while True:
            states = {k: v for j in job_ids for k, v in self.states(j).items()}
            if states and all(s in DONE for s in states.values()):
                return states
            if time.time() > deadline:
                raise AssertionError(f"jobs {job_ids} still not done after {timeout} s: {states}\n"
                                     + self.run("squeue", "-a", check=False).stdout + self.logs())
            time.sleep(0.3)

    def logs(self):
        return "\n".join(tail(os.path.join(self.root, f)) for f in ["slurmctld.log", "slurmd.log"])


def cannot_run():
    if os.geteuid() != 0:
        return "not root: slurmd must run as root to start jobs, and munged as the munge user"
    missing = [d for d in PROGRAMS if shutil.which(d, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None]
    if missing:
        return f"{', '.join(missing)} not installed (scripts/setup installs slurmctld slurmd slurm-client munge)"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no munge user (the munge package creates it)"
    return None


def start(args, log, **kw):
    out = open(log, "w")
    try:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, **kw)
    finally:
        out.close()


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def slurm():
    why = cannot_run()
    if why:
        pytest.skip(f"no local SLURM: {why}")
    sbin = os.pathsep.join(["/usr/sbin", "/sbin"])
    env = dict(os.environ, PATH=os.environ.get("PATH", "/usr/bin:/bin") + os.pathsep + sbin)
    # Under /tmp, not ZL_TEST_TMP: munged runs as the munge user, who must reach
    # its folder, and refuses a key or socket in a folder others may write to.
    root = tempfile.mkdtemp(prefix="zl-slurm-")
    os.chmod(root, 0o755)
    procs = []
    try:
        # munged refuses to run as root: it runs as munge, with a private key
        # and socket, so a munged the package's init script started is left alone.
        munge = pwd.getpwnam("munge")
        mdir = os.path.join(root, "munge")
        os.mkdir(mdir)
        os.chmod(mdir, 0o755)  # munged wants its socket's folder searchable by all, writable by it alone
        os.chown(mdir, munge.pw_uid, munge.pw_gid)
        key = os.path.join(mdir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chown(key, munge.pw_uid, munge.pw_gid)
        os.chmod(key, 0o400)
        sock = os.path.join(mdir, "munge.socket")
        procs.append(start([shutil.which("munged", path=env["PATH"]), "-F", f"--socket={sock}", f"--key-file={key}",
                            f"--pid-file={mdir}/munged.pid", f"--log-file={mdir}/munged.log",
                            f"--seed-file={mdir}/munged.seed"],
                           os.path.join(root, "munged.out"), user=munge.pw_uid, group=munge.pw_gid, extra_groups=[]))
        deadline = time.time() + 20
        while not os.path.exists(sock):
            if procs[0].poll() is not None or time.time() > deadline:
                pytest.fail("munged did not start:\n" + tail(os.path.join(root, "munged.out")) + "\n"
                            + tail(os.path.join(mdir, "munged.log")))
            time.sleep(0.1)

        # The node as slurmd sees this machine (its CPUs and memory), reached on 127.0.0.1.
        node = next(line for line in subprocess.run([shutil.which("slurmd", path=env["PATH"]), "-C"],
                                                    capture_output=True, text=True, check=True).stdout.splitlines()
                    if line.startswith("NodeName="))
        host = node.split()[0].split("=", 1)[1]
        conf = os.path.join(root, "slurm.conf")
        with open(conf, "w") as f:
            f.write(f"""ClusterName=zltest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
# No systemd, no cgroups, no accounting daemon: plain process tracking.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
# Ended jobs stay visible to `scontrol show job` for the whole test; a
# cancelled job is killed 2 s after its SIGTERM.
MinJobAge=3600
KillWait=2
{node} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=zltest Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
        os.makedirs(os.path.join(root, "state"))
        os.makedirs(os.path.join(root, "spool"))
        env["SLURM_CONF"] = conf
        for daemon in ["slurmctld", "slurmd"]:
            procs.append(start([shutil.which(daemon, path=env["PATH"]), "-D"], os.path.join(root, f"{daemon}.out"),
                               env=env))
        cluster = Slurm(root, env)
        deadline = time.time() + 60
        while "idle" not in cluster.run("sinfo", "-h", "-o", "%t", check=False).stdout:
            dead = [p.args[0] for p in procs if p.poll() is not None]
            if dead or time.time() > deadline:
                pytest.fail(f"the node did not come up ({', '.join(dead) or 'timeout'} ):\n"
                            + "\n".join(tail(os.path.join(root, f"{d}.out")) for d in ["slurmctld", "slurmd"])
                            + cluster.logs())
            time.sleep(0.3)
        yield cluster
    finally:
        # Jobs left by a failed test first, so no job's processes outlive the cluster.
        if len(procs) == 3 and procs[1].poll() is None:
            subprocess.run(["scancel", "--quiet", "--user=root"], env=env, capture_output=True, timeout=60)
            deadline = time.time() + 15
            while time.time() < deadline and subprocess.run(["squeue", "-h"], env=env, capture_output=True,
                                                            text=True, timeout=60).stdout.strip():
                time.sleep(0.3)
        for p in reversed(procs):
            stop(p)
        shutil.rmtree(root, ignore_errors=True)


def submit(cluster, study, out, *overrides):
    proc = subprocess.run([zerolayer_bin(), "submit", study, "--shards", "2", "--cpus-per-task", "1",
                           "--output.dir", out, *overrides], capture_output=True, text=True, cwd=ROOT,
                          env=cluster.env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"submitted array job (\d+) \(2 tasks, ablate --shard i/2\) and merge job (\d+)", proc.stdout)
    assert m, proc.stdout
    return m.group(1), m.group(2)


def test_a_study_as_a_job_array_plus_merge_equals_one_unsharded_run(slurm, tmpdir_zl):
    # Four runs, two trained models: the temperatures of one seed are in
    # different slices, so both tasks need each model at once (test_sharding.py).
    study = os.path.join(tmpdir_zl, "shard.ini")
    write_study(study)
    sharded, whole = os.path.join(tmpdir_zl, "sharded"), os.path.join(tmpdir_zl, "whole")

    array, merge = submit(slurm, study, sharded, *SHORT_RUN)
    states = slurm.wait(array, merge)
    logs = os.path.join(sharded, "slurm")
    # The two tasks share this node's cores: their OpenMP threads sleep while they wait (docs/studies.md).
    assert 'export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"\n' in read(os.path.join(logs, "array.sbatch"))
    assert states == {f"{array}_0": "COMPLETED", f"{array}_1": "COMPLETED", merge: "COMPLETED"}, (
        states, "\n".join(tail(os.path.join(logs, f)) for f in sorted(os.listdir(logs))))
    for i in range(2):  # each task's own log, under output.dir
        assert f"slice {i}/2 done" in read(os.path.join(logs, f"task-{array}_{i}.log"))
    merged = read(os.path.join(logs, f"merge-{merge}.log"))
    # The merge job, an unsharded ablate, timed each seed's arms together (decode.timing = paired), then merged.
    assert "timed seed 1: 2 arms" in merged and "results: " in merged, merged

    subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", whole, *SHORT_RUN], capture_output=True,
                   text=True, cwd=ROOT, check=True, timeout=600)
    a = load_index(os.path.join(sharded, "results.h5"))
    b = load_index(os.path.join(whole, "results.h5"))
    assert len(a) == 4 and set(a["status"]) == {"complete"}
    assert list(a.columns) == list(b.columns)
    assert list(a["run_id"]) == list(b["run_id"])
    assert configs(os.path.join(sharded, "results.h5")) == configs(os.path.join(whole, "results.h5"))
    # Each model was trained once, by whichever task took its checkpoint lock
    # first; the other task's run loaded it (sim/trainer.cpp). A run reports the
    # training speed its checkpoint recorded, so a model trained twice would
    # show two different speeds.
    assert a.groupby("train_id")["train_tok_s"].nunique().tolist() == [1, 1], a[["run_id", "train_id", "train_tok_s"]]
    for c in a.columns:
        if TIMING.search(c):
            continue
        if a[c].dtype.kind in "fiu":
            np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-6, err_msg=c)
        else:
            assert list(a[c]) == list(b[c]), c


def test_a_killed_task_is_finished_by_submitting_again_without_redoing_complete_runs(slurm, tmpdir_zl):
    # smoke.ini's two runs (seeds 1 and 2), one per task, trained long enough
    # (several seconds) to kill task 1 in the middle of its training.
    out = os.path.join(tmpdir_zl, "killed")
    longer = ["--train.steps", "1500", "--train.checkpoint_every", "100", "--train.eval_every", "500",
              "--train.threads", "1", "--decode.repeats", "1"]
    array, merge = submit(slurm, "ablations/smoke.ini", out, *longer)
    log1 = os.path.join(out, "slurm", f"task-{array}_1.log")
    deadline = time.time() + 120
    while "[1/1]" not in read(log1):  # its run has started
        assert time.time() < deadline, f"task 1 never started its run\n{tail(log1)}\n{slurm.logs()}"
        time.sleep(0.2)
    # Both models past their first checkpoint (step 100 of 1500): both tasks are mid-training.
    checkpoints = os.path.join(out, "checkpoints")
    while not (os.path.isdir(checkpoints) and
               sum(os.path.exists(os.path.join(checkpoints, d, "state.ini")) for d in os.listdir(checkpoints)) == 2):
        assert time.time() < deadline, f"the two models were not both checkpointed\n{tail(log1)}"
        time.sleep(0.2)
    slurm.run("scancel", f"{array}_1")
    states = slurm.wait(array, merge)
    assert states == {f"{array}_0": "COMPLETED", f"{array}_1": "CANCELLED", merge: "CANCELLED"}, states
    killed = read(log1)
    assert "stopped by SIGTERM" in killed, killed[-3000:]  # midway: the run was left unfinished
    runs = os.path.join(out, "runs")
    # A run done again would start anew: its start time names it. (Its shard
    # is rewritten once, by the merge job's paired timing, which keeps the rest.)
    done = {f: started(os.path.join(runs, f)) for f in os.listdir(runs) if f.endswith(".h5")}
    assert len(done) == 1, done  # task 0's run
    assert not os.path.exists(os.path.join(out, "results.h5"))

    array2, merge2 = submit(slurm, "ablations/smoke.ini", out, *longer)
    states = slurm.wait(array2, merge2)
    assert set(states.values()) == {"COMPLETED"}, (states, tail(os.path.join(out, "slurm", f"task-{array2}_1.log")))
    again = read(os.path.join(out, "slurm", f"task-{array2}_0.log"))
    assert "[1/1]" not in again and "slice 0/2 done" in again, again  # task 0 found its run complete
    for f, start in done.items():
        assert started(os.path.join(runs, f)) == start, f"{f} was run again"
    index = load_index(os.path.join(out, "results.h5"))
    assert len(index) == 2 and set(index["status"]) == {"complete"}
    assert sorted(index["seed"]) == [1, 2]
    with h5py.File(os.path.join(out, "results.h5"), "r") as f:  # the killed training resumed, its curve whole
        assert [len(f["runs"][rid]["train/loss"]) for rid in index["run_id"]] == [1500, 1500]
