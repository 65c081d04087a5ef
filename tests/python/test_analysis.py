"""The pure-Python helpers of the zerolayer package: loaders on a real results
file, and the statistics and plots on hand-made frames with known answers."""
import matplotlib

matplotlib.use("Agg")

import h5py
import numpy as np
import pandas as pd
import pytest

from zerolayer import plots
from zerolayer.results import (CLAIM_COLUMNS, CLAIM_SEED_COLUMNS, EVENT_COLUMNS, bootstrap_ci, load_claim_seeds, load_claims,
                               load_configs, load_events, load_index, pareto_front, parse_config, settings,
                               summarize)


def test_loaders_on_the_smoke_results(smoke_results):
    index = load_index(smoke_results)
    configs = load_configs(smoke_results)
    assert set(configs.index) == set(index["run_id"])
    assert set(configs["seed"]) == {"1", "2"} and set(configs["model.dim"]) == {"32"}
    labels = settings(smoke_results)
    assert set(labels) == {"baseline"}  # only the seed varies: no setting in the label
    events = load_events(smoke_results)  # the baseline logs no events
    assert len(events) == 0 and list(events.columns) == ["run_id", "variant", "seed", *EVENT_COLUMNS]
    claims = load_claims(smoke_results)
    assert "verdict" in claims.columns


def test_parse_config():
    assert parse_config(b"variant = sfvl\nseed = 2\n[verify]\nthreshold = 0.82\n") == {
        "variant": "sfvl", "seed": "2", "verify.threshold": "0.82"}


def test_bootstrap_ci_known_answers():
    mean, lo, hi = bootstrap_ci([1.0, 2.0, 3.0, np.nan])
    assert mean == 2.0 and 1.0 <= lo < 2.0 < hi <= 3.0
    assert bootstrap_ci([5.0, 5.0, 5.0]) == (5.0, 5.0, 5.0)
    m, lo, hi = bootstrap_ci([4.0])
    assert m == 4.0 and np.isnan(lo) and np.isnan(hi)
    assert np.isnan(bootstrap_ci([])[0])


def test_summarize_groups_complete_runs_only():
    index = pd.DataFrame({"setting": ["a", "a", "a", "b", "b"], "status": ["complete"] * 4 + ["failed"],
                          "x": [1.0, 2.0, 3.0, 10.0, 99.0]})
    s = summarize(index, ["x", "absent"]).set_index("setting")
    assert s.loc["a", "n"] == 3 and s.loc["a", "x"] == 2.0 and s.loc["b", "n"] == 1 and s.loc["b", "x"] == 10.0
    assert np.isnan(s.loc["a", "absent"])


def test_pareto_front_known_answer():
    f = pd.DataFrame({"v": [0.1, 0.2, 0.1, 0.3, np.nan], "t": [10, 20, 5, 15, 30]})
    # (0.1,10) and (0.2,20) are on the front; (0.1,5) is dominated by (0.1,10); (0.3,15) by (0.2,20).
    assert list(pareto_front(f, "v", "t")) == [True, True, False, False, False]
    assert list(pareto_front(f, "v", "t", lower_quality_is_better=False)) == [False, True, False, True, False]


def test_rates_by_context_known_answer():
    # 100 events at context 0-9 with 20% resampled, 100 at 90-99 with 0%.
    ev = pd.DataFrame({"variant": "sfvl", "context_len": list(range(10)) * 10 + list(range(90, 100)) * 10,
                       "resampled": [1] * 20 + [0] * 80 + [0] * 100})
    r = plots.rates_by_context(ev, bins=10)
    assert r["events"].sum() == 200
    assert r.iloc[0]["rate"] == pytest.approx(0.2) and r.iloc[-1]["rate"] == 0
    assert r["context_mid"].is_monotonic_increasing
    assert len(plots.rates_by_context(ev.iloc[:0])) == 0


def test_plots_draw_with_missing_values():
    s = pd.DataFrame({"setting": ["a", "b", "c"], "n": [3, 3, 1], "violation_rate": [0.2, 0.1, np.nan],
                      "violation_rate_lo": [0.1, 0.05, np.nan], "violation_rate_hi": [0.3, 0.15, np.nan],
                      "decode_tok_s": [100.0, 80.0, 50.0], "decode_tok_s_lo": [90.0, 70.0, np.nan],
                      "decode_tok_s_hi": [110.0, 90.0, np.nan]})
    ax = plots.pareto_plot(s)
    assert "not measured: c" in ax.get_title()
    assert len(ax.containers) == 2  # two errorbar points
    ax = plots.rates_by_context_plot(pd.DataFrame(columns=["variant", "context_len", "resampled"]))
    assert "no decode/events" in ax.get_title()


def test_variant_styles_give_each_variant_a_colour_and_each_setting_a_marker():
    labels = ["oet decode.temperature=0.3", "oet decode.temperature=0.8", "sfvl", "h2o", "mystery a=1", "mystery a=2",
              "other"]
    styles = plots.variant_styles(labels)
    colours = {v: c for v, c, _ in styles.values()}
    assert len(set(colours.values())) == len(colours) == 5  # oet, sfvl, h2o, mystery, other: all distinct
    assert colours["sfvl"] == plots.VARIANT_COLORS["sfvl"]
    assert colours["mystery"] not in plots.VARIANT_COLORS.values()  # an unnamed variant takes a spare colour
    oet = [styles[l][2] for l in labels[:2]]
    assert len(set(oet)) == 2 and styles["mystery a=1"][2] == oet[0]  # markers count within a variant


def test_pareto_plot_keeps_the_legend_outside_and_draws_the_front_as_a_staircase():
    s = pd.DataFrame({"setting": ["a", "b", "c"], "n": [3, 3, 3], "violation_rate": [0.2, 0.1, 0.3],
                      "violation_rate_lo": [0.1, 0.05, 0.2], "violation_rate_hi": [0.3, 0.15, 0.4],
                      "kv_bytes_per_token": [100.0, 200.0, 300.0], "kv_bytes_per_token_lo": [90.0, 180.0, 280.0],
                      "kv_bytes_per_token_hi": [110.0, 220.0, 320.0]})
    ax = plots.pareto_plot(s, throughput="kv_bytes_per_token", higher_x_is_better=False)
    legend = ax.get_legend()
    assert legend.get_bbox_to_anchor().transformed(ax.transAxes.inverted()).x0 > 1  # right of the axes
    front = [line for line in ax.get_lines() if line.get_label() == "Pareto front"][0]
    assert front.get_drawstyle() == "steps-post"  # lower x is better: a point holds until the next one
    assert list(front.get_xdata()) == [100.0, 200.0]  # c (more bytes, worse quality) is dominated
    assert "n = 3 seeds" in ax.get_title()


def write_table(f, name, columns):
    """A compound table as sim/h5.cpp writes one: text as fixed-length, null-padded UTF-8 strings as wide as
    the longest value (at least 1 byte), numbers as int64 or float64."""
    fields, data = [], {}
    for col, values in columns.items():
        if isinstance(values[0], str):
            data[col] = [v.encode() for v in values]
            fields.append((col, h5py.string_dtype("utf-8", max(1, *map(len, data[col])))))
        else:
            data[col] = values
            fields.append((col, "<i8" if isinstance(values[0], (int, np.integer)) else "<f8"))
    table = np.zeros(len(next(iter(columns.values()))), dtype=fields)
    for col in columns:
        table[col] = data[col]
    f.create_dataset(name, data=table)


NAN = float("nan")
# Six claims: three two-sided with 3 seeds (inconclusive, refuted, supported; t intervals computed from the
# per-seed values, percentile ones inside their range), one two-sided from a single seed (no interval), one
# one-sided, one untestable without a value.
CLAIMS = {
    "id": ["S000-throughput", "S000-kv", "S000-lookup", "S000-share", "S002-quality", "S002-memory"],
    "source": ["seed 000 §1", "seed 000 §3.2", "seed 000 §2.2", "seed 000 §2.1", "seed 002 §4", "seed 002 §5"],
    "claim": ["throughput +37%", "KV -58%", "lookup 89 ns", "loop 11.7% of compute", "quality does not fall",
              "memory -13%"],
    "metric": ["decode_tok_s", "kv_bytes_per_token", "oet_lookup_ns", "flops_correction / flops_per_token",
               "violation_rate", "peak_rss_bytes"],
    "comparison": ["relative", "relative", "value", "value", "relative", "relative"],
    "treatment": ["variant=oet"] * 4 + ["variant=fused", "variant=fused"],
    "control": ["variant=sfcl", "variant=sfcl", "", "", "variant=sfvl", "variant=sfvl"],
    "claimed": ["0.37 ± 0.10", "-0.58 ± 0.10", "89 (within x3)", "0.117 ± 0.03", "at most 0.05", "-0.132 ± 0.05"],
    "region_lo": [0.27, -0.68, 89 / 3, 0.087, -np.inf, -0.182],
    "region_hi": [0.47, -0.48, 267.0, 0.147, 0.05, -0.082],
    "value": [0.38333333, 0.0, 228.0, 0.0175, 0.26, NAN],
    "ci_lo": [0.19360418, 0.0, 208.12689831, NAN, 0.11095174, NAN],
    "ci_hi": [0.57306249, 0.0, 247.87310169, NAN, 0.40904826, NAN],
    "seeds": [3, 3, 3, 1, 3, 0],
    "verdict": ["inconclusive", "refuted", "supported", "inconclusive", "refuted", "untestable"],
    "note": ["", "", "", "one seed", "", "peak RSS is the runtime at this scale"],
    "method": ["t", "t", "t", "t", "t", ""],
    "t_lo": [0.19360418, 0.0, 208.12689831, NAN, 0.11095174, NAN],
    "t_hi": [0.57306249, 0.0, 247.87310169, NAN, 0.40904826, NAN],
    "boot_lo": [0.31666667, 0.0, 222.66666667, NAN, 0.22, NAN],
    "boot_hi": [0.43333333, 0.0, 233.33333333, NAN, 0.30, NAN],
    "bca_lo": [NAN] * 6,
    "bca_hi": [NAN] * 6,
    "p_support": [0.31, 0.9999, 0.0004, NAN, 0.99, NAN],
    "p_refute": [0.45, 0.0001, 0.9996, NAN, 0.012, NAN],
    "verdict_holm": ["inconclusive", "refuted", "supported", "inconclusive", "inconclusive", "untestable"],
    "seeds_needed": [9, 0, 0, 0, 0, 0],
    "known_method": [""] * 6,
    "projection": [""] * 6,
    "of_claim": [""] * 6,
    "by_construction": ["", "oet keeps the cache", "", "", "", ""],
    "operating_point": [""] * 6,
    "requires": ["", "", "", "violation_rate <= 0.5", "", ""],
    "competence": [float("nan")] * 3 + [0.3] + [float("nan")] * 2,
    "commits": [1] * 6,
    "commit_list": ["1e2cdd7"] * 6,
    "revised": ["", "", "", "", "", "2026-12-06"],
    "size": ["4x128"] * 6,
    "params": [936192.0] * 6,
}
# A known method's row beside S000-kv (registry key known.h2o): stored in /claims with the claims.
KNOWN_H2O = {"id": "S000-kv@h2o", "source": "seed 000 §3.2", "claim": "KV -58%", "metric": "kv_bytes_per_token",
             "comparison": "relative", "treatment": "variant=h2o", "control": "variant=sfcl",
             "claimed": "-0.58 ± 0.10", "region_lo": -0.68, "region_hi": -0.48, "value": -0.79, "ci_lo": -0.80,
             "ci_hi": -0.78, "seeds": 3, "verdict": "refuted", "note": "", "method": "t", "t_lo": -0.80,
             "t_hi": -0.78, "boot_lo": -0.795, "boot_hi": -0.785, "bca_lo": NAN, "bca_hi": NAN, "p_support": 0.9999,
             "p_refute": 0.0001, "verdict_holm": "", "seeds_needed": 0, "known_method": "h2o", "projection": "",
             "of_claim": "S000-kv", "by_construction": "oet keeps the cache", "operating_point": "",
             "requires": "", "competence": float("nan"), "commits": 1, "commit_list": "1e2cdd7",
             "revised": "", "size": "4x128", "params": 936192.0}
SEEDS = {"S000-throughput": [0.30, 0.40, 0.45], "S000-kv": [0.0, 0.0, 0.0], "S000-lookup": [220.0, 228.0, 236.0],
         "S000-share": [0.0175], "S002-quality": [0.20, 0.26, 0.32]}


@pytest.fixture
def claims_file(tmp_path):
    """A results file's /claims and /claims_seeds (nothing else: the loaders and plots read only these)."""
    path = str(tmp_path / "claims.h5")
    with h5py.File(path, "w") as f:
        write_table(f, "claims", {k: list(v) + [KNOWN_H2O[k]] for k, v in CLAIMS.items()})
        rows = [(cid, seed, v) for cid, values in SEEDS.items() for seed, v in enumerate(values, start=1)]
        write_table(f, "claims_seeds", {"id": [r[0] for r in rows], "seed": [r[1] for r in rows],
                                        "value": [r[2] for r in rows]})
    return path


def test_load_claim_seeds_and_the_new_claims_columns(claims_file, tmp_path):
    seeds = load_claim_seeds(claims_file)
    assert list(seeds.columns) == ["id", "seed", "value"] and len(seeds) == 13
    assert seeds["seed"].dtype == np.int64 and seeds["value"].dtype == np.float64
    thr = seeds[seeds["id"] == "S000-throughput"]  # text decoded to str
    assert list(thr["seed"]) == [1, 2, 3] and list(thr["value"]) == [0.30, 0.40, 0.45]
    claims = load_claims(claims_file).set_index("id")
    assert list(claims.reset_index().columns) == list(CLAIM_COLUMNS)
    assert claims.at["S000-throughput", "source"] == "seed 000 §1" and claims.at["S000-lookup", "method"] == "t"
    assert claims.at["S002-quality", "verdict_holm"] == "inconclusive" and claims.at["S002-memory", "method"] == ""
    assert claims.at["S000-throughput", "seeds_needed"] == 9 and np.isnan(claims.at["S000-kv", "bca_lo"])
    assert len(claims) == 6 and "S000-kv@h2o" not in claims.index  # the claims alone by default
    known = load_claims(claims_file, known_methods=True)
    assert list(known["id"]) == ["S000-kv@h2o"] and known.at[0, "of_claim"] == "S000-kv"
    older = str(tmp_path / "older.h5")  # written before the known methods: every row a claim
    with h5py.File(older, "w") as f:
        write_table(f, "claims", {k: v for k, v in CLAIMS.items() if k not in ("known_method", "of_claim")})
    assert len(load_claims(older)) == 6 and len(load_claims(older, known_methods=True)) == 0
    empty = str(tmp_path / "none.h5")  # a file before `zerolayer claims`: empty frames with every column
    h5py.File(empty, "w").close()
    assert len(load_claim_seeds(empty)) == 0 and list(load_claim_seeds(empty).columns) == list(CLAIM_SEED_COLUMNS)
    assert list(load_claims(empty).columns) == list(CLAIM_COLUMNS)


def _gid_lines(ax, gid):
    return [line for line in ax.get_lines() if line.get_gid() == gid]


def test_claim_seeds_plot_draws_both_intervals_per_seed(claims_file):
    import matplotlib.pyplot as plt
    claims, seeds = load_claims(claims_file), load_claim_seeds(claims_file)
    ax = plots.claim_seeds_plot(claims, seeds)
    # The two-sided claims with a value, in table order; the one-sided and the valueless are named instead.
    assert [t.get_text() for t in ax.get_yticklabels()] == ["S000-throughput", "S000-kv", "S000-lookup",
                                                            "S000-share"]
    title = ax.get_title(loc="left")
    assert "S002-quality" in title and "S002-memory (untestable)" in title
    t_bars, boot_bars = _gid_lines(ax, "interval:t"), _gid_lines(ax, "interval:percentile")
    assert len(t_bars) == len(boot_bars) == 3  # the single-seed row has neither
    # On the region's scale: S000-throughput's region 0.27..0.47 is [-1, 1], its t interval below the row
    # (y < 0 with the first row at 0, drawn on top), the percentile one above it; t is the verdict's: thicker.
    np.testing.assert_allclose(t_bars[0].get_xdata(), [(0.19360418 - 0.37) / 0.1, (0.57306249 - 0.37) / 0.1])
    np.testing.assert_allclose(boot_bars[0].get_xdata(), [(0.31666667 - 0.37) / 0.1, (0.43333333 - 0.37) / 0.1])
    assert t_bars[0].get_ydata()[0] < 0 < boot_bars[0].get_ydata()[0]
    assert t_bars[0].get_linewidth() > boot_bars[0].get_linewidth()
    dots = _gid_lines(ax, "seeds")
    assert sum(len(d.get_xdata()) for d in dots) == 10  # 3 + 3 + 3 + 1 seeds
    np.testing.assert_allclose(dots[0].get_xdata(), [-0.7, 0.3, 0.8])
    assert [m.get_color() for m in _gid_lines(ax, "mean")][:3] == ["tab:orange", "tab:red", "tab:green"]
    ax.figure.canvas.draw()  # the legend sits below the axes, outside them
    legend = ax.get_legend()
    assert legend.get_window_extent().y1 < ax.get_window_extent().y0
    assert {"Student-t 95%", "percentile bootstrap 95%"} <= {t.get_text() for t in legend.get_texts()}
    plt.close(ax.figure)

    fig = plots.claim_one_sided_plot(claims, seeds)
    shown = [a for a in fig.axes if a.get_visible()]
    assert len(shown) == 1 and shown[0].get_title().startswith("S002-quality: claimed at most 0.05")
    assert len(_gid_lines(shown[0], "interval:t")) == len(_gid_lines(shown[0], "interval:percentile")) == 1
    plt.close(fig)
    assert plots.claim_one_sided_plot(claims[claims["id"] != "S002-quality"], seeds) is None


def test_claim_seeds_plot_on_a_file_from_before_the_per_method_intervals(tmp_path):
    import matplotlib.pyplot as plt
    path = str(tmp_path / "old.h5")
    with h5py.File(path, "w") as f:
        write_table(f, "claims", {k: v for k, v in CLAIMS.items() if k in CLAIM_COLUMNS[:16]})
    claims, seeds = load_claims(path), load_claim_seeds(path)
    assert "method" not in claims.columns and len(seeds) == 0
    ax = plots.claim_seeds_plot(claims, seeds)
    assert len(ax.get_yticklabels()) == 4 and not _gid_lines(ax, "seeds") and not _gid_lines(ax, "interval:t")
    ci = _gid_lines(ax, "interval:ci")  # ci_lo/ci_hi alone, where the row has them
    assert len(ci) == 3
    np.testing.assert_allclose(ci[2].get_xdata(), [(208.12689831 - 148.3333333) / 118.6666667,
                                                   (247.87310169 - 148.3333333) / 118.6666667])
    plt.close(ax.figure)


def _served_loads():
    """serve/loads of two seeds of baseline (measured and simulated) and one simulated-only variant."""
    rows = []
    for seed, m_ttft, s_ttft in ((1, 10.0, 11.0), (2, 20.0, 22.0)):
        for side, ttft in (("measured", m_ttft), ("simulated", s_ttft)):
            for load, tput in ((0.5, 50.0), (1.0, 90.0)):
                rows.append(dict(variant="baseline", seed=seed, side=side, load=load, request_throughput=tput,
                                 median_ttft_ms=ttft * load, p90_ttft_ms=2 * ttft, median_tpot_ms=1.0))
    rows += [dict(variant="sfvl", seed=1, side="simulated", load=0.5, request_throughput=20.0, median_ttft_ms=5.0,
                  p90_ttft_ms=9.0, median_tpot_ms=2.0)]
    return pd.DataFrame(rows)


def test_simulator_error_is_bench_servings_mean_over_seeds_per_side():
    errors = plots.simulator_error_table(_served_loads())
    assert set(errors["variant"]) == {"baseline"}  # sfvl has no measured rows: no cells
    cell = errors[(errors["load"] == 1.0) & (errors["figure"] == "median_ttft_ms")].iloc[0]
    assert cell["measured"] == 15.0 and cell["simulated"] == 16.5 and cell["seeds"] == 2
    assert cell["error_pct"] == pytest.approx(10.0)
    assert len(errors) == 2 * len(plots.VALIDATION_FIGURES)


def test_simulator_error_reads_the_real_servers_repeats_as_its_noise():
    loads = _served_loads().assign(repeat=0)
    again = loads[loads.side == "measured"].assign(repeat=1)
    again["median_ttft_ms"] *= 1.2  # the second serving of the same requests: 20% slower to the first token
    errors = plots.simulator_error_table(pd.concat([loads, again]))
    cell = errors[(errors["load"] == 1.0) & (errors["figure"] == "median_ttft_ms")].iloc[0]
    # Measured: the mean over seeds and repeats (15 and 18); the repeats stand 1.5 either side of 16.5.
    assert cell["measured"] == pytest.approx(16.5) and cell["seeds"] == 2 and cell["repeats"] == 2
    assert cell["error_pct"] == pytest.approx(0.0)
    assert cell["repeat_spread_pct"] == pytest.approx(100 * 1.5 / 16.5)
    tput = errors[(errors["load"] == 1.0) & (errors["figure"] == "request_throughput")].iloc[0]
    assert tput["repeat_spread_pct"] == 0
    # One repeat: no spread to read.
    assert plots.simulator_error_table(loads)["repeat_spread_pct"].isna().all()


def test_simulator_error_bands_the_prediction_over_the_step_time_scales():
    loads = _served_loads()
    # serve/sensitivity: baseline's loads simulated on steps 2% shorter (TTFT 10% lower) and longer (20% higher).
    sens = pd.DataFrame([dict(variant="baseline", seed=seed, load=load, step_scale=scale, request_throughput=tput,
                              median_ttft_ms=ttft * load * factor, p90_ttft_ms=2 * ttft, median_tpot_ms=1.0)
                         for seed, ttft in ((1, 11.0), (2, 22.0)) for load, tput in ((0.5, 50.0), (1.0, 90.0))
                         for scale, factor in ((0.98, 0.9), (1.02, 1.2))])
    errors = plots.simulator_error_table(loads, sensitivity=sens)
    cell = errors[(errors["load"] == 1.0) & (errors["figure"] == "median_ttft_ms")].iloc[0]
    assert (cell["band_lo"], cell["simulated"], cell["band_hi"]) == pytest.approx((14.85, 16.5, 19.8))
    assert cell["band_lo"] <= cell["measured"] <= cell["band_hi"]  # 15.0: inside, though 10% off
    tput = errors[(errors["load"] == 0.5) & (errors["figure"] == "request_throughput")].iloc[0]
    assert tput["band_lo"] == tput["band_hi"] == 50.0
    assert plots.simulator_error_table(loads)["band_lo"].isna().all()  # a file from before serve/sensitivity
    assert errors["at_speed"].isna().all()  # a file from before the rows at each repeat's speed


def test_simulator_error_at_each_repeats_speed_is_a_diagnosis_beside_the_band():
    loads = _served_loads()
    # Fixed scales (matched -1) make the band; rows at the speed a repeat ran at (matched 0, scale 1.3) do not.
    sens = pd.DataFrame([dict(variant="baseline", seed=seed, load=1.0, step_scale=scale, matched=matched,
                              request_throughput=90.0, median_ttft_ms=ttft, p90_ttft_ms=2 * ttft, median_tpot_ms=1.0)
                         for seed in (1, 2) for scale, matched, ttft in ((0.98, -1, 16.0), (1.02, -1, 17.0),
                                                                         (1.3, 0, 15.3))])
    cell = plots.simulator_error_table(loads, sensitivity=sens)
    cell = cell[(cell["load"] == 1.0) & (cell["figure"] == "median_ttft_ms")].iloc[0]
    assert (cell["band_lo"], cell["band_hi"]) == pytest.approx((16.0, 17.0))
    assert cell["at_speed"] == pytest.approx(15.3) and cell["at_speed_error_pct"] == pytest.approx(2.0)


def test_latency_throughput_plot_draws_measured_solid_and_simulated_dashed_hollow():
    ax = plots.latency_throughput_plot(_served_loads(), "median_ttft_ms")
    lines = {line.get_label(): line for line in ax.get_lines()}
    measured, simulated = lines["baseline measured"], lines["baseline simulated"]
    assert measured.get_linestyle() == "-" and simulated.get_linestyle() == "--"
    assert simulated.get_markerfacecolor() == "white" and measured.get_markerfacecolor() != "white"
    assert measured.get_color() == simulated.get_color() == plots.VARIANT_COLORS["baseline"]
    assert list(measured.get_xdata()) == [50.0, 90.0]  # mean over seeds, in order of load
    assert ax.get_ylabel() == "TTFT p50 (ms)" and ax.get_xlabel() == "request throughput (req/s)"
    assert ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted()).x0 > 1


def test_projected_plot_reads_the_reference_rows_and_says_projected():
    base = dict(shape="llama2-7b", label="projected", seed=1, capacity_rps=2.0)
    projected = pd.DataFrame([
        dict(base, variant="baseline", accelerator="H100-SXM", load=0.3, memory_gb=np.nan, max_rate_slo=np.nan),
        dict(base, variant="baseline", accelerator="H100-SXM", load=0.5, memory_gb=30.0, max_rate_slo=3.0),
        dict(base, variant="sfvl", accelerator="H100-SXM", load=0.5, memory_gb=70.0, max_rate_slo=1.0),
        dict(base, variant="sfvl", accelerator="L4", load=0.5, memory_gb=20.0, max_rate_slo=0.0)])
    assert list(plots.projected_reference(projected)["load"]) == [0.5, 0.5, 0.5]
    assert list(plots.max_rate_at_ceiling(projected.iloc[1:])) == [True, False, False]  # 3.0 = 1.5 x capacity
    for figure in ("memory_gb", "max_rate_slo", "power_w"):  # power_w: not in this table
        ax = plots.projected_plot(projected, figure)
        assert "projected" in ax.get_title() and ax.get_ylabel().startswith("projected ")
    ax = plots.projected_plot(projected, "max_rate_slo")
    assert [t.get_text() for t in ax.texts] == ["≥"]  # baseline's, at the ceiling
    assert [t.get_text() for t in ax.get_xticklabels()] == ["H100-SXM\nllama2-7b", "L4\nllama2-7b"]


def test_serving_labels_and_the_step_fit():
    assert plots.serving_label("p99_e2el_ms") == "E2EL p99 (ms)"
    assert plots.serving_label("memory_gb", units=False) == "memory, weights + KV"
    assert plots.serving_label("unknown_thing") == "unknown_thing"
    steps = pd.DataFrame({"variant": ["a", "a", "b"], "start_ns": [0, 100, 0], "end_ns": [100, 300, 400],
                          "predicted_ns": [110, 200, 400]})
    fit = plots.step_fit_table(steps)
    assert fit.loc["a", "steps"] == 2 and fit.loc["a", "median_abs_error_pct"] == pytest.approx(5.0)
    assert fit.loc["a", "sum_bias_pct"] == pytest.approx(100 * (310 / 300 - 1))
    assert fit.loc["b", "median_abs_error_pct"] == 0
    assert len(plots.step_fit_plot(steps).axes) == 2


def test_step_speed_is_the_time_weighted_slowdown_of_each_repeat_and_its_stalls():
    # Seed 1 at load 0.8: repeat 0 ran as predicted, repeat 1 took 10% longer overall, one step a stall (2x).
    steps = pd.DataFrame({"variant": "a", "seed": 1, "load": 0.8, "repeat": [0, 0, 1, 1],
                          "start_ns": [0, 100, 0, 200], "end_ns": [100, 400, 200, 420],
                          "predicted_ns": [100, 300, 100, 300]})
    speed = plots.step_speed_table(steps).set_index("repeat")
    assert speed.loc[0, "slowdown_pct"] == pytest.approx(0.0) and speed.loc[0, "stalls"] == 0
    assert speed.loc[1, "slowdown_pct"] == pytest.approx(100 * (420 / 400 - 1))
    assert speed.loc[1, "stalls"] == 1 and speed.loc[1, "stall_ms"] == pytest.approx(100 / 1e6)
    assert list(speed["steps"]) == [2, 2]
    # A trace's load is NaN: its steps still make a row.
    trace = steps.assign(load=np.nan)
    assert len(plots.step_speed_table(trace)) == 2


def test_simulator_error_bands_a_trace_whose_load_is_nan():
    loads = _served_loads().query("load == 1.0").assign(load=np.nan)
    sens = pd.DataFrame([dict(variant="baseline", seed=seed, load=np.nan, step_scale=scale, matched=matched,
                              request_throughput=90.0, median_ttft_ms=ttft, p90_ttft_ms=2 * ttft, median_tpot_ms=1.0)
                         for seed in (1, 2) for scale, matched, ttft in ((0.98, -1, 14.0), (1.02, -1, 18.0),
                                                                         (1.0, 0, 15.0))])
    cell = plots.simulator_error_table(loads, sensitivity=sens)
    cell = cell[cell["figure"] == "median_ttft_ms"].iloc[0]
    assert np.isnan(cell["load"]) and cell["measured"] == 15.0 and cell["simulated"] == 16.5
    assert (cell["band_lo"], cell["band_hi"], cell["at_speed"]) == pytest.approx((14.0, 18.0, 15.0))
