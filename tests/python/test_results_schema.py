"""The results file schema (docs/results_schema.md), read the way
users read it: /usr/bin/python3 with h5py and pandas.

The tests on a real file read the smoke study's results (or the file named by
ZL_SCHEMA_SAMPLE, a shard or merged results.h5 written by zerolayer). The
checker itself is also tested on small files written here with h5py.
"""
import os
import pathlib
import sys

import h5py
import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
from zerolayer_results import (  # noqa: E402
    INDEX_COLUMNS, ROOT_ATTRS, SchemaError, check_results_file, load_curve, load_index)


@pytest.fixture
def sample(request):
    path = os.environ.get("ZL_SCHEMA_SAMPLE")
    return path if path else request.getfixturevalue("smoke_results")


def _first_complete_run(path):
    index = load_index(path)
    complete = index[index["status"] == "complete"]["run_id"]
    assert len(complete) >= 1, f"{path} holds no complete run to check curves on"
    return complete.iloc[0]


def test_sample_follows_schema(sample):
    index = check_results_file(sample)
    assert len(index) >= 1


def test_sample_root_attributes(sample):
    with h5py.File(sample, "r") as f:
        for name in ROOT_ATTRS:
            assert name in f.attrs, name
        assert f.attrs["schema_version"] == 1


def test_sample_index_is_one_dataframe(sample):
    with h5py.File(sample, "r") as f:
        frame = pd.DataFrame(f["index"][:])
    for column in INDEX_COLUMNS:
        assert column in frame.columns, column
    assert frame["seed"].dtype == np.int64
    assert list(load_index(sample)["run_id"]) == sorted(frame["run_id"].str.decode("utf-8"))


def test_sample_curves_have_step_scales(sample):
    _first_complete_run(sample)
    index = load_index(sample)
    with h5py.File(sample, "r") as f:
        for run_id in index[index["status"] == "complete"]["run_id"]:
            train = f["runs"][run_id]["train"]
            for name in ("step", "loss", "val_loss"):
                assert name in train, f"runs/{run_id}/train/{name}"
            assert train["loss"].dims[0][0].name == train["step"].name
            assert len(train["val_loss"].dims[0]) == 1
            assert train["loss"].maxshape == (None,)
            assert isinstance(f["runs"][run_id].attrs["config"], str)
    loss = load_curve(sample, _first_complete_run(sample), "train/loss")
    assert loss.index.name == "step" and len(loss) > 0


def test_sample_opens_in_xarray(sample):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    run_id = _first_complete_run(sample)
    with xr.open_dataset(sample, group=f"runs/{run_id}/train", engine="h5netcdf") as ds:
        assert ds["loss"].dims == ("step",)
        assert len(ds["val_loss"].dims) == 1


# ---- the checker on hand-made files -----------------------------------------------

def _write_minimal(path, run_id="r1"):
    """A one-run file in the schema, written with h5py as zerolayer writes it."""
    with h5py.File(path, "w") as f:
        for name in ROOT_ATTRS:
            f.attrs[name] = 0 if name in ("git_dirty", "threads") else ""
        f.attrs["schema_version"] = np.int64(1)
        values = {"run_id": run_id.encode(), "train_id": b"t", "variant": b"baseline", "seed": 1,
                  "status": b"complete"}
        row = tuple(values.get(n, b"") for n in INDEX_COLUMNS) + (2.5,)
        dtype = [(n, "<i8" if n == "seed" else "S8") for n in INDEX_COLUMNS] + [("val_loss", "<f8")]
        f["index"] = np.array([row], dtype=dtype)
        run = f.create_group(f"runs/{run_id}")
        for name in ("config", "status", "error"):
            run.attrs[name] = "complete" if name == "status" else ""
        for curve, axis, steps in (("loss", "step", [0, 1, 2]), ("val_loss", "val_step", [0, 2])):
            scale = run.create_dataset(f"train/{axis}", data=np.array(steps, dtype=np.int64), maxshape=(None,))
            scale.make_scale(axis)
            values = run.create_dataset(f"train/{curve}", data=np.ones(len(steps)), maxshape=(None,))
            values.dims[0].attach_scale(scale)


def test_checker_accepts_a_minimal_file(tmp_path):
    path = tmp_path / "ok.h5"
    _write_minimal(path)
    index = check_results_file(path)
    assert list(index["run_id"]) == ["r1"]
    assert list(load_curve(path, "r1", "train/val_loss").index) == [0, 2]


def test_checker_names_missing_schema_version(tmp_path):
    path = tmp_path / "foreign.h5"
    _write_minimal(path)
    with h5py.File(path, "a") as f:
        del f.attrs["schema_version"]
    with pytest.raises(SchemaError, match="schema_version"):
        check_results_file(path)


def test_checker_names_a_curve_without_steps(tmp_path):
    path = tmp_path / "noscale.h5"
    _write_minimal(path)
    with h5py.File(path, "a") as f:
        f["runs/r1/train/val_loss"].dims[0].detach_scale(f["runs/r1/train/val_step"])
    with pytest.raises(SchemaError, match="val_loss has 0 step scales"):
        check_results_file(path)


def test_checker_names_missing_curves_and_runs(tmp_path):
    path = tmp_path / "nocurve.h5"
    _write_minimal(path)
    with h5py.File(path, "a") as f:
        del f["runs/r1/train/val_loss"]
        f.create_group("runs/orphan")
    with pytest.raises(SchemaError) as error:
        check_results_file(path)
    assert "train/val_loss is missing" in str(error.value)
    assert "/runs/orphan has no row in /index" in str(error.value)


def test_checker_rejects_garbage(tmp_path):
    path = tmp_path / "noise.h5"
    path.write_bytes(os.urandom(1024))
    with pytest.raises(SchemaError, match="noise.h5"):
        check_results_file(path)
