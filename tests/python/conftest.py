import os
import shutil
import subprocess
import sys
import tempfile

import pytest

import shared_studies
from shared_studies import ROOT

sys.path.insert(0, os.path.join(ROOT, "python"))
# The native module zerolayer._native: CTest passes its build folder; by hand,
# the default build folder. python/zerolayer/__init__.py finds it there.
PYTHON_BUILD = os.environ.get("ZL_PYTHON_BUILD", os.path.join(ROOT, "build", "python"))
os.environ.setdefault("ZL_PYTHON_BUILD", PYTHON_BUILD)
# The zerolayer processes tests run side by side let their OpenMP threads sleep, not spin, while they
# wait: CTest sets this for its entries (CMakeLists.txt's test section says why), and by hand too.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from zerolayer_results import load_index  # noqa: E402  (python/ is on the path from here)

# The overrides the tests' studies share, each in one place.
# A few seconds of training with a checkpoint and an evaluation half way, one thread, one timing pass.
SHORT_RUN = ["--train.steps", "40", "--train.eval_every", "20", "--train.checkpoint_every", "20",
             "--train.threads", "1", "--decode.repeats", "1"]
# A study of seconds for the variants trained beside the baseline (known attention, eviction,
# latent_kv): one layer of 4 heads, byte tokens, 12 steps, 4 prompts of 8 new tokens.
TINY_RUN = ["--seed", "1", "--model.layers", "1", "--model.heads", "4", "--model.dim", "32", "--model.context", "64",
            "--data.tokenizer", "byte", "--data.documents", "100", "--train.steps", "12", "--train.warmup", "2",
            "--train.batch", "4", "--train.eval_every", "12", "--train.checkpoint_every", "12",
            "--train.eval_batches", "1", "--decode.prompts", "4", "--decode.batch", "4", "--decode.repeats", "1",
            "--decode.max_new_tokens", "8", "--train.threads", "2", "--output.verbosity", "0"]
# sfvl's verifier trained for 60 steps (seconds), at threshold 0.5.
SHORT_VERIFIER = "\n[verify]\ntrain_steps = 60\nthreshold = 0.5\n"
# serve-bench on a small workload, projected to H100 SXM at the 7B shape (served_results' own).
SERVED = shared_studies.SERVED


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a test of tens of seconds or more, or one that reads a study that "
                                       "takes minutes to build; `make test-fast` leaves them out (-m 'not slow')")
    if config.option.basetemp:  # pytest makes the folder, not its parents (CTest's build/test_tmp/test_x)
        os.makedirs(os.path.dirname(os.path.abspath(config.option.basetemp)), exist_ok=True)


def zerolayer_bin():
    try:
        return shared_studies.zerolayer_bin()
    except shared_studies.BuildError as e:
        pytest.fail(str(e))


def index_of(path):
    """A results file's index, one row per run, sorted by run id."""
    return load_index(path).sort_values("run_id").reset_index(drop=True)


def smoke_study(path, arms="", extra=""):
    """ablations/smoke.ini written to `path`, with `arms` (a [zip.arm] section) before its grid and
    `extra` (more sections) at its end."""
    with open(os.path.join(ROOT, "ablations", "smoke.ini")) as f:
        text = f.read()
    assert "[grid]\n" in text, "smoke.ini's grid changed: update tests/python/conftest.py"
    if arms:
        text = text.replace("[grid]\n", f"[zip.arm]\n{arms.strip()}\n\n[grid]\n")
    with open(path, "w") as f:
        f.write(text + extra)
    return str(path)


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
    d = tempfile.mkdtemp(dir=shared_studies.tmp_root(), prefix="pytest-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


# The studies several files read (tests/python/shared_studies.py says where they are built). They are
# read, never written: a test that writes to one works on a copy.

@pytest.fixture(scope="session")
def smoke_results():
    """The smoke study's results file."""
    return shared_studies.study("smoke")


@pytest.fixture(scope="session")
def served_results():
    """The smoke study's baseline and sfvl, seed 1, served (serve-bench's loads, a small workload served
    twice for real, projected to H100 SXM at the 7B shape); one file."""
    return shared_studies.study("served")


@pytest.fixture(scope="session")
def ladder_results():
    """A scale ladder in miniature (issue 15), judged by `zerolayer claims` (so /claims_trend is written)."""
    return shared_studies.study("ladder")


@pytest.fixture(scope="session")
def sensitivity_results():
    """ablations/sensitivity.ini in miniature (issue 29 §2), judged by `zerolayer claims --sensitivity`
    (so /claims_sensitivity is written)."""
    return shared_studies.study("sensitivity")
