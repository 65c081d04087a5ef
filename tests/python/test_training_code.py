"""The training code's fingerprint (cmake/training_code.cmake, docs/design.md#checkpoints-and-the-code-that-trained-
them): a checkpoint records it, and a run refuses a checkpoint whose fingerprint is not the build's. So it must move
when any file it covers changes or is renamed, stay put when nothing does, and not depend on the list's order; and the
build's list must cover the trainer and the network but not the files only inference runs."""
import os
import re
import subprocess

from conftest import PYTHON_BUILD, ROOT

SCRIPT = os.path.join(ROOT, "cmake", "training_code.cmake")


def fingerprint(tmp_path, files):
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f + "\n" for f in files))
    out = tmp_path / "training_code.cpp"
    subprocess.run(["cmake", f"-DROOT={tmp_path}", f"-DLIST={listing}", f"-DOUT={out}", "-P", SCRIPT], check=True,
                   capture_output=True, text=True)
    found = re.search(r'return "([0-9a-f]{16})"', out.read_text())
    assert found, out.read_text()
    return found.group(1)


def test_the_fingerprint_moves_with_the_code_and_not_with_the_order(tmp_path):
    (tmp_path / "a.cpp").write_text("int a() { return 1; }\n")
    (tmp_path / "b.cpp").write_text("int b() { return 2; }\n")
    first = fingerprint(tmp_path, ["a.cpp", "b.cpp"])
    assert fingerprint(tmp_path, ["b.cpp", "a.cpp"]) == first
    (tmp_path / "b.cpp").write_text("int b() { return 3; }\n")
    changed = fingerprint(tmp_path, ["a.cpp", "b.cpp"])
    assert changed != first
    os.rename(tmp_path / "b.cpp", tmp_path / "c.cpp")
    assert fingerprint(tmp_path, ["a.cpp", "c.cpp"]) != changed  # a renamed file is a change
    # Unchanged: the generated file is left as it was, so nothing that includes it rebuilds.
    out = tmp_path / "training_code.cpp"
    before = out.stat().st_mtime_ns
    fingerprint(tmp_path, ["a.cpp", "c.cpp"])
    assert out.stat().st_mtime_ns == before


def test_the_builds_list_covers_training_and_leaves_out_inference():
    listing = os.path.join(os.path.dirname(PYTHON_BUILD), "training_code_files.txt")
    assert os.path.exists(listing), f"{listing} is written when CMake configures the build (make build)"
    files = set(open(listing).read().split())
    for needed in ("sim/trainer.cpp", "models/transformer.cpp", "models/attention.cpp", "datasets/contracts.cpp",
                   "sim/variants.def", "sim/judge.cpp", "sim/stages/verifier_training.cpp", "sim/checkpoint.cpp"):
        assert needed in files, needed
    for inference in ("models/decode_step.cpp", "models/blas.cpp", "models/sampling.cpp", "sim/decoder.cpp"):
        assert inference not in files, inference
    assert all(os.path.exists(os.path.join(ROOT, f)) for f in files)
