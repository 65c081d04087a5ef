"""What cannot work is refused up front (issue 30 item 6): a run too large for
this machine's memory, before anything is allocated, naming the keys and the
figures; a path no file can have; a served run that would fail only after its
training. From the command line and the Python module."""
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


# Found only once the model had trained and served (tens of seconds for the smoke study, minutes for a real
# one) until they were checked where the study resolves its runs (sim/serving/serving_checks.h).
# The smoke study's baseline caches 2 layers x (K + V) 32 floats = 512 bytes a token: 8192 a block of 16.
UNSERVABLE = [
    (["--serve.hardware", "H100-SXM,nonsense"],
     ["command line: serve.hardware: unknown accelerator 'nonsense'", "known: A100-80GB-SXM, H100-SXM, H200-SXM, L4"]),
    (["--serve.shapes", "llama9"], ["command line: serve.shapes: unknown model 'llama9'", "known: llama2-70b, llama2-7b"]),
    (["--serve.kv_budget_mb", "0.001"],
     ["command line: serve.kv_budget_mb: 0.001 MB (1000 bytes) holds no KV block of variant baseline's cache",
      "512 bytes per token needs 8192 bytes", "at least 0.0082"]),
    # latent_kv's latent (32 values, 256 bytes a token) fits 5000 bytes; the baseline beside it in the grid does not.
    (["--serve.kv_budget_mb", "0.005", "--variant", "latent_kv,baseline"],
     ["serve.kv_budget_mb: 0.005 MB", "variant baseline's cache", "needs 8192 bytes"]),
]


@pytest.mark.parametrize("args, parts", UNSERVABLE, ids=["hardware", "shapes", "kv_budget", "kv_budget_grid"])
def test_a_served_run_that_would_fail_after_training_is_refused_before_it(zl, tmpdir_zl, args, parts):
    out = os.path.join(tmpdir_zl, "out")
    start = time.monotonic()
    proc = zl("ablate", "ablations/smoke.ini", "--serve.enabled", "on", *args, "--output.dir", out, check=False,
              timeout=300)
    seconds = time.monotonic() - start
    assert proc.returncode == 2, f"exit {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert seconds < 10, f"took {seconds:.1f} s"
    for part in parts:
        assert part in proc.stderr, f"{part!r} not in:\n{proc.stderr}"
    # Nothing was trained or written: no checkpoint, no shard, not even the output folder.
    assert not os.path.exists(out), os.listdir(out)


def test_the_module_refuses_an_unknown_accelerator_with_a_value_error(tmpdir_zl):
    _native()
    with pytest.raises(ValueError) as e:
        zerolayer.run("ablations/smoke.ini", {"output.dir": tmpdir_zl, "serve.enabled": True,
                                              "serve.hardware": "TPUv9"})
    assert "serve.hardware" in str(e.value) and "'TPUv9'" in str(e.value), str(e.value)
    assert os.listdir(tmpdir_zl) == []
