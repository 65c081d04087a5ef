"""The pybind11 module zerolayer._native: runs, generation, tokenizers, claims,
errors, docstrings, and coexistence with Python's torch in one process."""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import PYTHON_BUILD, ROOT, zerolayer_bin

import zerolayer


def _native_or_skip():
    if not glob.glob(os.path.join(PYTHON_BUILD, "zerolayer", "_native*.so")):
        pytest.fail(f"zerolayer._native not built under {PYTHON_BUILD}: build first (make build)")
    return zerolayer._native


def _python(code):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), ZL_PYTHON_BUILD=PYTHON_BUILD,
               OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One short run through the module; returns (results file, checkpoint dir)."""
    _native_or_skip()
    out = str(tmp_path_factory.mktemp("pyrun"))
    res = zerolayer.run("ablations/smoke.ini", {"output.dir": out, "train.steps": 30, "train.eval_every": 30,
                                                "decode.repeats": 1, "seed": 5, "output.verbosity": 0})
    assert res["exit_code"] == 0
    index = zerolayer.load_index(res["results"])
    ckpt = zerolayer.checkpoint_dir(res["results"], index["run_id"][0])
    assert ckpt == os.path.join(out, "checkpoints", index["train_id"][0])
    return res["results"], ckpt


def test_every_binding_has_a_docstring():
    native = _native_or_skip()
    for name in ["run_study", "run", "config_keys", "claims", "Generator", "Tokenizer"]:
        assert (getattr(native, name).__doc__ or "").strip(), name
    for cls in [native.Generator, native.Tokenizer]:
        for name, member in vars(cls).items():
            if not name.startswith("_"):
                assert (member.__doc__ or "").strip(), f"{cls.__name__}.{name}"


def test_run_writes_one_row_and_matches_the_cli_run(tiny_run, zl, tmpdir_zl):
    results, _ = tiny_run
    index = zerolayer.load_index(results)
    assert list(index["status"]) == ["complete"] and list(index["seed"]) == [5]
    # The CLI with the same keys gives the same run id and the same loss.
    zl("train", "ablations/smoke.ini", "--output.dir", tmpdir_zl, "--train.steps", "30", "--train.eval_every", "30",
       "--decode.repeats", "1", "--seed", "5", "--output.verbosity", "0")
    cli = zerolayer.load_index(os.path.join(tmpdir_zl, "results.h5"))
    assert list(cli["run_id"]) == list(index["run_id"])
    np.testing.assert_allclose(cli["val_loss"], index["val_loss"], rtol=1e-6)


def test_study_dry_run_and_shard(tmp_path):
    _native_or_skip()
    out = str(tmp_path)
    res = zerolayer.run_study("ablations/smoke.ini", {"output.dir": out}, dry_run=True)
    assert res["exit_code"] == 0 and res["results"] is None
    assert not os.path.exists(os.path.join(out, "results.h5"))


def test_bad_overrides_raise_value_error_naming_the_key():
    _native_or_skip()
    with pytest.raises(ValueError, match="train.stpes"):
        zerolayer.run("ablations/smoke.ini", {"train.stpes": 3})
    with pytest.raises(ValueError, match="model.heads"):
        zerolayer.run("ablations/smoke.ini", {"model.heads": 3})
    with pytest.raises(ValueError, match="shard"):
        zerolayer.run_study("ablations/smoke.ini", {}, shard="2/2", dry_run=True)
    with pytest.raises(ValueError, match="one value per key"):
        zerolayer.run_study("ablations/smoke.ini", {"seed": [1, 2]}, dry_run=True)
    assert "train.steps" in zerolayer.config_keys()


def test_generator_is_deterministic_and_agrees_with_the_cli(tiny_run, zl):
    _, ckpt = tiny_run
    g = zerolayer.Generator(ckpt)
    assert g.variant == "baseline" and g.context == 64 and "[model]" in g.config
    a = g.generate("This Agreement", max_new_tokens=12, seed=7)
    assert a == g.generate("This Agreement", max_new_tokens=12, seed=7)
    cli = zl("generate", ckpt, "--prompt", "This Agreement", "--max-new-tokens", "12", "--seed", "7").stdout
    assert cli.rstrip("\n") == "This Agreement" + a
    ids = g.generate_ids(g.tokenizer.encode("This Agreement"), max_new_tokens=12, seed=7)
    assert ids.dtype == np.int32 and 0 < len(ids) <= 12
    assert g.tokenizer.decode(ids).decode("utf-8", "replace") == a
    logits = g.logits(g.tokenizer.encode("This Agreement"))
    assert logits.dtype == np.float32 and logits.shape == (len(g.tokenizer.encode("This Agreement")), 512)
    with pytest.raises(ValueError):
        g.generate("x", top_p=0)
    with pytest.raises(RuntimeError, match="nope"):
        zerolayer.Generator(os.path.join(ckpt, "nope"))


def test_tokenizers_round_trip_numpy(tiny_run):
    _, ckpt = tiny_run
    sp = zerolayer.Tokenizer.from_checkpoint(ckpt)
    assert sp.kind == "sentencepiece" and sp.vocab_size == 512
    text = "The Lessor shall pay $1,200 within 30 days.\n  Ünïcode"
    ids = sp.encode(text)
    assert ids.dtype == np.int32 and ids.ndim == 1 and len(ids) < len(text.encode())
    assert sp.decode(ids) == text.encode()
    assert sp.decode(ids.astype(np.int64).tolist()) == text.encode()  # lists work too
    by = zerolayer.Tokenizer.byte()
    assert list(by.encode("ab")) == [97, 98] and by.eos_id == 256
    with pytest.raises(ValueError):
        sp.decode(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(Exception):
        sp.decode([10**6])


def test_claims_from_python(tiny_run):
    results, _ = tiny_run
    rows = zerolayer.claims(results, write=True)
    assert {r["id"] for r in rows} >= {"S000-throughput", "S002-equiv", "S002-context"}
    # A baseline-only file: every claim names the runs it lacks.
    for r in rows:
        assert r["verdict"] in ("missing", "untestable"), r
    assert any("no complete runs with variant=oet" in r["note"] for r in rows)
    assert len(zerolayer.load_claims(results)) == len(rows)
    by_id = {r["id"]: r for r in rows}
    assert by_id["S000-kv"]["by_construction"] and by_id["S002-throughput"]["by_construction"] == ""
    assert all(r["operating_point"] == "" for r in rows)  # no run of this file has a calibrated target


@pytest.mark.parametrize("torch_first", [False, True])
def test_import_with_and_without_python_torch(tiny_run, torch_first):
    """LibTorch in the module and Python's torch share one library (Debian's);
    SentencePiece's protobuf stays inside its RTLD_DEEPBIND module either way."""
    _, ckpt = tiny_run
    code = (("import torch\n" if torch_first else "")
            + "import zerolayer\n"
            + f"g = zerolayer.Generator({ckpt!r})\n"
            + "t = g.tokenizer\n"
            + "assert t.decode(t.encode('Lessor and Lessee')) == b'Lessor and Lessee'\n"
            + "print(g.generate('The', max_new_tokens=4, seed=1))\n"
            + ("" if torch_first else "import torch\n")
            + "print('torch', torch.__version__, float(torch.ones(2).sum()))\n")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert "torch 1.13" in proc.stdout or "torch " in proc.stdout
