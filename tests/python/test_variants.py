"""The variant table (sim/variants.def) is the one list of variants: its copies are the table, and every
variant named in a study file, the claims registry, the docs, the notebooks or a test is one it knows."""
import glob
import json
import os
import re
import subprocess

from conftest import ROOT, zerolayer_bin


def table(fmt):
    return subprocess.run([zerolayer_bin(), "variants", "--format", fmt], capture_output=True, text=True, cwd=ROOT,
                          check=True).stdout


def known():
    return {v["name"] for v in json.loads(table("json"))}


def test_the_plots_copy_is_the_table():
    with open(os.path.join(ROOT, "python", "zerolayer", "variants.json")) as f:
        assert f.read() == table("json"), \
            "python/zerolayer/variants.json is stale: build/zerolayer variants --format json > it"


def test_the_docs_list_is_the_table():
    with open(os.path.join(ROOT, "docs", "variants.md")) as f:
        text = f.read()
    block = re.search(r"<!-- variants:begin[^>]*-->\n(.*?)<!-- variants:end -->", text, re.S)
    assert block, "docs/variants.md lost its generated list"
    assert block.group(1) == table("md"), "docs/variants.md's list is stale: build/zerolayer variants --format md"


def test_an_unknown_format_is_refused():
    proc = subprocess.run([zerolayer_bin(), "variants", "--format", "yaml"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode != 0 and "yaml" in proc.stderr


# Where a variant is named, by the form of the naming: a study file's `variant = a, b`, a registry's
# selector `variant=a`, a command line's `--variant a,b`, a Python dict's "variant": "a" or an override
# {"variant": "a"}.
NAMINGS = (re.compile(r"^\s*variant\s*=\s*([a-z0-9_, ]+)$", re.M),
           re.compile(r"\bvariant=([a-z0-9_]+)"),
           re.compile(r"--variant(?:[ =]|[\"'], [\"'])([a-z0-9_,]+)"),
           re.compile(r"[\"']variant[\"']\s*:\s*\\?[\"']([a-z0-9_]+)"))


def named_variants(text):
    # debootstrap's --variant (scripts/bare-machine) is Debian's, not ours.
    text = "\n".join(line for line in text.splitlines() if "debootstrap" not in line)
    for pattern in NAMINGS:
        for m in pattern.finditer(text):
            yield from (name.strip() for name in m.group(1).split(",") if name.strip())


def test_every_variant_named_anywhere_is_in_the_table():
    files = [p for pattern in ("ablations/*.ini", "ablations/*.registry", "docs/**/*.md", "README.md",
                               "notebooks/*.ipynb", "tests/python/*.py", "python/**/*.py", "scripts/*")
             for p in glob.glob(os.path.join(ROOT, pattern), recursive=True)
             if os.path.basename(p) != os.path.basename(__file__)]  # its own misspellings, below
    assert len(files) > 30
    names = known()
    # Made-up names a test uses to see them refused, and the guide's toys (docs/adding-a-mechanism.md),
    # which only their test registers (tests/cpp/test_toy_mechanism.cpp).
    deliberate = {"a", "nonsense", "sfvl2", "attn_temp", "attn_temp_learned"}
    unknown = []
    seen = set()
    for path in files:
        with open(path, errors="replace") as f:
            for name in named_variants(f.read()):
                seen.add(name)
                if name not in names and name not in deliberate:
                    unknown.append(f"{os.path.relpath(path, ROOT)}: {name}")
    assert not unknown, "variants the table does not know: " + "; ".join(unknown)
    # The scan finds what it looks for: most of the table is named somewhere.
    assert len(seen & names) >= 10, seen


def test_the_scan_catches_a_misspelt_variant():
    assert "sfvll" in set(named_variants("[grid]\nvariant = baseline, sfvll\n"))
    assert "h20" in set(named_variants('treatment = variant=h20 decode.temperature=0.8'))
    assert "sfvl3" in set(named_variants("zerolayer ablate x.ini --variant sfvl3\ndebootstrap --variant=minbase"))
    assert "minbase" not in set(named_variants("debootstrap --variant=minbase bookworm /srv/x"))
    assert "fusd" in set(named_variants('subprocess.run(["zerolayer", "train", "--variant", "fusd"])'))
