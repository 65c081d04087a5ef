#!/usr/bin/env python3
"""The claims table in Markdown, as docs/notes shows it: the articles' claims
(measured value with the interval its verdict used, the percentile bootstrap
beside it, the claimed region, the verdict and the Holm verdict, the seeds an
inconclusive row needs, the operating point), then the rows true by
construction apart, then, where the file has it, each claim along its
operating point (/claims_sensitivity). Reads what `zerolayer claims RESULTS
[--sensitivity]` wrote.

    /usr/bin/python3 python/claims_table.py results/claims/results.h5
    /usr/bin/python3 python/claims_table.py results/claims/results.h5 --short
    /usr/bin/python3 python/claims_table.py results/sensitivity/results.h5 --sensitivity

--short keeps the columns a reader needs first (claim, measured value with
its interval, claimed region, verdict, Holm verdict): the table at the top of
the README.

--against OLD compares two results files of one study row by row (two days,
two machines, two commits): each claim's value, interval and verdicts in
both, and whether the verdict or the Holm verdict moved; a row in one file
only is listed with "-" on the other side. The last line counts the rows
whose verdicts agree.

    /usr/bin/python3 python/claims_table.py results/claims/results.h5 --against old/results.h5
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from zerolayer import load_claim_sensitivity, load_claims, load_claims_registry  # noqa: E402


def number(v):
    return "-" if not np.isfinite(v) else f"{v:.3g}"


def interval(lo, hi):
    return "" if not (np.isfinite(lo) and np.isfinite(hi)) else f"[{lo:.3g}, {hi:.3g}]"


def text(row, column, default=""):
    value = row.get(column, default)
    return value if isinstance(value, str) else default


def claims_rows(claims, apart, short=False):
    if short:
        out = ["| claim | measured [95% CI] | claimed | verdict | Holm |", "| --- | --- | --- | --- | --- |"]
    else:
        out = ["| claim | measured [95% CI] | bootstrap | claimed | verdict | Holm | seeds needed | operating point |",
               "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for _, r in claims.iterrows():
        if bool(text(r, "by_construction")) != apart:
            continue
        measured = f"{number(r['value'])} {interval(r['ci_lo'], r['ci_hi'])}".strip()
        boot = interval(r.get("boot_lo", np.nan), r.get("boot_hi", np.nan))
        needed = int(r["seeds_needed"]) if np.isfinite(float(r.get("seeds_needed", 0))) and r.get("seeds_needed", 0) else ""
        cid = r["id"] + (f" (revised {text(r, 'revised')})" if text(r, "revised") else "")
        if short:
            out.append(f"| {cid} | {measured} | {r['claimed']} | {r['verdict']} | {text(r, 'verdict_holm')} |")
            continue
        op = text(r, "operating_point") or "as configured"
        out.append(f"| {cid} | {measured} | {boot} | {r['claimed']} | {r['verdict']} | {text(r, 'verdict_holm')} "
                   f"| {needed} | {op} |")
    return out


def registry_line(path):
    """Which registry judged the table: its path and content hash, as `zerolayer claims` stored them
    (docs/claims.md#pre-registration); a row marked "(revised DATE)" changed its reading after its data."""
    registry, digest = load_claims_registry(path)
    if not digest:
        return "Judged before tables stored their registry's content hash."
    return f"Judged by {registry or 'the registry'}, content hash {digest}."


def compare_rows(old, new):
    """One line per claim of either file: both readings and whether the verdicts moved."""
    out = ["| claim | before [95% CI] | verdict, Holm | now [95% CI] | verdict, Holm | moved |",
           "| --- | --- | --- | --- | --- | --- |"]
    old_rows = {r["id"]: r for _, r in old.iterrows()}
    new_rows = {r["id"]: r for _, r in new.iterrows()}
    ids = list(new_rows) + [i for i in old_rows if i not in new_rows]
    agree = both = 0

    def reading(r):
        if r is None:
            return "-", "-"
        return (f"{number(r['value'])} {interval(r['ci_lo'], r['ci_hi'])}".strip(),
                f"{r['verdict']}, {text(r, 'verdict_holm') or '-'}")

    for cid in ids:
        o, n = old_rows.get(cid), new_rows.get(cid)
        (ov, overdict), (nv, nverdict) = reading(o), reading(n)
        if o is None or n is None:
            moved = "only now" if o is None else "only before"
        else:
            both += 1
            changes = [what for what, col in (("verdict", "verdict"), ("Holm", "verdict_holm"))
                       if text(o, col) != text(n, col)]
            agree += not changes
            moved = ", ".join(changes) if changes else ""
        out.append(f"| {cid} | {ov} | {overdict} | {nv} | {nverdict} | {moved} |")
    out.append(f"\n{agree} of the {both} rows in both files keep both verdicts.")
    return out


def sensitivity_rows(table):
    out = ["| claim | claimed | " + " | ".join(f"{s:g}" for s in sorted(set(table["setting"]))) + " | along the curve |",
           "| --- | --- | " + " | ".join("---" for _ in set(table["setting"])) + " | --- |"]
    settings = sorted(set(table["setting"]))
    for (cid, key), g in table.groupby(["id", "key"], sort=False):
        cells = []
        for s in settings:
            row = g[g["setting"] == s]
            if not len(row):
                cells.append("")
                continue
            r = row.iloc[0]
            cells.append(f"{number(r['value'])} {interval(r['ci_lo'], r['ci_hi'])}: {r['verdict']}".strip())
        verdicts = list(g.sort_values("setting")["verdict"])
        along = f"holds ({verdicts[0]})" if len(set(verdicts)) == 1 else "moves"
        out.append(f"| {cid} | {g['claimed'].iloc[0]} | " + " | ".join(cells) + f" | {along} |")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results")
    parser.add_argument("--sensitivity", action="store_true", help="the /claims_sensitivity table only")
    parser.add_argument("--short", action="store_true",
                        help="claim, measured [95%% CI], claimed, verdict and Holm verdict only")
    parser.add_argument("--against", metavar="OLD", help="compare row by row with another results file of the study")
    args = parser.parse_args()
    if args.against:
        old, new = load_claims(args.against), load_claims(args.results)
        for path, table in ((args.against, old), (args.results, new)):
            if not len(table):
                sys.exit(f"{path}: no /claims (run `zerolayer claims {path}`)")
        print("\n".join(compare_rows(old, new)))
        return
    if args.sensitivity:
        table = load_claim_sensitivity(args.results)
        if not len(table):
            sys.exit(f"{args.results}: no /claims_sensitivity (run `zerolayer claims {args.results} --sensitivity`)")
        print("\n".join(sensitivity_rows(table)))
        return
    claims = load_claims(args.results)
    if not len(claims):
        sys.exit(f"{args.results}: no /claims (run `zerolayer claims {args.results}`)")
    print(registry_line(args.results) + "\n")
    print("\n".join(claims_rows(claims, apart=False, short=args.short)))
    if "by_construction" in claims and (claims["by_construction"].fillna("") != "").any():
        print("\nBy construction (manipulation checks, outside the Holm family):\n")
        print("\n".join(claims_rows(claims, apart=True, short=args.short)))


if __name__ == "__main__":
    main()
