"""python/study_time.py: a study's training time per trained family, from its checkpoints' own state.ini. A branch
counts only the steps after its branch point (docs/design.md#branches-uptraining-from-the-baseline); a variant counts
under the family whose network it trains; the judge is the model of the judge's seed; a folder without checkpoints is
named."""
import os
import subprocess
import sys

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "python", "study_time.py")


def checkpoint(root, name, variant, seed, steps, branch, seconds, tokens, complete=True):
    d = root / "checkpoints" / name
    d.mkdir(parents=True)
    (d / "config.ini").write_text(f"variant = {variant}\nseed = {seed}\n\n[model]\nlayers = 4\ndim = 128\n\n"
                                  f"[train]\nsteps = {steps}\nbranch = {branch}\n")
    (d / "state.ini").write_text(f"step={steps}\ncomplete={1 if complete else 0}\ntrain_seconds={seconds}\n"
                                 f"timed_tokens={tokens}\ncurve.train/loss.step=1,2\ncurve.train/loss.value=1,2\n")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True)


def test_branches_count_their_own_steps_and_the_judge_is_its_own_line(tmp_path):
    checkpoint(tmp_path, "a", "baseline", 1, 1000, 0.2, 60, 600_000)
    checkpoint(tmp_path, "b", "baseline", 2, 1000, 0.2, 60, 600_000)
    checkpoint(tmp_path, "b3", "sfvl_oracle", 3, 1000, 0.2, 60, 600_000)  # trained the baseline's network
    checkpoint(tmp_path, "c", "sfcl", 1, 1000, 0.2, 30, 150_000)
    checkpoint(tmp_path, "d", "fused", 1, 1000, 0, 120, 480_000, complete=False)
    checkpoint(tmp_path, "e", "baseline", 104729, 2000, 0, 240, 2_400_000)
    out = run(tmp_path)
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0] + " " + line.split()[1]: line.split() for line in out.stdout.splitlines()[1:-1]}
    assert lines["baseline 4x128"][2:5] == ["3", "3000", "3.0"]       # three models, 1,000 steps each, 180 s
    assert lines["baseline 4x128"][5] == "10000"                      # 1.8M tokens in 180 s
    assert lines["sfcl 4x128"][2:4] == ["1", "200"]                    # a fifth of 1,000: its own steps only
    assert lines["fused 4x128"][2:4] == ["1", "1000"]                  # from scratch: all of them
    assert "(1 incomplete)" in " ".join(lines["fused 4x128"])
    assert lines["judge 4x128"][2:4] == ["1", "2000"]
    assert out.stdout.splitlines()[-1].split()[-1] == "9.5"            # 570 s in all


def test_a_folder_without_checkpoints_is_named(tmp_path):
    out = run(tmp_path / "nowhere")
    assert out.returncode != 0
    assert "nowhere/checkpoints: no checkpoints folder" in out.stderr
