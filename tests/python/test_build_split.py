"""The build's split (CMakeLists.txt, 'The libraries'): a .cpp that reaches no LibTorch header, directly or
through our headers, is built in zl_core, where it compiles in a second or two instead of loading the
~900 MB precompiled <torch/torch.h>. The compiler enforces the other direction (sim/util/torch_free.h
poisons LibTorch's names in zl_core); this test catches a torch-free file left in a LibTorch library."""
import os
import re

from conftest import ROOT
from test_layers import tree

QUOTED = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ANGLED = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)
TORCH = ("torch/", "ATen/", "c10/")
LISTS = ("ZL_CORE_DIRS", "ZL_TORCH_DIRS", "ZL_TORCH_IN_CORE_DIRS", "ZL_CORE_IN_TORCH_DIRS")


def cmake_lists(text):
    """{name: [items]} of the four set(...) lists that decide which library a file is built in."""
    text = re.sub(r"#[^\n]*", "", text)
    out = {}
    for name, body in re.findall(r"set\((ZL_\w+)\s+([^)]*)\)", text):
        if name in LISTS:
            out[name] = body.split()
    missing = [name for name in LISTS if name not in out]
    assert not missing, f"CMakeLists.txt no longer sets {missing}: update {__file__}"
    return out


def library_of(path, lists):
    """'core' or 'torch', as CMakeLists.txt's zl_sources() decides; None for a file no library globs."""
    folder = os.path.dirname(path)
    if folder in lists["ZL_CORE_DIRS"]:
        return "torch" if path in lists["ZL_TORCH_IN_CORE_DIRS"] else "core"
    if folder in lists["ZL_TORCH_DIRS"]:
        return "core" if path in lists["ZL_CORE_IN_TORCH_DIRS"] else "torch"
    return None


def reaches_torch(path, sources, memo):
    """Whether `path` includes a LibTorch header, itself or through the headers of ours it includes."""
    if path not in memo:
        memo[path] = False  # an include cycle adds nothing
        text = sources.get(path, "")
        memo[path] = (any(inc.startswith(TORCH) for inc in ANGLED.findall(text))
                      or any(reaches_torch(inc, sources, memo) for inc in QUOTED.findall(text)))
    return memo[path]


def misplaced(sources, lists):
    """The .cpp files built with LibTorch that reach none of it."""
    memo = {}
    return sorted(p for p in sources
                  if p.endswith(".cpp") and not p.endswith("main.cpp") and library_of(p, lists) == "torch"
                  and not reaches_torch(p, sources, memo))


def test_every_torch_free_file_builds_without_torch():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        lists = cmake_lists(f.read())
    sources = tree()
    assert library_of("sim/claims/stats.cpp", lists) == "core"
    assert library_of("sim/trainer.cpp", lists) == "torch"
    assert reaches_torch("sim/trainer.cpp", sources, {})
    bad = misplaced(sources, lists)
    assert not bad, ("built with LibTorch but include nothing of it; name them in CMakeLists.txt's "
                     "ZL_CORE_IN_TORCH_DIRS (or take them off ZL_TORCH_IN_CORE_DIRS): " + ", ".join(bad))


def test_the_check_catches_a_misplaced_file():
    lists = {"ZL_CORE_DIRS": ["sim/claims"], "ZL_TORCH_DIRS": ["sim"], "ZL_TORCH_IN_CORE_DIRS": [],
             "ZL_CORE_IN_TORCH_DIRS": []}
    sources = {"sim/a.cpp": '#include "sim/a.h"\n', "sim/a.h": "#include <vector>\n",
               "sim/b.cpp": '#include "sim/b.h"\n', "sim/b.h": "#include <torch/torch.h>\n",
               "sim/claims/c.cpp": "#include <vector>\n"}
    assert misplaced(sources, lists) == ["sim/a.cpp"]
