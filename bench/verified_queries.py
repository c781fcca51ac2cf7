"""Verified queries as evidence, measured on the Spider dev databases (issue 30, item 2).

Each Cortex Analyst semantic model in tests/fixtures/semantic/cortex/ holds verified queries
whose question is the first of a Spider pair. bench/cases/verified_pairs.jsonl pairs each with
the other phrasing of the same request ("match") and with questions on the same database that
share words but ask something else ("no_match"). For each pair, Vouch checks the question's
Spider gold SQL (a right answer) and every distinct SQL the nine published systems predicted
for it that Spider labels wrong, plus the confident errors bench/plant.py plants in its gold SQL
(one per kind: a flipped sort, an off-by-one, a dropped condition, a wrong aggregate …, each
kept only where the rows change), with the model as the definitions, and reports:

- match pairs: whether the question matched its verified query, whether each wrong candidate
  was withheld naming it, and whether the right one agreed and passed;
- no_match pairs: whether the question matched any verified query (it should not).

Two more sets were written by testers from the published Cortex format, over databases the
reading was not tuned on when they were written (its qualifiers were tuned on them after):
bench/cases/verified_narrower.jsonl (Northwind, model bench/cases/northwind_cortex.yaml) holds
questions narrower than a verified query — a filter of the model ("shipped late", "unshipped",
"discounted"), a period ("last year"), another value or number — each answered by SQL that
reads the narrower condition, so its rows differ from the verified query's: the check must not
withhold it in the verified query's name. bench/cases/verified_sakila.jsonl (Sakila, model
bench/cases/sakila_cortex.yaml) holds paraphrases with a right and a wrong answer, narrower
questions with a right answer, and look-alikes. Both report what the check withheld.

    python bench/verified_queries.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def measure(models: Path, pairs_file: Path, datasets: Path, cases: Path, predictions: Path) -> dict:
    import vouchsql

    sys.path.insert(0, str(ROOT / "bench"))
    from plant import plant_case

    by_id = {c["id"]: c for c in _lines(cases)}
    gold = {i: c["reference_sql"] for i, c in by_id.items()}
    wrong = {}
    for rec in _lines(predictions):
        wrong[rec["id"]] = sorted({sql for name, sql in rec["predictions"].items()
                                   if rec["correct"].get(name) is False and sql and sql.strip()})
    rows = []
    for pair in _lines(pairs_file):
        db_path = datasets / f"{pair['db']}.sqlite"
        model = models / f"{pair['db']}.yaml"
        settings = {"definitions": str(model)}

        def verdict(sql: str):
            answer = vouchsql.check(str(db_path), pair["question"], [sql], **settings)
            vq = next(c for c in answer.checks if c.name == "verified_query")
            return answer, vq

        right, right_vq = verdict(gold[pair["id"]])
        matched = right_vq.evidence.get("name")
        row = {**pair, "matched": matched, "strength": right_vq.evidence.get("strength"),
               "right_agrees": right_vq.evidence.get("agrees"), "right_fired": right_vq.fired,
               "right_gate": right.verdict.gate, "wrong": []}
        planted = [(p["sql"], f"planted {p['kind']}") for p in plant_case(by_id[pair["id"]], db_path)]
        for sql, source in [(sql, "predicted") for sql in wrong.get(pair["id"], [])] + planted:
            answer, vq = verdict(sql)
            row["wrong"].append({"sql": sql, "source": source, "fired": vq.fired, "kind": vq.kind,
                                 "named": vq.evidence.get("name"), "agrees": vq.evidence.get("agrees"),
                                 "gate": answer.verdict.gate})
        rows.append(row)
    return {"pairs": rows}


def held_out(model: Path, cases: Path, db: Path) -> list[dict]:
    """Each case of a tester's set checked with its model: whether ``verified_query`` withheld
    it (fired), how (kind), and which verified query it named."""
    import vouchsql

    out = []
    for case in _lines(cases):
        answer = vouchsql.check(str(db), case["question"], [case["sql"]], definitions=str(model))
        vq = next(c for c in answer.checks if c.name == "verified_query")
        out.append({**case, "kind": case.get("kind", "narrow_right"), "fired": vq.fired, "severity": vq.kind,
                    "named": vq.evidence.get("name")})
    return out


def held_out_summary(rows: list[dict]) -> dict:
    def count(kind: str, test) -> str:
        mine = [r for r in rows if r["kind"] == kind]
        return f"{sum(test(r) for r in mine)}/{len(mine)}"

    return {
        "paraphrase_right_withheld": count("para_right", lambda r: r["fired"]),
        "paraphrase_right_matched": count("para_right", lambda r: r["named"] == r.get("verified")),
        "paraphrase_wrong_withheld": count("para_wrong", lambda r: r["fired"] and r["named"] == r.get("verified")),
        "narrower_right_withheld": count("narrow_right", lambda r: r["fired"]),
        "narrower_right_vetoed": count("narrow_right", lambda r: r["fired"] and r["severity"] == "veto"),
        "lookalike_matched": count("lookalike_right", lambda r: r["named"] is not None),
    }


def summary(rows: list[dict]) -> dict:
    match = [r for r in rows if r["expect"] == "match"]
    other = [r for r in rows if r["expect"] == "no_match"]
    wrong = [w for r in match if r["matched"] == r["verified"] for w in r["wrong"]]
    return {
        "match_pairs": len(match),
        "matched_right_query": sum(r["matched"] == r["verified"] for r in match),
        "matched_another_query": sum(bool(r["matched"]) and r["matched"] != r["verified"] for r in match),
        "no_match_pairs": len(other),
        "no_match_matched": sum(bool(r["matched"]) for r in other),
        "right_candidates_agree": sum(bool(r["right_agrees"]) for r in match if r["matched"] == r["verified"]),
        "right_candidates_fired": sum(r["right_fired"] for r in rows),
        "wrong_candidates_on_matched": len(wrong),
        "wrong_withheld_naming_it": sum(bool(w["fired"] and w["gate"] != "pass" and w["named"]) for w in wrong),
        "wrong_same_rows_as_verified": sum(bool(w["agrees"]) for w in wrong),
        "vetoed": sum(w["fired"] and w["kind"] == "veto" for w in wrong),
        "wrong_candidates_on_unmatched": sum(len(r["wrong"]) for r in match if r["matched"] != r["verified"]),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=Path, default=ROOT / "tests/fixtures/semantic/cortex")
    ap.add_argument("--pairs", type=Path, default=ROOT / "bench/cases/verified_pairs.jsonl")
    ap.add_argument("--datasets", type=Path, default=SHARED / "datasets/spider")
    ap.add_argument("--cases", type=Path, default=SHARED / "cases/spider_dev_part.jsonl")
    ap.add_argument("--predictions", type=Path, default=SHARED / "cases/spider_predictions_dev.jsonl")
    ap.add_argument("--held-out", nargs=3, action="append", metavar=("MODEL", "CASES", "DB"),
                    help="a tester's set: its Cortex model, its cases (JSONL) and its database; "
                         "default: the Northwind and Sakila sets in bench/cases")
    ap.add_argument("--out", type=Path, help="write every pair's outcome here (JSON)")
    ap.add_argument("--markdown", action="store_true", help="print the per-pair table as Markdown")
    args = ap.parse_args(argv)
    got = measure(args.models, args.pairs, args.datasets, args.cases, args.predictions)
    rows = got["pairs"]
    sets = args.held_out or [
        (ROOT / "bench/cases/northwind_cortex.yaml", ROOT / "bench/cases/verified_narrower.jsonl",
         SHARED / "datasets/northwind.sqlite"),
        (ROOT / "bench/cases/sakila_cortex.yaml", ROOT / "bench/cases/verified_sakila.jsonl",
         SHARED / "datasets/sakila.sqlite")]
    got["held_out"] = {Path(cases).stem: held_out(Path(model), Path(cases), Path(db)) for model, cases, db in sets}
    if args.out:
        args.out.write_text(json.dumps(got, indent=1), encoding="utf-8")
    if args.markdown:
        print("| question | expect | verified query | matched | strength | right answer | wrong answers withheld |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            caught = sum(w["fired"] and w["gate"] != "pass" for w in r["wrong"])
            right = "agrees" if r["right_agrees"] else ("fired" if r["right_fired"] else "—")
            print(f"| {r['id']}: {r['question']} | {r['expect']} | {r['verified']} | {r['matched'] or '—'} | "
                  f"{r['strength'] or '—'} | {right} | {caught}/{len(r['wrong'])} |")
        print()
    if args.markdown:
        for name, cases in got["held_out"].items():
            print(f"| {name}: question | kind | verified query named | withheld by it |")
            print("|---|---|---|---|")
            for n in cases:
                print(f"| {n['question']} | {n['kind']} | {n['named'] or '—'} | {n['severity'] if n['fired'] else 'no'} |")
            print()
    for key, value in summary(rows).items():
        print(f"{key}: {value}")
    for name, cases in got["held_out"].items():
        for key, value in held_out_summary(cases).items():
            if value.endswith("/0"):
                continue
            print(f"{name}.{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
