"""`zerolayer report` (issue 31): a results file as one self-contained HTML page (or Markdown with its figures beside
it), built from the file alone. On the smoke study's file (judged by `zerolayer claims` first) and on hand-made files
holding every table or only some; a truncated or foreign file is a clear error naming it; the page loads in headless
Chromium from disk with no console error and no network request."""
import base64
import io
import json
import os
import re
import shutil
import subprocess

import h5py
import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd
import pytest


from zerolayer import plots, report

SECTIONS = ("provenance", "claims", "sensitivity", "pareto", "ladder", "serving", "training")
IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


# --- a hand-made results file (docs/results_schema.md), with any subset of its tables ----------------------------

def compound(frame):
    """A DataFrame as the numpy structured array the C++ writer stores: fixed-length UTF-8 strings, int64, float64."""
    fields, columns = [], []
    for name in frame.columns:
        col = frame[name]
        if col.dtype == object:
            data = col.astype(str).str.encode("utf-8")
            fields.append((name, f"S{max(1, data.str.len().max())}"))
            columns.append(data.to_numpy())
        elif np.issubdtype(col.dtype, np.integer):
            fields.append((name, "<i8"))
            columns.append(col.to_numpy(np.int64))
        else:
            fields.append((name, "<f8"))
            columns.append(col.to_numpy(np.float64))
    out = np.empty(len(frame), dtype=fields)
    for (name, _), data in zip(fields, columns):
        out[name] = data
    return out


def curve(group, name, steps, values):
    """group/name on its own dimension scale group/name_step (or group/step when name is "loss")."""
    axis = "step" if name == "loss" else f"{name}_step"
    group[axis] = np.asarray(steps, np.int64)
    group[axis].make_scale(axis)
    group[name] = np.asarray(values, np.float64)
    group[name].dims[0].attach_scale(group[axis])


CLAIM_ROWS = [  # id, kind, region_lo, region_hi, verdict, holm, by_construction, value
    ("C-two", "claim", 0.25, 0.45, "supported", "supported", "", 0.35),
    ("C-two@h2o", "known", 0.25, 0.45, "refuted", "", "", 0.05),
    ("C-two@H100-SXM", "projected", 0.25, 0.45, "inconclusive", "", "", 0.4),
    ("C-one", "claim", -np.inf, 0.05, "refuted", "inconclusive", "", 0.3),
    ("C-built", "claim", -0.5, 0.5, "refuted", "by construction", "its width is a study choice", 12.0),
    ("C-missing", "claim", 0.1, 0.2, "missing", "missing", "", np.nan),
]
SIZES = (("1x16", 12928.0), ("2x32", 45472.0))


def claims_frames(ladder):
    rows, seeds = [], []
    for k, (size, params) in enumerate(SIZES if ladder else SIZES[:1]):
        for cid, kind, lo, hi, verdict, holm, built, value in CLAIM_ROWS:
            value = value + 0.02 * k if np.isfinite(value) else value
            per_seed = [value - 0.01, value, value + 0.01] if np.isfinite(value) else []
            of_claim = cid.split("@")[0] if "@" in cid else ""
            rows.append(dict(
                id=cid, source="seed 000 §2.1", claim=f"the claim {cid}", metric="decode_tok_s",
                comparison="relative", treatment="variant=sfvl", control="variant=baseline", claimed=f"{lo} .. {hi}",
                region_lo=lo, region_hi=hi, value=value, ci_lo=value - 0.02, ci_hi=value + 0.02,
                seeds=len(per_seed), verdict=verdict, note="no complete runs" if verdict == "missing" else "",
                method="t" if per_seed else "", t_lo=value - 0.02, t_hi=value + 0.02, boot_lo=value - 0.01,
                boot_hi=value + 0.01, bca_lo=np.nan, bca_hi=np.nan, p_support=0.01, p_refute=0.9, verdict_holm=holm,
                seeds_needed=0, known_method="h2o" if kind == "known" else "",
                projection="H100-SXM" if kind == "projected" else "", of_claim=of_claim, by_construction=built,
                operating_point="", size=size, params=params,
                # C-one's runs came from two commits; C-two states a competence floor its control cleared.
                requires="violation_rate <= 0.5" if cid == "C-two" else "",
                competence=0.3 if cid == "C-two" else np.nan, commits=np.int64(2 if cid == "C-one" else 1),
                commit_list="aaaaaaa1,bbbbbbb2" if cid == "C-one" else "aaaaaaa1"))
            seeds += [dict(id=cid, seed=s + 1, value=v, size=size, params=params) for s, v in enumerate(per_seed)]
    return pd.DataFrame(rows), pd.DataFrame(seeds)


def make_results(path, claims=True, ladder=True, sensitivity=True, serving=True, timing=True):
    """A results file with the tables asked for: /index and /runs always (each run with its training curves)."""
    runs = [(f"run{v}{s}", f"train{v}{s}", v, s) for v in ("baseline", "sfvl") for s in (1, 2, 3)]
    index = pd.DataFrame({
        "run_id": [r[0] for r in runs], "train_id": [r[1] for r in runs], "variant": [r[2] for r in runs],
        "setting": "", "seed": np.array([r[3] for r in runs], np.int64), "status": "complete", "error": "",
        "started_utc": "2026-12-06T01:00:00Z", "finished_utc": "2026-12-06T01:02:30Z",
        "val_loss": [2.0 + 0.1 * i for i in range(len(runs))],
        "violation_rate": [0.2, 0.25, 0.22, 0.1, 0.12, 0.11]})
    if timing:
        index["decode_tok_s"] = [1000.0, 1010, 990, 800, 820, 790]
        index["kv_bytes_per_token"] = [512.0] * 3 + [256.0] * 3
    with h5py.File(path, "w") as f:
        f.attrs.update({"schema_version": np.int64(1), "git_commit": "0123456789abcdef", "git_dirty": np.int64(0),
                        "command_line": "build/zerolayer ablate ablations/handmade.ini", "created_utc":
                        "2026-12-06T01:03:00Z", "torch_version": "1.13.0", "hdf5_version": "1.10.8",
                        "cuda_version": "", "cpu_model": "test CPU", "gpu_model": "", "host": "testhost",
                        "threads": np.int64(2), "zerolayer_version": "0.1.0"})
        f["index"] = compound(index)
        for rid, _, variant, seed in runs:
            g = f.create_group(f"runs/{rid}")
            g.attrs.update({"config": f"variant = {variant}\nseed = {seed}\n\n[model]\nlayers = 1\n",
                            "status": "complete", "error": ""})
            t = g.create_group("train")
            curve(t, "loss", range(0, 100, 5), 5.0 - np.log1p(np.arange(20)) + 0.01 * seed)
            curve(t, "val_loss", [0, 50, 99], [5.0, 3.5, 3.0])
            if serving:
                loads = pd.DataFrame([dict(side=side, load=load, rate=10 * load, repeat=np.int64(rep),
                                           request_throughput=10 * load * (1.05 if side == "simulated" else 1),
                                           median_ttft_ms=20 + 30 * load + rep, p90_ttft_ms=40 + 60 * load,
                                           median_tpot_ms=2.0 + load)
                                      for side in ("measured", "simulated") for load in (0.25, 0.5, 0.9)
                                      for rep in ((0, 1) if side == "measured" else (0,))])
                g["serve/loads"] = compound(loads)
                projected = pd.DataFrame([dict(accelerator="H100-SXM", shape="llama2-7b", label="projected",
                                               load=load, rate=50 * load,
                                               capacity_rps=200.0 / (1 + (variant == "sfvl")),
                                               median_ttft_ms=15 + 10 * load,
                                               **(dict(kv_peak_gb=3.0, memory_gb=17.0, power_w=500.0,
                                                       max_rate_slo=120.0) if ref
                                                  else dict(kv_peak_gb=np.nan, memory_gb=np.nan, power_w=np.nan,
                                                            max_rate_slo=np.nan)))
                                          for load, ref in ((0.2, True), (0.5, False))])
                g["serve/projected"] = compound(projected)
        if claims:
            table, seeds = claims_frames(ladder)
            f["claims"] = compound(table)
            f["claims_seeds"] = compound(seeds)
            if ladder:
                trend = pd.DataFrame([dict(id=cid, sizes="1x16,2x32", n_sizes=np.int64(2), seeds=np.int64(3),
                                           slope=0.04, slope_lo=0.01, slope_hi=0.07, slope_t_lo=-0.1, slope_t_hi=0.2,
                                           params_smallest=SIZES[0][1], params_largest=SIZES[1][1],
                                           value_smallest=0.35, value_largest=0.37, region_lo=0.25, region_hi=0.45,
                                           direction="toward", note="") for cid in ("C-two", "C-one")])
                f["claims_trend"] = compound(trend)
        if sensitivity:
            sens = pd.DataFrame([dict(id="C-two", key="calibrate.sfvl.target", setting=s, reached=s + 0.01,
                                      value=0.3 + s, ci_lo=0.25 + s, ci_hi=0.35 + s, seeds=np.int64(3),
                                      verdict="supported" if s < 0.2 else "inconclusive", claimed="0.35 +- 0.10",
                                      region_lo=0.25, region_hi=0.45, method="t", note="") for s in (0.1, 0.3)])
            f["claims_sensitivity"] = compound(sens)
    return path


# --- checks on a written report -----------------------------------------------------------------------------------

def sections_of(page):
    """{section anchor: True when present, False when left out}."""
    out = {}
    for anchor, body in re.findall(r'<section id="([a-z]+)">(.*?)</section>', page, re.S):
        out[anchor] = 'class="left-out"' not in body
    return out


def check_images(page):
    """Every embedded image is a PNG that decodes; returns how many."""
    import matplotlib.image
    images = IMG.findall(page)
    for data in images:
        png = base64.b64decode(data)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
        assert pixels.ndim == 3 and pixels.shape[0] > 50 and pixels.shape[1] > 50
    assert len(images) == page.count("<img"), "an image that is not an embedded PNG"
    return len(images)


def external_references(page):
    """src, href and url() that would leave the file (anything but data: URIs and #anchors)."""
    refs = re.findall(r'(?:src|href)\s*=\s*["\']?([^"\'\s>]+)', page) + re.findall(r"url\(([^)]*)\)", page)
    return [r for r in refs if not r.startswith(("data:", "#"))]


def write(path, fmt=None, **kw):
    out = os.path.join(os.path.dirname(path), "report." + (fmt or "html"))
    assert report.main([path, "-o", out] + (["--format", fmt] if fmt else [])) == 0
    return out


# --- tests --------------------------------------------------------------------------------------------------------

def test_report_of_a_file_with_every_table(tmp_path):
    path = make_results(str(tmp_path / "results.h5"))
    page = open(write(path), encoding="utf-8").read()
    assert sections_of(page) == {s: True for s in SECTIONS}
    for cid, *_ in CLAIM_ROWS:
        assert cid in page
    assert check_images(page) >= 8  # two forests, sensitivity, 2 Pareto, ladder, serving x3, projected, curves
    assert not external_references(page)
    assert "<script" not in page
    assert "<h3>Size 1x16 (0.0129M parameters)</h3>" in page and "<h3>Size 2x32" in page
    assert "6 complete, 0 failed" in page and "ablations/handmade.ini" in page
    assert "0123456789abcdef" in page and "testhost" in page
    assert "2 min 30 s" in page  # the runs' time span
    assert "2 (mixed: aaaaaaa1,bbbbbbb2)" in page  # a row mixing two commits is flagged
    assert "violation_rate &lt;= 0.5 (reached 0.3)" in page  # the floor and what the control reached


def test_report_of_a_file_with_some_tables(tmp_path):
    path = make_results(str(tmp_path / "results.h5"), ladder=False, sensitivity=False, serving=False, timing=False)
    page = open(write(path), encoding="utf-8").read()
    sections = sections_of(page)
    assert sections == {"provenance": True, "claims": True, "training": True, "sensitivity": False,
                        "pareto": False, "ladder": False, "serving": False}
    assert page.count('class="left-out"') == 4
    assert "no /claims_sensitivity table" in page and "no /claims_trend table" in page
    assert "decode_tok_s or kv_bytes_per_token" in page and "was served" in page
    for cid, *_ in CLAIM_ROWS:
        assert cid in page
    check_images(page)

    bare = make_results(str(tmp_path / "bare.h5"), claims=False, sensitivity=False, serving=False, timing=False)
    page = open(write(bare), encoding="utf-8").read()
    assert sections_of(page)["claims"] is False and "zerolayer claims" in page


def test_forest_plot_orders_rows_and_draws_every_one(tmp_path):
    table, seeds = claims_frames(ladder=False)
    rows = plots.claim_forest_rows(table)
    # each claim with the rows beside it, the rows true by construction last
    assert list(rows["id"]) == ["C-two", "C-two@h2o", "C-two@H100-SXM", "C-one", "C-missing", "C-built"]
    assert list(rows["kind"][:3]) == ["claim", "known", "projected"]
    assert list(rows["group"]) == ["finding"] * 5 + ["by construction"]
    fig = plots.claim_forest_plot(table, seeds)
    ax = fig.axes[0]
    assert sum(1 for line in ax.lines if line.get_gid() == "mean") == 5  # C-missing has no value
    assert sum(1 for line in ax.lines if line.get_gid() == "seeds") == 5
    texts = [t.get_text() for t in ax.texts]
    assert "supported" in texts and "by construction" in texts and "no value (missing)" in texts
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_markdown_writes_its_figures_beside_it(tmp_path):
    path = make_results(str(tmp_path / "results.h5"))
    out = write(path, "md")
    text = open(out, encoding="utf-8").read()
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)
    assert len(links) >= 8
    for link in links:
        target = os.path.join(os.path.dirname(out), link)
        assert os.path.isfile(target) and open(target, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert link.startswith("report_files/")
    assert "| id |" in text and "C-two@h2o" in text and "## Claims" in text
    assert "zerolayer report" in text  # the command that made it


def test_a_truncated_or_foreign_file_is_a_clear_error(tmp_path, capsys):
    path = make_results(str(tmp_path / "results.h5"))
    data = open(path, "rb").read()
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes(data[: len(data) // 2])
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
    text = tmp_path / "notes.h5"
    text.write_text("not HDF5\n")
    for bad, why in ((truncated, "truncated"), (foreign, "foreign HDF5 file"), (text, "cannot be read as an HDF5"),
                     (tmp_path / "absent.h5", "no such file")):
        assert report.main([str(bad), "-o", str(tmp_path / "r.html")]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"zerolayer report: {bad}: ") and why in err, err
        assert "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_cli_help_and_errors(zl, tmp_path):
    out = zl("report", "--help").stdout
    assert "zerolayer report RESULTS.h5 [options]" in out and "--format" in out and "-o [ --output ]" in out
    assert "report RESULTS" in zl("--help").stdout
    assert zl("report", check=False).returncode == 2
    proc = zl("report", "x.h5", "--format", "pdf", check=False)
    assert proc.returncode == 2 and "--format: must be html or md" in proc.stderr
    proc = zl("report", str(tmp_path / "absent.h5"), check=False)
    assert proc.returncode == 1 and f"{tmp_path / 'absent.h5'}: no such file" in proc.stderr
    proc = zl("report", str(tmp_path / "absent.h5"), check=False, env={**os.environ, "ZL_PYTHON": "/nonexistent/py"})
    assert proc.returncode == 1 and "/nonexistent/py not found" in proc.stderr


def test_report_of_the_smoke_study(smoke_results, zl, tmpdir_zl):
    """The smoke study judged by `zerolayer claims` (on a copy): the report holds every claim id, every image
    decodes, nothing leaves the file, and the results file is read, never written."""
    path = os.path.join(tmpdir_zl, "results.h5")
    shutil.copy(smoke_results, path)
    zl("claims", path)
    out = os.path.join(tmpdir_zl, "smoke.html")
    with open(path, "rb") as f:
        results = f.read()
    proc = zl("report", path, "-o", out)
    assert f"wrote {out}" in proc.stdout
    with open(path, "rb") as f:
        assert f.read() == results, "the report changed the results file"
    page = open(out, encoding="utf-8").read()
    with h5py.File(path, "r") as f:
        ids = {i.decode() for i in f["claims"]["id"]}
    assert ids and all(i in page for i in ids), sorted(i for i in ids if i not in page)
    assert check_images(page) >= 3
    assert not external_references(page)
    sections = sections_of(page)
    assert sections["provenance"] and sections["claims"] and sections["training"]

    md = os.path.join(tmpdir_zl, "docs", "smoke.md")
    zl("report", path, "-o", md, "--format", "md")
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", open(md, encoding="utf-8").read())
    assert links and all(os.path.isfile(os.path.join(os.path.dirname(md), link)) for link in links)


CHROMIUM = shutil.which("chromium")
# Headless Chromium without its own traffic to Google's services (the page's requests are what is checked).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-pings"]


def page_requests(net_log):
    """The network requests a page made, from Chromium's --log-net-log: URL_REQUEST_START_JOB events with a page
    as initiator (the browser's own have none) for anything but file: and data: URLs."""
    with open(net_log) as f:
        text = f.read()
    if not text.rstrip().endswith("}"):  # a log cut short at exit: close its event list
        text = text.rstrip().rstrip(",") + "]}"
    log = json.loads(text)
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in log["events"] if e["type"] == start and "url" in e.get("params", {})
            and e["params"].get("initiator") != "not an origin"
            and not e["params"]["url"].startswith(("file:", "data:"))]


def chromium(args, tmp_path, timeout=120):
    profile = tmp_path / "chromium-profile"
    return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup installs it)")
def test_report_opens_in_headless_chromium(tmp_path):
    import matplotlib.image
    path = make_results(str(tmp_path / "results.h5"))
    page = "file://" + os.path.abspath(write(path))

    # The detector catches a page that does reach out.
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!DOCTYPE html><html><body><img src="http://zerolayer.invalid/x.png"></body></html>')
    proc = chromium(["--enable-logging=stderr", "--v=0", f"--log-net-log={tmp_path / 'leaky.json'}", "--dump-dom",
                     f"file://{leaky}"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert page_requests(tmp_path / "leaky.json") == ["http://zerolayer.invalid/x.png"]

    proc = chromium(["--enable-logging=stderr", "--v=0", f"--log-net-log={tmp_path / 'net.json'}", "--dump-dom", page],
                    tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<h1>zerolayer report: ablations/handmade.ini</h1>" in proc.stdout
    assert proc.stdout.count("<img") >= 8
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
    assert page_requests(tmp_path / "net.json") == []

    shot = tmp_path / "shot.png"
    proc = chromium([f"--screenshot={shot}", "--window-size=1200,3000", "--hide-scrollbars", page], tmp_path)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    pixels = matplotlib.image.imread(str(shot))[..., :3]
    assert pixels.shape[:2] == (3000, 1200)
    assert pixels.std() > 0.05  # not blank
    assert (pixels.min(axis=2) < 0.9).mean() > 0.02  # ink on at least 2% of the page
