"""The profile's estimates: where each comes from, when PostgreSQL's statistics are trusted,
the per-table budget and what a cut-short table says, and stand-in codes in every numeric
type on every engine (issue 16, parts 2 and 3). Real databases throughout; a server that is
absent skips its tests with the reason."""

from __future__ import annotations

import decimal
import math
import sqlite3
import time

import pytest

import vouchsql
from vouchsql.db.base import jsonable
from vouchsql.db.measure import _estimate_distinct
from vouchsql.db.profile import _is_numeric, _table_profile
from vouchsql.db.stats import STALE_ROWS, STALE_SHARE, freshness


def profile_of(target, table: str, **settings):
    with vouchsql.connect(target, no_cache=True, **settings) as db:
        info = next(i for i in db.schema() if i.name == table)
        return _table_profile(db, info)


# -- the freshness rule ---------------------------------------------------------------------

def test_statistics_are_fresh_up_to_autovacuums_own_threshold():
    assert (STALE_ROWS, STALE_SHARE) == (50, 0.1)
    assert freshness(False, 1000.0, 0) == (False, "never analyzed")
    assert freshness(True, -1.0, 0)[0] is False  # PostgreSQL 14+: reltuples -1 until analyzed
    assert freshness(True, 1000.0, None)[0] is False  # the counters were reset
    assert freshness(True, 1000.0, 150)[0] is True  # 50 + 10% of 1,000 = 150: still fresh
    fresh, why = freshness(True, 1000.0, 151)
    assert fresh is False and why.startswith("151 rows changed since the last ANALYZE")
    assert freshness(True, 0.0, 50)[0] is True and freshness(True, 0.0, 51)[0] is False


def test_distinct_estimate_is_duj1():
    assert _estimate_distinct(500, 500, 500, 20_000) == 20_000  # every sampled value once: a key
    assert _estimate_distinct(40, 0, 500, 20_000) == 40  # no singletons: what the sample saw
    # n·d / (n − f1 + f1·n/N) = 500·300 / (300 + 200·500/20,000)
    assert _estimate_distinct(300, 200, 500, 20_000) == round(500 * 300 / (300 + 200 * 500 / 20_000))
    assert _estimate_distinct(10, 3, 500, 400) == 10 and _estimate_distinct(0, 0, 0, 10) == 0


def test_numeric_types_are_told_by_whole_words():
    for t in ("INTEGER", "BIGINT UNSIGNED", "INT8", "UHUGEINT", "DOUBLE PRECISION", "FLOAT4", "REAL",
              "NUMERIC(10, 2)", "DECIMAL(12,3)", "MONEY", "TINYINT", "SERIAL"):
        assert _is_numeric(t), t
    for t in ("INTERVAL", "POINT", "DATETIME", "TEXT", "INTEGER[]", "STRUCT(a INTEGER)", "BOOLEAN"):
        assert not _is_numeric(t), t


def test_jsonable_keeps_non_finite_numerics_as_text():
    assert jsonable(decimal.Decimal("NaN")) == "nan" and jsonable(decimal.Decimal("-Infinity")) == "-inf"
    assert jsonable(decimal.Decimal("-1.00")) == -1 and jsonable(float("inf")) == "inf"


# -- SQLite: estimates marked, the budget, partial results ------------------------------------

@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """30,000 rows: a key, 12 nullable numeric columns (a -1 code in each), a text column."""
    path = tmp_path_factory.mktemp("estimates") / "wide.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, " + ", ".join(f"c{j} REAL" for j in range(12))
                + ", label TEXT NOT NULL)")
    con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * 14)})",
                    [(i, *[None if (i * 7 + j) % 10 == 3 else (-1 if (i * 13 + j) % 50 == 0 else (i * 31 + j) % 997)
                           for j in range(12)], f"l{i % 40}") for i in range(1, 30_001)])
    con.commit()
    con.close()
    return path


def test_above_the_scan_threshold_every_estimate_names_its_source(wide):
    tp = profile_of(wide, "t", sample_threshold=5_000, sample_rows=2_000, scan_threshold=10_000)
    assert (tp.row_count, tp.row_count_estimated, tp.sampled, tp.sample_method) == (30_000, False, True, "rowid lookups")
    assert tp.sample_size == 2_000 and tp.partial is None and tp.statistics is None  # SQLite keeps none
    key, c0, label = tp.column("id"), tp.column("c0"), tp.column("label")
    assert (key.min, key.max, key.null_count, key.distinct_count, key.sources) == (
        1, 30_000, 0, 30_000, {"top_values": "not measured", "stand_ins": "not measured"})
    assert c0.sources == {k: "sample" for k in ("null_count", "min", "max", "distinct_count", "top_values", "stand_ins")}
    assert c0.null_estimated and c0.range_estimated and c0.distinct_estimated
    assert abs(c0.null_count - 3_000) <= 400  # a tenth are NULL
    assert [(s.value, s.estimated) for s in c0.stand_ins] == [(-1, True)]
    assert label.null_count == 0 and not label.null_estimated  # NOT NULL: exact at no cost
    assert label.distinct_count == 40 and label.sources["distinct_count"] == "sample"
    # A sample that happens to see no NULL in a nullable column proves nothing.
    assert c0.may_have_nulls() and not label.may_have_nulls()


def test_below_the_scan_threshold_nulls_and_ranges_stay_exact(wide):
    tp = profile_of(wide, "t", sample_threshold=5_000, sample_rows=2_000)
    with sqlite3.connect(f"file:{wide}?mode=ro", uri=True) as con:
        nulls, lo, hi = con.execute("SELECT SUM(c5 IS NULL), MIN(c5), MAX(c5) FROM t").fetchone()
    c5 = tp.column("c5")
    assert (c5.null_count, c5.min, c5.max, c5.null_estimated, c5.range_estimated) == (nulls, lo, hi, False, False)
    assert c5.distinct_estimated and set(c5.sources) == {"distinct_count", "top_values", "stand_ins"}


def test_the_statement_budget_cuts_the_same_columns_every_time(wide):
    # The row count, the rows shown and the key's ends take 3 statements; the 4th, the grouped
    # pass over the sample, is past a budget of 3: every column but the key goes unmeasured.
    settings = dict(sample_threshold=5_000, sample_rows=2_000, scan_threshold=10_000, profile_statements=3)
    first, second = profile_of(wide, "t", **settings), profile_of(wide, "t", **settings)
    assert first.model_dump() == second.model_dump()
    assert first.timed_out is False and first.partial == (
        "the figures of 13 of 14 columns (c0, c1, c2 and 10 more) were not measured: the table's "
        "statement budget (profile_statements = 3) ran out")
    unmeasured = [c.name for c in first.columns if c.sources.get("distinct_count") == "not measured"]
    assert unmeasured == [f"c{j}" for j in range(12)] + ["label"]
    assert first.column("id").distinct_count == 30_000 and first.row_count == 30_000
    # With one statement more, nothing is left out.
    assert profile_of(wide, "t", **dict(settings, profile_statements=4)).partial is None
    for name in unmeasured:
        col = first.column(name)
        assert col.sources.get("null_count") == ("not measured" if col.nullable else None)
        assert col.may_have_nulls() == col.nullable


def test_the_clock_only_cuts_a_table_short_and_says_so(wide):
    tp = profile_of(wide, "t", profile_timeout=0.01)
    assert tp.timed_out is True and tp.partial.endswith("the table's profile ran past profile_timeout (0.01 s)")
    assert tp.error is None


# -- PostgreSQL: pg_stats when fresh, TABLESAMPLE when not ------------------------------------

def _flush_and(raw, sql: str) -> None:
    """Run ``sql`` once this session's own row counts reached the statistics (they are sent
    at most once a second)."""
    try:
        raw.execute("SELECT pg_stat_force_next_flush()")  # PostgreSQL 15+
    except Exception:  # noqa: BLE001
        time.sleep(1.5)
    raw.execute("SELECT 1")
    raw.execute(sql)


def test_postgresql_uses_fresh_statistics_and_samples_stale_ones(pg):
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.big (id bigint PRIMARY KEY, amount numeric(10,2), kind text) "
                f"WITH (autovacuum_enabled = false)")
    raw.execute(f"INSERT INTO {schema}.big SELECT i, CASE WHEN i % 97 = 0 THEN -1 ELSE (i * 37) % 1000 + 0.5 END, "
                f"CASE WHEN i % 20 = 0 THEN NULL ELSE 'k' || (i % 7) END FROM generate_series(1, 20000) i")
    settings = dict(sample_threshold=2_000, sample_rows=5_000, scan_threshold=10_000)
    never = profile_of(url, "big", **settings)
    assert never.statistics == "pg_stats: stale (never analyzed); not used"
    # No COUNT(*) of a table this large: the sample counts it (its rows over the share of
    # pages it read), as it measures everything else.
    assert (never.row_count_estimated, never.sources, never.sample_method) == (
        True, {"row_count": "sample"}, "TABLESAMPLE SYSTEM")
    assert abs(never.row_count - 20_000) <= 0.25 * 20_000, never.row_count
    assert never.column("amount").sources["distinct_count"] == "sample"
    assert [s.value for s in never.column("amount").stand_ins] == [-1]

    _flush_and(raw, f"ANALYZE {schema}.big")
    fresh = profile_of(url, "big", **settings)
    assert fresh.statistics.startswith("pg_stats: fresh (0 rows changed")
    assert (fresh.row_count, fresh.row_count_estimated, fresh.sources) == (20_000, True, {"row_count": "pg_class.reltuples"})
    assert fresh.sample_size is None and fresh.sample_method is None  # no sample read at all
    amount, kind = fresh.column("amount"), fresh.column("kind")
    assert set(amount.sources.values()) == {"pg_stats"} and amount.null_estimated
    assert [(s.value, s.estimated) for s in amount.stand_ins] == [(-1, True)]
    assert abs(amount.stand_ins[0].share - 1 / 97) < 0.004
    assert kind.distinct_count == 7 and abs(kind.null_count - 1_000) <= 300
    assert fresh.column("id").min == 1 and fresh.column("id").max == 20_000  # from the index, exact

    # More than 50 + 10% of the rows change: stale again, sampled again.
    _flush_and(raw, f"UPDATE {schema}.big SET kind = 'x' WHERE id <= 3000")
    _flush_and(raw, "SELECT 1")
    stale = profile_of(url, "big", **settings)
    assert stale.statistics.startswith("pg_stats: stale (3,000 rows changed since the last ANALYZE")
    assert stale.sample_method == "TABLESAMPLE SYSTEM" and stale.column("kind").sources["distinct_count"] == "sample"
    assert profile_of(url, "big", **settings).model_dump() == stale.model_dump()  # the same sample twice


def test_postgresql_money_interval_json_and_non_finite_values(pg):
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.odd (id int PRIMARY KEY, m money, span interval, doc json, "
                f"d double precision, n numeric)")
    raw.execute(f"INSERT INTO {schema}.odd SELECT i, (CASE WHEN i % 50 = 0 THEN -1 ELSE i % 40 END)::numeric::money, "
                f"make_interval(secs => i), json_build_object('i', i % 3), "
                f"CASE WHEN i = 7 THEN 'Infinity'::float8 WHEN i % 50 = 0 THEN -1 ELSE i % 40 END, "
                f"CASE WHEN i = 7 THEN 'NaN'::numeric WHEN i % 50 = 0 THEN -1 ELSE i % 40 END "
                f"FROM generate_series(1, 1000) i")
    tp = profile_of(url, "odd")
    assert tp.error is None and tp.partial is None
    codes = {c.name: [s.value for s in c.stand_ins] for c in tp.columns}
    # money is measured as the number it is; an infinity or a NaN beside the code hides nothing.
    assert codes == {"id": [], "m": [-1], "span": [], "doc": [], "d": [-1], "n": [-1]}
    assert tp.column("d").max == "inf" and tp.column("n").max == "nan" and tp.column("doc").distinct_count == 3


# -- stand-in codes in every numeric type, on every engine ------------------------------------

N_ROWS = 2_000


def _value(i: int, integer: bool):
    if i % 50 == 0:  # 2%: a sample of 500 holds about 10
        return -1
    return (i * 37) % 120 if integer else (i * 37) % 1000 + 0.25 * (i % 4)


def _check_every_column(target, table: str = "t") -> None:
    for settings in ({}, dict(sample_threshold=1_000, sample_rows=500)):  # exact, then sampled
        tp = profile_of(target, table, **settings)
        assert tp.error is None
        found = {c.name: [s.value for s in c.stand_ins] for c in tp.columns if c.name != "id"}
        assert found == {name: [-1] for name in found}, (settings, [(c.name, c.type) for c in tp.columns])


SQLITE_TYPES = ["INTEGER", "BIGINT", "REAL", "DOUBLE", "FLOAT", "NUMERIC", "DECIMAL(10,2)", "MONEY"]
DUCKDB_TYPES = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL(4,1)",
                "DECIMAL(18,4)", "DECIMAL(38,10)"]
PG_TYPES = ["smallint", "integer", "bigint", "real", "double precision", "numeric", "numeric(10,2)",
            "decimal(12,3)", "money"]
MARIADB_TYPES = ["tinyint", "smallint", "mediumint", "int", "bigint", "float", "double", "decimal(10,2)",
                 "decimal(65,30)"]


def _rows(types: list[str]) -> list[tuple]:
    out = []
    for i in range(1, N_ROWS + 1):
        row = [i]
        for t in types:
            v = _value(i, "int" in t.lower())
            if t.upper() == "DECIMAL(4,1)" and v != -1:
                v = round(v / 10, 1)
            row.append(v)
        out.append(tuple(row))
    return out


def test_stand_ins_in_every_numeric_type_on_sqlite(tmp_path):
    path = tmp_path / "types.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, "
                    + ", ".join(f"c{j} {t}" for j, t in enumerate(SQLITE_TYPES)) + ")")
        con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * (len(SQLITE_TYPES) + 1))})", _rows(SQLITE_TYPES))
    _check_every_column(path)


def test_stand_ins_in_every_numeric_type_on_duckdb(tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is not installed (pip install 'vouchsql[duckdb]')")
    path = tmp_path / "types.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, "
                + ", ".join(f"c{j} {t}" for j, t in enumerate(DUCKDB_TYPES)) + ")")
    # The rows of _rows, made by DuckDB itself (its executemany took 27 s for these 2,000).
    def expr(t: str) -> str:
        if "INT" in t:
            value = "(i * 37) % 120"
        else:
            value = "(i * 37) % 1000 + 0.25 * (i % 4)"
            value = f"round(({value}) / 10, 1)" if t == "DECIMAL(4,1)" else value
        return f"CAST(CASE WHEN i % 50 = 0 THEN -1 ELSE {value} END AS {t})"

    con.execute(f"INSERT INTO t SELECT i, {', '.join(expr(t) for t in DUCKDB_TYPES)} FROM range(1, {N_ROWS + 1}) r(i)")
    con.close()
    _check_every_column(path)


def test_stand_ins_in_every_numeric_type_on_postgresql(pg):
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.t (id integer PRIMARY KEY, "
                + ", ".join(f"c{j} {t}" for j, t in enumerate(PG_TYPES)) + ")")
    with raw.cursor() as cur:
        rows = [tuple(decimal.Decimal(str(v)) if PG_TYPES[j - 1] == "money" and j else v for j, v in enumerate(r))
                for r in _rows(PG_TYPES)]
        cur.executemany(f"INSERT INTO {schema}.t VALUES ({', '.join(['%s'] * (len(PG_TYPES) + 1))})", rows)
    _check_every_column(url)
    _flush_and(raw, f"ANALYZE {schema}.t")  # and from pg_stats, where a table is past scan_threshold
    tp = profile_of(url, "t", sample_threshold=1_000, sample_rows=500, scan_threshold=1_500)
    assert {c.name: ([s.value for s in c.stand_ins], c.sources.get("stand_ins")) for c in tp.columns if c.name != "id"} \
        == {f"c{j}": ([-1], "sample" if t == "money" else "pg_stats") for j, t in enumerate(PG_TYPES)}


def test_stand_ins_in_every_numeric_type_on_mariadb(mariadb):
    url, cur, name = mariadb
    cur.execute(f"CREATE TABLE {name}.t (id INT PRIMARY KEY, "
                + ", ".join(f"c{j} {t}" for j, t in enumerate(MARIADB_TYPES)) + ") ENGINE=InnoDB")
    cur.executemany(f"INSERT INTO {name}.t VALUES ({', '.join(['%s'] * (len(MARIADB_TYPES) + 1))})",
                    _rows(MARIADB_TYPES))
    _check_every_column(url)
    tp = profile_of(url, "t", sample_threshold=1_000, sample_rows=500)
    assert tp.sample_method == "key lookups" and tp.sample_size == 500


def test_a_systematic_sample_does_not_alias_with_periodic_data(tmp_path):
    # Every 100th row holds the code; evenly spaced rowids 6 apart (3,000 rows, 500 sampled)
    # never landed on a multiple of 100, and the code went unseen.
    path = tmp_path / "periodic.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v REAL)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [(i, -1 if i % 100 == 0 else i % 77) for i in range(1, 3001)])
    tp = profile_of(path, "t", sample_threshold=1_000, sample_rows=500)
    [code] = tp.column("v").stand_ins
    assert code.value == -1 and math.isclose(code.share, 0.01, abs_tol=0.006)


def test_a_budget_cut_between_batches_leaves_the_later_columns_unmeasured(tmp_path):
    # DuckDB groups columns by declared type, one statement each: after the row count and the
    # rows shown, a budget of 3 runs the first type's batch only.
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is not installed (pip install 'vouchsql[duckdb]')")
    path = tmp_path / "types.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT i::INTEGER AS a, (i % 7)::DOUBLE AS b, CASE WHEN i % 3 = 0 THEN NULL "
                "ELSE 'x' || (i % 5) END AS c FROM range(1, 301) r(i)")
    con.close()
    tp = profile_of(path, "t", profile_statements=3)
    measured = {c.name: c.sources == {} for c in tp.columns}
    assert sum(measured.values()) == 1 and tp.partial.startswith("the figures of 2 of 3 columns")
    for c in tp.columns:
        if not measured[c.name]:  # not "all NULL": not measured, and said so
            assert c.sources["null_count"] == c.sources["distinct_count"] == "not measured" and c.may_have_nulls()
    assert tp.column("c").null_count == (100 if measured["c"] else 0)


def test_statistics_of_a_small_table_are_read_but_not_used(pg):
    url, raw, schema = pg
    _flush_and(raw, f"ANALYZE {schema}.pets")
    tp = profile_of(url, "pets")
    assert tp.statistics.startswith("pg_stats: fresh") and tp.statistics.endswith("; not used")
    assert not tp.sampled and all(c.sources == {} for c in tp.columns)
