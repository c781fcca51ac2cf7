"""The golden check and choice cases (tests/fixtures/checks, tests/fixtures/choices) on
DuckDB, PostgreSQL and MariaDB, with the same expectations as on SQLite.

Once per session the shared SQLite databases (chinook, sakila, northwind and the demo
database) are copied to a DuckDB file each, a PostgreSQL schema each (in db ``test``) and a
MariaDB database each — names, keys and types as :mod:`engine_copies` describes — and
dropped at the end. Each case's SQL is carried from SQLite's dialect to the engine's with
sqlglot (:func:`engine_copies.to_dialect`: every identifier quoted with the copy's exact
spelling) and run through the public ``vouchsql.check`` / the detectors, as
tests/test_checks.py and tests/test_choices.py run them on SQLite.

An engine whose server (or the duckdb package) is missing is skipped with the reason. A case
that legitimately differs on one engine says so itself, in the fixture, under ``"engines"``::

    "engines": {"duckdb": {"fails": "group_by_key"},
                "postgresql": {"expect": {"fired": false, "evidence": {"tables": ["Track"]}}}}

``"fails"`` names a reason of tests/fixtures/engine_reasons.json (key -> the reason's text,
written once there): the case runs as a strict xfail on that engine (so it fails loudly once it
passes), with the reason ``"<engine>: <text>"``. ``"expect"`` replaces the case's ``expect`` on
that engine (a check case's object, a choice case's list). An engine that does not run the
case's suite, a reason key that is not defined, an unknown key or an entry with both is an
error when this module is collected. Nothing is skipped wholesale. The other readers of the
fixtures (tests/test_checks.py, tests/test_choices.py, tests/test_determinism.py) run on SQLite
and ignore ``"engines"``.

Why the expects differ: table names are case-sensitive on PostgreSQL (quoted) and MariaDB
(``lower_case_table_names = 0``), so a user there writes the table's own spelling and that is
the name missing_table lists; the servers' copies live in a schema (a database on MariaDB) not
named main, so ``main.customers`` names a table they do not have; Northwind's dates are text in
SQLite (``'1997-12-31 00:00:00.000'`` sorts after ``'1997-12-31'``) and timestamps on the
copies, where midnight equals the date-only bound; a padded ``CHAR(20)`` equals ``'English'`` on
PostgreSQL and MariaDB (whose default collation also ignores case), so unmatched_literal stays
silent; and ``ORDER BY n LIMIT 1`` among tied empty playlists keeps any one row on the servers.

Comparing results across engines, a timestamp's ISO ``T`` is read as SQLite's space
(``2006-02-14T15:16:03`` = ``2006-02-14 15:16:03``): the engines hand back datetime objects
where SQLite hands back its stored text.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import vouchsql
from conftest import MARIADB_URL, PG_URL
from engine_copies import (Source, copy_to_duckdb, copy_to_mariadb, copy_to_postgres, read_source, spark_table_name,
                          to_dialect, to_sqlite)
from test_checks import assert_golden
from vouchsql.agreement import results_match
from vouchsql.choices import CHOICES, ChoiceContext, detect_choices, reported, run_detectors

FIXTURES = Path(__file__).parent / "fixtures"
ENGINES = ("duckdb", "postgresql", "mariadb", "spark")
# Spark runs the check cases only: its detectors' alternatives are the same SQL edits the
# other engines run, and a local Spark's ~0.1 s a query would double the suite's time.
SUITE_ENGINES = {"checks": ENGINES, "choices": ("duckdb", "postgresql", "mariadb")}
DIALECTS = {"duckdb": "duckdb", "postgresql": "postgres", "mariadb": "mysql", "spark": "spark"}
DB_NAMES = ("chinook", "sakila", "northwind", "demo")
DETECTORS = {d.type: d for d in CHOICES}

# -- the expected differences ---------------------------------------------------------------
# Each case's "engines" (see the module docstring); the reasons' texts by key.
REASONS: dict[str, str] = json.loads((FIXTURES / "engine_reasons.json").read_text(encoding="utf-8"))
ENGINE_ENTRY_KEYS = {"fails", "expect"}


class FixtureError(ValueError):
    """A golden case's "engines" names an engine, a reason or a key this module does not know."""


def _check_engines(suite: str, name: str, case: dict) -> None:
    """Raise :class:`FixtureError` unless ``case["engines"]`` (when present) is well formed."""
    where = f"tests/fixtures/{suite}/{name}.json: {case.get('title')!r}: \"engines\""
    engines = case.get("engines")
    if engines is None:
        return
    if not isinstance(engines, dict) or not engines:
        raise FixtureError(f"{where} must be a non-empty object (engine -> entry), got {engines!r}")
    for engine, entry in engines.items():
        if engine not in SUITE_ENGINES[suite]:
            raise FixtureError(f"{where}: unknown engine {engine!r}: the {suite} cases run on "
                               f"{', '.join(SUITE_ENGINES[suite])}")
        if not isinstance(entry, dict) or not entry:
            raise FixtureError(f"{where}: {engine}: the entry must be a non-empty object, got {entry!r}")
        unknown = set(entry) - ENGINE_ENTRY_KEYS
        if unknown:
            raise FixtureError(f"{where}: {engine}: unknown key(s) {sorted(unknown)} (known: fails, expect)")
        if len(entry) > 1:
            raise FixtureError(f"{where}: {engine}: give either \"fails\" or \"expect\", not both")
        if "fails" in entry and (not isinstance(entry["fails"], str) or entry["fails"] not in REASONS):
            raise FixtureError(f"{where}: {engine}: unknown reason {entry['fails']!r}: not a key of "
                               f"tests/fixtures/engine_reasons.json ({', '.join(sorted(REASONS))})")


def _xfails(engine: str, case: dict):
    entry = case.get("engines", {}).get(engine, {})
    return [pytest.mark.xfail(strict=True, reason=f"{engine}: {REASONS[entry['fails']]}")] if "fails" in entry else []


def _on_engine(engine: str, case: dict) -> dict:
    """The case as it is expected on ``engine``: its own "expect" there, when it gives one."""
    entry = case.get("engines", {}).get(engine, {})
    return {**case, "expect": entry["expect"]} if "expect" in entry else case


# -- the copies -----------------------------------------------------------------------------

@dataclass
class Copies:
    engine: str
    dialect: str
    targets: dict[str, str]
    sources: dict[str, Source]
    cache_dir: str
    notes: dict[str, list[str]] = field(default_factory=dict)
    opened: dict = field(default_factory=dict)

    def db(self, name: str):
        """One open connection per database for the session."""
        if name not in self.opened:
            self.opened[name] = vouchsql.connect(self.targets[name], cache_dir=self.cache_dir)
        return self.opened[name]

    def sql(self, name: str, sql: str) -> str:
        return to_dialect(sql, self.dialect, self.sources[name])

    def close(self) -> None:
        for db in self.opened.values():
            db.close()
        self.opened.clear()


@pytest.fixture(scope="session")
def golden_sources(datasets_dir, demo_db) -> dict[str, Source]:
    paths = {name: datasets_dir / f"{name}.sqlite" for name in DB_NAMES if name != "demo"}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        pytest.skip(f"sample databases absent: {', '.join(missing)}")
    paths["demo"] = demo_db
    return {name: read_source(path) for name, path in paths.items()}


def _token() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def duckdb_copies(golden_sources, tmp_path_factory):
    pytest.importorskip("duckdb", reason="DuckDB is not installed (pip install 'vouchsql[duckdb]')")
    folder = tmp_path_factory.mktemp("golden_duckdb")
    targets, notes = {}, {}
    for name, source in golden_sources.items():
        path = folder / f"{name}.duckdb"
        notes[name] = copy_to_duckdb(source, path)
        targets[name] = str(path)
    copies = Copies("duckdb", "duckdb", targets, golden_sources, str(tmp_path_factory.mktemp("golden_duckdb_cache")),
                    notes)
    yield copies
    copies.close()


@pytest.fixture(scope="session")
def postgresql_copies(golden_sources, tmp_path_factory):
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'vouchsql[postgres]')")
    pytest.importorskip("sqlalchemy")
    try:
        raw = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True,
                              connect_timeout=3)
    except psycopg.Error as exc:
        pytest.skip(f"PostgreSQL is not reachable at {PG_URL}: {str(exc).strip().splitlines()[0]}")
    token = _token()
    schemas = {name: f"vouch_golden_{name}_{token}" for name in golden_sources}
    copies = Copies("postgresql", "postgres", {}, golden_sources,
                    str(tmp_path_factory.mktemp("golden_pg_cache")))
    try:
        for name, source in golden_sources.items():
            copies.notes[name] = copy_to_postgres(source, raw, schemas[name])
            copies.targets[name] = f"{PG_URL}?options=-csearch_path%3D{schemas[name]}"
        raw.execute("RESET search_path")
        yield copies
    finally:
        copies.close()
        for schema in schemas.values():
            raw.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        raw.close()


@pytest.fixture(scope="session")
def mariadb_copies(golden_sources, tmp_path_factory):
    pymysql = pytest.importorskip("pymysql", reason="PyMySQL is not installed (pip install 'vouchsql[mysql]')")
    pytest.importorskip("sqlalchemy")
    try:
        raw = pymysql.connect(host="127.0.0.1", port=3306, user="root", database="test", autocommit=True,
                              connect_timeout=3)
    except pymysql.Error as exc:
        pytest.skip(f"MariaDB/MySQL is not reachable at {MARIADB_URL}: {exc}")
    token = _token()
    names = {name: f"vouch_golden_{name}_{token}" for name in golden_sources}
    copies = Copies("mariadb", "mysql", {}, golden_sources, str(tmp_path_factory.mktemp("golden_mariadb_cache")))
    cur = raw.cursor()
    try:
        for name, source in golden_sources.items():
            copies.notes[name] = copy_to_mariadb(source, cur, names[name])
            copies.targets[name] = MARIADB_URL.rsplit("/", 1)[0] + "/" + names[name]
        yield copies
    finally:
        copies.close()
        for database in names.values():
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        raw.close()


@pytest.fixture(scope="session")
def spark_copies(golden_sources, tmp_path_factory):
    """Each database as a Spark database of Parquet tables in the tests' local session
    (tests/spark_local.py: one per process, shared with tests/test_spark.py), opened as
    ``spark-local://?database=…``."""
    import spark_local

    try:
        spark_local.session()
    except spark_local.Unavailable as exc:
        pytest.skip(f"Spark: {exc}")
    copies = Copies("spark", "spark", {}, golden_sources, str(tmp_path_factory.mktemp("golden_spark_cache")))
    for name, source in golden_sources.items():
        copies.targets[name] = f"spark-local://?database={spark_local.shared_copy(name, source)}"
        copies.notes[name] = spark_local.notes(name)
    yield copies
    copies.close()


@pytest.fixture
def copies(request, engine) -> Copies:
    return request.getfixturevalue(f"{engine}_copies")


# -- the cases ------------------------------------------------------------------------------

def _load(suite: str) -> list[tuple[str, dict]]:
    cases = [(path.stem, case) for path in sorted((FIXTURES / suite).glob("*.json"))
             for case in json.loads(path.read_text(encoding="utf-8"))]
    for name, case in cases:
        _check_engines(suite, name, case)
    return cases


# On Spark, the first SPARK_CASES_PER_FILE cases of each check file run by default (a local
# Spark answers a query in ~0.1-0.3 s, so all 256 take several minutes); VOUCH_SPARK_GOLDEN=all
# runs every one (bench/README.md, section spark, has the last full run).
SPARK_CASES_PER_FILE = 3


def _spark_selected(name: str, index: int) -> bool:
    return os.environ.get("VOUCH_SPARK_GOLDEN", "").lower() == "all" or index < SPARK_CASES_PER_FILE


def _params(suite: str):
    for engine in SUITE_ENGINES[suite]:
        seen: Counter = Counter()
        for name, case in _load(suite):
            seen[name] += 1
            if engine == "spark" and not _spark_selected(name, seen[name] - 1):
                continue
            yield pytest.param(engine, name, case, id=f"{engine}: {name}: {case['title']}",
                               marks=_xfails(engine, case))


_ISO = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)$")


def _norm(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return round(float(value), 6)
    if isinstance(value, str):
        return _ISO.sub(r"\1 \2", value)
    return value


def _rows(rows) -> Counter:
    return Counter(tuple(_norm(v) for v in row) for row in rows)


def _matches(choice, want: dict, dialect: str) -> bool:
    """tests/test_choices.py's matcher; the SQL substrings (SQLite's dialect) are looked
    for in the alternative read back into SQLite's dialect."""
    res = choice.result
    if choice.differs != want.get("differs", True) or choice.settled_by != want.get("settled_by"):
        return False
    if "alt_row_count" in want and res.row_count != want["alt_row_count"]:
        return False
    if "alt_result" in want and _rows(res.rows) != _rows(want["alt_result"]):
        return False
    if "alt_contains" in want and not all(_rows(res.rows)[k] for k in _rows(want["alt_contains"])):
        return False
    if want.get("sql_contains"):
        text = to_sqlite(choice.sql, dialect)
        if not all(s in text for s in want["sql_contains"]):
            return False
    return all(s in choice.description for s in want.get("description_contains", []))


@pytest.mark.parametrize("engine, kind, case", list(_params("choices")))
def test_choice_golden(copies, engine, kind, case):
    case = _on_engine(engine, case)
    db = copies.db(case["db"])
    detector = DETECTORS[kind]
    sql = copies.sql(case["db"], case["sql"])
    shown = db.execute(sql)
    assert shown.ok, (sql, shown.error)
    ctx = ChoiceContext(question=case["question"], db=db, profile=db.profile(), sql=sql, result=shown,
                        tree=db.parse(sql), all_choices=True)
    found = [c for c in run_detectors(ctx, (detector,)) if c.type == kind]

    for choice in found:
        rerun = db.execute(choice.sql)
        assert rerun.ok, (choice.sql, rerun.error)
        assert results_match(rerun, choice.result).matched, choice.sql
        assert choice.differs == (not results_match(ctx.result, rerun).matched), choice
        assert choice.description and choice.type == kind

    seen = [(c.differs, c.settled_by, c.result.row_count, c.result.rows[:3], c.sql, c.description) for c in found]
    if case.get("read") is False:
        assert found == [], seen
    unmatched = list(found)
    for want in case.get("expect", []):
        hit = next((c for c in unmatched if _matches(c, want, copies.dialect)), None)
        assert hit is not None, (want, seen)
        unmatched.remove(hit)
    if "max_queries" in case:
        assert ctx.queries <= case["max_queries"], ctx.queries

    default = [c for c in detect_choices(case["question"], db, sql, db.execute(sql), detectors=(detector,))
               if c.type == kind]
    assert sorted(c.sql for c in default) == sorted(c.sql for c in found if reported(c))
    if case.get("expect_none"):
        assert default == []


@pytest.mark.parametrize("engine, check_name, case", list(_params("checks")))
def test_check_golden(copies, engine, check_name, case):
    case = _on_engine(engine, case)
    sqls = [copies.sql(case["db"], s) for s in case["sql"]]
    settings = case.get("settings", {})
    target = copies.targets[case["db"]] if settings else copies.db(case["db"])
    answer = vouchsql.check(target, case["question"], sqls, answer_text=case.get("answer_text"),
                            hint=case.get("hint"), judged_parts=case.get("judged_parts"),
                            judged_claims=case.get("judged_claims"),
                            cache_dir=copies.cache_dir, **settings)
    assert_golden(answer, check_name, case, where=f" sql={sqls[0]!r}")


# -- the copies themselves ------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_copies_hold_the_same_tables_rows_and_keys(copies, engine, golden_sources):
    if engine == "spark":
        # The catalogue and a COUNT(*) per table: profiling every table of the four databases
        # costs minutes on a local Spark, and the golden cases profile what they read.
        for name, source in golden_sources.items():
            db = copies.db(name)
            infos = {t.name.lower(): t for t in db.schema()}
            for table in source.tables:
                info = infos.get(spark_table_name(table.name).lower())
                assert info is not None, (name, table.name)
                assert db.query(f"SELECT COUNT(*) FROM {db.quote(info.name)}")[0][0] == len(table.rows), (name, table.name)
                assert [c.name for c in info.columns] == [c.name for c in table.columns], (name, table.name)
                assert list(info.primary_key) == table.primary_key, (name, table.name)
        return
    for name, source in golden_sources.items():
        db = copies.db(name)
        profile = db.profile()
        for table in source.tables:
            got = profile.table(spark_table_name(table.name) if engine == "spark" else table.name)
            assert got is not None, (name, table.name)
            assert got.row_count == len(table.rows), (name, table.name)
            assert [c.name for c in got.columns] == [c.name for c in table.columns], (name, table.name)
            assert list(got.primary_key) == table.primary_key, (name, table.name)


def test_identifiers_keep_their_case():
    source = Source(Path("x"), [], [])
    from engine_copies import Column, Table

    source.tables = [Table("Track", [Column("TrackId", "INTEGER", True, {"integer"}, 0, 1),
                                     Column("Name", "NVARCHAR(200)", True, {"text"}, 5, 0)], ["TrackId"], [], [])]
    sql = "SELECT t.name AS Title, COUNT(*) AS n FROM track t GROUP BY title ORDER BY N DESC"
    assert to_dialect(sql, "postgres", source) == (
        'SELECT t."Name" AS Title, COUNT(*) AS n FROM "Track" AS t GROUP BY title ORDER BY N DESC NULLS LAST')
    assert to_dialect(sql, "mysql", source) == (
        "SELECT t.name AS Title, COUNT(*) AS n FROM Track AS t GROUP BY title ORDER BY N DESC")
    assert to_dialect(sql, "duckdb", source).startswith("SELECT t.name AS Title, COUNT(*) AS n FROM track AS t")
    assert to_dialect("SELECT a / b FROM Track", "duckdb", source) == "SELECT a / b FROM Track"
    assert to_sqlite('SELECT COUNT(DISTINCT "i"."InvoiceId") FROM "Invoice" AS "i"', "postgres") == \
        "SELECT COUNT(DISTINCT i.InvoiceId) FROM Invoice AS i"


def test_every_expected_difference_names_a_golden_case():
    """Every case's "engines" is well formed (checked as the module is collected, again here)
    and every reason of tests/fixtures/engine_reasons.json is named by some case."""
    used = set()
    for suite in ("checks", "choices"):
        for _name, case in _load(suite):
            used |= {e["fails"] for e in case.get("engines", {}).values() if "fails" in e}
    assert used == set(REASONS), f"reasons no case names: {sorted(set(REASONS) - used)}"
    for engines, error in [({"sqlserver": {"fails": "group_by_key"}}, "unknown engine 'sqlserver'"),
                           ({"spark": {"fails": "group_by_key"}}, "unknown engine 'spark'"),
                           ({"duckdb": {"fails": "no_such_reason"}}, "unknown reason 'no_such_reason'"),
                           ({"duckdb": {"xfail": "group_by_key"}}, "unknown key(s) ['xfail']"),
                           ({"duckdb": {"fails": "group_by_key", "expect": []}}, "not both"),
                           ({"duckdb": {}}, "non-empty object"),
                           ([], "non-empty object")]:
        with pytest.raises(FixtureError, match=re.escape(error)):
            _check_engines("choices", "ties", {"title": "t", "engines": engines})
