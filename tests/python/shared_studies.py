"""The studies several test files read (conftest.py's session fixtures), and where they are built.

pytest alone builds each at most once per session, in a folder of its own under $ZL_TEST_TMP. Under
CTest the test files run side by side, one process each, and would each build the studies they read:
there ZL_TEST_SHARED names one folder for all of them, and study NAME lives in ZL_TEST_SHARED/NAME. The
entry python_study_NAME builds it afresh before the entries that read it start (a CTest fixture); a
test that asks first (`make test-fast` leaves the builders out) builds it itself. A lock makes the
others wait for a build under way, and a study already built by the same zerolayer binary from the
same study files and this file is read, not built again.

    python3 tests/python/shared_studies.py NAME   (re)builds study NAME in $ZL_TEST_SHARED/NAME
"""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE = os.path.join(ROOT, "ablations", "smoke.ini")

# A served study in small (serve-bench's loads, 24 requests served for real, projected to H100 SXM at
# the 7B shape): served_results' overrides, and test_serving's.
SERVED = ["--serve.requests", "24", "--serve.hardware", "H100-SXM", "--serve.shapes", "llama2-7b",
          "--serve.slo_ttft_ms", "50", "--serve.slo_tpot_ms", "5", "--seed", "1"]


class BuildError(RuntimeError):
    pass


def zerolayer_bin():
    path = os.environ.get("ZEROLAYER_BIN", os.path.join(ROOT, "build", "zerolayer"))
    if not os.path.exists(path):
        raise BuildError(f"zerolayer binary not found at {path}: build first (make build)")
    return path


def tmp_root():
    """The folder the tests' temporaries go in: $ZL_TEST_TMP (CTest gives each entry its own), else /tmp."""
    base = os.environ.get("ZL_TEST_TMP", tempfile.gettempdir())
    os.makedirs(base, exist_ok=True)
    return base


def zerolayer(*args):
    proc = subprocess.run([zerolayer_bin(), *map(str, args)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    if proc.returncode != 0:
        raise BuildError(f"zerolayer {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr[-3000:]}")


def smoke(out):
    """ablations/smoke.ini: a tiny model, two seeds, every stage of a run."""
    zerolayer("ablate", SMOKE, "--output.dir", out)


def served(out):
    """The smoke study's baseline and sfvl, seed 1, served (a small workload served twice for real,
    projected to H100 SXM at the 7B shape); one file."""
    for variant in ("baseline", "sfvl"):
        zerolayer("ablate", SMOKE, "--output.dir", out, "--variant", variant, "--serve.enabled", "true",
                  "--serve.repeats", "2", *SERVED)


def ladder(out):
    """A scale ladder in miniature (issue 15): the smoke study on a base, sfcl and oet at two sizes
    (1 x 16 and 2 x 32), 2 seeds, judged by `zerolayer claims` (so /claims_trend is written)."""
    study = os.path.join(out, "ladder.ini")
    with open(study, "w") as f:
        f.write(f"[study]\nbase = {SMOKE}\nname = ladder\n[output]\ndir = {out}\n"
                "[zip.arm]\nvariant = sfcl, oet\n"
                "[zip.size]\nmodel.layers = 1, 2\nmodel.dim = 16, 32\ntrain.steps = 60, 100\n")
    zerolayer("ablate", study)
    zerolayer("claims", os.path.join(out, "results.h5"))


def sensitivity(out):
    """ablations/sensitivity.ini in miniature (issue 29 §2): the smoke study's baseline and sfvl solved
    for first-check trigger rates 0.1 and 0.3 on short text, and sfcl's width solved for a time share
    of 0.15 before training (oet decoding that checkpoint), 2 seeds, judged by `zerolayer claims
    --sensitivity` (so /claims_sensitivity is written)."""
    study = os.path.join(out, "sensitivity.ini")
    with open(study, "w") as f:
        f.write(f"[study]\nbase = {SMOKE}\nname = sensitivity\n[output]\ndir = {out}\n"
                "[calibrate]\nprompts = 16\n"
                "[calibrate.sfcl]\ntarget = 0.15\nrange = 64, 4096\n"
                "[zip.arm]\nvariant = baseline, sfvl, sfvl, sfcl, oet\n"
                "calibrate.sfvl.target = 0.1, 0.1, 0.3, 0, 0\n")
    zerolayer("ablate", study)
    zerolayer("claims", os.path.join(out, "results.h5"), "--sensitivity")


STUDIES = {"smoke": smoke, "served": served, "ladder": ladder, "sensitivity": sensitivity}


def identity():
    """What a built study depends on: the binary (its size and time) and the files that define the studies."""
    st = os.stat(zerolayer_bin())
    digest = hashlib.sha256()
    for path in (SMOKE, os.path.abspath(__file__)):
        with open(path, "rb") as f:
            digest.update(f.read())
    return {"zerolayer": [zerolayer_bin(), st.st_size, st.st_mtime_ns], "sources": digest.hexdigest()}


def built_by(stamp):
    """The identity a study's stamp records; None if there is none (not built, or not to the end)."""
    try:
        with open(stamp) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def study(name, fresh=False):
    """The results file of study `name`, built if need be (see the module's docstring); `fresh`: built
    again even when one is there."""
    build = STUDIES[name]
    shared = os.environ.get("ZL_TEST_SHARED")
    if not shared:  # pytest alone: once per session, which the caller's session-scoped fixture ensures
        out = tempfile.mkdtemp(dir=tmp_root(), prefix=f"{name}-")
        build(out)
        return os.path.join(out, "results.h5")
    os.makedirs(shared, exist_ok=True)
    out = os.path.join(shared, name)
    stamp = os.path.join(out, "built.json")
    with open(out + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process dies
        want = identity()
        if fresh or built_by(stamp) != want:
            shutil.rmtree(out, ignore_errors=True)  # another binary's, or a build that failed half way
            os.makedirs(out)
            build(out)
            with open(stamp, "w") as f:
                json.dump(want, f)
    return os.path.join(out, "results.h5")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in STUDIES or not os.environ.get("ZL_TEST_SHARED"):
        sys.exit(f"usage: ZL_TEST_SHARED=FOLDER {sys.argv[0]} {{{','.join(STUDIES)}}}")
    try:
        print(study(sys.argv[1], fresh=True))
    except BuildError as e:
        sys.exit(str(e))
