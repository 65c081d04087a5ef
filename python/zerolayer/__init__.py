"""zerolayer from Python: run studies, generate, tokenize (the C++ engine,
`zerolayer._native`), and load and plot results files (pure Python).

The native module is built by CMake into build/python/zerolayer/; this
package extends its path to find it (PYTHONPATH=python:build/python, or
ZL_PYTHON_BUILD=build/python). The results helpers work without it, and so
does zerolayer.report (`zerolayer report RESULTS.h5`: the file as one page).
"""
import os as _os
import pkgutil as _pkgutil

__path__ = _pkgutil.extend_path(__path__, __name__)
for _d in (_os.environ.get("ZL_PYTHON_BUILD", ""),
           _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))),
                         "build", "python")):
    _p = _os.path.join(_d, "zerolayer") if _d else ""
    if _p and _os.path.isdir(_p) and _p not in __path__:
        __path__.append(_p)

from .results import (  # noqa: E402
    bootstrap_ci,
    check_results_file,
    checkpoint_dir,
    load_claim_seeds,
    load_claim_sensitivity,
    load_claim_trend,
    load_claims,
    load_claims_registry,
    load_configs,
    load_curve,
    load_events,
    load_index,
    load_serving,
    load_table,
    pareto_front,
    settings,
    summarize,
)

_NATIVE = ("run_study", "run", "config_keys", "claims", "claim_trends", "Generator", "Tokenizer", "ConfigError")


def __getattr__(name):
    # The native names load on first use, so `import zerolayer` for plotting
    # needs no build and does not load LibTorch.
    if name in _NATIVE or name == "_native":
        import importlib
        native = importlib.import_module(__name__ + "._native")  # not `from . import`: that calls us again
        return native if name == "_native" else getattr(native, name)
    raise AttributeError(f"module 'zerolayer' has no attribute {name!r}")


def serve_bench(config, overrides=None):
    """One run of a study file served by continuous batching, as `zerolayer
    serve-bench CONFIG`: at each serve.loads (or serve.rates, serve.trace) the
    real server and the simulator serve the same requests, then the run is
    projected to serve.hardware. Same overrides and return value as run();
    the tables load with load_serving(result["results"], "loads")."""
    return __getattr__("run")(config, {"serve.enabled": True, **(overrides or {})})


def simulate(config, overrides=None):
    """As serve_bench, the simulator alone (calibrated on the real step), as
    `zerolayer simulate CONFIG`."""
    return __getattr__("run")(config, {"serve.enabled": True, **(overrides or {}), "serve.measure": False})


__all__ = list(_NATIVE) + ["serve_bench", "simulate"] + [
    "bootstrap_ci", "check_results_file", "checkpoint_dir", "load_claim_seeds", "load_claim_sensitivity", "load_claim_trend", "load_claims", "load_claims_registry", "load_configs",
    "load_curve", "load_events", "load_index", "load_serving", "load_table", "pareto_front", "settings", "summarize",
]
