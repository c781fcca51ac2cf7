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
that legitimately differs on one engine is listed in ``EXPECTED`` below with the reason:
it runs as a strict xfail there (so it fails loudly once it passes), or with the per-engine
expectation in ``OVERRIDES``. Nothing is skipped wholesale.

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
# (engine, "checks"|"choices", fixture file, case title) -> why the case differs there.
EXPECTED: dict[tuple[str, str, str, str], str] = {}

# DuckDB does not derive functional dependence from a key: a column beside GROUP BY t.key
# (SELECT s.name … GROUP BY s.store_id) is refused ("must appear in the GROUP BY clause"),
# where SQLite, PostgreSQL (from the primary key) and MariaDB accept it.
_DUCKDB_GROUP_BY = "DuckDB refuses a column that is neither grouped nor aggregated, even beside the table's key"
_DUCKDB_GROUP_BY_ALT = _DUCKDB_GROUP_BY + " (the alternative groups by the key with the names beside it)"
for _suite, _name, _titles in [
    ("choices", "counting_unit", ["chinook: COUNT(DISTINCT k) grouped by k is never offered (GROUP BY a USING key)"]),
    ("choices", "missing_values", ["demo: NULLs made by a LEFT JOIN are the population scope's, not missing values"]),
    ("choices", "population_scope", [
        "demo: Harbor Point has no orders and vanishes from the inner join",
        "demo: the fewest orders is Harbor Point's zero",
        "demo: a filter on the joined table moves into its ON",
        "demo: a two-table join written from the related side is turned around",
        "chinook: four playlists have no tracks",
        "northwind: four customers never ordered",
        "sakila: every actor has films: the key overlap rules it out (nothing runs)",
        "northwind: every employee has orders (nothing runs)",
        "demo: a LEFT JOIN already keeps every store",
        "demo: 'that have' settles it",
        "demo: 'with no' settles it",
        "chinook: 'use an inner join' settles it",
        "chinook: 'only \u2026 with' settles it",
        "chinook: the five playlists with the most tracks: an empty playlist would rank last",
        "chinook: the most purchased tracks of a year, unlimited: tracks never bought are no reading",
        "chinook: the playlists with the fewest tracks: the empty ones are the answer",
        "chinook: each sales agent: the join keeps exactly the employees titled as agents",
        "chinook: a named value that is not what the join keeps leaves the choice open"]),
    ("choices", "ties", [
        "sakila: a bare column beside MAX() returns one arbitrary tied row",
        "demo: two customers tie for the most orders (aggregate key: HAVING)",
        "northwind: no employee ties the one with the most orders",
        "chinook: LIMIT 4, 1 (OFFSET 4) picks one of two albums tied for the 5th most tracks",
        "chinook: 'over all' is not the settling word 'all': the tie at the cut-off is reported",
        "chinook: 'all' as its own word still settles the same tie"]),
    ("checks", "nothing_fires", [
        "chinook: tracks per album", "chinook: albums per artist", "sakila: films per category",
        "northwind: products per category", "northwind: orders per shipper",
        "chinook: customers per employee with a LEFT JOIN, zero included",
        "chinook: the album with the most tracks, joined with USING", "chinook: total sales of each sales agent"]),
    ("checks", "join_drop", ["chinook: the 5 most purchased tracks: an unpurchased track ranks last"]),
    ("checks", "question_filters", ["no fire: a named value every row the SQL reads already holds "
                                    "(every support rep is a 'Sales Support Agent')"]),
]:
    for _title in _titles:
        EXPECTED[("duckdb", _suite, _name, _title)] = _DUCKDB_GROUP_BY
for _title in ["demo: 'highest order value' names one order as the unit: settled",
               "chinook: ranking a customer by one invoice (the same customer either way)"]:
    EXPECTED[("duckdb", "choices", "aggregation_level", _title)] = _DUCKDB_GROUP_BY_ALT

# Northwind's OrderDate is a timestamp on the copies (text in SQLite): LIKE '1997%' on a
# timestamp is refused by DuckDB and PostgreSQL (MariaDB converts it to text).
for _engine in ("duckdb", "postgresql"):
    for _title in ["northwind: COUNT(CustomerID) on orders counts orders, not customers",
                   "northwind: 'how many customers' answered by counting orders"]:
        EXPECTED[(_engine, "choices", "counting_unit", _title)] = \
            "LIKE on a timestamp column (OrderDate) is refused; SQLite stores the date as text"
    # o.CustomerID (text) = d.OrderID (integer): SQLite compares them, the engine refuses.
    EXPECTED[(_engine, "checks", "join_drop", "northwind: a ranking whose LIMIT is not filled explains nothing "
              "(a join on the wrong key keeps no order)")] = \
        "the shown SQL joins a text key to an integer key, which the engine refuses; the probe cannot run"
EXPECTED[("postgresql", "choices", "missing_values", "demo: revenue by customer region has a NULL region")] = \
    "PostgreSQL has no round(double precision, integer): the shown SQL does not run on a REAL column"
EXPECTED[("postgresql", "choices", "ties", "sakila: a bare column beside MAX() returns one arbitrary tied row")] = \
    "PostgreSQL refuses the bare column beside MAX() that the case is about"
EXPECTED[("postgresql", "checks", "nothing_fires", "northwind: discontinued products")] = \
    "Discontinued is text in northwind; PostgreSQL refuses text = integer, which SQLite compares"
EXPECTED[("mariadb", "choices", "ties", "sakila: a LIMIT inside a subquery cuts through the tie too")] = \
    "MariaDB does not support LIMIT in an IN subquery (error 1235)"

# Spark's session catalogue folds table names to lower case (Track is track), so evidence that
# names a table says track.Name where the goldens say Track.Name.
_SPARK_LOWER = "Spark's catalogue folds table names to lower case: the evidence names track, not Track"
for _name, _titles in [
    ("join_key_meaning", ["chinook: Customer.CustomerId = Invoice.InvoiceId fires though every customer id is an invoice id",
                          "chinook: Employee.EmployeeId = Customer.CustomerId fires and names the support rep key",
                          "chinook: Invoice.CustomerId = InvoiceLine.InvoiceLineId fires (a foreign key against another "
                          "table's key)"]),
    ("merged_entities", ["top tracks grouped by name: the shown rows merge tracks that share a name",
                         "playlists grouped by name: two 'Music' playlists become one row"]),
    ("question_filters", ["a named country with no filter on it fires"]),
]:
    for _title in _titles:
        EXPECTED[("spark", "checks", _name, _title)] = _SPARK_LOWER
# The rest of the full run (VOUCH_SPARK_GOLDEN=all): the same folding, Northwind's table with a
# space (Order_Details on Spark), the text = integer join the servers refuse too, no schema main.
_RENAMED = "Spark's table names hold letters, digits and _ only: Northwind's Order Details is Order_Details"
_TEXT_INT = "the shown SQL joins a text key to an integer key, which Spark refuses; the probe cannot run"
_NO_MAIN = "Spark has no schema main (SQLite's name for its one database), so main.customers is missing"
for _name, _title, _why in [
    ('bad_join', 'chinook: Track.AlbumId = Album.AlbumId does not fire', _SPARK_LOWER),
    ('join_drop', 'chinook: only 3 of 8 employees are support reps', _SPARK_LOWER),
    ('join_drop', 'chinook: the invoices of each sales agent: the joins keep exactly the employees titled as agents', _SPARK_LOWER),
    ('join_drop', 'chinook: a named value the kept rows do not match still fires (sales managers are not the support reps)', _SPARK_LOWER),
    ('join_drop', 'chinook: a filter on the driving table scopes the rows the share is of', _SPARK_LOWER),
    ('join_drop', 'chinook: a WHERE on the joined invoices scopes the tracks to those bought there', _SPARK_LOWER),
    ('join_drop', 'chinook: the least purchased tracks: the dropped unpurchased tracks are the answer', _SPARK_LOWER),
    ('join_drop', 'northwind: a ranking whose LIMIT is not filled explains nothing (a join on the wrong key keeps no order)', _TEXT_INT),
    ('join_fanout', "chinook: LEFT JOIN with COUNT of the optional side's key repeats nothing (NULL rows carry no key)", _SPARK_LOWER),
    ('join_fanout', 'chinook: LEFT JOIN through invoices repeats each customer once per invoice', _SPARK_LOWER),
    ('join_fanout', 'chinook: the question counts tracks, the rows of the joined Track table', _SPARK_LOWER),
    ('join_fanout', "chinook: 'how many customers' per country counted with COUNT(*) over their invoices", _SPARK_LOWER),
    ('join_fanout', 'chinook: COUNT(c.CustomerId) grouped by country over invoices counts invoices', _SPARK_LOWER),
    ('join_fanout', "northwind: SUM of an order's freight over its order lines, per customer", _SPARK_LOWER),
    ('join_key_meaning', 'chinook: the wrong pair is found in WHERE form among right ones', _SPARK_LOWER),
    ('join_key_meaning', 'northwind: Suppliers.SupplierID = Products.ProductID fires', _SPARK_LOWER),
    ('join_key_meaning', 'chinook: the self-join Employee.ReportsTo = Employee.EmployeeId follows the declared key', _SPARK_LOWER),
    ('join_key_meaning', 'chinook: Customer.SupportRepId = Employee.EmployeeId follows the declared key', _SPARK_LOWER),
    ('join_key_meaning', 'chinook: two foreign keys to one table (InvoiceLine.TrackId = PlaylistTrack.TrackId) follow one key', _SPARK_LOWER),
    ('join_key_meaning', "northwind: both columns of Order Details' composite key follow their keys", _RENAMED),
    ('join_key_meaning', 'northwind: Orders.ShipVia = Shippers.ShipperID follows the declared key', _SPARK_LOWER),
    ('missing_table', 'northwind: a quoted table name with a space does not fire', _RENAMED),
    ('missing_table', 'a schema-qualified name (main.customers) does not fire', _NO_MAIN),
    ('question_shape', "entity: 'shippers' answered from Suppliers", _SPARK_LOWER),
]:
    EXPECTED.setdefault(("spark", "checks", _name, _title), _why)
# Spark, like DuckDB, derives no functional dependence from a key (MISSING_AGGREGATION).
for (_engine, _suite, _name, _title), _why in list(EXPECTED.items()):
    if _engine == "duckdb" and _suite == "checks" and _why == _DUCKDB_GROUP_BY:
        EXPECTED[("spark", _suite, _name, _title)] = _why.replace("DuckDB", "Spark")

# (engine, suite, file, title) -> the case's "expect" on that engine (replacing SQLite's).
# Table names are case-sensitive on PostgreSQL (quoted) and MariaDB (lower_case_table_names
# = 0): a user there writes the table's own spelling, so that is the name the check lists.
OVERRIDES: dict[tuple[str, str, str, str], object] = {
    ("postgresql", "checks", "missing_table", "chinook: a lower-case name of a capitalised table does not fire"):
        {"fired": False, "evidence": {"tables": ["Track"]}},
    ("mariadb", "checks", "missing_table", "chinook: a lower-case name of a capitalised table does not fire"):
        {"fired": False, "evidence": {"tables": ["Track"]}},
    ("mariadb", "checks", "missing_table", "mixed-case names of real tables do not fire"):
        {"fired": False, "evidence": {"tables": ["customers", "orders"]}},
}
# SQLite's and DuckDB's default schema is main; the servers' copies live in a schema (a
# database on MariaDB) of another name and there is no schema main, so main.customers names a
# table these databases do not have (the query fails there too).
for _engine in ("postgresql", "mariadb"):
    OVERRIDES[(_engine, "checks", "missing_table", "a schema-qualified name (main.customers) does not fire")] = \
        {"fired": True, "evidence": {"tables": ["main.customers"]}}
# ORDER BY n LIMIT 1 among the tied empty playlists: SQLite keeps 'Movies' (rowid order); the
# servers keep any of them ('Audiobooks' on PostgreSQL, either on MariaDB from run to run), so
# only the one row is asked for.
# Northwind's dates are text in SQLite ('1997-12-31 00:00:00.000' sorts after '1997-12-31') and
# timestamps on the copies, where midnight equals the date-only bound: no row on the wrong side.
for _engine in ENGINES:
    OVERRIDES[(_engine, "checks", "date_only_bound", "northwind: orders of 1997 with BETWEEN '1997-01-01' AND "
               "'1997-12-31' leave out 31 December's (text dates)")] = {"fired": False, "evidence": {"bounds": []}}
    OVERRIDES[(_engine, "checks", "date_only_bound", "northwind: the lost rows of 31 December do not reach the "
               "top 3: the same answer, silent")] = {"fired": False, "evidence": {"bounds": [], "same_answer": []}}
# A padded CHAR(20) equals 'English' on PostgreSQL (char(n) compares without trailing spaces) and
# on MariaDB (PAD SPACE), whose default collation also ignores case: the filter keeps its rows
# there, and unmatched_literal rightly stays silent.
for _engine, _titles in [("postgresql", ["sakila: a CHAR(20) name stored padded is never equal to 'English' on SQLite"]),
                         ("mariadb", ["sakila: a CHAR(20) name stored padded is never equal to 'English' on SQLite",
                                      "chinook: 'rock' in lower case where the genre is 'Rock'",
                                      "chinook: IN ('usa') where the country is 'USA', the literal on the right of IN"])]:
    for _title in _titles:
        OVERRIDES[(_engine, "checks", "unmatched_literal", _title)] = {"fired": False, "evidence": {"literals": []}}
for _engine in ("postgresql", "mariadb"):
    OVERRIDES[(_engine, "choices", "population_scope",
               "chinook: the playlists with the fewest tracks: the empty ones are the answer")] = \
        {"expect": [{"alt_row_count": 1}]}


def _xfails(engine: str, suite: str, name: str, title: str):
    reason = EXPECTED.get((engine, suite, name, title))
    return [pytest.mark.xfail(strict=True, reason=f"{engine}: {reason}")] if reason else []


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
    return [(path.stem, case) for path in sorted((FIXTURES / suite).glob("*.json"))
            for case in json.loads(path.read_text(encoding="utf-8"))]


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
                               marks=_xfails(engine, suite, name, case["title"]))


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
    override = OVERRIDES.get((engine, "choices", kind, case["title"]))
    if override is not None:
        case = {**case, **override}
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
    override = OVERRIDES.get((engine, "checks", check_name, case["title"]))
    if override is not None:
        case = {**case, "expect": override}
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
    cases = {(suite, name, case["title"]) for suite in ("checks", "choices") for name, case in _load(suite)}
    for key in list(EXPECTED) + list(OVERRIDES):
        assert key[0] in ENGINES and key[1:] in cases, key
        assert not (key in EXPECTED and key in OVERRIDES), key
