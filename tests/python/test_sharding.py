"""docs/results_schema.md / issue 6: a study run as two shards in two processes at once, then
merged, gives the same index as one unsharded run."""
import os
import subprocess

import h5py
import numpy as np

from conftest import ROOT, SHORT_RUN, zerolayer_bin
from zerolayer.results import load_index, parse_config

# Four runs: 2 seeds x 2 temperatures. Runs differing only in temperature share
# a trained model, and `i % n` slicing puts the two temperatures of one seed in
# different shards, so both processes need the same checkpoints at the same
# time: the checkpoint lock and the atomic data caches are exercised too.


def write_study(path):
    with open(os.path.join(ROOT, "ablations", "smoke.ini")) as f:
        text = f.read()
    text = text.replace("[grid]\nseed = 1, 2", "[grid]\nseed = 1, 2\ndecode.temperature = 0.8, 1.0")
    assert "decode.temperature = 0.8, 1.0" in text, "smoke.ini's grid changed: update this test"
    with open(path, "w") as f:
        f.write(text)


def configs(path):
    """run_id -> resolved config, output keys left out (the two studies write to different dirs)."""
    with h5py.File(path, "r") as f:
        return {rid: {k: v for k, v in parse_config(f["runs"][rid].attrs["config"]).items()
                      if not k.startswith("output.")} for rid in f["runs"]}


def test_two_shards_at_once_then_merge_equal_one_unsharded_run(tmpdir_zl):
    study = os.path.join(tmpdir_zl, "shard.ini")
    write_study(study)
    sharded, whole = os.path.join(tmpdir_zl, "sharded"), os.path.join(tmpdir_zl, "whole")

    dry = subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", sharded, "--dry-run", *SHORT_RUN],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert "4 runs in this slice (4 in the study)" in dry and dry.count("missing") == 4, dry

    procs = [subprocess.Popen([zerolayer_bin(), "ablate", study, "--output.dir", sharded, "--shard", f"{i}/2",
                               *SHORT_RUN], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        # Paired timing needs every arm of a seed in one process: no slice times.
        assert "2 run(s) await paired timing" in out, out
    # A shard writes no results file of its own; merge joins them.
    assert not os.path.exists(os.path.join(sharded, "results.h5"))
    for i in range(2):
        dry = subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", sharded, "--dry-run",
                              "--shard", f"{i}/2", *SHORT_RUN], capture_output=True, text=True, cwd=ROOT,
                             check=True).stdout
        assert dry.count("complete") == 2 and "2 runs in this slice (4 in the study)" in dry, dry
    merged = subprocess.run([zerolayer_bin(), "merge", sharded], capture_output=True, text=True, cwd=ROOT,
                            check=True)
    assert "4 complete run(s) have no timing yet" in merged.stderr, merged.stderr
    assert "decode_tok_s" not in load_index(os.path.join(sharded, "results.h5")).columns
    # The unsharded ablate finds every run complete: it times each seed's two
    # arms together and merges (what the SLURM merge job runs).
    timed = subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", sharded, *SHORT_RUN],
                           capture_output=True, text=True, cwd=ROOT, check=True)
    assert "timed seed 1: 2 arms" in timed.stderr and "timed seed 2: 2 arms" in timed.stderr, timed.stderr

    summary = subprocess.run([zerolayer_bin(), "ablate", study, "--output.dir", whole, *SHORT_RUN],
                             capture_output=True, text=True, cwd=ROOT, check=True).stdout
    # The summary has one row per setting (seeds pooled), not one per variant.
    assert "baseline decode.temperature=0.8 " in summary and "baseline decode.temperature=1 " in summary, summary

    a = load_index(os.path.join(sharded, "results.h5"))
    b = load_index(os.path.join(whole, "results.h5"))
    assert len(a) == 4
    for column in ["run_id", "train_id", "variant", "seed", "status"]:
        assert list(a[column]) == list(b[column]), column
    assert set(a["status"]) == {"complete"}
    assert len(set(a["train_id"])) == 2  # temperatures share a model
    assert configs(os.path.join(sharded, "results.h5")) == configs(os.path.join(whole, "results.h5"))
    # The same trained models: training is deterministic given the seed, and
    # runs sharing a train_id reuse one checkpoint whichever shard trained it.
    np.testing.assert_allclose(a["val_loss"], b["val_loss"], rtol=1e-5)
    assert list(a.columns) == list(b.columns)
    assert (a["decode_tok_s"] > 0).all() and (a["decode_timing_arms"] == 2).all()


def test_bad_shard_argument_is_refused(zl):
    for bad in ["2/2", "1", "-1/2", "a/b", "0/0"]:
        proc = zl("ablate", "ablations/smoke.ini", "--shard", bad, "--dry-run", check=False)
        assert proc.returncode != 0 and "--shard" in proc.stderr, (bad, proc.stderr)
