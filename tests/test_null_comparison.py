"""null_comparison: a comparison with NULL is never true, so the filter it writes keeps nothing.
Real SQLite files; the verdicts and details exactly."""

from __future__ import annotations

import pytest

from test_boundaries import make_db, run_check

NEVER = ("never true, since a comparison with NULL is unknown, so it keeps nothing; write IS NULL / "
         "IS NOT NULL, or NOT EXISTS for NOT IN (subquery)")


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    path = tmp_path_factory.mktemp("nulls") / "shop.sqlite"
    return make_db(path, {
        "customer": ("id INTEGER PRIMARY KEY, name TEXT, region TEXT",
                     [(i, f"c{i}", [None, "North", "South", "East"][i % 4]) for i in range(1, 21)]),
        "employee": ("id INTEGER PRIMARY KEY, region TEXT, boss INTEGER",
                     [(1, "North", None), (2, None, 1), (3, "West", 1)]),
        "branch": ("id INTEGER PRIMARY KEY, region TEXT NOT NULL", [(1, "North"), (2, "East")]),
    })


@pytest.mark.parametrize("sql, comparisons", [
    ("SELECT COUNT(*) FROM customer WHERE region = NULL", ["region = NULL"]),
    ("SELECT COUNT(*) FROM customer WHERE NULL <> region", ["NULL <> region"]),
    ("SELECT COUNT(*) FROM customer WHERE region != (NULL)", ["region <> (NULL)"]),
    ("SELECT COUNT(*) FROM customer WHERE id > NULL OR name = 'c1'", ["id > NULL"]),
    ("SELECT CASE region WHEN NULL THEN 'none' ELSE region END FROM customer", ["CASE region WHEN NULL"]),
    ("SELECT COUNT(*) FROM customer WHERE region NOT IN ('North', NULL)", ["NOT region IN ('North', NULL)"]),
    # the subquery returns a NULL (employee 2 has no region): NOT IN keeps no customer
    ("SELECT COUNT(*) FROM customer WHERE region NOT IN (SELECT region FROM employee)",
     ["region NOT IN (a subquery that returns NULL)"]),
    ("SELECT COUNT(*) FROM customer WHERE region NOT IN (SELECT e.region AS r FROM employee e WHERE e.id > 1)",
     ["region NOT IN (a subquery that returns NULL)"]),
])
def test_null_comparison_fires(shop, sql, comparisons):
    check = run_check(shop, "null_comparison", sql)
    assert (check.fired, check.kind) == (True, "veto")
    assert check.evidence == {"comparisons": comparisons, "not_measured": []}
    assert check.detail == f"{'; '.join(comparisons)}: {NEVER}"


@pytest.mark.parametrize("sql, detail, not_measured", [
    ("SELECT COUNT(*) FROM customer WHERE region IS NULL", "no comparison with NULL", []),
    ("SELECT COUNT(*) FROM customer WHERE region IS NOT NULL AND region <> 'North'", "no comparison with NULL", []),
    # IN with a NULL still matches its other values
    ("SELECT COUNT(*) FROM customer WHERE region IN ('North', NULL)", "no comparison with NULL", []),
    ("SELECT COALESCE(region, 'none') = 'none' FROM customer", "no comparison with NULL", []),
    # no NULL in what the subquery returns: a filter of its own, or a column without NULLs
    ("SELECT COUNT(*) FROM customer WHERE region NOT IN (SELECT region FROM employee WHERE region IS NOT NULL)",
     "no comparison with NULL", []),
    ("SELECT COUNT(*) FROM customer WHERE region NOT IN (SELECT region FROM branch)", "no comparison with NULL", []),
    ("SELECT COUNT(*) FROM customer c WHERE NOT EXISTS (SELECT 1 FROM employee e WHERE e.region = c.region)",
     "no comparison with NULL", []),
    # correlated: the subquery's NULLs depend on the outer row, so it is not probed
    ("SELECT COUNT(*) FROM customer c WHERE c.region NOT IN (SELECT e.region FROM employee e WHERE e.id = c.id)",
     "not measured: c.region NOT IN (…) (a correlated subquery, or the probe failed)", ["c.region NOT IN (…)"]),
])
def test_null_comparison_does_not_fire(shop, sql, detail, not_measured):
    check = run_check(shop, "null_comparison", sql)
    assert check.fired is False
    assert check.detail == detail
    assert check.evidence == {"comparisons": [], "not_measured": not_measured}


def test_null_comparison_unparsed(shop):
    check = run_check(shop, "null_comparison", "SELEC 1")
    assert (check.fired, check.detail) == (False, "not measured: the SQL could not be parsed")


def test_null_comparison_withholds_the_answer(shop):
    import vouchsql

    sql = "SELECT COUNT(*) FROM customer WHERE region = NULL"
    answer = vouchsql.check(shop, "How many customers have no region?", [sql, sql, sql],
                            cache_dir=str(shop.parent / "cache"))
    assert answer.shown.result.rows == [[0]]
    assert answer.verdict.gate == "abstain" and "null_comparison" in answer.verdict.reasons
