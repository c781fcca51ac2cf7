#!/usr/bin/env python
"""Plant confident errors in human-written SQL, automatically (issue 26: "your own planting tool").

Not a test. Reads a case file of question/gold pairs (``id``, ``db``, ``question``,
``reference_sql``: the format of ``../shared/cases/``) and writes the same cases with a
``planted`` list of realistic wrong versions of each reference, of the kinds
``bench/confident_errors.py`` measures, each made by one edit of the parsed SQL (sqlglot):

- ``sort_direction``: the first ORDER BY key's direction flipped (ASC ↔ DESC);
- ``off_by_one``: a strict comparison with a number made inclusive or the reverse (``>`` ↔
  ``>=``, ``<`` ↔ ``<=``), or a LIMIT of n made n + 1;
- ``drop_condition``: one conjunct of a WHERE or HAVING left out;
- ``wrong_aggregate``: MAX ↔ MIN, SUM ↔ AVG;
- ``count_unit``: ``COUNT(DISTINCT x)`` ↔ ``COUNT(*)``;
- ``wrong_join_key``: one side of an equi-join replaced by another column of the same table
  whose name also ends in ``id`` (a key of another entity);
- ``wrong_table``: a table replaced by another table of the database that has every column
  the query reads from it (so the SQL still runs).

Only a plant that runs and returns another result than the reference (compared as agreement
compares results) is kept: an edit that changes nothing is no error. At most one plant of each
kind per case, the first edit in tree order that qualifies; deterministic.

    python bench/plant.py --cases ../shared/cases/spider_dev_part.jsonl \\
        --datasets ../shared/datasets/spider --out spider_planted.jsonl
    python bench/confident_errors.py --cases spider_planted.jsonl --datasets ../shared/datasets/spider \\
        --only planted
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Iterator

from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1]


def _copies(tree: exp.Expression, kind) -> Iterator[tuple[exp.Expression, exp.Expression]]:
    """(copy of the tree, the node in that copy) for each node of ``kind``, in tree order."""
    n = sum(1 for _ in tree.find_all(kind))
    for i in range(n):
        t = tree.copy()
        yield t, list(t.find_all(kind))[i]


def sort_direction(tree):
    for t, o in _copies(tree, exp.Ordered):
        o.set("desc", not o.args.get("desc"))
        yield t


_FLIP = {exp.GT: exp.GTE, exp.GTE: exp.GT, exp.LT: exp.LTE, exp.LTE: exp.LT}


def off_by_one(tree):
    for cls, other in _FLIP.items():
        for t, node in _copies(tree, cls):
            if isinstance(node.expression, exp.Literal) and not node.expression.is_string:
                node.replace(other(this=node.this.copy(), expression=node.expression.copy()))
                yield t
    for t, lim in _copies(tree, exp.Limit):
        n = lim.expression
        if isinstance(n, exp.Literal) and n.is_int:
            lim.set("expression", exp.Literal.number(int(n.this) + 1))
            yield t


def drop_condition(tree):
    """Each conjunct of an AND in a WHERE or HAVING left out in turn (the right one, then the
    left); a WHERE of one condition left out whole."""
    for t, where in _copies(tree, exp.Where):
        if not isinstance(where.this, exp.And):
            where.pop()
            yield t
    for keep in ("this", "expression"):
        for t, node in _copies(tree, exp.And):
            if node.find_ancestor(exp.Where, exp.Having) is None:
                continue
            node.replace(node.args[keep].copy())
            yield t


def wrong_aggregate(tree):
    swaps = {exp.Max: exp.Min, exp.Min: exp.Max, exp.Sum: exp.Avg, exp.Avg: exp.Sum}
    for cls, other in swaps.items():
        for t, node in _copies(tree, cls):
            node.replace(other(this=node.this.copy()))
            yield t


def count_unit(tree):
    for t, node in _copies(tree, exp.Count):
        if isinstance(node.this, exp.Distinct):
            node.set("this", exp.Star())
            yield t
        elif isinstance(node.this, exp.Star):
            continue


def wrong_join_key(tree, schema: dict[str, list[str]]):
    """One side of a column = column equality (a join) set to another column of its table whose
    name also ends in ``id``."""
    n = sum(1 for _ in tree.find_all(exp.EQ))
    for i in range(n):
        eq = list(tree.find_all(exp.EQ))[i]
        if not (isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Column)):
            continue
        for side in ("this", "expression"):
            col = eq.args[side]
            table = _table_of(tree, col)
            other = next((c for c in schema.get((table or "").lower(), [])
                          if c.lower() != col.name.lower() and c.lower().endswith("id")), None)
            if other is None:
                continue
            t = tree.copy()
            list(t.find_all(exp.EQ))[i].args[side].set("this", exp.to_identifier(other))
            yield t


def _table_of(tree, col: exp.Column) -> str | None:
    tables = {(t.alias_or_name or "").lower(): t.name for t in tree.find_all(exp.Table)}
    if col.table:
        return tables.get(col.table.lower())
    return next(iter(tables.values())) if len(tables) == 1 else None


def wrong_table(tree, schema: dict[str, list[str]]):
    for t, table in _copies(tree, exp.Table):
        used = {c.name.lower() for c in t.find_all(exp.Column)
                if not c.table or c.table.lower() == (table.alias_or_name or "").lower()}
        for other, cols in sorted(schema.items()):
            if other == table.name.lower():
                continue
            if used and used <= {c.lower() for c in cols}:
                t2 = t.copy()
                list(t2.find_all(exp.Table))[list(t.find_all(exp.Table)).index(table)].set(
                    "this", exp.to_identifier(other))
                yield t2
                break


KINDS: dict[str, Callable] = {"wrong_join_key": wrong_join_key, "drop_condition": drop_condition,
                              "wrong_aggregate": wrong_aggregate, "sort_direction": sort_direction,
                              "off_by_one": off_by_one, "wrong_table": wrong_table, "count_unit": count_unit}
NEEDS_SCHEMA = {"wrong_join_key", "wrong_table"}


def plant_case(case: dict, path: Path) -> list[dict]:
    import sqlglot

    from vouchsql.agreement import results_match

    import vouchsql

    out = []
    with vouchsql.connect(str(path), cache_dir=None) as db:
        schema = {t.name.lower(): [c.name for c in t.columns] for t in db.schema()}
        try:
            tree = sqlglot.parse_one(case["reference_sql"], read=db.dialect)
        except sqlglot.errors.ParseError:
            return out
        ref = db.execute(case["reference_sql"])
        if not ref.ok:
            return out
        for kind, make in KINDS.items():
            edits = make(tree, schema) if kind in NEEDS_SCHEMA else make(tree)
            for edited in edits:
                sql = edited.sql(dialect=db.dialect)
                got = db.execute(sql)
                if got.ok and not results_match(ref, got).matched:
                    out.append({"kind": kind, "sql": sql, "description": f"{kind} planted by bench/plant.py"})
                    break
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=str(ROOT.parent / "shared" / "cases" / "spider_dev_part.jsonl"))
    ap.add_argument("--datasets", default=str(ROOT.parent / "shared" / "datasets" / "spider"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    n_cases = n_plants = 0
    with open(args.cases, encoding="utf-8") as fh, open(args.out, "w", encoding="utf-8") as out:
        for line in fh:
            if not line.strip():
                continue
            case = json.loads(line)
            path = Path(args.datasets) / f"{case['db']}.sqlite"
            planted = plant_case(case, path)
            keep = {k: case[k] for k in ("id", "db", "question", "reference_sql")}
            keep.update(reference_is_wrong=None, judgement={}, planted=planted)
            out.write(json.dumps(keep) + "\n")
            n_cases += 1
            n_plants += len(planted)
    print(f"{n_cases} cases, {n_plants} plants written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
