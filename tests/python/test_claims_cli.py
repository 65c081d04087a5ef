"""`zerolayer claims`: on the smoke study it names every claim and what it
lacks; on a hand-made results file (h5py, the documented schema) it gives the
known answer; bad input gets a clear error."""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

from conftest import ROOT, zerolayer_bin
from zerolayer.results import load_claims

INDEX_DTYPE = [("run_id", "S16"), ("train_id", "S16"), ("variant", "S16"), ("seed", "<i8"), ("status", "S16"),
               ("error", "S8"), ("started_utc", "S24"), ("finished_utc", "S24"), ("decode_tok_s", "<f8"),
               ("kv_bytes_per_token", "<f8"), ("violation_rate", "<f8")]


def write_results(path, rows):
    """A minimal results file: root attributes, /index, /runs/<id> with config."""
    with h5py.File(path, "w") as f:
        f.attrs["schema_version"] = np.int64(1)
        index = np.zeros(len(rows), dtype=INDEX_DTYPE)
        for i, (rid, variant, seed, tok_s, violation) in enumerate(rows):
            index[i] = (rid, "t", variant, seed, "complete", "", "", "", tok_s, 1024.0, violation)
            g = f.create_group(f"runs/{rid}")
            g.attrs["config"] = (f"variant = {variant}\nseed = {seed}\n\n[decode]\ntop_p = 1\ntemperature = 0.8\n"
                                 "\n[sfcl]\nat_inference = true\n")
        f.create_dataset("index", data=index)


def test_known_answer_on_a_hand_made_file(zl, tmpdir_zl):
    path = os.path.join(tmpdir_zl, "hand.h5")
    rows = []
    for seed in (1, 2, 3, 4):
        rows.append((f"sfcl{seed}", "sfcl", seed, 100.0 * seed, 0.30))
        rows.append((f"oet{seed}", "oet", seed, 137.0 * seed, 0.28))  # +37% each seed, 2 points better
    write_results(path, rows)
    out = zl("claims", path).stdout
    claims = load_claims(path).set_index("id")
    thr = claims.loc["S000-throughput"]
    assert thr["verdict"] == "supported" and thr["seeds"] == 4
    np.testing.assert_allclose([thr["value"], thr["ci_lo"], thr["ci_hi"]], [0.37, 0.37, 0.37], atol=1e-9)
    q = claims.loc["S000-quality"]
    np.testing.assert_allclose(q["value"], 2.0, atol=1e-9)
    assert q["verdict"] == "supported"
    kv = claims.loc["S000-kv"]  # no change in KV bytes: the claimed -58% is refuted
    assert kv["verdict"] == "refuted" and kv["value"] == 0
    assert claims.loc["S002-equiv"]["verdict"] == "missing"
    assert "no complete runs with variant=sfvl" in claims.loc["S002-equiv"]["note"]
    assert "S000-throughput" in out and "supported" in out


def test_small_n_columns_calibration_and_plan(zl, tmpdir_zl):
    # Three seeds whose relative change scatters (0.30, 0.40, 0.45): the t
    # interval straddles the claimed region [0.27, 0.47], so the row is
    # inconclusive, and the plan says how many seeds would decide it.
    path = os.path.join(tmpdir_zl, "three.h5")
    rows = []
    for seed, change in ((1, 0.30), (2, 0.40), (3, 0.45)):
        rows.append((f"sfcl{seed}", "sfcl", seed, 100.0, 0.30))
        rows.append((f"oet{seed}", "oet", seed, 100.0 * (1 + change), 0.30))
    write_results(path, rows)
    out = zl("claims", path, "--calibrate", "--plan").stdout
    claims = load_claims(path).set_index("id")
    thr = claims.loc["S000-throughput"]
    assert thr["method"] == "t" and thr["seeds"] == 3
    assert thr["verdict"] == "inconclusive" and thr["verdict_holm"] == "inconclusive"
    np.testing.assert_allclose([thr["ci_lo"], thr["ci_hi"]], [thr["t_lo"], thr["t_hi"]])
    assert thr["boot_lo"] >= 0.30 - 1e-9 and thr["boot_hi"] <= 0.45 + 1e-9  # the bootstrap: within the range
    assert thr["t_lo"] < 0.27 < 0.47 < thr["t_hi"]
    assert thr["seeds_needed"] > 3
    assert "coverage" in out and "<- verdicts at this n" in out  # --calibrate
    assert f"--seed 1,2,3,4" in out and "power estimate" in out  # --plan
    with h5py.File(path, "r") as f:
        seeds = f["claims_seeds"][:]
    mine = seeds[seeds["id"] == b"S000-throughput"]
    np.testing.assert_allclose(sorted(mine["value"]), [0.30, 0.40, 0.45], atol=1e-12)
    # --family none drops the Holm column; a bad choice is named.
    header = next(line for line in zl("claims", path, "--family", "none", "--no-write").stdout.splitlines()
                  if line.startswith("claim "))
    assert "verdict" in header and "Holm" not in header, header
    proc = zl("claims", path, "--method", "wald", "--no-write", check=False)
    assert proc.returncode != 0 and "wald" in proc.stderr and "percentile" in proc.stderr


def test_smoke_results_every_claim_named(zl, smoke_results, tmpdir_zl):
    path = os.path.join(tmpdir_zl, "smoke.h5")
    shutil.copy(smoke_results, path)
    out = zl("claims", path).stdout
    with open(os.path.join(ROOT, "ablations", "claims.registry")) as f:
        ids = [line.strip()[7:-1] for line in f if line.startswith("[claim ")]
    assert len(ids) >= 17
    for claim_id in ids:
        assert claim_id in out
    claims = load_claims(path)
    assert list(claims["id"]) == ids
    assert set(claims["verdict"]) <= {"missing", "untestable"}
    assert "wrote /claims" in out


def test_the_readme_table_script_prints_every_claim_and_sets_apart_the_ones_by_construction(zl, smoke_results,
                                                                                             tmpdir_zl):
    path = os.path.join(tmpdir_zl, "smoke.h5")
    shutil.copy(smoke_results, path)
    zl("claims", path)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "python", "claims_table.py"), path],
                         capture_output=True, text=True, check=True).stdout
    claims = load_claims(path)
    apart = out.index("By construction")
    for _, row in claims.iterrows():
        at = out.index(f"| {row['id']} ")  # a revised row reads "| ID (revised DATE) |"
        assert (at > apart) == bool(row["by_construction"]), row["id"]
    assert "S000-kv" in out[apart:] and "S002-throughput" in out[:apart]


def test_bad_input_is_named(zl, tmpdir_zl, smoke_results):
    proc = zl("claims", os.path.join(tmpdir_zl, "none.h5"), check=False)
    assert proc.returncode != 0 and "none.h5" in proc.stderr
    proc = zl("claims", smoke_results, "--registry", os.path.join(tmpdir_zl, "none.registry"), check=False)
    assert proc.returncode != 0 and "none.registry" in proc.stderr
    bad = os.path.join(tmpdir_zl, "bad.registry")
    with open(bad, "w") as f:
        f.write("[claim X]\nsource = s\nclaim = c\ncomparison = value\ntreatment = variant=a\nmetric = m\n"
                "claimed = 1\ntolerance = 1\nbogus = 2\n")
    proc = zl("claims", smoke_results, "--registry", bad, "--no-write", check=False)
    assert proc.returncode != 0 and f"{bad}:9: claim X: unknown key bogus" in proc.stderr
    foreign = os.path.join(tmpdir_zl, "foreign.h5")
    with h5py.File(foreign, "w") as f:
        f["x"] = 1
    proc = zl("claims", foreign, check=False)
    assert proc.returncode != 0 and "not a zerolayer results file" in proc.stderr
    assert "--registry" in zl("claims", "--help").stdout


def test_generate_names_a_bad_flag_or_prompt(zl, smoke_results):
    ckpts = os.path.join(os.path.dirname(smoke_results), "checkpoints")
    ckpt = os.path.join(ckpts, sorted(os.listdir(ckpts))[0])
    for args, named in [(["--temperature", "-1"], "--temperature"), (["--top-p", "0"], "--top-p"),
                        (["--top-p", "1.5"], "--top-p"), (["--top-k", "-3"], "--top-k"),
                        (["--max-new-tokens", "0"], "--max-new-tokens"),
                        (["--prompt", "word " * 400], "the model's context is 64")]:
        proc = zl("generate", ckpt, *args, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        assert named in proc.stderr, (args, proc.stderr)
    # Raw bytes that are not UTF-8, as a shell passes them.
    proc = subprocess.run([zerolayer_bin().encode(), b"generate", ckpt.encode(), b"--prompt", b"abc\xff def"],
                          capture_output=True, cwd=ROOT)
    assert proc.returncode == 2 and b"--prompt: not valid UTF-8 (byte 3 of 8)" in proc.stderr, proc.stderr
    ok = zl("generate", ckpt, "--prompt", "The party", "--max-new-tokens", "4")
    assert ok.stdout.startswith("The party")


def test_two_results_files_of_a_study_are_compared_row_by_row(zl, tmpdir_zl):
    """claims_table.py --against: a verdict that moves between two runs of a study is marked, the rest agree."""
    files = {}
    for name, gain in (("before", 1.37), ("after", 1.05)):
        path = os.path.join(tmpdir_zl, f"{name}.h5")
        rows = []
        for seed in (1, 2, 3, 4):
            rows.append((f"sfcl{seed}", "sfcl", seed, 100.0 * seed, 0.30))
            rows.append((f"oet{seed}", "oet", seed, gain * 100.0 * seed, 0.28))
        write_results(path, rows)
        zl("claims", path)
        files[name] = path
    out = subprocess.run([sys.executable, os.path.join(ROOT, "python", "claims_table.py"), files["after"],
                          "--against", files["before"]], capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("| S000-throughput |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2].startswith("supported") and cells[4].startswith("refuted") and "verdict" in cells[5], line
    quality = next(l for l in out.splitlines() if l.startswith("| S000-quality |"))
    assert quality.rstrip().endswith("|  |"), quality  # the same runs' quality: nothing moved
    both = len(load_claims(files["after"]))
    assert f"of the {both} rows in both files keep both verdicts." in out


def fnv_hex(text):
    """sim/config.h hash_hex: FNV-1a 64 of the bytes, first 12 hex digits."""
    h = 1469598103934665603
    for byte in text.encode():
        h = ((h ^ byte) * 1099511628211) % (1 << 64)
    return f"{h:016x}"[:12]


def test_the_table_keeps_its_registrys_hash_and_marks_revised_readings(zl, tmpdir_zl):
    """Pre-registration (docs/claims.md#pre-registration): the registry's content hash is stored with /claims and
    shown, and a row whose reading changed after its data carries the dates."""
    path = os.path.join(tmpdir_zl, "hashed.h5")
    write_results(path, [(f"{v}{s}", v, s, (137.0 if v == "oet" else 100.0) * s, 0.3)
                         for s in (1, 2, 3) for v in ("sfcl", "oet")])
    out = zl("claims", path).stdout
    with open(os.path.join(ROOT, "ablations", "claims.registry"), encoding="utf-8") as f:
        digest = fnv_hex(f.read())
    assert f"registry ablations/claims.registry, content hash {digest}" in out
    with h5py.File(path, "r") as f:
        attrs = f["claims"].attrs
        assert attrs["registry_hash"] in (digest, digest.encode()) and "claims.registry" in str(attrs["registry"])
    claims = load_claims(path).set_index("id")
    assert claims.loc["S002-monitor/drift", "revised"] == "2026-12-06"
    assert claims.loc["S000-throughput", "revised"] == ""
    table = subprocess.run([sys.executable, os.path.join(ROOT, "python", "claims_table.py"), path, "--short"],
                           capture_output=True, text=True, check=True).stdout
    assert f"content hash {digest}" in table
    assert "| S002-monitor/drift (revised 2026-12-06) |" in table


def test_replicate_reads_two_files_row_by_row(zl, tmpdir_zl):
    """`zerolayer claims A --replicate B`: the one row whose verdict differs is named, with the summary."""
    files = []
    for name, gain in (("a", 1.37), ("b", 1.0)):
        path = os.path.join(tmpdir_zl, f"rep_{name}.h5")
        write_results(path, [(f"{v}{s}", v, s, (gain * 100.0 if v == "oet" else 100.0) * s, 0.3)
                             for s in (1, 2, 3) for v in ("sfcl", "oet")])
        files.append(path)
    out = zl("claims", files[0], "--replicate", files[1], "--no-write").stdout
    section = out.split("Replication:", 1)[1]  # after A's own table
    line = next(l for l in section.splitlines() if l.startswith("S000-throughput "))
    assert "supported" in line and "refuted" in line and line.rstrip().endswith("differ"), line
    summary = section.strip().splitlines()[-1]
    assert " differ" in summary and "agree" in summary and summary.split()[1] == "rows:", summary
    missing = subprocess.run([zerolayer_bin(), "claims", files[0], "--replicate", os.path.join(tmpdir_zl, "nope.h5")],
                             capture_output=True, text=True)
    assert missing.returncode != 0 and "--replicate" in missing.stderr and "nope.h5" in missing.stderr
