#!/usr/bin/env python
"""Benchmark: do the checks add information on real model output? (issue 26, part 3)

Not a test. Reads published text-to-SQL predictions with their correctness labels
(``../shared/cases/spider_predictions_dev.jsonl``: for each question, nine systems' SQL and
whether each returns the gold's rows) and vouches for every system's SQL in turn, with the
next ``K - 1`` systems in the file's order (cyclic) as its samples::

    vouchsql.check(db, question, [shown, next_1, …, next_{K-1}], all_choices=False)

so each question gives one shown answer per system, each with agreement over K = 5
candidates (the shown one included, DESIGN.md §3). From the records it reports:

- **AUROC** of the score under ``agreement_first`` (and ``v3``) against agreement alone,
  with a 95% paired bootstrap interval of the difference; resampling is over *questions*
  (the answers of one question move together), 2,000 replicates, seed 0.
- **Withheld at A = 1**: among shown answers whose K candidates all agree, the share of
  right answers and of wrong answers the gate withholds (flag or abstain).
- **Per alarm** (a fired check by name; a finding of a check that reports several as
  ``check:kind``; a reported open choice as ``choice:type``): how often it fires on right and
  on wrong answers, and its precision as an error detector (wrong among fired), overall and
  at A = 1, with Wilson 95% intervals; and the kind it had when it fired (veto/cap/signal).
- **Gold** (``--gold``, default ``spider_dev_part.jsonl``): each gold SQL shown as all K
  samples; the share withheld and the alarms raised, since gold is (mostly) right.

Deterministic: the same code and data give the same JSON (no clock in it).

    python bench/real_output.py                           # the shared predictions and gold
    python bench/real_output.py --json run.json --records records.jsonl
    python bench/real_output.py --from-records records.jsonl   # measure again, no rerun
    python bench/real_output.py --systems dail_gpt4,c3_gpt35 --dbs pets_1
    python bench/real_output.py --write-measured src/vouchsql/checks/measured.json   # the severity table
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DEFAULT_PREDICTIONS = SHARED / "cases" / "spider_predictions_dev.jsonl"
DEFAULT_GOLD = SHARED / "cases" / "spider_dev_part.jsonl"
DEFAULT_DATASETS = SHARED / "datasets" / "spider"
# Questions whose gold SQL we judged wrong by reading it and running it (each with its reason):
# their correctness labels are noise, so every figure is also reported without them.
DEFAULT_GOLD_ERRORS = ROOT / "bench" / "cases" / "spider_gold_errors.jsonl"
WITHHELD = ("flag", "abstain")
RULES = ("agreement_first", "v3")
SCHEMA = "vouch-real-output/1"
K = 5


def load_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def db_file(datasets: Path, db: str) -> Path:
    for candidate in (datasets / f"{db}.sqlite", datasets / db / f"{db}.sqlite", datasets / db):
        if candidate.is_file():
            return candidate
    raise SystemExit(f"database {db!r} not found under {datasets}")


def alarm_keys(check) -> list[str]:
    """The names a fired check is counted under: its own name, and ``name:finding`` for each
    kind of finding it reports (the keys the severity rule reads: vouchsql.checks.severity)."""
    from vouchsql.checks.severity import finding_keys

    return [check.name] + finding_keys(check)


def vouch_one(path: Path, question: str, candidates: list[str], cache_dir: str, **settings) -> dict:
    """The record of one shown answer: agreement, the score and gate under each rule, the
    fired checks (name, kind, finding keys) and the reported choices."""
    import vouchsql
    from vouchsql.errors import VouchError
    from vouchsql.pipeline.checking import rescore

    try:
        answer = vouchsql.check(str(path), question, candidates, cache_dir=cache_dir, all_choices=False, **settings)
    except VouchError as exc:
        # Refused before any verdict (the gate, a parse error): no answer is shown.
        return {"refused": f"{type(exc).__name__}: {exc}"[:300], "agreement": 0.0,
                "scores": {r: 0.0 for r in RULES}, "gates": {r: "abstain" for r in RULES},
                "checks": [], "choices": []}
    scores, gates = {}, {}
    for rule in RULES:
        v = answer.verdict if rule == answer.verdict.rule else rescore(answer, rule)
        scores[rule], gates[rule] = round(v.score, 4), v.gate
    fired = [{"name": c.name, "kind": c.kind, "keys": alarm_keys(c)}
             for c in answer.checks if c.fired]
    return {"refused": None, "agreement": round(answer.agreement or 0.0, 4), "scores": scores, "gates": gates,
            "checks": fired, "choices": sorted({c.type for c in answer.choices})}


def run_predictions(rows: list[dict], datasets: Path, cache_dir: str, k: int, systems: list[str] | None,
                    progress, **settings) -> list[dict]:
    records = []
    for i, row in enumerate(rows, 1):
        names = [s for s in row["predictions"] if systems is None or s in systems]
        order = list(row["predictions"])  # samples come from every system, shown ones or not
        path = db_file(datasets, row["db"])
        for name in names:
            j = order.index(name)
            others = [order[(j + d) % len(order)] for d in range(1, k)]
            cands = [row["predictions"][name]] + [row["predictions"][o] for o in others]
            rec = vouch_one(path, row["question"], cands, cache_dir, **settings)
            records.append({"id": row["id"], "db": row["db"], "system": name, "samples": others,
                            "correct": bool(row["correct"][name]), **rec})
        progress(i, len(rows), row["id"])
    return records


def run_gold(rows: list[dict], datasets: Path, cache_dir: str, k: int, progress, **settings) -> list[dict]:
    records = []
    for i, row in enumerate(rows, 1):
        rec = vouch_one(db_file(datasets, row["db"]), row["question"], [row["reference_sql"]] * k, cache_dir,
                        **settings)
        records.append({"id": row["id"], "db": row["db"], "system": "gold", "correct": True, **rec})
        progress(i, len(rows), row["id"])
    return records


# --------------------------------------------------------------------------- measuring

def wilson(k: int, n: int) -> list[float | None]:
    from vouchsql.evals.metrics import wilson as _wilson

    return [round(x, 4) for x in _wilson(k, n)] if n else [None, None]


def share(k: int, n: int) -> dict:
    return {"k": k, "n": n, "share": round(k / n, 4) if n else None, "ci95": wilson(k, n)}


def _fired_keys(rec: dict) -> dict[str, str]:
    """Every alarm key of a record with the kind it fired with (choices: ``choice``)."""
    out: dict[str, str] = {}
    for c in rec["checks"]:
        for key in c["keys"]:
            out[key] = c["kind"]
    for t in rec["choices"]:
        out[f"choice:{t}"] = "choice"
    return out


def per_alarm(records: list[dict]) -> list[dict]:
    """Per alarm: firings on right and wrong answers, precision as an error detector overall
    and among A = 1 answers, and the kinds it fired with."""
    stats: dict[str, dict[str, Any]] = defaultdict(lambda: {"right": 0, "wrong": 0, "right_a1": 0, "wrong_a1": 0,
                                                            "kinds": set()})
    for rec in records:
        a1 = rec["agreement"] >= 1.0
        for key, kind in _fired_keys(rec).items():
            s = stats[key]
            side = "right" if rec["correct"] else "wrong"
            s[side] += 1
            if a1:
                s[side + "_a1"] += 1
            s["kinds"].add(kind)
    out = []
    for key, s in sorted(stats.items()):
        n, n1 = s["right"] + s["wrong"], s["right_a1"] + s["wrong_a1"]
        out.append({"alarm": key, "kinds": sorted(s["kinds"]), "fires": n, "on_right": s["right"],
                    "on_wrong": s["wrong"], "precision": share(s["wrong"], n), "fires_a1": n1,
                    "on_right_a1": s["right_a1"], "on_wrong_a1": s["wrong_a1"],
                    "precision_a1": share(s["wrong_a1"], n1)})
    return out


def _question_index(records: list[dict]) -> tuple[np.ndarray, int]:
    """Each record's question number, for resampling questions rather than answers."""
    ids = {q: i for i, q in enumerate(dict.fromkeys(r["id"] for r in records))}
    return np.array([ids[r["id"]] for r in records]), len(ids)


def auroc_table(records: list[dict], replicates: int, seed: int) -> dict:
    """AUROC of agreement alone and of each rule's score, with a paired bootstrap over
    questions of each rule's difference from agreement alone."""
    from vouchsql.evals.metrics import auroc

    y = np.array([r["correct"] for r in records], dtype=bool)
    series = {"agreement": np.array([r["agreement"] for r in records], dtype=float)}
    for rule in RULES:
        series[rule] = np.array([r["scores"][rule] for r in records], dtype=float)
    point = {name: auroc(s, y) for name, s in series.items()}
    q, nq = _question_index(records)
    members = [np.flatnonzero(q == i) for i in range(nq)]
    rng = np.random.default_rng(seed)
    reps: dict[str, list[float]] = {name: [] for name in series}
    for _ in range(replicates):
        pick = np.concatenate([members[i] for i in rng.integers(0, nq, size=nq)])
        yy = y[pick]
        if yy.all() or not yy.any():
            continue
        for name, s in series.items():
            reps[name].append(auroc(s[pick], yy))
    out: dict[str, Any] = {"n_answers": int(y.size), "n_questions": nq, "right": int(y.sum()),
                           "replicates": replicates, "seed": seed}
    base = np.array(reps["agreement"])
    for name in series:
        v = np.array(reps[name])
        entry = {"auroc": round(point[name], 4), "ci95": [round(float(x), 4) for x in np.percentile(v, [2.5, 97.5])]}
        if name != "agreement":
            d = v - base
            entry["minus_agreement"] = round(point[name] - point["agreement"], 4)
            entry["minus_agreement_ci95"] = [round(float(x), 4) for x in np.percentile(d, [2.5, 97.5])]
        out[name] = entry
    return out


def withheld(records: list[dict]) -> dict:
    """Per rule: right and wrong answers withheld, overall and at A = 1."""
    out = {}
    for rule in RULES:
        row = {}
        for label, subset in (("all", records), ("a1", [r for r in records if r["agreement"] >= 1.0])):
            right = [r for r in subset if r["correct"]]
            wrong = [r for r in subset if not r["correct"]]
            row[label] = {"right_withheld": share(sum(r["gates"][rule] in WITHHELD for r in right), len(right)),
                          "wrong_withheld": share(sum(r["gates"][rule] in WITHHELD for r in wrong), len(wrong))}
        out[rule] = row
    return out


def gold_summary(records: list[dict]) -> dict:
    counts: dict[str, int] = defaultdict(int)
    for r in records:
        for key in _fired_keys(r):
            counts[key] += 1
    withheld_ids = [{"id": r["id"], "gate": r["gates"]["agreement_first"],
                     "alarms": sorted(k for k, kind in _fired_keys(r).items() if kind in ("veto", "cap"))}
                    for r in records if r["gates"]["agreement_first"] in WITHHELD]
    return {"withheld": share(len(withheld_ids), len(records)), "alarms": dict(sorted(counts.items())),
            "withheld_answers": withheld_ids}


def summarise(pred: list[dict], gold: list[dict], replicates: int, seed: int, gold_errors: set[str] = frozenset()) -> dict:
    out: dict[str, Any] = {"schema": SCHEMA}
    if pred and gold_errors:
        kept = [r for r in pred if r["id"] not in gold_errors]
        out["without_gold_errors"] = {"questions_left_out": sorted(gold_errors & {r["id"] for r in pred}),
                                      **summarise(kept, [], replicates, seed)}
        out["without_gold_errors"].pop("schema")
    if pred:
        out["auroc"] = auroc_table(pred, replicates, seed)
        out["withheld"] = withheld(pred)
        out["alarms"] = per_alarm(pred)
        out["a1"] = {"answers": sum(r["agreement"] >= 1 for r in pred),
                     "wrong": sum(r["agreement"] >= 1 and not r["correct"] for r in pred)}
    if gold:
        out["gold"] = gold_summary(gold)
    return out


def write_measured(path: str, summary: dict, args) -> None:
    """The per-alarm figures the severity rule reads, with where they came from."""
    alarms = {r["alarm"]: {"fires": r["fires"], "wrong": r["on_wrong"], "fires_a1": r["fires_a1"],
                           "wrong_a1": r["on_wrong_a1"]} for r in summary.get("alarms", [])}
    doc = {"schema": "vouch-measured/1",
           "command": f"python bench/real_output.py --write-measured {path}",
           "data": f"{Path(args.predictions).name}: every system shown in turn with the next K - 1 = {args.k - 1} "
                   f"systems as samples; correct = returns the gold's rows",
           "answers": summary.get("auroc", {}).get("n_answers"), "a1_answers": summary.get("a1", {}).get("answers"),
           "a1_wrong": summary.get("a1", {}).get("wrong"), "alarms": dict(sorted(alarms.items()))}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _ci(c) -> str:
    return "" if c[0] is None else f" [{100 * c[0]:.0f}–{100 * c[1]:.0f}]"


def print_report(s: dict, out=sys.stdout) -> None:
    if "auroc" in s:
        a = s["auroc"]
        print(f"\n{a['n_answers']} shown answers over {a['n_questions']} questions, {a['right']} right", file=out)
        print("| score | AUROC | 95% CI | minus agreement [95% CI] |\n|---|---|---|---|", file=out)
        for name in ("agreement", *RULES):
            e = a[name]
            diff = "" if name == "agreement" else f"{e['minus_agreement']:+.4f} [{e['minus_agreement_ci95'][0]:+.4f}, " \
                                                  f"{e['minus_agreement_ci95'][1]:+.4f}]"
            print(f"| {name} | {e['auroc']:.4f} | {e['ci95'][0]:.4f}–{e['ci95'][1]:.4f} | {diff} |", file=out)
        print(f"\nA = 1: {s['a1']['answers']} answers, {s['a1']['wrong']} wrong", file=out)
        print("| rule | right withheld (all) | wrong withheld (all) | right withheld (A=1) | wrong withheld (A=1) |"
              "\n|---|---|---|---|---|", file=out)
        for rule, w in s["withheld"].items():
            cells = [w[part][side] for part in ("all", "a1") for side in ("right_withheld", "wrong_withheld")]
            print(f"| {rule} | " + " | ".join(f"{_pct(c['share'])} ({c['k']}/{c['n']})" for c in cells) + " |",
                  file=out)
        print("\n| alarm | kind | fires (right/wrong) | precision [95%] | at A=1 (right/wrong) | precision at A=1 [95%] |"
              "\n|---|---|---|---|---|---|", file=out)
        for r in sorted(s["alarms"], key=lambda r: (-r["fires"], r["alarm"])):
            p, p1 = r["precision"], r["precision_a1"]
            print(f"| {r['alarm']} | {'/'.join(r['kinds'])} | {r['fires']} ({r['on_right']}/{r['on_wrong']}) | "
                  f"{_pct(p['share'])}{_ci(p['ci95'])} | {r['fires_a1']} ({r['on_right_a1']}/{r['on_wrong_a1']}) | "
                  f"{_pct(p1['share'])}{_ci(p1['ci95'])} |", file=out)
    if "without_gold_errors" in s:
        w = s["without_gold_errors"]
        print(f"\n## Without the {len(w['questions_left_out'])} questions whose gold is judged wrong "
              f"(bench/cases/spider_gold_errors.jsonl)", file=out)
        print_report(w, out)
    if "gold" in s:
        g = s["gold"]
        w = g["withheld"]
        print(f"\nGold withheld (agreement_first): {_pct(w['share'])} ({w['k']}/{w['n']})", file=out)
        for item in g["withheld_answers"]:
            print(f"  {item['id']}: {item['gate']} {', '.join(item['alarms'])}", file=out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--predictions", default=str(DEFAULT_PREDICTIONS))
    ap.add_argument("--gold", default=str(DEFAULT_GOLD), help="gold cases (reference_sql); '' for none")
    ap.add_argument("--datasets", default=str(DEFAULT_DATASETS))
    ap.add_argument("--gold-errors", default=str(DEFAULT_GOLD_ERRORS),
                    help="JSONL of question ids whose gold is judged wrong ('' for none): also reported without them")
    ap.add_argument("--k", type=int, default=K, help="candidates per shown answer, the shown one included")
    ap.add_argument("--systems", help="comma-separated systems to show (samples still come from all)")
    ap.add_argument("--dbs", help="comma-separated databases to keep")
    ap.add_argument("--replicates", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--records", help="write the per-answer records here (JSONL)")
    ap.add_argument("--from-records", help="measure these records instead of running")
    ap.add_argument("--cache-dir")
    ap.add_argument("--exact-columns", action="store_true",
                    help="the exact_columns setting: a column the question did not ask for caps (Spider's contract)")
    ap.add_argument("--write-measured", metavar="PATH",
                    help="write the per-alarm measurements the severity rule reads (src/vouchsql/checks/measured.json)")
    args = ap.parse_args(argv)

    started = time.time()
    if args.from_records:
        allrec = load_jsonl(args.from_records)
    else:
        dbs = set(args.dbs.split(",")) if args.dbs else None
        systems = args.systems.split(",") if args.systems else None
        datasets = Path(args.datasets)
        cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="vouch-real-output-")

        tty = sys.stderr.isatty()

        def progress(i, n, ident):
            if tty:
                print(f"\r  {i}/{n} {ident}    ", end="" if i < n else "\n", file=sys.stderr, flush=True)
            elif i == n or i % 100 == 0:
                print(f"  {i}/{n} {ident}", file=sys.stderr, flush=True)

        rows = [r for r in load_jsonl(args.predictions) if dbs is None or r["db"] in dbs]
        settings = {"exact_columns": True} if args.exact_columns else {}
        allrec = run_predictions(rows, datasets, cache_dir, args.k, systems, progress, **settings)
        if args.gold:
            grows = [r for r in load_jsonl(args.gold) if dbs is None or r["db"] in dbs]
            allrec += run_gold(grows, datasets, cache_dir, args.k, progress, **settings)
    pred = [r for r in allrec if r["system"] != "gold"]
    gold = [r for r in allrec if r["system"] == "gold"]
    if args.records:
        with open(args.records, "w", encoding="utf-8") as fh:
            for r in allrec:
                fh.write(json.dumps(r, sort_keys=True) + "\n")
    gold_errors = {r["id"] for r in load_jsonl(args.gold_errors)} if args.gold_errors else set()
    summary = summarise(pred, gold, args.replicates, args.seed, gold_errors)
    import vouchsql

    print(f"vouchsql {getattr(vouchsql, '__version__', '?')} from {Path(vouchsql.__file__).parent}; "
          f"{platform.machine()} {os.cpu_count()} CPU, Python {platform.python_version()}; K = {args.k}; "
          f"exact_columns {'on' if args.exact_columns else 'off'}; "
          f"{time.time() - started:.0f} s", file=sys.stderr)
    print_report(summary)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if args.write_measured:
        write_measured(args.write_measured, summary, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
