"""Claims across model sizes (issue 15): a file of several sizes is judged
size by size, with a trend per claim; on a hand-made file the trend's slope,
intervals and direction are the known answer; on a real miniature ladder
(the smoke study at two sizes) the CLI, the Python API and the file agree."""
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from zerolayer.results import CLAIM_TREND_COLUMNS, load_claim_seeds, load_claim_trend, load_claims

INDEX_DTYPE = [("run_id", "S16"), ("train_id", "S16"), ("variant", "S16"), ("seed", "<i8"), ("status", "S16"),
               ("error", "S8"), ("started_utc", "S24"), ("finished_utc", "S24"), ("decode_tok_s", "<f8"),
               ("params", "<f8")]
SIZES = [(2, 64, 1e5), (4, 128, 1e6), (8, 256, 1e7)]


def write_ladder(path, change, sizes=SIZES):
    """sfcl and oet at each size and seed 1-3; oet's decode_tok_s is sfcl's x (1 + change(size index, seed))."""
    rows = []
    for k, (layers, dim, params) in enumerate(sizes):
        for seed in (1, 2, 3):
            for variant, tok_s in (("sfcl", 100.0), ("oet", 100.0 * (1 + change(k, seed)))):
                rows.append((f"{variant}{k}{seed}", variant, seed, tok_s, params, layers, dim))
    with h5py.File(path, "w") as f:
        f.attrs["schema_version"] = np.int64(1)
        index = np.zeros(len(rows), dtype=INDEX_DTYPE)
        for i, (rid, variant, seed, tok_s, params, layers, dim) in enumerate(rows):
            index[i] = (rid, "t", variant, seed, "complete", "", "", "", tok_s, params)
            f.create_group(f"runs/{rid}").attrs["config"] = (
                f"variant = {variant}\nseed = {seed}\n\n[model]\nlayers = {layers}\ndim = {dim}\n\n"
                "[decode]\ntop_p = 1\ntemperature = 0.8\n\n[sfcl]\nat_inference = true\n")
        f.create_dataset("index", data=index)


def test_known_trend_on_a_hand_made_ladder(zl, tmpdir_zl):
    # The relative change rises by 0.05 per 10x parameters in every seed (seed offsets of 0.01): slope 0.05
    # with zero-width intervals; 0.22 at the smallest size (below the claimed 0.27 .. 0.47), 0.32 at the
    # largest (inside, below its middle 0.37): toward.
    path = os.path.join(tmpdir_zl, "ladder.h5")
    write_ladder(path, lambda k, seed: 0.20 + 0.05 * k + 0.01 * seed)
    out = zl("claims", path).stdout
    assert "== size 2x64: 0.1M parameters, 6 runs ==" in out and "== size 8x256" in out
    assert "Trend across sizes" in out and "wrote /claims" in out and "/claims_trend" in out
    claims = load_claims(path)
    thr = claims[claims["id"] == "S000-throughput"].set_index("size")
    assert list(thr.index) == ["2x64", "4x128", "8x256"]
    np.testing.assert_allclose(thr["value"], [0.22, 0.27, 0.32], atol=1e-9)
    np.testing.assert_allclose(thr["params"], [1e5, 1e6, 1e7])
    assert thr.at["2x64", "verdict"] == "refuted" and thr.at["8x256", "verdict"] == "supported"
    seeds = load_claim_seeds(path)
    assert set(seeds[seeds["id"] == "S000-throughput"]["size"]) == {"2x64", "4x128", "8x256"}
    trend = load_claim_trend(path).set_index("id")
    assert list(trend.reset_index().columns) == list(CLAIM_TREND_COLUMNS)
    row = trend.loc["S000-throughput"]
    np.testing.assert_allclose([row["slope"], row["slope_lo"], row["slope_hi"], row["slope_t_lo"], row["slope_t_hi"]],
                               [0.05] * 5, atol=1e-9)
    assert row["direction"] == "toward" and row["n_sizes"] == 3 and row["seeds"] == 3
    assert row["sizes"] == "2x64,4x128,8x256"
    np.testing.assert_allclose([row["value_smallest"], row["value_largest"]], [0.22, 0.32], atol=1e-9)
    kv = trend.loc["S000-kv"]  # oet keeps sfcl's cache at every size (kv_bytes_per_token absent: no value)
    assert kv["n_sizes"] == 0 and "two sizes" in kv["note"]
    # Falling past the region instead: away.
    away = os.path.join(tmpdir_zl, "away.h5")
    write_ladder(away, lambda k, seed: 0.60 + 0.05 * k + 0.01 * seed)
    zl("claims", away)
    assert load_claim_trend(away).set_index("id").at["S000-throughput", "direction"] == "away"
    # One size: the plain table, no trend.
    single = os.path.join(tmpdir_zl, "single.h5")
    write_ladder(single, lambda k, seed: 0.37, sizes=SIZES[:1])
    out = zl("claims", single).stdout
    assert "Trend across sizes" not in out and "== size" not in out
    assert len(load_claim_trend(single)) == 0
    assert set(load_claims(single)["size"]) == {"2x64"}


@pytest.mark.slow  # ladder_results takes a minute to build
def test_a_real_miniature_ladder_agrees_across_cli_python_and_file(ladder_results):
    zl_native = pytest.importorskip("zerolayer._native")
    claims = load_claims(ladder_results)
    share = claims[claims["id"] == "S000-share"].sort_values("params")
    assert list(share["size"]) == ["1x16", "2x32"]
    assert share["params"].iloc[0] < share["params"].iloc[1] and (share["seeds"] == 2).all()
    trend = load_claim_trend(ladder_results).set_index("id")
    x = np.log10(share["params"].to_numpy(float))
    np.testing.assert_allclose(trend.at["S000-share", "slope"],
                               np.diff(share["value"].to_numpy(float))[0] / np.diff(x)[0], rtol=1e-9)
    assert trend.at["S000-share", "direction"] in ("toward", "away", "flat")
    assert trend.at["S000-kv", "slope"] == 0 and trend.at["S000-kv", "direction"] == "flat"
    api = {t["id"]: t for t in zl_native.claim_trends(ladder_results)}
    assert api["S000-share"]["sizes"] == ["1x16", "2x32"]
    np.testing.assert_allclose(api["S000-share"]["slope"], trend.at["S000-share", "slope"], rtol=1e-12)
    np.testing.assert_allclose([api["S000-share"]["slope_lo"], api["S000-share"]["slope_hi"]],
                               [trend.at["S000-share", "slope_lo"], trend.at["S000-share", "slope_hi"]], rtol=1e-12)
    rows = zl_native.claims(ladder_results, write=False)
    assert {(r["id"], r["size"]) for r in rows if r["id"] == "S000-share"} == {("S000-share", "1x16"),
                                                                              ("S000-share", "2x32")}


@pytest.mark.slow
def test_the_readme_tables_script(ladder_results, tmpdir_zl):
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "python", "scale_table.py")
    proc = subprocess.run([sys.executable, script, ladder_results], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("| claim | 1x16 (") and "| 2x32 (" in lines[0] and lines[0].endswith("| trend |")
    share = next(line for line in lines if line.startswith("| S000-share |"))
    trend = load_claim_trend(ladder_results).set_index("id")
    assert share.endswith(f"| {trend.at['S000-share', 'direction']} |") and f"{trend.at['S000-share', 'slope']:+.3g}" in share
    single = os.path.join(tmpdir_zl, "single.h5")
    write_ladder(single, lambda k, seed: 0.37, sizes=SIZES[:1])
    proc = subprocess.run([sys.executable, script, single], capture_output=True, text=True)
    assert proc.returncode != 0 and "not a file of several model sizes" in proc.stderr
