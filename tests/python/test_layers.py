"""The layers of the C++ tree (docs/design.md#known-seams): a file includes only files of its own layer or
below, and serving, claims and the study never include one another. Read from the #include lines."""
import glob
import os
import re

from conftest import ROOT

# Where each file sits: the first prefix that matches (the deeper folders of sim/ before sim/ itself, the
# core). Ranks bottom to top; serving and claims share a rank and stay apart.
PREFIXES = [("sim/util/", "util"), ("sim/serving/", "serving"), ("sim/claims/", "claims"), ("sim/run/", "run"),
            ("sim/study/", "study"), ("sim/main.cpp", "cli"), ("python/cpp/", "cli"), ("sim/", "core"),
            ("models/", "core"), ("datasets/", "core")]
RANK = {"util": 0, "core": 1, "serving": 2, "claims": 2, "run": 3, "study": 4, "cli": 5}
APART = {("serving", "claims"), ("claims", "serving")}
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def layer_of(path):
    return next((layer for prefix, layer in PREFIXES if path.startswith(prefix)), None)


def violations(sources):
    """[(file, included, why)] for every include that crosses the layers the wrong way."""
    out = []
    for path, text in sources.items():
        mine = layer_of(path)
        if mine is None:
            continue
        for inc in INCLUDE.findall(text):
            theirs = layer_of(inc)
            if theirs is None or theirs == mine:
                continue
            if RANK[theirs] > RANK[mine]:
                out.append((path, inc, f"{mine} includes {theirs}, a layer above it"))
            elif (mine, theirs) in APART:
                out.append((path, inc, f"{mine} and {theirs} stay apart"))
            elif {mine, theirs} == {"serving", "study"}:
                out.append((path, inc, "serving and the study share through the core"))
    return out


def tree():
    sources = {}
    for pattern in ("sim/**/*.h", "sim/**/*.cpp", "models/*.h", "models/*.cpp", "datasets/**/*.h",
                    "datasets/**/*.cpp", "python/cpp/*.cpp", "python/cpp/*.h"):
        for p in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            with open(p) as f:
                sources[os.path.relpath(p, ROOT)] = f.read()
    return sources


def test_layers_are_classified():
    assert layer_of("sim/util/stop.h") == "util"
    assert layer_of("sim/config.h") == "core" and layer_of("sim/stages/variant.h") == "core"
    assert layer_of("models/attention.h") == "core"
    assert layer_of("sim/serving/engine.h") == "serving" and layer_of("sim/run/run.h") == "run"
    assert layer_of("sim/study/study.h") == "study" and layer_of("sim/main.cpp") == "cli"


def test_no_include_crosses_the_layers():
    sources = tree()
    assert len(sources) > 150
    bad = violations(sources)
    assert not bad, "\n".join(f"{f}: #include \"{i}\": {why}" for f, i, why in bad)


def test_the_check_catches_a_crossing():
    assert violations({"sim/checkpoint.cpp": '#include "sim/study/study.h"\n'})
    assert violations({"sim/serving/engine.cpp": '#include "sim/claims/claims.h"\n'})
    assert violations({"sim/study/study.cpp": '#include "sim/serving/engine.h"\n'})
    assert violations({"sim/util/stop.cpp": '#include "sim/config.h"\n'})
    assert not violations({"sim/run/run.cpp": '#include "sim/serving/serving_run.h"\n'})
