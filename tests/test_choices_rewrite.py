"""SQL-to-SQL goldens for the detectors' pure parts, with no database: for each case of
tests/choices_rewrite/<type>.yaml, in every dialect an engine of Vouch speaks (SQLite, DuckDB,
PostgreSQL, MySQL/MariaDB), the detector's ``sites`` read the shown SQL against a hand-written
profile (tests/choices_rewrite/profile.yaml), and ``rewrite`` must give exactly the expected
SQL, which must parse back in that dialect to the same text. In the other dialects the gate
maps (T-SQL, Snowflake, BigQuery) the same sites must be found and their rewrites parse back.

A case is ``{title, question, sql, shown?, facts?, expect}``:

- ``sql``: the shown SQL as written for SQLite; for another dialect it is transpiled first;
- ``shown``: the shown result (``columns``, ``rows``, ``truncated``) where a detector reads it
  (ties read the value at the cut-off); by default no rows;
- ``facts``: the named facts a detector asks for instead of running a probe (the rows on a
  boundary, the NULLs in scope, the rows around a cut-off); every fact given must be asked;
- ``expect``: one entry per site, in order (``[]``: the detector reads nothing here), with
  ``form``, ``sql`` (SQLite's text; another dialect expects it transpiled), an override per
  dialect where that dialect's rewrite is written differently (``postgres: …``), and
  ``settled_by`` where the detector reads settling words itself.

The rewrite must leave the shown tree untouched, and nothing may be run. The input SQL is
transpiled from SQLite's, so a dialect's expected text can differ for the input's sake too
(sqlglot writes SQLite's ``a / b`` as ``a / NULLIF(b, 0)`` for DuckDB and PostgreSQL, and an
ORDER BY for PostgreSQL with ``NULLS LAST``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot
import yaml

from vouchsql.answer import Result
from vouchsql.choices import CHOICES, ChoiceContext
from vouchsql.db.profile import ColumnProfile, ForeignKey, Profile, TableProfile
from vouchsql.sql.gate import parse_one_select

HERE = Path(__file__).parent / "choices_rewrite"
DIALECTS = ("sqlite", "duckdb", "postgres", "mysql")
DETECTORS = {d.type: d for d in CHOICES}
CASE_KEYS = {"title", "question", "sql", "shown", "facts", "expect"}
EXPECT_KEYS = {"form", "sql", "settled_by"} | set(DIALECTS)


def hand_written_profile(spec: dict) -> Profile:
    tables = []
    for name, t in spec.items():
        columns = []
        for col, c in t["columns"].items():
            c = {"type": c} if isinstance(c, str) else c
            columns.append(ColumnProfile(name=col, type=c["type"], null_count=c.get("nulls", 0),
                                         distinct_count=c.get("distinct", 0), min=c.get("min"), max=c.get("max"),
                                         top_values=[tuple(v) for v in c.get("top", [])]))
        fks = [ForeignKey(columns=[col], ref_table=ref.split(".")[0], ref_columns=[ref.split(".")[1]])
               for col, ref in (t.get("fk") or {}).items()]
        tables.append(TableProfile(name=name, row_count=t["rows"], primary_key=[t["key"]] if t.get("key") else [],
                                   foreign_keys=fks, columns=columns))
    return Profile(engine="none", target="hand-written", identity="hand-written", tables=tables)


PROFILE = hand_written_profile(yaml.safe_load((HERE / "profile.yaml").read_text(encoding="utf-8")))


class Facts(dict):
    """The facts a case gives, remembering which ones the detector asked for."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.asked: set[str] = set()

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)


# Dialects the statement gate maps an engine name to, but with no engine Vouch is tested on:
# the same sites must be found and their rewrites must parse back; the text is not pinned
# (sqlglot writes SQLite's COUNT as T-SQL's COUNT_BIG, and so on). Known gaps, strict xfails.
OTHER_DIALECTS = ("tsql", "snowflake", "bigquery")
OTHER_GAPS = {("tsql", "ties", "a page of the ranking (LIMIT k OFFSET m) tied at its bottom keeps the rows between "
               "its first and last values"): "T-SQL writes a page as OFFSET … FETCH NEXT, which ties does not read"}


def _cases(dialects=DIALECTS, gaps=None):
    for path in sorted(HERE.glob("*.yaml")):
        if path.stem == "profile":
            continue
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            for dialect in dialects:
                why = (gaps or {}).get((dialect, path.stem, case["title"]))
                marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
                yield pytest.param(path.stem, dialect, case, id=f"{path.stem}: {case['title']} [{dialect}]",
                                   marks=marks)


def in_dialect(sql: str, dialect: str) -> str:
    return sql if dialect == "sqlite" else sqlglot.transpile(sql, read="sqlite", write=dialect)[0]


def rewrites(kind: str, case: dict, dialect: str) -> tuple[list, Facts]:
    """(form, rewritten SQL, settled_by) for every site the detector finds, in ``dialect``."""
    sql = in_dialect(case["sql"], dialect)
    tree = parse_one_select(sql, dialect)
    before = tree.sql(dialect=dialect)
    shown = case.get("shown") or {}
    rows = shown.get("rows", [])
    result = Result(columns=shown.get("columns", []), rows=rows, row_count=len(rows),
                    truncated=shown.get("truncated", False))
    facts = Facts(case.get("facts") or {})
    ctx = ChoiceContext(question=case["question"], db=None, profile=PROFILE, sql=sql, result=result, tree=tree,
                        all_choices=True, dialect_name=dialect, facts=facts)
    detector = DETECTORS[kind]
    out = []
    for site in detector.sites(ctx):
        alt = detector.rewrite(tree, site)
        assert alt is not None, (site.form, "the site's rewrite could not be built")
        out.append((site.form, alt.sql(dialect=dialect), site.settled_by))
        # The wording needs only the site and two results (here the shown one twice).
        text = detector.describe(site, result, result)
        assert isinstance(text, str) and text
    assert tree.sql(dialect=dialect) == before, "the rewrite changed the shown tree"
    assert ctx.queries == 0
    return out, facts


def test_fixture_files_cover_every_detector():
    files = {p.stem for p in HERE.glob("*.yaml")} - {"profile"}
    assert files == set(DETECTORS)
    for path in HERE.glob("*.yaml"):
        if path.stem == "profile":
            continue
        cases = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert any(c["expect"] for c in cases), f"{path.stem}: no case with a site"
        assert any(not c["expect"] for c in cases), f"{path.stem}: no case without one"
        for c in cases:
            assert set(c) <= CASE_KEYS, (path.stem, c["title"], set(c) - CASE_KEYS)
            for e in c["expect"]:
                assert set(e) <= EXPECT_KEYS, (path.stem, c["title"], set(e) - EXPECT_KEYS)


@pytest.mark.parametrize("kind, dialect, case", list(_cases()))
def test_rewrite(kind, dialect, case):
    found, facts = rewrites(kind, case, dialect)
    want = [(e["form"], e[dialect] if dialect in e else in_dialect(e["sql"], dialect), e.get("settled_by"))
            for e in case["expect"]]
    assert found == want
    assert set(case.get("facts") or {}) <= facts.asked, "a fact the detector never asked for"
    for _, sql, _ in found:
        # It parses back in the dialect to the same statement (spacing aside: sqlglot prints a
        # built ``ANY(SELECT …)`` and a parsed ``ANY (SELECT …)``).
        again = sqlglot.parse_one(sql, read=dialect).sql(dialect=dialect)
        assert _unspaced(again) == _unspaced(sql), "the rewritten SQL does not read back the same"


@pytest.mark.parametrize("kind, dialect, case", list(_cases(OTHER_DIALECTS, OTHER_GAPS)))
def test_rewrite_in_other_dialects(kind, dialect, case):
    found, _ = rewrites(kind, case, dialect)
    assert [(form, settled) for form, _, settled in found] == \
        [(e["form"], e.get("settled_by")) for e in case["expect"]]
    for _, sql, _ in found:
        again = sqlglot.parse_one(sql, read=dialect).sql(dialect=dialect)
        assert _unspaced(again) == _unspaced(sql), "the rewritten SQL does not read back the same"


def _unspaced(sql: str) -> str:
    return re.sub(r"\s+", "", sql)
