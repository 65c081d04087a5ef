import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
# The native module zerolayer._native: CTest passes its build folder; by hand,
# the default build folder. python/zerolayer/__init__.py finds it there.
PYTHON_BUILD = os.environ.get("ZL_PYTHON_BUILD", os.path.join(ROOT, "build", "python"))
os.environ.setdefault("ZL_PYTHON_BUILD", PYTHON_BUILD)


def zerolayer_bin():
    path = os.environ.get("ZEROLAYER_BIN", os.path.join(ROOT, "build", "zerolayer"))
    if not os.path.exists(path):
        pytest.fail(f"zerolayer binary not found at {path}: build first (make build)")
    return path


@pytest.fixture
def zl():
    """Runs the zerolayer binary; returns the CompletedProcess."""
    def run(*args, check=True, timeout=600, **kw):
        proc = subprocess.run([zerolayer_bin(), *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT, **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"zerolayer {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
        return proc
    return run


@pytest.fixture
def tmpdir_zl():
    base = os.environ.get("ZL_TEST_TMP", tempfile.gettempdir())
    os.makedirs(base, exist_ok=True)
    d = tempfile.mkdtemp(dir=base, prefix="pytest-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def smoke_results():
    """The smoke study's results file, run once per session."""
    base = os.environ.get("ZL_TEST_TMP", tempfile.gettempdir())
    os.makedirs(base, exist_ok=True)
    out = tempfile.mkdtemp(dir=base, prefix="smoke-")
    proc = subprocess.run([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return os.path.join(out, "results.h5")


@pytest.fixture(scope="session")
def served_results():
    """The smoke study's baseline and sfvl, seed 1, served (serve-bench's
    loads, a small workload served twice for real, projected to H100 SXM at
    the 7B shape); one file."""
    base = os.environ.get("ZL_TEST_TMP", tempfile.gettempdir())
    os.makedirs(base, exist_ok=True)
    out = tempfile.mkdtemp(dir=base, prefix="served-")
    for variant in ("baseline", "sfvl"):
        proc = subprocess.run([zerolayer_bin(), "ablate", "ablations/smoke.ini", "--output.dir", out, "--variant", variant,
                               "--seed", "1", "--serve.enabled", "true", "--serve.requests", "24", "--serve.repeats", "2",
                               "--serve.hardware", "H100-SXM", "--serve.shapes", "llama2-7b",
                               "--serve.slo_ttft_ms", "50", "--serve.slo_tpot_ms", "5"],
                              capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
    return os.path.join(out, "results.h5")


@pytest.fixture(scope="session")
def ladder_results():
    """A scale ladder in miniature (issue 15): the smoke study on a base, sfcl and oet at two sizes
    (1 x 16 and 2 x 32), 2 seeds, judged by `zerolayer claims` (so /claims_trend is written)."""
    base = os.environ.get("ZL_TEST_TMP", tempfile.gettempdir())
    os.makedirs(base, exist_ok=True)
    out = tempfile.mkdtemp(dir=base, prefix="ladder-")
    study = os.path.join(out, "ladder.ini")
    with open(study, "w") as f:
        f.write(f"[study]\nbase = {ROOT}/ablations/smoke.ini\nname = ladder\n[output]\ndir = {out}\n"
                "[zip.arm]\nvariant = sfcl, oet\n"
                "[zip.size]\nmodel.layers = 1, 2\nmodel.dim = 16, 32\ntrain.steps = 60, 100\n")
    for args in (["ablate", study], ["claims", os.path.join(out, "results.h5")]):
        proc = subprocess.run([zerolayer_bin(), *args], capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
    return os.path.join(out, "results.h5")


@pytest.fixture(scope="session")
def sensitivity_results():
    """ablations/sensitivity.ini in miniature (issue 29 §2): the smoke study's baseline and sfvl solved
    for first-check trigger rates 0.1 and 0.3 on short text, and sfcl's width solved for a time share
    of 0.15 before training (oet decoding that checkpoint), 2 seeds, judged by `zerolayer claims
    --sensitivity` (so /claims_sensitivity is written)."""
    base = os.environ.get("ZL_TEST_TMP", tempfile.gettempdir())
    os.makedirs(base, exist_ok=True)
    out = tempfile.mkdtemp(dir=base, prefix="sensitivity-")
    study = os.path.join(out, "sensitivity.ini")
    with open(study, "w") as f:
        f.write(f"[study]\nbase = {ROOT}/ablations/smoke.ini\nname = sensitivity\n[output]\ndir = {out}\n"
                "[calibrate]\nprompts = 16\n"
                "[calibrate.sfcl]\ntarget = 0.15\nrange = 64, 4096\n"
                "[zip.arm]\nvariant = baseline, sfvl, sfvl, sfcl, oet\n"
                "calibrate.sfvl.target = 0.1, 0.1, 0.3, 0, 0\n")
    for args in (["ablate", study], ["claims", os.path.join(out, "results.h5"), "--sensitivity"]):
        proc = subprocess.run([zerolayer_bin(), *args], capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
    return os.path.join(out, "results.h5")
