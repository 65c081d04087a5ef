"""Issue 16, damage: a full disk (here a real file-size limit, RLIMIT_FSIZE,
which fails writes with EFBIG as a full disk fails them with ENOSPC) fails
the run with an error naming the file and the reason, leaves every earlier
result intact and no temporary file, and the study completes when run again;
a truncated or garbage shard is named, set aside and its run redone, never
merged; a damaged cache or checkpoint is found by its checksum and rebuilt."""
import hashlib
import os
import resource
import shutil
import subprocess

import numpy as np

from conftest import ROOT, SHORT_RUN, index_of, zerolayer_bin
from zerolayer.results import load_index


def ablate(out, seeds, limit=None):
    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, *SHORT_RUN,
                           "--seed", seeds], capture_output=True, text=True, cwd=ROOT, timeout=600,
                          preexec_fn=cap if limit else None)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_a_write_past_the_limit_fails_the_run_cleanly_and_keeps_earlier_results(tmpdir_zl):
    out = os.path.join(tmpdir_zl, "full")
    first = ablate(out, "1")
    assert first.returncode == 0, first.stderr[-2000:]
    (shard,) = os.listdir(os.path.join(out, "runs"))
    before = {p: digest(os.path.join(out, p)) for p in (f"runs/{shard}", "results.h5")}

    # 100 KB: the new model's checkpoint (about 170 KB) cannot be written.
    full = ablate(out, "1,2", limit=100 * 1024)
    assert full.returncode == 1, full.stderr[-2000:]
    assert "cannot write" in full.stderr and "File too large" in full.stderr and "model-" in full.stderr
    assert digest(os.path.join(out, f"runs/{shard}")) == before[f"runs/{shard}"]
    stray = [os.path.join(d, f) for d, _, files in os.walk(out) for f in files if ".tmp" in f]
    assert not stray, stray

    again = ablate(out, "1,2")
    assert again.returncode == 0, again.stderr[-2000:]
    index = load_index(os.path.join(out, "results.h5"))
    assert len(index) == 2 and (index["status"] == "complete").all()
    assert digest(os.path.join(out, f"runs/{shard}")) == before[f"runs/{shard}"]  # kept, not redone


def test_a_damaged_shard_is_named_set_aside_and_its_run_redone(tmpdir_zl):
    out = os.path.join(tmpdir_zl, "damaged")
    assert ablate(out, "1,2").returncode == 0
    runs = os.path.join(out, "runs")
    truncated, garbage = sorted(os.listdir(runs))
    with open(os.path.join(runs, truncated), "r+b") as f:
        f.truncate(os.path.getsize(f.name) // 2)
    with open(os.path.join(runs, garbage), "wb") as f:
        f.write(b"not an HDF5 file\n" * 100)
    # `merge` never merges a damaged shard in silence: it names it and fails.
    merge = subprocess.run([zerolayer_bin(), "merge", out], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert merge.returncode != 0 and (truncated in merge.stderr or garbage in merge.stderr), merge.stderr
    again = ablate(out, "1,2")
    assert again.returncode == 0, again.stderr[-2000:]
    for name in (truncated, garbage):
        assert f"{name}: corrupt" in again.stderr and f"set aside as {os.path.join(runs, name)}.corrupt" in again.stderr
        assert os.path.exists(os.path.join(runs, name + ".corrupt"))
    index = load_index(os.path.join(out, "results.h5"))
    assert len(index) == 2 and (index["status"] == "complete").all()


# Metrics that do not depend on time or memory: a rebuilt cache must give them back to the last digit.
EXACT = ["val_loss", "bpb", "violation_rate", "repetition_rate", "verifier_auroc", "verifier_ece", "trigger_rate",
         "oet_table_nnz", "resample_fix_rate"]


def test_damaged_caches_and_checkpoints_are_detected_set_aside_and_rebuilt(tmpdir_zl):
    """Every file zerolayer publishes to reuse later carries a checksum taken
    at publish: a tokenizer model, token shards, a verifier, an offline table,
    a checkpoint's model. Damaged afterwards (truncated, or one byte changed,
    which only the checksum sees), each is named, set aside and rebuilt, and
    the study gives the same values as before."""
    out = os.path.join(tmpdir_zl, "caches")
    run = lambda: subprocess.run([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, *SHORT_RUN,
                                  "--seed", "1", "--variant", "sfvl,oet"], capture_output=True, text=True, cwd=ROOT,
                                 timeout=600)
    first = run()
    assert first.returncode == 0, first.stderr[-2000:]
    before = index_of(os.path.join(out, "results.h5"))

    def only(pattern):
        found = [os.path.join(d, f) for d, _, files in os.walk(out) for f in files
                 if pattern in f and not f.endswith((".crc32", ".corrupt"))]
        assert len(found) == 1, (pattern, found)
        return found[0]

    def flip_a_byte(path):
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            b = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([b[0] ^ 0x40]))

    truncate = lambda path: os.truncate(path, os.path.getsize(path) // 2)
    damaged = {only("tokenizer-sp"): truncate, only("-train.bin"): flip_a_byte, only("verifier-"): flip_a_byte,
               only("oet_table-"): truncate}
    models = [os.path.join(d, f) for d, _, files in os.walk(out) for f in files if f.startswith("model-")]
    damaged[models[0]] = flip_a_byte
    for path, damage in damaged.items():
        damage(path)
    shutil.rmtree(os.path.join(out, "runs"))  # the runs are redone from the damaged files
    os.remove(os.path.join(out, "results.h5"))

    again = run()
    assert again.returncode == 0, again.stderr[-2000:]
    for path in damaged:
        name = os.path.basename(path)
        assert name in again.stderr and "damaged" in again.stderr, (name, again.stderr[-3000:])
    assert again.stderr.count("set aside") == len(damaged), again.stderr[-3000:]
    assert "training it again" in again.stderr
    after = index_of(os.path.join(out, "results.h5"))
    assert list(after["run_id"]) == list(before["run_id"])
    for metric in EXACT:
        if metric in before.columns:
            np.testing.assert_array_equal(after[metric].to_numpy(), before[metric].to_numpy(), err_msg=metric)
