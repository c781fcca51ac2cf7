#!/usr/bin/env python
"""False alarms on correct SQL: every (question, SQL) pair of a JSONL file is shown as all K = 5
samples (``vouchsql.check(db, question, [sql] * 5)``) and every gate that is not ``pass`` is a
false alarm (the pairs are all correct). Prints, per fired check, how many pairs it fired on,
then the list: the pair, its gate and each fired check with its detail.

    python bench/false_alarms.py                                   # bench/cases/correct_pairs.jsonl
    python bench/false_alarms.py --cases my.jsonl --datasets ../shared/datasets --only question_filters
    python bench/false_alarms.py --json out.json

Fields of a pair: ``id``, ``db`` (a file of --datasets, or ``extra``: the database built by
``bench/cases/build_extra_db.py``), ``question``, ``sql``. Profiles go to a temporary cache.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "cases"))

K = 5
WATCHED = ("question_filters", "question_shape", "join_key_meaning", "reads_no_table", "merged_entities")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=str(ROOT / "bench" / "cases" / "correct_pairs.jsonl"))
    ap.add_argument("--datasets", default=str(ROOT.parent / "shared" / "datasets"))
    ap.add_argument("--only", action="append", help="list only pairs where this check fired")
    ap.add_argument("--ids", action="append", help="only these pair ids (prefix match)")
    ap.add_argument("--json", help="write the records here")
    args = ap.parse_args(argv)

    import vouchsql
    from build_extra_db import build

    pairs = [json.loads(line) for line in open(args.cases, encoding="utf-8") if line.strip()]
    if args.ids:
        pairs = [p for p in pairs if any(p["id"].startswith(i) for i in args.ids)]
    with tempfile.TemporaryDirectory() as tmp:
        extra = build(Path(tmp) / "extra.sqlite")
        records = []
        for p in pairs:
            db = extra if p["db"] == "extra" else Path(args.datasets) / (p["db"] if p["db"].endswith(".sqlite") else p["db"] + ".sqlite")
            try:
                a = vouchsql.check(str(db), p["question"], [p["sql"]] * K, cache_dir=str(Path(tmp) / "cache"),
                                   all_choices=False)
                gate = a.verdict.gate
                fired = [{"name": c.name, "kind": c.kind, "detail": c.detail} for c in a.checks if c.fired]
                err = a.shown.result.error
                err = None if err is None else f"{err.kind}: {err.message}"
            except Exception as exc:  # noqa: BLE001 — report, keep going
                gate, fired, err = "error", [], f"{type(exc).__name__}: {exc}"
            records.append({"id": p["id"], "db": p["db"], "question": p["question"], "sql": p["sql"],
                            "gate": gate, "fired": fired, "error": err})

    gates = Counter(r["gate"] for r in records)
    per_check = Counter(f["name"] for r in records for f in r["fired"])
    print(f"{len(records)} correct pairs; gates: " + ", ".join(f"{g} {n}" for g, n in sorted(gates.items())))
    print("fired on correct SQL, per check (kind):")
    kinds = {f["name"]: f["kind"] for r in records for f in r["fired"]}
    for name in sorted(set(per_check) | set(WATCHED)):
        mark = "*" if name in WATCHED else " "
        print(f"  {mark} {name:<22} {per_check.get(name, 0):>3}  {kinds.get(name, '')}")
    print("\nnot passed:")
    for r in records:
        if r["gate"] == "pass" and not any(f["name"] in WATCHED for f in r["fired"]):
            continue
        if args.only and not any(f["name"] in args.only for f in r["fired"]):
            continue
        print(f"- {r['id']} [{r['gate']}] {r['question']}")
        print(f"    SQL: {r['sql']}")
        if r["error"]:
            print(f"    error: {r['error']}")
        for f in r["fired"]:
            print(f"    {f['name']} ({f['kind']}): {f['detail']}")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
