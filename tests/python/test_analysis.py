"""The pure-Python helpers of the zerolayer package: loaders on a real results
file, and the statistics and plots on hand-made frames with known answers."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from zerolayer import plots
from zerolayer.results import (EVENT_COLUMNS, bootstrap_ci, load_claims, load_configs, load_events, load_index,
                               pareto_front, parse_config, settings, summarize)


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
