"""date_only_bound: a date-only bound on a column that stores a time with each date puts that
day's rows on the wrong side, and fires only where the answer changes. Real SQLite files and a
PostgreSQL schema; the evidence exactly."""

from __future__ import annotations

import pytest

import vouchsql
from test_boundaries import make_db, run_check


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """Orders over three days of December 2024, at several times of day, some from customer 2;
    visits stored as date-only text; a log table with a time in its text."""
    path = tmp_path_factory.mktemp("days") / "shop.sqlite"
    times = ["00:00:00", "09:30:00", "17:45:10"]
    orders = [(i, f"2024-12-{29 + i % 3:02d} {times[i % 3 if i < 6 else (i + 1) % 3]}", 1 + i % 2, 10.0 * i)
              for i in range(12)]
    return make_db(path, {
        "customer": ("id INTEGER PRIMARY KEY, name TEXT", [(1, "Ann"), (2, "Bo")]),
        "orders": ("id INTEGER PRIMARY KEY, placed TEXT, customer_id INTEGER REFERENCES customer(id), total REAL",
                   orders),
        "visit": ("id INTEGER PRIMARY KEY, day TEXT", [(i, f"2024-12-{29 + i % 3:02d}") for i in range(9)]),
    })


def _rows(shop, sql: str) -> int:
    import sqlite3

    con = sqlite3.connect(shop)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def bounds(check) -> list[tuple]:
    return [(b["sql"], b["day"], b["effect"], b["rows"], b["fix"]) for b in check.evidence["bounds"]]


@pytest.mark.parametrize("sql, expected", [
    ("SELECT COUNT(*) FROM orders WHERE placed <= '2024-12-30'",
     [("placed <= '2024-12-30'", "2024-12-30", "leaves out", 4, "placed < '2024-12-31'")]),
    ("SELECT COUNT(*) FROM orders WHERE placed BETWEEN '2024-12-29' AND '2024-12-30'",
     [("placed BETWEEN '2024-12-29' AND '2024-12-30'", "2024-12-30", "leaves out", 4,
       "placed >= '2024-12-29' AND placed < '2024-12-31'")]),
    ("SELECT COUNT(*) FROM orders WHERE '2024-12-30' >= placed",
     [("'2024-12-30' >= placed", "2024-12-30", "leaves out", 4, "placed < '2024-12-31'")]),
    ("SELECT COUNT(*) FROM orders WHERE placed > '2024-12-30'",
     [("placed > '2024-12-30'", "2024-12-30", "keeps", 4, "placed >= '2024-12-31'")]),
    ("SELECT COUNT(*) FROM orders WHERE '2024-12-30' < placed",
     [("'2024-12-30' < placed", "2024-12-30", "keeps", 4, "placed >= '2024-12-31'")]),
    ("SELECT COUNT(*) FROM orders WHERE placed = '2024-12-30'",
     [("placed = '2024-12-30'", "2024-12-30", "misses", 4, "placed >= '2024-12-30' AND placed < '2024-12-31'")]),
    # an IN list: each day measured apart; the fix covers every day of the list
    ("SELECT COUNT(*) FROM orders WHERE placed IN ('2024-12-29', '2024-12-31')",
     [("placed IN ('2024-12-29', '2024-12-31')", "2024-12-29", "misses", 4,
       "(placed >= '2024-12-29' AND placed < '2024-12-30') OR (placed >= '2024-12-31' AND placed < '2025-01-01')"),
      ("placed IN ('2024-12-29', '2024-12-31')", "2024-12-31", "misses", 4,
       "(placed >= '2024-12-29' AND placed < '2024-12-30') OR (placed >= '2024-12-31' AND placed < '2025-01-01')")]),
    # the rows counted are those the query's other conditions keep (customer 2's: 2 of the 4)
    ("SELECT COUNT(*) FROM orders o JOIN customer c ON c.id = o.customer_id WHERE c.name = 'Bo' "
     "AND o.placed <= '2024-12-30'",
     [("o.placed <= '2024-12-30'", "2024-12-30", "leaves out", 2, "o.placed < '2024-12-31'")]),
    # an inner join's ON is a filter too
    ("SELECT COUNT(*) FROM customer c JOIN orders o ON o.customer_id = c.id AND o.placed <= '2024-12-30'",
     [("o.placed <= '2024-12-30'", "2024-12-30", "leaves out", 4, "o.placed < '2024-12-31'")]),
    # a subquery's bound, measured inside it
    ("SELECT name FROM customer WHERE id IN (SELECT customer_id FROM orders WHERE placed = '2024-12-30')",
     [("placed = '2024-12-30'", "2024-12-30", "misses", 4, "placed >= '2024-12-30' AND placed < '2024-12-31'")]),
])
def test_date_only_bound_fires(shop, sql, expected):
    check = run_check(shop, "date_only_bound", sql)
    assert check.fired, check.detail
    assert bounds(check) == expected
    assert check.evidence["not_measured"] == [] and check.evidence["same_answer"] == []
    assert f"write {expected[0][4]}" in check.detail


def test_the_rows_counted_are_really_on_the_wrong_side(shop):
    # 4 orders on 30 December: the bound written as the day keeps them, the date-only one does not
    assert _rows(shop, "SELECT COUNT(*) FROM orders WHERE placed < '2024-12-31'") - \
        _rows(shop, "SELECT COUNT(*) FROM orders WHERE placed <= '2024-12-30'") == 4


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM orders WHERE placed >= '2024-12-30'",  # the half-open range: right
    "SELECT COUNT(*) FROM orders WHERE placed < '2024-12-30'",
    "SELECT COUNT(*) FROM orders WHERE placed <= '2024-12-30 23:59:59'",  # a time written out
    "SELECT COUNT(*) FROM orders WHERE date(placed) <= '2024-12-30'",  # the date part compared
    "SELECT COUNT(*) FROM orders WHERE placed <= '2024-12-28'",  # no order on that day
    "SELECT COUNT(*) FROM visit WHERE day <= '2024-12-30'",  # date-only text: nothing after the day's start
    "SELECT COUNT(*) FROM visit WHERE day = '2024-12-30'",
    "SELECT COUNT(*) FROM orders WHERE placed BETWEEN '2024-12-31' AND '2024-12-30'",  # an empty range
    "SELECT COUNT(*) FROM orders WHERE placed <= '2024-02-30'",  # no such day
    "SELECT COUNT(*) FROM orders WHERE placed <= '2024-12-30' OR total > 50",  # inside an OR: not read
    "SELECT COUNT(*) FROM orders WHERE NOT (placed > '2024-12-30')",  # under NOT: not read
    # an outer join's ON keeps every customer whatever it says: not a filter of the rows counted
    "SELECT COUNT(*) FROM customer c LEFT JOIN orders o ON o.customer_id = c.id AND o.placed <= '2024-12-30'",
    # a CTE's column is not a base table's
    "WITH o AS (SELECT placed FROM orders) SELECT COUNT(*) FROM o WHERE placed <= '2024-12-30'",
])
def test_date_only_bound_is_silent(shop, sql):
    check = run_check(shop, "date_only_bound", sql)
    assert not check.fired, check.detail
    assert check.evidence["bounds"] == [] and check.evidence["not_measured"] == []


def test_rows_on_the_wrong_side_that_do_not_change_the_answer_are_silent(shop):
    # 17:45 orders of the 30th are lost, but the largest total is on the 31st either way
    sql = "SELECT MAX(total) FROM orders WHERE placed > '2024-12-29'"
    assert _rows(shop, sql) == _rows(shop, "SELECT MAX(total) FROM orders WHERE placed >= '2024-12-30'")
    check = run_check(shop, "date_only_bound", sql)
    assert not check.fired
    assert check.evidence["same_answer"] == ["placed > '2024-12-29'"]
    assert check.detail.endswith("but the answer is the same with the whole day")


def test_a_correlated_subquery_is_not_measured(shop):
    sql = ("SELECT name FROM customer c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id "
           "AND o.placed = '2024-12-30')")
    check = run_check(shop, "date_only_bound", sql)
    assert not check.fired
    assert check.evidence["not_measured"] == ["o.placed = '2024-12-30'"]
    assert check.detail.startswith("not measured: o.placed = '2024-12-30'")


def test_the_gate_is_withheld_when_it_fires(shop):
    answer = vouchsql.check(shop, "How many orders were placed up to 30 December 2024?",
                            ["SELECT COUNT(*) FROM orders WHERE placed <= '2024-12-30'"] * 5,
                            cache_dir=str(shop.parent / "cache"))
    assert answer.verdict.gate == "flag" and "date_only_bound" in answer.verdict.reasons
    fixed = vouchsql.check(shop, "How many orders were placed up to 30 December 2024?",
                           ["SELECT COUNT(*) FROM orders WHERE placed < '2024-12-31'"] * 5,
                           cache_dir=str(shop.parent / "cache"))
    assert "date_only_bound" not in fixed.verdict.reasons


def test_postgresql_timestamps_date_columns_and_typed_literals(pg, tmp_path):
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.booking (id INTEGER PRIMARY KEY, booked_at TIMESTAMP, on_day DATE)")
    raw.execute(f"INSERT INTO {schema}.booking SELECT i, TIMESTAMP '2024-12-29 00:00' + i * INTERVAL '5 hours', "
                f"DATE '2024-12-29' + (i / 5) FROM generate_series(0, 14) i")

    def check(sql):
        answer = vouchsql.check(url, "How many bookings?", [sql], cache_dir=str(tmp_path))
        return {c.name: c for c in answer.checks}["date_only_bound"]

    # a timestamp: midnight equals the bound; 01:00 … 21:00 of the 30th (5 rows) fall after it
    got = check("SELECT COUNT(*) FROM booking WHERE booked_at <= '2024-12-30'")
    assert got.fired and [(b["day"], b["rows"]) for b in got.evidence["bounds"]] == [("2024-12-30", 5)]
    got = check("SELECT COUNT(*) FROM booking WHERE booked_at <= DATE '2024-12-30'")
    assert got.fired and got.evidence["bounds"][0]["fix"] == "booked_at < '2024-12-31'"
    # timestamps at midnight only, compared as timestamps: nothing on the wrong side
    got = check("SELECT COUNT(*) FROM booking WHERE booked_at <= '2024-12-29' AND id % 5 = 0")
    assert not got.fired and got.evidence["bounds"] == []
    # a DATE column holds no time: silent
    got = check("SELECT COUNT(*) FROM booking WHERE on_day <= '2024-12-30'")
    assert not got.fired and got.evidence["bounds"] == [] and got.evidence["not_measured"] == []


# -- the boundaries: every word of the report, one row, several bounds, the forms not read --------
def test_two_bounds_of_one_query_are_both_reported_word_for_word(shop):
    check = run_check(shop, "date_only_bound",
                      "SELECT COUNT(*) FROM orders WHERE placed > '2024-12-29' AND placed <= '2024-12-30'")
    assert check.fired
    assert check.detail == (
        "placed > '2024-12-29': placed stores a time with each date and a date-only bound is the start of its day, "
        "so the rows of 2024-12-29 itself fall after the bound and are kept (4 rows under the query's other "
        "conditions), and the answer changes; write placed >= '2024-12-30'; "
        "placed <= '2024-12-30': placed stores a time with each date and a date-only bound is the start of its day, "
        "so the rows of 2024-12-30 itself fall after the bound and are left out (4 rows under the query's other "
        "conditions), and the answer changes; write placed < '2024-12-31'")
    assert check.evidence == {"bounds": [
        {"sql": "placed > '2024-12-29'", "column": "placed", "day": "2024-12-29", "effect": "keeps", "rows": 4,
         "fix": "placed >= '2024-12-30'"},
        {"sql": "placed <= '2024-12-30'", "column": "placed", "day": "2024-12-30", "effect": "leaves out", "rows": 4,
         "fix": "placed < '2024-12-31'"}], "not_measured": [], "same_answer": []}


def test_one_row_on_the_wrong_side_is_one_row(shop):
    # order 1 (total 10) is the one order of 30 December with that total
    check = run_check(shop, "date_only_bound", "SELECT COUNT(*) FROM orders WHERE total = 10 AND placed = '2024-12-30'")
    assert check.fired and [b["rows"] for b in check.evidence["bounds"]] == [1]
    assert "(1 row under the query's other conditions)" in check.detail


def test_a_day_with_no_rows_does_not_stop_the_next_day_of_the_list(shop):
    check = run_check(shop, "date_only_bound", "SELECT COUNT(*) FROM orders WHERE placed IN ('2024-12-28', '2024-12-30')")
    assert check.fired and [(b["day"], b["rows"]) for b in check.evidence["bounds"]] == [("2024-12-30", 4)]


def test_a_one_day_range_is_read(shop):
    check = run_check(shop, "date_only_bound",
                      "SELECT COUNT(*) FROM orders WHERE placed BETWEEN '2024-12-30' AND '2024-12-30'")
    assert check.fired and check.evidence["bounds"][0]["fix"] == "placed >= '2024-12-30' AND placed < '2024-12-31'"


def test_an_explicit_inner_join_on_is_a_filter(shop):
    check = run_check(shop, "date_only_bound", "SELECT COUNT(*) FROM customer c INNER JOIN orders o "
                                               "ON o.customer_id = c.id AND o.placed <= '2024-12-30'")
    assert check.fired and check.evidence["bounds"][0]["sql"] == "o.placed <= '2024-12-30'"


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM orders WHERE placed <= 20241230",  # a number, not a date literal
    "SELECT COUNT(*) FROM orders WHERE placed <= '20241230'",  # ISO's basic form is not read
    "SELECT COUNT(*) FROM orders WHERE placed <= '9999-12-31'",  # no day after it
    "SELECT COUNT(*) FROM orders WHERE placed IN ('2024-12-30', 'soon')",  # not every member is a day
    "SELECT COUNT(*) FROM orders WHERE date(placed) IN ('2024-12-30')",  # not a column
])
def test_forms_that_are_not_a_date_only_bound_on_a_column(shop, sql):
    check = run_check(shop, "date_only_bound", sql)
    assert (check.fired, check.detail, check.evidence) == (
        False, "no date-only bound that a time of day puts on the wrong side",
        {"bounds": [], "not_measured": [], "same_answer": []})


def test_an_empty_range_is_no_bound_even_where_the_day_has_rows(shop):
    check = run_check(shop, "date_only_bound",
                      "SELECT COUNT(*) FROM orders WHERE placed BETWEEN '2024-12-31' AND '2024-12-30'")
    assert check.evidence == {"bounds": [], "not_measured": [], "same_answer": []}


def test_the_same_answer_and_not_measured_reports_exactly(shop):
    check = run_check(shop, "date_only_bound", "SELECT MAX(total) FROM orders WHERE placed > '2024-12-29'")
    assert (check.detail, check.evidence) == (
        "placed > '2024-12-29': rows of the bound's day fall on the wrong side of it, but the answer is the same "
        "with the whole day", {"bounds": [], "not_measured": [], "same_answer": ["placed > '2024-12-29'"]})
    check = run_check(shop, "date_only_bound", "SELECT name FROM customer c WHERE EXISTS (SELECT 1 FROM orders o "
                                               "WHERE o.customer_id = c.id AND o.placed = '2024-12-30' "
                                               "AND o.placed <= '2024-12-31')")
    assert (check.detail, check.evidence) == (
        "not measured: o.placed = '2024-12-30'; o.placed <= '2024-12-31' (the probe could not run, or the answer is "
        "cut at the row cap)",
        {"bounds": [], "not_measured": ["o.placed = '2024-12-30'", "o.placed <= '2024-12-31'"], "same_answer": []})


def test_sql_that_did_not_pass_the_gate_is_not_measured(shop):
    check = run_check(shop, "date_only_bound", "DELETE FROM orders WHERE placed <= '2024-12-30'")
    assert (check.fired, check.detail) == (False, "not measured: the SQL could not be parsed")


def test_mariadb_writes_the_bound_in_its_own_dialect(mariadb, tmp_path):
    url, cur, name = mariadb
    cur.execute(f"CREATE TABLE {name}.booking (id INT PRIMARY KEY, `booked on` DATETIME)")
    cur.execute(f"INSERT INTO {name}.booking VALUES (1, '2024-12-30 10:00'), (2, '2024-12-31 09:00')")
    answer = vouchsql.check(url, "How many bookings?", ["SELECT COUNT(*) FROM booking WHERE `booked on` <= '2024-12-30'"],
                            cache_dir=str(tmp_path))
    got = {c.name: c for c in answer.checks}["date_only_bound"]
    assert got.fired and got.evidence["bounds"] == [
        {"sql": "`booked on` <= '2024-12-30'", "column": "`booked on`", "day": "2024-12-30", "effect": "leaves out",
         "rows": 1, "fix": "`booked on` < '2024-12-31'"}]


def test_several_same_answers_are_listed(shop):
    sql = ("SELECT (SELECT COUNT(*) FROM orders WHERE placed > '2024-12-29') > 0 "
           "AND (SELECT COUNT(*) FROM orders WHERE placed <= '2024-12-30') > 0")
    check = run_check(shop, "date_only_bound", sql)
    assert check.detail == ("placed > '2024-12-29'; placed <= '2024-12-30': rows of the bound's day fall on the wrong "
                            "side of it, but the answer is the same with the whole day")


def test_an_answer_cut_at_the_row_cap_is_not_compared(shop):
    # both answers are cut at 2 rows: whether they differ beyond the cut is not known
    check = run_check(shop, "date_only_bound", "SELECT id FROM orders WHERE placed <= '2024-12-30' ORDER BY id",
                      max_rows=2)
    assert (check.fired, check.evidence["not_measured"]) == (False, ["placed <= '2024-12-30'"])
