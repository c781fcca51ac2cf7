#!/usr/bin/env python
"""Benchmark: confident errors on human-written SQL (issue 12, part 5).

Not a test. For every case of a JSONL case file (the format of ``../shared/cases/README.md``:
``id``, ``db``, ``question``, ``reference_sql``, ``reference_is_wrong``, ``judgement``,
``planted``), each SQL is vouched for with the public library API, shown as all K = 5 samples
(agreement 1.0, the way a model that misreads the question fails: the same wrong query every
time)::

    vouchsql.check(db_path, question, [sql] * 5, cache_dir=..., all_choices=False, rule=...)

and three numbers are reported, always together:

(a) **planted errors withheld**: every planted wrong SQL, per planted kind and overall, the
    share whose gate is ``flag`` or ``abstain``, with a Wilson 95% interval. A planted SQL that
    does not run (the engine's error, or the read-only gate refuses it) is counted apart as
    "does not run" and left out of n: withholding it proves nothing about the checks.
(b) **references not passed**: every reference SQL; the share of the *correct* references
    (``reference_is_wrong`` null) whose gate is not ``pass``, with a Wilson interval, and
    separately how many of the references that are themselves wrong are withheld.
(c) **alarm precision** against each case's ``judgement``: every alarm Vouch raises on a
    reference (a fired check of any kind, signal/cap/veto, by its ``name``; a reported choice
    as ``choice:<type>``) is RIGHT or FALSE where judged, "unjudged" where the judgement does
    not name it (it fires now and nobody judged it); judged alarms that no longer fire are
    listed.

Deterministic: the same code and cases give the same JSON, byte for byte, except the one
``wall_s`` (total wall time). Profiles go to a fresh temporary ``cache_dir`` unless
``--cache-dir`` is given.

    python bench/confident_errors.py                                  # the shared dev set
    python bench/confident_errors.py --cases bench/cases/sakila_dev.jsonl
    python bench/confident_errors.py --cases A.jsonl --cases B.jsonl --json run.json
    python bench/confident_errors.py --kinds wrong_join_key --ids chinook-kl-brazil_customer
    python bench/confident_errors.py --rule v3 --only planted
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASES = ROOT.parent / "shared" / "cases" / "external_dev.jsonl"
DEFAULT_DATASETS = ROOT.parent / "shared" / "datasets"

# The planted kinds of ../shared/cases/README.md, in the order.
KINDS = ("wrong_join_key", "drop_condition", "wrong_aggregate", "sort_direction", "off_by_one",
         "wrong_table", "count_unit")
WITHHELD = ("flag", "abstain")
K = 5
SCHEMA = "vouch-confident-errors/1"


# --------------------------------------------------------------------------- loading

def load_cases(paths: Iterable[str | os.PathLike]) -> list[dict]:
    """Every case of every file, in file order; each gets ``_file`` (the path as given).
    A case id seen twice is an error: records are keyed by it."""
    cases: list[dict] = []
    seen: dict[str, str] = {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    case = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SystemExit(f"{path}:{lineno}: not JSON: {exc}") from None
                for field in ("id", "db", "question", "reference_sql"):
                    if not case.get(field):
                        raise SystemExit(f"{path}:{lineno}: case without {field!r}")
                if case["id"] in seen:
                    raise SystemExit(f"{path}:{lineno}: case id {case['id']!r} already in {seen[case['id']]}")
                seen[case["id"]] = str(path)
                case["_file"] = str(path)
                cases.append(case)
    return cases


def db_path(datasets: str | os.PathLike, db: str) -> Path:
    """``db`` names a file in the datasets folder, with or without ``.sqlite``."""
    base = Path(datasets)
    for candidate in (base / db, base / f"{db}.sqlite"):
        if candidate.is_file():
            return candidate
    raise SystemExit(f"database {db!r} not found in {base} (looked for {db} and {db}.sqlite)")


def planted_ids(case: dict) -> list[str]:
    """``<case id>/<kind>``, with ``-2``, ``-3``… when a case plants the same kind again."""
    seen: Counter = Counter()
    out = []
    for p in case.get("planted") or []:
        seen[p["kind"]] += 1
        n = seen[p["kind"]]
        out.append(f"{case['id']}/{p['kind']}" + (f"-{n}" if n > 1 else ""))
    return out


# --------------------------------------------------------------------------- vouching

def vouch(path: str | os.PathLike, question: str, sql: str, *, cache_dir: str, rule: str | None = None,
          k: int = K) -> dict:
    """One SQL shown as all ``k`` samples; the record the report is built from. Only values
    that do not depend on the clock (no ``elapsed_ms``)."""
    import vouchsql
    from vouchsql.errors import VouchError

    try:
        answer = vouchsql.check(str(path), question, [sql] * k, cache_dir=cache_dir, all_choices=False, rule=rule)
    except VouchError as exc:
        # Refused before any verdict (e.g. the read-only gate): it does not run.
        return {"runs": False, "error": f"{type(exc).__name__}: {exc}", "gate": None, "score": None,
                "reasons": [], "checks": [], "choices": [], "alarms": [], "agreement": None, "row_count": None}
    result = answer.shown.result
    fired = [{"name": c.name, "kind": c.kind, "detail": c.detail} for c in answer.checks if c.fired]
    # With all_choices=False the detectors return only the reported choices.
    choices = [{"type": c.type, "description": c.description, "sql": c.sql} for c in answer.choices]
    alarms = list(dict.fromkeys([c["name"] for c in fired] + [f"choice:{c['type']}" for c in choices]))
    return {
        "runs": result.error is None,
        "error": None if result.error is None else f"{result.error.kind}: {result.error.message}",
        "gate": answer.verdict.gate,
        "score": round(answer.verdict.score, 4),
        "agreement": answer.agreement,
        "row_count": result.row_count,
        "reasons": list(answer.verdict.reasons),
        "checks": fired,
        "choices": choices,
        "alarms": alarms,
    }


def judge_alarms(alarms: list[str], judgement: dict | None) -> tuple[dict[str, str], list[dict]]:
    """Each alarm raised now: its judgement (``RIGHT``/``FALSE``) or ``unjudged``; and the
    judged alarms that no longer fire."""
    judgement = judgement or {}
    outcome = {a: (judgement[a] if judgement.get(a) in ("RIGHT", "FALSE") else "unjudged") for a in alarms}
    gone = [{"alarm": a, "judged": j} for a, j in sorted(judgement.items()) if a not in alarms]
    return outcome, gone


def run_cases(cases: list[dict], *, datasets: str | os.PathLike, cache_dir: str, rule: str | None = None,
              kinds: Iterable[str] | None = None, only: str | None = None, k: int = K,
              progress=None) -> list[dict]:
    """One record per case: the reference's (unless ``only == "planted"``) and each planted
    SQL's of the selected ``kinds`` (none when ``only == "references"``)."""
    kinds = set(kinds) if kinds else None
    records = []
    for i, case in enumerate(cases, 1):
        path = db_path(datasets, case["db"])
        rec: dict[str, Any] = {"id": case["id"], "db": case["db"], "file": case["_file"],
                               "reference_is_wrong": case.get("reference_is_wrong"),
                               "reference": None, "planted": []}
        if only != "planted":
            ref = vouch(path, case["question"], case["reference_sql"], cache_dir=cache_dir, rule=rule, k=k)
            ref["withheld"] = ref["gate"] in WITHHELD
            ref["judgement"], ref["judged_not_firing"] = judge_alarms(ref["alarms"], case.get("judgement"))
            rec["reference"] = ref
        if only != "references":
            for pid, p in zip(planted_ids(case), case.get("planted") or []):
                if kinds is not None and p["kind"] not in kinds:
                    continue
                r = vouch(path, case["question"], p["sql"], cache_dir=cache_dir, rule=rule, k=k)
                r = {"planted_id": pid, "kind": p["kind"], "description": p.get("description"), **r,
                     "withheld": r["gate"] in WITHHELD}
                rec["planted"].append(r)
        records.append(rec)
        if progress:
            progress(i, len(cases), case["id"])
    return records


# --------------------------------------------------------------------------- counting

def wilson(k: int, n: int) -> list[float | None]:
    """Wilson 95% interval (the library's), ``[None, None]`` when n = 0 (JSON has no NaN)."""
    from vouchsql.evals.metrics import wilson as _wilson

    if n <= 0:
        return [None, None]
    return [round(x, 4) for x in _wilson(k, n)]


def share(k: int, n: int) -> dict:
    return {"k": k, "n": n, "share": round(k / n, 4) if n else None, "ci95": wilson(k, n)}


def summarise_planted(records: list[dict]) -> dict:
    rows = [p for r in records for p in r["planted"]]
    out: dict[str, Any] = {"by_kind": {}, "all": None}

    def block(items: list[dict]) -> dict:
        ran = [p for p in items if p["runs"]]
        withheld = [p for p in ran if p["withheld"]]
        gates = Counter(p["gate"] for p in ran)
        return {**share(len(withheld), len(ran)), "planted": len(items),
                "does_not_run": sorted(p["planted_id"] for p in items if not p["runs"]),
                "gates": {g: gates.get(g, 0) for g in ("pass", "flag", "abstain")},
                "not_withheld": [p["planted_id"] for p in ran if not p["withheld"]]}

    present = [k for k in KINDS if any(p["kind"] == k for p in rows)]
    present += sorted({p["kind"] for p in rows} - set(KINDS))
    for kind in present:
        out["by_kind"][kind] = block([p for p in rows if p["kind"] == kind])
    out["all"] = block(rows)
    return out


def summarise_references(records: list[dict]) -> dict:
    refs = [(r["id"], r["reference_is_wrong"], r["reference"]) for r in records if r["reference"] is not None]
    correct = [(i, ref) for i, wrong, ref in refs if not wrong]
    wrong = [(i, ref) for i, w, ref in refs if w]
    not_passed = [i for i, ref in correct if ref["gate"] != "pass"]
    wrong_withheld = [i for i, ref in wrong if ref["withheld"]]
    return {
        "references": len(refs),
        "correct_not_passed": {**share(len(not_passed), len(correct)), "ids": not_passed,
                               "gates": {i: ref["gate"] for i, ref in correct if ref["gate"] != "pass"}},
        "wrong_withheld": {**share(len(wrong_withheld), len(wrong)), "ids": wrong_withheld,
                           "not_withheld": [i for i, ref in wrong if not ref["withheld"]]},
        "does_not_run": [i for i, _, ref in refs if not ref["runs"]],
    }


def summarise_alarms(records: list[dict]) -> dict:
    per: dict[str, Counter] = defaultdict(Counter)
    false_alarms, unjudged, gone = [], [], []
    for r in records:
        ref = r["reference"]
        if ref is None:
            continue
        for alarm, outcome in ref["judgement"].items():
            per[alarm][outcome] += 1
            if outcome == "FALSE":
                false_alarms.append({"id": r["id"], "alarm": alarm})
            elif outcome == "unjudged":
                unjudged.append({"id": r["id"], "alarm": alarm})
        for g in ref["judged_not_firing"]:
            gone.append({"id": r["id"], **g})
    by_alarm = {}
    for alarm in sorted(per):
        c = per[alarm]
        judged = c["RIGHT"] + c["FALSE"]
        by_alarm[alarm] = {"fired": sum(c.values()), "RIGHT": c["RIGHT"], "FALSE": c["FALSE"],
                           "unjudged": c["unjudged"], "precision": share(c["RIGHT"], judged)}
    return {"by_alarm": by_alarm, "false_alarms": false_alarms, "unjudged": unjudged,
            "judged_not_firing": gone}


def summarise(records: list[dict]) -> dict:
    return {"planted": summarise_planted(records), "references": summarise_references(records),
            "alarms": summarise_alarms(records)}


# --------------------------------------------------------------------------- printing

def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def ci(c: list) -> str:
    return "–" if c[0] is None else f"[{100 * c[0]:.1f}, {100 * c[1]:.1f}]"


def render(summary: dict, *, show_lists: bool = True) -> str:
    """Markdown tables (paste-able into bench/README.md)."""
    lines: list[str] = []
    pl = summary["planted"]
    if pl["all"]["planted"]:
        lines += ["Planted wrong SQL shown as all K = 5 samples (agreement 1.0): share withheld (flag or abstain)", "",
                  "| planted error | planted | does not run | n | withheld | share | Wilson 95% | flag | abstain |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for kind, b in list(pl["by_kind"].items()) + [("**all**", pl["all"])]:
            lines.append(f"| {kind} | {b['planted']} | {len(b['does_not_run'])} | {b['n']} | {b['k']} | "
                         f"{pct(b['share'])} | {ci(b['ci95'])} | {b['gates']['flag']} | {b['gates']['abstain']} |")
        if pl["all"]["does_not_run"]:
            lines += ["", f"Does not run (left out of n): {', '.join(pl['all']['does_not_run'])}"]
        lines.append("")
    rf = summary["references"]
    if rf["references"]:
        c, w = rf["correct_not_passed"], rf["wrong_withheld"]
        lines += ["References shown as all K = 5 samples", "",
                  "| | k | n | share | Wilson 95% |", "|---|---|---|---|---|",
                  f"| correct references not passed | {c['k']} | {c['n']} | {pct(c['share'])} | {ci(c['ci95'])} |",
                  f"| wrong references withheld | {w['k']} | {w['n']} | {pct(w['share'])} | {ci(w['ci95'])} |", ""]
        if c["ids"]:
            lines += ["Correct references not passed: " + ", ".join(f"{i} ({c['gates'][i]})" for i in c["ids"]), ""]
        if w["not_withheld"]:
            lines += ["Wrong references passed: " + ", ".join(w["not_withheld"]), ""]
        if rf["does_not_run"]:
            lines += ["References that do not run: " + ", ".join(rf["does_not_run"]), ""]
        al = summary["alarms"]
        lines += ["Alarms on the references against the judgement", "",
                  "| alarm | fired | RIGHT | FALSE | unjudged | precision (judged) | Wilson 95% |",
                  "|---|---|---|---|---|---|---|"]
        for name, a in al["by_alarm"].items():
            p = a["precision"]
            lines.append(f"| {name} | {a['fired']} | {a['RIGHT']} | {a['FALSE']} | {a['unjudged']} | "
                         f"{pct(p['share'])} ({p['k']}/{p['n']}) | {ci(p['ci95'])} |")
        if not al["by_alarm"]:
            lines.append("| (none) | 0 | 0 | 0 | 0 | – | – |")
        lines.append("")
        if show_lists:
            if al["false_alarms"]:
                lines += ["False alarms (judged FALSE): " + "; ".join(f"{x['id']} {x['alarm']}" for x in al["false_alarms"]), ""]
            if al["unjudged"]:
                lines += ["Unjudged alarms: " + "; ".join(f"{x['id']} {x['alarm']}" for x in al["unjudged"]), ""]
            if al["judged_not_firing"]:
                lines += ["Judged alarms that no longer fire: " + "; ".join(
                    f"{x['id']} {x['alarm']} ({x['judged']})" for x in al["judged_not_firing"]), ""]
    if show_lists and pl["all"]["planted"]:
        lines += ["Planted SQL not withheld, by kind:"]
        for kind, b in pl["by_kind"].items():
            if b["not_withheld"]:
                ids = [x.split("/", 1)[0] for x in b["not_withheld"]]
                lines.append(f"- {kind} ({len(ids)}): {', '.join(ids)}")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main

def _commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", action="append", metavar="PATH",
                    help=f"a JSONL case file (repeatable; default {DEFAULT_CASES})")
    ap.add_argument("--datasets", default=str(DEFAULT_DATASETS), metavar="DIR",
                    help="the folder of the databases the cases name (default %(default)s)")
    ap.add_argument("--rule", default="agreement_first", help="scoring rule (default %(default)s)")
    ap.add_argument("--kinds", help="comma-separated planted kinds to run (default all)")
    ap.add_argument("--ids", help="comma-separated case ids to run (default all)")
    ap.add_argument("--only", choices=("planted", "references"), help="run only the planted SQL or only the references")
    ap.add_argument("--k", type=int, default=K, help="samples shown (all the same SQL; default %(default)s)")
    ap.add_argument("--json", metavar="PATH", help="write every number and per-case record here")
    ap.add_argument("--cache-dir", help="profile cache (default: a fresh temporary folder)")
    ap.add_argument("--no-lists", action="store_true", help="print the tables only")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args(argv)

    from vouchsql.score import RULES

    if args.rule not in RULES:
        ap.error(f"unknown rule {args.rule!r}; choose one of {', '.join(RULES)}")
    if args.k < 1:
        ap.error("--k must be at least 1")
    paths = args.cases or [str(DEFAULT_CASES)]
    for p in paths:
        if not Path(p).is_file():
            ap.error(f"case file {p} not found")
    if not Path(args.datasets).is_dir():
        ap.error(f"datasets folder {args.datasets} not found")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()] if args.kinds else None
    cases = load_cases(paths)
    if kinds:
        known = {p["kind"] for c in cases for p in c.get("planted") or []} | set(KINDS)
        unknown = sorted(set(kinds) - known)
        if unknown:
            ap.error(f"unknown planted kind(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if args.ids:
        want = [i.strip() for i in args.ids.split(",") if i.strip()]
        missing = sorted(set(want) - {c["id"] for c in cases})
        if missing:
            ap.error(f"case id(s) not in the case files: {', '.join(missing)}")
        cases = [c for c in cases if c["id"] in set(want)]

    import vouchsql

    progress = None if args.quiet else (
        lambda i, n, cid: print(f"\r[{i}/{n}] {cid[:60]:<60}", end="" if i < n else "\n", file=sys.stderr, flush=True))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vouch-bench-") as tmp:
        records = run_cases(cases, datasets=args.datasets, cache_dir=args.cache_dir or tmp, rule=args.rule,
                            kinds=kinds, only=args.only, k=args.k, progress=progress)
    wall = time.perf_counter() - start
    summary = summarise(records)

    print(f"vouchsql {vouchsql.__version__} ({vouchsql.__file__}), commit {_commit()}; rule {args.rule}; "
          f"K = {args.k}; Python {platform.python_version()}; {len(cases)} cases from {', '.join(paths)}")
    print()
    print(render(summary, show_lists=not args.no_lists))
    print(f"wall {wall:.1f} s", flush=True)
    if args.json:
        doc = {"schema": SCHEMA, "vouchsql_version": vouchsql.__version__, "commit": _commit(),
               "settings": {"cases": paths, "datasets": str(args.datasets), "rule": args.rule, "k": args.k,
                            "kinds": kinds, "ids": args.ids.split(",") if args.ids else None, "only": args.only},
               "summary": summary, "cases": records, "wall_s": round(wall, 1)}
        Path(args.json).write_text(json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
