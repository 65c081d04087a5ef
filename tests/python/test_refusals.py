"""What cannot work is refused up front (issue 30 item 6): a run too large for
this machine's memory, before anything is allocated, naming the keys and the
figures; a path no file can have. From the command line and the Python module."""
import glob
import os
import time

import pytest

from conftest import PYTHON_BUILD

import zerolayer


def test_a_620_billion_parameter_run_is_refused_in_seconds(zl, tmpdir_zl):
    start = time.monotonic()
    proc = zl("train", "ablations/smoke.ini", "--model.dim", "32768", "--model.layers", "48",
              "--output.dir", tmpdir_zl, check=False, timeout=60)
    seconds = time.monotonic() - start
    assert proc.returncode != 0, proc.stdout
    assert seconds < 10, f"took {seconds:.1f} s"
    err = proc.stderr
    for part in ("model.dim = 32768", "model.layers = 48", "train.batch = 8", "model.context = 64",
                 "parameters: 618.5 billion", "TB of memory at its peak", "GB to give it", "GB available",
                 "weights", "optimizer", "activations", "KV cache", "train.memory_check = off"):
        assert part in err, f"{part!r} not in:\n{err}"
    # Refused before anything was made: no shard, no checkpoint, not even the runs folder.
    assert os.listdir(tmpdir_zl) == []


def test_the_shipped_studies_are_not_refused(zl, tmpdir_zl):
    for study in ("smoke.ini", "quick.ini", "claims.ini"):
        proc = zl("ablate", f"ablations/{study}", "--dry-run", "--output.dir", tmpdir_zl, check=False)
        assert proc.returncode == 0, f"{study}:\n{proc.stderr}"
        assert "runs in this slice" in proc.stdout


def _native():
    if not glob.glob(os.path.join(PYTHON_BUILD, "zerolayer", "_native*.so")):
        pytest.fail(f"zerolayer._native not built under {PYTHON_BUILD}: build first (make build)")


def test_the_module_refuses_what_does_not_fit_with_a_value_error(tmpdir_zl):
    _native()
    start = time.monotonic()
    with pytest.raises(ValueError) as e:
        zerolayer.run("ablations/smoke.ini", {"output.dir": tmpdir_zl, "model.dim": 32768, "model.layers": 48})
    assert time.monotonic() - start < 10
    assert "model.dim = 32768" in str(e.value) and "train.memory_check" in str(e.value)


def test_a_nul_byte_in_a_path_is_refused_naming_the_key(zl, tmpdir_zl):
    _native()
    with pytest.raises(ValueError) as e:
        zerolayer.run("ablations/smoke.ini", {"output.dir": os.path.join(tmpdir_zl, "res\x00ults")})
    assert "output.dir" in str(e.value) and "NUL byte" in str(e.value), str(e.value)
    assert os.listdir(tmpdir_zl) == []  # nothing written under the path cut short at the NUL
    with pytest.raises(ValueError) as e:
        zerolayer.run("ablations/smoke.ini\x00.bak", {"output.dir": tmpdir_zl})
    assert "NUL byte" in str(e.value), str(e.value)
    # A newline in a path from the command line (a NUL cannot be passed there).
    proc = zl("train", "ablations/smoke.ini", "--output.dir", tmpdir_zl + "/a\nb", check=False)
    assert proc.returncode == 2
    assert "command line: output.dir: holds the control character 0x0a" in proc.stderr, proc.stderr
