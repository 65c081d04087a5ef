"""The notebooks run end to end (nbconvert) on the smoke study's output, with
its claims table written, and on a file that has none (claims computed); the
serving notebook on a served smoke study's output (the smoke study is not served)."""
import json
import os
import shutil
import subprocess
import sys

import h5py
import pytest

from conftest import PYTHON_BUILD, ROOT, zerolayer_bin

NOTEBOOKS = ["quality_vs_throughput", "resampling", "fused_monitoring", "claims"]


@pytest.fixture(scope="module")
def smoke_with_claims(smoke_results, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("nb") / "results.h5")
    shutil.copy(smoke_results, path)
    subprocess.run([zerolayer_bin(), "claims", path], check=True, capture_output=True, cwd=ROOT)
    return path


def execute(name, results, out_dir):
    env = dict(os.environ, ZL_RESULTS=results, ZL_ROOT=ROOT, ZL_PYTHON_BUILD=PYTHON_BUILD, MPLBACKEND="Agg",
               OPENBLAS_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                           "--ExecutePreprocessor.timeout=300", "--output-dir", str(out_dir),
                           os.path.join(ROOT, "notebooks", f"{name}.ipynb")],
                          capture_output=True, text=True, cwd=os.path.join(ROOT, "notebooks"), env=env, timeout=600)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_on_smoke_output(name, smoke_with_claims, tmp_path):
    proc = execute(name, smoke_with_claims, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / f"{name}.ipynb").exists()


def test_claims_notebook_computes_the_table_when_the_file_has_none(smoke_results, tmp_path):
    path = str(tmp_path / "plain.h5")
    shutil.copy(smoke_results, path)
    proc = execute("claims", path, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "claims.ipynb") as f:
        text = f.read()
    assert "computed now" in text and "S000-throughput" in text


def outputs_text(notebook):
    """The text of every output of an executed notebook (streams, plain text and HTML), and its figures' count;
    the sources left out, so that a word found was printed, not written."""
    with open(notebook) as f:
        cells = json.load(f)["cells"]
    texts, figures = [], 0
    for output in (o for c in cells if c["cell_type"] == "code" for o in c["outputs"]):
        assert output["output_type"] != "error", output.get("evalue")
        data = output.get("data", {})
        figures += "image/png" in data
        for part in (output.get("text", ""), data.get("text/plain", ""), data.get("text/html", "")):
            texts.append("".join(part) if isinstance(part, list) else part)
    return "\n".join(texts), figures


# The three below read studies that take minutes to build.
@pytest.mark.slow
def test_serving_notebook_runs_on_served_output(served_results, tmp_path):
    proc = execute("serving", served_results, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text, figures = outputs_text(tmp_path / "serving.ipynb")
    assert "projected" in text
    assert "projected capacity (req/s)" in text  # the projected table itself, not only a note that there is none
    assert figures >= 4  # latency against throughput, the simulator's error, the step fit, the projections


@pytest.mark.slow
def test_scaling_notebook_on_a_ladder_with_and_without_its_trend_table(ladder_results, tmp_path):
    proc = execute("scaling", ladder_results, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text, figures = outputs_text(tmp_path / "scaling.ipynb")
    assert "2 size(s): 1x16" in text and "S000-share" in text and "t over seeds 95%" in text
    assert figures == 1  # the small multiples of every claim with two sizes
    bare = str(tmp_path / "bare.h5")  # the ladder before `zerolayer claims`: the trend computed now
    shutil.copy(ladder_results, bare)
    with h5py.File(bare, "a") as f:
        for name in ("claims", "claims_seeds", "claims_trend"):
            del f[name]
    out_dir = tmp_path / "bare"
    proc = execute("scaling", bare, out_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text, figures = outputs_text(out_dir / "scaling.ipynb")
    assert "computed now" in text and "S000-share" in text and figures == 1


@pytest.mark.slow
def test_claims_notebook_plots_the_sensitivity_curves(sensitivity_results, tmp_path):
    proc = execute("claims", sensitivity_results, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text, figures = outputs_text(tmp_path / "claims.ipynb")
    assert "claim(s) along calibrate.sfvl.target" in text and "S002-equiv/self-judged" in text
    assert figures >= 1
