"""question_filters pinned at its boundaries (issue 11, part 5): what the check reports —
fired, detail, evidence and the COMPLETE term — exactly at and beside the edges that decide
it, on a small SQLite file built here (employees, customers, orders, events).
``python bench/mutation.py --modules question_filters`` is the measure of these tests: a
moved cutoff, a flipped comparison or a deleted guard in checks/question_filters.py must fail
one of them.

What the check decides (fired, "not measured" or not, the evidence's fields and the terms) is
compared in code; the wording of its detail, which holds each finding's problem, is the
snapshot's (tests/__snapshots__/test_boundaries_question_filters.ambr): after rewording a
message, ``pytest tests/test_boundaries_question_filters.py --snapshot-update`` and review the diff.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import vouchsql
from vouchsql.checks import base as checks_base
from vouchsql.probe import Budget

from wording import Prose

def shop_db(path: Path) -> Path:
    """Six employees (three Sales Support Agents, every customer's rep), twenty customers in
    four countries, sixty orders from 2020 to 2023, ten events all in 2019, launches from 1800 to
    2100 (a year column at both ends of the years read), models whose year column is no year,
    products whose only column is their key, and a table of two words."""
    con = sqlite3.connect(path)
    con.executescript("""
    CREATE TABLE employee (EmployeeId INTEGER PRIMARY KEY, FirstName TEXT, LastName TEXT, Title TEXT,
                           Department TEXT, BirthDate TEXT);
    CREATE TABLE customer (CustomerId INTEGER PRIMARY KEY, Name TEXT, Country TEXT, City TEXT, Age INTEGER,
                           SignupDate TEXT, Credit REAL, CreditLimit REAL,
                           SupportRepId INTEGER REFERENCES employee(EmployeeId));
    CREATE TABLE orders (OrderId INTEGER PRIMARY KEY, CustomerId INTEGER REFERENCES customer(CustomerId),
                         OrderDate TEXT, Total REAL, ShipYear INTEGER, Status TEXT);
    CREATE TABLE event (EventId INTEGER PRIMARY KEY, Day TEXT, Kind TEXT, Units INTEGER, UnitsSold INTEGER);
    CREATE TABLE launch (LaunchId INTEGER PRIMARY KEY, LaunchYear INTEGER, Note TEXT);
    CREATE TABLE model (ModelId INTEGER PRIMARY KEY, ModelYear INTEGER, Made TEXT);
    CREATE TABLE product (Sku INTEGER PRIMARY KEY);
    CREATE TABLE ship_modes (ModeKey INTEGER PRIMARY KEY, Label TEXT);
    """)
    con.executemany("INSERT INTO employee VALUES (?,?,?,?,?,?)", [
        (1, "Andrew", "Adams", "General Manager", "Board", "1962-02-18"),
        (2, "Nancy", "Edwards", "Sales Manager", "Sales", "1958-12-08"),
        (3, "Jane", "Peacock", "Sales Support Agent", "Sales", "1973-08-29"),
        (4, "Margaret", "Park", "Sales Support Agent", "Sales", "1947-09-19"),
        (5, "Steve", "Johnson", "Sales Support Agent", "Sales", "1965-03-03"),
        (6, "Laura", "Callahan", "IT Staff", "Support Agent", "1968-01-09")])
    countries = ["Brazil", "Canada", "France", "Germany"]
    cities = ["Rio", "Toronto", "Paris", "Berlin"]
    con.executemany("INSERT INTO customer VALUES (?,?,?,?,?,?,?,?,?)", [
        (i, f"Person {i}", countries[i % 4], cities[i % 4], 20 + 2 * i, f"20{18 + i % 5}-{1 + i % 9:02d}-1{i % 9}",
         10.0 * i, 100.0 + 5 * i, 3 + i % 3) for i in range(1, 21)])
    con.executemany("INSERT INTO orders VALUES (?,?,?,?,?,?)", [
        (j, 1 + j % 20, f"20{20 + j % 4}-{1 + j % 12:02d}-0{1 + j % 9}", 1.5 * j, 2020 + j % 4,
         ["shipped", "pending", "cancelled"][j % 3]) for j in range(1, 61)])
    # each but 'talk' also names the schema
    kinds = ["launch", "talk", "model launch", "ship years", "launch year", "units sold", "launch units",
             "model launches", "ship mode", "orders"]
    con.executemany("INSERT INTO event VALUES (?,?,?,?,?)",
                    [(k, f"2019-0{1 + k % 9}-1{k % 9}", kinds[k % 10], k, 2 * k) for k in range(1, 11)])
    con.executemany("INSERT INTO launch VALUES (?,?,?)", [(1, 1800, "first"), (2, 1900, "talk"),
                                                           (3, 2000, "middle"), (4, 2100, "last")])
    con.executemany("INSERT INTO product VALUES (?)", [(10,), (11,), (12,)])
    con.executemany("INSERT INTO model VALUES (?,?,?)", [(1, 1, "2019-05-01"), (2, 9, "unknown")])
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    return shop_db(tmp_path_factory.mktemp("shop") / "shop.sqlite")


def qf(db: Path, cache_dir: str, question: str, sql: str):
    answer = vouchsql.check(db, question, [sql], cache_dir=cache_dir)
    return {c.name: c for c in answer.checks}["question_filters"]


def outcome(check) -> tuple:
    """What the check decided, compared in code: fired, whether the detail says "not measured"
    (a prefix the pipeline reads), the evidence (each finding's ``problem`` a Prose) and the terms."""
    return check.fired, check.detail.startswith("not measured"), check.evidence, check.terms


def assert_outcome(check, expected: tuple, snapshot) -> None:
    """The decision against ``expected`` in code; the wording against the snapshot. The detail
    holds every finding's problem (so the snapshot of the detail pins them), and, where nothing
    fired, every filter measured."""
    assert outcome(check) == expected
    for f in check.evidence.get("findings", []):
        assert f["problem"] in check.detail
    if not check.fired:
        assert all(m in check.detail for m in check.evidence.get("measured", []))
    assert check.detail == snapshot


def measured(*words: str, not_measured: tuple[str, ...] = ()) -> tuple:
    return False, False, {"measured": list(words), "not_measured": list(not_measured)}, {"complete": 1.0}


def unmeasured(*words: str) -> tuple:
    return False, True, {"measured": [], "not_measured": list(words)}, {}


def found(kind: str, words: str, expected: str, sql: str | None, *names: str) -> dict:
    """One finding; its problem's words are the snapshot's, ``names`` what it must name beside them."""
    return {"kind": kind, "words": words, "expected": expected, "sql": sql, "problem": Prose(*names)}


def finding(kind: str, words: str, expected: str, sql: str | None, *, names: tuple = (), measured: tuple = (),
            not_measured: tuple = ()) -> tuple:
    complete = len(measured) / (len(measured) + 1)
    return (True, False, {"findings": [found(kind, words, expected, sql, *names)],
                          "measured": list(measured), "not_measured": list(not_measured)},
            {"complete": round(complete, 6)})


def value_missing(words: str, refs: str, **kw) -> tuple:
    return finding("value", f"'{words}'", f"a filter on {refs}", None, **kw)


# ---------------------------------------------------------------------------------------
# values the question names
# ---------------------------------------------------------------------------------------
BRAZIL = "Show the customers from Brazil."


@pytest.mark.parametrize("sql, expected", [
    ("SELECT Name FROM customer", value_missing("Brazil", "customer.Country")),
    ("SELECT Name FROM customer WHERE Age > 100", value_missing("Brazil", "customer.Country")),
    ("SELECT Name FROM customer WHERE Country = 'Brazil'",
     measured("'Brazil' (customer.Country) filtered by 'Brazil'")),
    ("SELECT Name FROM customer WHERE Country = 'BRAZIL'",
     measured("'Brazil' (customer.Country) filtered by 'BRAZIL'")),
    # a literal inside the value (three characters or more), the value inside a literal
    ("SELECT Name FROM customer WHERE Country = 'Bra'", measured("'Brazil' (customer.Country) filtered by 'Bra'")),
    ("SELECT Name FROM customer WHERE Country = 'Br'", unmeasured("'Brazil': the SQL filters customer.country = 'Br'")),
    ("SELECT Name FROM customer WHERE Country = 'Ca'",
     finding("value", "'Brazil'", "a filter on customer.Country for 'Brazil'", "customer.country = 'Ca'")),
    ("SELECT Name FROM customer WHERE Country = 'Brazil!'",
     measured("'Brazil' (customer.Country) filtered by 'Brazil!'")),
    ("SELECT Name FROM customer WHERE Country = ''",
     unmeasured("'Brazil': the SQL filters customer.country = ''")),
    ("SELECT Name FROM customer WHERE Country LIKE 'Bra%'", measured("'Brazil' (customer.Country) filtered by 'Bra%'")),
    ("SELECT Name FROM customer WHERE Country LIKE 'Braz_l'",
     measured("'Brazil' (customer.Country) filtered by 'Braz_l'")),
    ("SELECT Name FROM customer WHERE Country LIKE 'B_l%'",
     unmeasured("'Brazil': the SQL filters customer.country LIKE 'B_l%'")),
    ("SELECT Name FROM customer WHERE Country LIKE 'C%'", unmeasured("'Brazil': the SQL filters customer.country LIKE 'C%'")),
    ("SELECT Name FROM customer WHERE Country LIKE 'B.%'",
     unmeasured("'Brazil': the SQL filters customer.country LIKE 'B.%'")),
    ("SELECT Name FROM customer WHERE Country = 'Canada'",
     finding("value", "'Brazil'", "a filter on customer.Country for 'Brazil'", "customer.country = 'Canada'")),
    ("SELECT Name FROM customer WHERE LENGTH(Country) = 6",
     unmeasured("'Brazil': the SQL filters LENGTH(customer.country) = 6")),
    # the key of the value's table compared with a constant stands for the value
    ("SELECT Name FROM customer WHERE CustomerId = 4",
     measured("'Brazil': the SQL filters on the key instead (customer.customerid = 4)")),
    ("SELECT Name FROM customer WHERE CustomerId IN (4, 8)",
     measured("'Brazil': the SQL filters on the key instead (customer.customerid IN (4, 8))")),
    # a name of the result is not a value
    ("SELECT Name AS Brazil FROM customer", unmeasured()),
])
def test_question_filters_a_named_value(shop, cache_dir, sql, expected, snapshot):
    assert_outcome(qf(shop, cache_dir, BRAZIL, sql), expected, snapshot)


def test_question_filters_a_value_whose_literal_the_question_writes_is_not_measured(shop, cache_dir, snapshot):
    # 'BR' is the question's own word: the SQL may well mean Brazil by it
    check = qf(shop, cache_dir, "Show the customers from Brazil (code BR).",
               "SELECT Name FROM customer WHERE Country = 'BR'")
    assert_outcome(check, unmeasured("'Brazil': the SQL filters customer.country = 'BR'"), snapshot)
    check = qf(shop, cache_dir, "Show the customers from Brazil (code BR).",
               "SELECT Name FROM customer WHERE Country = 'BR' OR Country = 'BZ'")
    assert_outcome(check, unmeasured("'Brazil': the SQL filters customer.country = 'BR'"), snapshot)


def test_question_filters_a_join_on_the_key_is_no_filter(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, "Show the orders of customers from Brazil.",
               "SELECT o.OrderId FROM orders o JOIN customer c ON c.CustomerId = o.CustomerId")
    assert_outcome(check, value_missing("Brazil", "customer.Country"), snapshot)
    # a key compared with a constant in a bigger predicate still counts
    check = qf(shop, cache_dir, "Show the orders of customers from Brazil.",
               "SELECT o.OrderId FROM orders o JOIN customer c ON c.CustomerId = o.CustomerId "
               "WHERE c.CustomerId + 0 = 4")
    assert_outcome(check, measured("'Brazil': the SQL filters on the key instead (c.customerid + 0 = 4)"), snapshot)


def test_question_filters_a_value_of_a_table_the_sql_does_not_read(shop, cache_dir, snapshot):
    # customer is not read, but orders holds its key: filtering through it changes the answer
    check = qf(shop, cache_dir, "Show the orders of customers from Brazil.", "SELECT OrderId FROM orders")
    assert_outcome(check, finding("value", "'Brazil'", "a filter on customer.Country", None,
                                  names=("orders.CustomerId",)), snapshot)
    # the key compared with constants is the filter, where the keys' rows hold the value
    check = qf(shop, cache_dir, "Show the orders of customers from Brazil.",
               "SELECT OrderId FROM orders WHERE CustomerId IN (4, 8)")
    assert_outcome(check, measured("'Brazil' (customer.Country): the SQL filters on orders.CustomerId instead "
                                   "(orders.customerid IN (4, 8))"), snapshot)
    # customers 1 and 5 are Canadian: the key's rows hold no such value
    check = qf(shop, cache_dir, "Show the orders of customers from Brazil.",
               "SELECT OrderId FROM orders WHERE CustomerId IN (1, 5)")
    assert_outcome(check, finding("value", "'Brazil'", "a filter on customer.Country", "orders.customerid IN (1, 5)"),
                   snapshot)
    # every customer's rep is a Sales Support Agent: the filter through SupportRepId changes nothing
    check = qf(shop, cache_dir, "Show the customers whose rep is a Sales Support Agent.", "SELECT Name FROM customer")
    assert_outcome(check, unmeasured("'Sales Support Agent' (employee.Title): every row the SQL reads already "
                                     "holds it through customer.SupportRepId (adding the filter changes nothing)"),
                   snapshot)
    # no table the SQL reads holds the value's table's key: nothing to filter through
    check = qf(shop, cache_dir, "Show the orders of the 'talk' events.", "SELECT OrderId FROM orders")
    assert_outcome(check, unmeasured("'talk': a value of event.Kind, a table the SQL does not read, and no "
                                     "table it reads holds event's key"), snapshot)
    # a near spelling in the other table is no evidence
    check = qf(shop, cache_dir, "Show the orders of customers from Brazill.", "SELECT OrderId FROM orders")
    assert_outcome(check, unmeasured("'Brazill': a value of customer.Country, a table the SQL does not read"), snapshot)


def test_question_filters_two_values_of_one_column_are_one_filter(shop, cache_dir, snapshot):
    question = "Show the customers from Brazil or Canada."
    check = qf(shop, cache_dir, question, "SELECT Name FROM customer WHERE Country IN ('Brazil', 'Canada')")
    assert_outcome(check, measured("'Brazil', 'Canada' (customer.Country) filtered by 'Brazil'"), snapshot)
    check = qf(shop, cache_dir, question, "SELECT Name FROM customer")
    assert_outcome(check, value_missing("Brazil', 'Canada", "customer.Country"), snapshot)


def test_question_filters_values_of_two_columns_are_two_filters(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, "Show the customers from Brazil in Rio.", "SELECT Name FROM customer")
    assert_outcome(check, (True, False, {"findings": [
        found("value", "'Brazil'", "a filter on customer.Country", None),
        found("value", "'Rio'", "a filter on customer.City", None)], "measured": [], "not_measured": []},
        {"complete": 0.0}), snapshot)
    check = qf(shop, cache_dir, "Show the customers from Brazil in Paris.",
               "SELECT Name FROM customer WHERE City = 'Paris'")
    assert_outcome(check, value_missing("Brazil", "customer.Country",
                                        measured=("'Paris' (customer.City) filtered by 'Paris'",)), snapshot)
    assert check.terms == {"complete": 0.5}
    # every customer in Rio is in Brazil: the city's filter already holds the country's
    check = qf(shop, cache_dir, "Show the customers from Brazil in Rio.",
               "SELECT Name FROM customer WHERE City = 'Rio'")
    assert_outcome(check, measured("'Rio' (customer.City) filtered by 'Rio'", not_measured=(
        "'Brazil' (customer.Country): every row the SQL reads already holds it (adding the filter changes nothing)",)),
                   snapshot)


def test_question_filters_the_longest_run_that_names_a_value_uses_its_words(shop, cache_dir, snapshot):
    # "Sales" alone is a Department; inside "Sales Managers" it is part of the Title
    check = qf(shop, cache_dir, "Which Sales Managers are there?", "SELECT FirstName FROM employee")
    assert_outcome(check, value_missing("Sales Managers", "employee.Title"), snapshot)
    check = qf(shop, cache_dir, "Which employees work in Sales?", "SELECT FirstName FROM employee")
    assert_outcome(check, value_missing("Sales", "employee.Department"), snapshot)


def test_question_filters_a_filter_that_changes_nothing_is_not_evidence(shop, cache_dir, snapshot):
    # every customer's support rep is a Sales Support Agent: adding Title = … keeps the rows
    question = "Which Sales Support Agent has customers in Brazil?"
    agents = "'Sales Support Agent' (employee.Title): every row the SQL reads already holds it " \
             "(adding the filter changes nothing)"
    sql = "SELECT e.FirstName FROM employee e JOIN customer c ON c.SupportRepId = e.EmployeeId"
    check = qf(shop, cache_dir, question, sql + " WHERE c.Country = 'Brazil'")
    assert_outcome(check, measured("'Brazil' (customer.Country) filtered by 'Brazil'", not_measured=(agents,)),
                   snapshot)
    check = qf(shop, cache_dir, question, sql)
    assert_outcome(check, value_missing("Brazil", "customer.Country", not_measured=(agents,)), snapshot)
    # every employee is not an agent: the same filter changes the rows
    check = qf(shop, cache_dir, "Which Sales Support Agent is the oldest?", "SELECT FirstName FROM employee")
    assert_outcome(check, value_missing("Sales Support Agent", "employee.Title"), snapshot)


def test_question_filters_a_like_pattern_with_an_underscore_names_the_value(shop, cache_dir, snapshot):
    # fold() reads '_' as a space; the pattern's wildcard is kept apart while it folds
    check = qf(shop, cache_dir, BRAZIL, "SELECT Name FROM customer WHERE Country LIKE 'b_a%l'")
    assert_outcome(check, measured("'Brazil' (customer.Country) filtered by 'b_a%l'"), snapshot)


def test_question_filters_a_filter_that_changes_nothing_is_tried_on_the_rows_the_sql_reads(shop, cache_dir, snapshot):
    question = "Which Sales Support Agent has customers?"
    agents = "'Sales Support Agent' (employee.Title): every row the SQL reads already holds it " \
             "(adding the filter changes nothing)"
    join = "FROM employee e JOIN customer c ON c.SupportRepId = e.EmployeeId"
    # the filter goes to the SELECT that reads the table, inside a derived table too
    for sql in (f"SELECT FirstName FROM (SELECT e.FirstName {join})",
                "SELECT EMPLOYEE.FirstName FROM EMPLOYEE JOIN CUSTOMER ON CUSTOMER.SupportRepId = EMPLOYEE.EmployeeId",
                f"SELECT e.FirstName {join} ORDER BY c.Age DESC"):
        assert_outcome(qf(shop, cache_dir, question, sql), unmeasured(agents), snapshot)
    # an empty result cannot show it: the value is missing
    check = qf(shop, cache_dir, question, f"SELECT e.FirstName {join} WHERE c.Age > 1000")
    assert_outcome(check, value_missing("Sales Support Agent", "employee.Title"), snapshot)
    # nor a truncated one
    answer = vouchsql.check(shop, question, [f"SELECT e.FirstName {join}"], cache_dir=cache_dir, max_rows=5)
    check = {c.name: c for c in answer.checks}["question_filters"]
    assert_outcome(check, value_missing("Sales Support Agent", "employee.Title"), snapshot)
    answer = vouchsql.check(shop, question, [f"SELECT e.FirstName {join}"], cache_dir=cache_dir, max_rows=20)
    check = {c.name: c for c in answer.checks}["question_filters"]
    assert_outcome(check, unmeasured(agents), snapshot)


def test_question_filters_not_measured_without_a_parse(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, BRAZIL, "SELEC 1")
    assert_outcome(check, (False, True, {}, {}), snapshot)


# ---------------------------------------------------------------------------------------
# years and months
# ---------------------------------------------------------------------------------------
def year_missing(words: str, year: int) -> tuple:
    return finding("year", words, f"a filter on the year {year}", None)


def year_other(words: str, year: int, other: str) -> tuple:
    return finding("year", words, f"a filter on the year {year}", other)


ORDERS = "How many orders were placed {}?"
COUNT = "SELECT COUNT(*) FROM orders"


@pytest.mark.parametrize("when, where, expected", [
    ("in 2022", "", year_missing("placed in 2022", 2022)),
    ("in 2022", "WHERE OrderDate LIKE '2022%'", measured("'placed in 2022'")),
    ("in 2022", "WHERE OrderDate LIKE '2021%'", year_other("placed in 2022", 2022, "2021")),
    ("in 2022", "WHERE ShipYear = 2022", measured("'placed in 2022'")),
    ("in 2022", "WHERE ShipYear = 2022.5", year_missing("placed in 2022", 2022)),
    ("in 2022", "WHERE ShipYear = 2023", year_other("placed in 2022", 2022, "2023")),
    ("in 2022", "WHERE ShipYear IN (2023, 2021)", year_other("placed in 2022", 2022, "2021, 2023")),
    ("in 2022", "WHERE OrderDate < 'x2022-01'", measured("'placed in 2022'")),
    ("in 2022", "WHERE OrderDate < '20221'", year_missing("placed in 2022", 2022)),
    ("in 2022", "WHERE OrderDate < '12022'", year_missing("placed in 2022", 2022)),
    ("in 2022 and 2022", "", year_missing("placed in 2022", 2022)),
    ("in 2025", "", unmeasured("'placed in 2025': no date column the SQL reads covers 2025")),
    ("in 2019", "", unmeasured("'placed in 2019': no date column the SQL reads covers 2019")),
    ("in 2020", "", year_missing("placed in 2020", 2020)),
    ("in 2023", "", year_missing("placed in 2023", 2023)),
    # before / after / since / through: a column read that holds only such years says nothing
    ("before 2024", "", unmeasured("'placed before 2024': a date column the SQL reads holds only such years")),
    ("before 2023", "", year_missing("placed before 2023", 2023)),
    ("after 2019", "", unmeasured("'placed after 2019': a date column the SQL reads holds only such years")),
    ("after 2020", "", year_missing("placed after 2020", 2020)),
    ("since 2020", "", unmeasured("'placed since 2020': a date column the SQL reads holds only such years")),
    ("since 2021", "", year_missing("placed since 2021", 2021)),
    ("through 2023", "", unmeasured("'placed through 2023': a date column the SQL reads holds only such years")),
    ("through 2022", "", year_missing("placed through 2022", 2022)),
    # the year beside the one named may be written instead ('< 2022-01-01' for 'before 2022')
    ("before 2022", "WHERE OrderDate < '2022-01-01'", measured("'placed before 2022'")),
    ("before 2022", "WHERE ShipYear <= 2021", measured("'placed before 2022'")),
    ("before 2022", "WHERE ShipYear < 2020", year_other("placed before 2022", 2022, "2020")),
    ("before 2022", "WHERE ShipYear < 2023", year_other("placed before 2022", 2022, "2023")),
    ("after 2021", "WHERE ShipYear > 2021", measured("'placed after 2021'")),
    ("after 2021", "WHERE ShipYear >= 2022", measured("'placed after 2021'")),
    ("after 2021", "WHERE ShipYear > 2020", year_other("placed after 2021", 2021, "2020")),
    ("after 2021", "WHERE ShipYear > 2023", year_other("placed after 2021", 2021, "2023")),
    ("since 2021", "WHERE ShipYear >= 2021", measured("'placed since 2021'")),
    ("since 2021", "WHERE ShipYear > 2020", measured("'placed since 2021'")),
    ("since 2021", "WHERE ShipYear >= 2022", year_other("placed since 2021", 2021, "2022")),
    ("through 2022", "WHERE ShipYear <= 2022", measured("'placed through 2022'")),
    ("through 2022", "WHERE ShipYear < 2023", measured("'placed through 2022'")),
    ("through 2022", "WHERE ShipYear <= 2021", year_other("placed through 2022", 2022, "2021")),
    # a month: 'YYYY-MM', the month's number as text or as a number
    ("in March 2022", "WHERE OrderDate LIKE '2022-03%'", measured("'in March 2022'")),
    ("in March 2022", "WHERE ShipYear = 2022 AND strftime('%m', OrderDate) = '03'", measured("'in March 2022'")),
    ("in March 2022", "WHERE ShipYear = 2022 AND strftime('%m', OrderDate) = ' 3 '", measured("'in March 2022'")),
    ("in March 2022", "WHERE ShipYear = 2022 AND CAST(strftime('%m', OrderDate) AS INTEGER) = 3",
     measured("'in March 2022'")),
    ("in November 2022", "WHERE strftime('%Y-%m', OrderDate) = '2022-11'", measured("'in November 2022'")),
    ("in March 2022", "WHERE ShipYear = 2022 AND strftime('%m', OrderDate) = '2022-3'",
     finding("month", "in March 2022", "2022-03", None)),
    ("in March 2022", "WHERE OrderDate LIKE '2021-03%' AND ShipYear = 2022",
     finding("month", "in March 2022", "2022-03", None)),
    ("in March 2022", "WHERE OrderDate LIKE '2022%'",
     finding("month", "in March 2022", "2022-03", None)),
])
def test_question_filters_a_year(shop, cache_dir, when, where, expected, snapshot):
    assert_outcome(qf(shop, cache_dir, ORDERS.format(when), f"{COUNT} {where}"), expected, snapshot)


def test_question_filters_a_year_every_row_already_has(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, "How many events were there in 2019?", "SELECT COUNT(*) FROM event")
    assert_outcome(check, unmeasured("'there in 2019': every row is from 2019, the filter changes nothing"), snapshot)
    # one column read holds only 2019, another more: the filter may change something
    check = qf(shop, cache_dir, "How many orders were placed before 2022?", "SELECT COUNT(*) FROM orders o, event e")
    assert_outcome(check, unmeasured("'placed before 2022': a date column the SQL reads holds only such years"),
                   snapshot)
    check = qf(shop, cache_dir, "How many orders were placed before 2020?", "SELECT COUNT(*) FROM orders o, event e")
    assert_outcome(check, unmeasured("'placed before 2020': a date column the SQL reads holds only such years"),
                   snapshot)


@pytest.mark.parametrize("question, sql, expected", [
    # a year column from 1800 to 2100 covers the years between
    ("How many launches were in 1800?", "SELECT COUNT(*) FROM launch WHERE LaunchYear = 1800",
     measured("'were in 1800'")),
    ("How many launches were in 1800?", "SELECT COUNT(*) FROM launch", year_missing("were in 1800", 1800)),
    ("How many launches were in 2000?", "SELECT COUNT(*) FROM launch WHERE LaunchYear = 2000",
     measured("'were in 2000'")),
    ("How many launches were there after 2099?", "SELECT COUNT(*) FROM launch WHERE LaunchYear = 2100",
     measured("'there after 2099'")),
    ("How many launches were there after 2099?", "SELECT COUNT(*) FROM launch WHERE LaunchYear = 2101",
     year_missing("there after 2099", 2099)),
    ("How many launches were there before 1801?", "SELECT COUNT(*) FROM launch WHERE LaunchYear = 1799",
     year_missing("there before 1801", 1801)),
    # a year column whose values are no years, a text column that is not all dates: no range
    ("How many models were made in 2019?", "SELECT COUNT(*) FROM model",
     unmeasured("'made in 2019': no date column the SQL reads covers 2019")),
])
def test_question_filters_the_date_columns_read(shop, cache_dir, question, sql, expected, snapshot):
    assert_outcome(qf(shop, cache_dir, question, sql), expected, snapshot)


# ---------------------------------------------------------------------------------------
# comparisons with a number
# ---------------------------------------------------------------------------------------
def compared(words: str, op: str, n: str, sql: str | None) -> tuple:
    return finding("comparison", words, f"{op} {n}", sql)


ORDERS_WITH = "Show the orders with a total {}."
IDS = "SELECT OrderId FROM orders"


@pytest.mark.parametrize("phrase, where, expected", [
    ("between 10 and 20", "WHERE Total BETWEEN 10 AND 20", measured("'between 10 and 20'")),
    ("between 10 and 20", "WHERE Total >= 10 AND Total <= 20", measured("'between 10 and 20'")),
    ("between 10 and 20", "WHERE 10 <= Total AND 20 >= Total", measured("'between 10 and 20'")),
    ("between 10 and 20", "WHERE Total >= 10 AND Total < 20", unmeasured("'between 10 and 20'")),
    ("between 10 and 20", "WHERE Total > 10 AND Total <= 20", unmeasured("'between 10 and 20'")),
    ("between 10 and 20", "WHERE Total BETWEEN 10 AND 21", unmeasured("'between 10 and 20'")),
    ("between 10 and 20", "WHERE Total BETWEEN 9 AND 20", unmeasured("'between 10 and 20'")),
    ("between 10 and 20", "WHERE Total BETWEEN 10 AND Total", unmeasured("'between 10 and 20'")),
    ("between 10 and 20", "", unmeasured("'between 10 and 20'")),
    # the operator asked, or its integer equivalent
    ("of 5 or more", "WHERE Total >= 5", measured("'5 or more'")),
    ("of 5 or more", "WHERE 5 <= Total", measured("'5 or more'")),
    ("of 5 or more", "WHERE Total > 4", measured("'5 or more'")),
    ("of 5 or more", "WHERE Total > 4.5", unmeasured("'5 or more'")),
    ("of 5 or more", "WHERE Total > 5", compared("5 or more", ">=", "5", "orders.total > 5")),
    ("of 5 or more", "WHERE 5 < Total", compared("5 or more", ">=", "5", "5 < orders.total")),
    ("of 5 or more", "WHERE Total > 6", compared("5 or more", ">=", "5", "orders.total > 6")),
    ("of 5 or more", "WHERE Total >= 6", compared("5 or more", ">=", "5", "orders.total >= 6")),
    ("of 5 or more", "WHERE Total >= 4", compared("5 or more", ">=", "5", "orders.total >= 4")),
    ("of 5 or more", "WHERE Total < 6", unmeasured("'5 or more'")),
    ("of 5 or more", "WHERE Total >= 3", unmeasured("'5 or more'")),
    ("of 5.5 or more", "WHERE Total > 4.5", unmeasured("'5.5 or more'")),
    ("of 5.5 or more", "WHERE Total >= 6.5", unmeasured("'5.5 or more'")),
    ("of 5.5 or more", "", compared("5.5 or more", ">=", "5.5", None)),
    # up to two words between the number and the bound, none a number
    ("of 5 dollars or more", "WHERE Total > 5", compared("5 dollars or more", ">=", "5", "orders.total > 5")),
    ("of 5 dollars total or more", "WHERE Total >= 5", measured("'5 dollars total or more'")),
    ("of 5 dollars total or more", "WHERE Total > 5",
     compared("5 dollars total or more", ">=", "5", "orders.total > 5")),
    ("of 5 or bigger", "WHERE Total > 5", compared("5 or bigger", ">=", "5", "orders.total > 5")),
    ("of 5 or smaller", "WHERE Total < 5", compared("5 or smaller", "<=", "5", "orders.total < 5")),
    ("of 2 and 5 or more", "WHERE Total >= 5", measured("'5 or more'")),
    ("of 5 or less", "WHERE Total < 6", measured("'5 or less'")),
    ("of 5 or less", "WHERE Total <= 5", measured("'5 or less'")),
    ("of 5 or less", "WHERE Total <= 6", compared("5 or less", "<=", "5", "orders.total <= 6")),
    ("of 5 or less", "WHERE Total <= 4", compared("5 or less", "<=", "5", "orders.total <= 4")),
    ("of 5 or less", "WHERE Total < 5", compared("5 or less", "<=", "5", "orders.total < 5")),
    ("over 6", "WHERE Total > 6", measured("'over 6'")),
    ("over 6", "WHERE Total >= 7", measured("'over 6'")),
    ("over 6", "WHERE Total >= 6", compared("over 6", ">", "6", "orders.total >= 6")),
    ("over 6", "WHERE Total > 6 AND Total < 6", measured("'over 6'")),
    ("over 6", "WHERE Total < 6 AND Total >= 6", compared("over 6", ">", "6", "orders.total < 6")),
    ("over 6", "WHERE Total > 7 AND Total > 5", compared("over 6", ">", "6", "orders.total > 7")),
    ("over 6", "WHERE Total < 7", unmeasured("'over 6'")),
    ("over 6", "WHERE Total > 8", unmeasured("'over 6'")),
    ("over 6", "WHERE Total + 1 > 7", compared("over 6", ">", "6", "orders.total + 1 > 7")),
    ("over 6", "WHERE 7 > 6", unmeasured("'over 6'")),
    ("over 6", "WHERE OrderDate < date('now')", unmeasured("'over 6'")),
    ("over 6", "WHERE OrderDate BETWEEN '2020' AND '2021'", unmeasured("'over 6'")),
    ("over 6", "WHERE Total > -6", unmeasured("'over 6'")),
    ("over 6", "WHERE -6 < Total", unmeasured("'over 6'")),
    ("over 6", "", compared("over 6", ">", "6", None)),
    ("under 20", "WHERE Total <= 19", measured("'under 20'")),
    ("under 20", "WHERE Total <= 20", compared("under 20", "<", "20", "orders.total <= 20")),
    ("of at most 20", "WHERE Total < 21", measured("'at most 20'")),
    ("of at most 20", "WHERE Total < 20", compared("at most 20", "<=", "20", "orders.total < 20")),
    ("of exactly 6", "WHERE Total > 6", unmeasured("'exactly 6'")),
    ("of exactly 6", "WHERE Total = 6", unmeasured("'exactly 6'")),
    ("of exactly 6", "", unmeasured("'exactly 6'")),
    ("over 1", "", unmeasured("'over 1'")),
])
def test_question_filters_a_comparison(shop, cache_dir, phrase, where, expected, snapshot):
    assert_outcome(qf(shop, cache_dir, ORDERS_WITH.format(phrase), f"{IDS} {where}"), expected, snapshot)


NAMES_ = "SELECT Name FROM customer"


@pytest.mark.parametrize("question, sql, expected", [
    # the number as an output is no evidence of a missing comparison
    ("Show the orders with a total over 6.", "SELECT OrderId, 6 AS six FROM orders", unmeasured("'over 6'")),
    # a missing comparison is evidence only when the words around it name what the SQL reads
    ("Show the orders over 6.", IDS, compared("over 6", ">", "6", None)),
    ("Show the rows whose total is above 6.", IDS, compared("above 6", ">", "6", None)),
    ("Show which customer order is above 6 now.", IDS, compared("above 6", ">", "6", None)),
    ("Show everything above 6 in orders.", IDS, compared("above 6", ">", "6", None)),
    ("Show everything above 6 in order.", IDS, compared("above 6", ">", "6", None)),
    ("List orders over 6.", IDS, compared("over 6", ">", "6", None)),
    ("Show everything above 6 in orders' rows.", IDS, compared("above 6", ">", "6", None)),
    ("Show everything above 6 in customers.", NAMES_, compared("above 6", ">", "6", None)),
    ("Show the lines over 6.", IDS, unmeasured("'over 6'")),
    ("Show me orders with value above 6.", IDS, unmeasured("'above 6'")),
    ("Show everything above 6 in the order table.", IDS, unmeasured("'above 6'")),
    ("Show the orders whose ship year is above 6.", IDS, unmeasured("'above 6'")),
])
def test_question_filters_a_missing_comparison(shop, cache_dir, question, sql, expected, snapshot):
    assert_outcome(qf(shop, cache_dir, question, sql), expected, snapshot)


# ---------------------------------------------------------------------------------------
# a column compared with another
# ---------------------------------------------------------------------------------------
CREDIT = "Show the customers whose {} the {}."
NAMES = "SELECT Name FROM customer"


def columns_compared(words: str, op: str, expected: str, sql: str | None) -> tuple:
    assert f" {op} " in expected  # the operator asked is the expected comparison's
    return finding("column_comparison", words, expected, sql)


@pytest.mark.parametrize("left, right, where, expected", [
    ("Credit is less than", "CreditLimit", "WHERE Credit < CreditLimit", "measured"),
    ("Credit is less than", "CreditLimit", "WHERE CreditLimit > Credit", "measured"),
    ("Credit is less than", "CreditLimit", "WHERE Credit < CreditLimit AND Credit > 0", "measured"),
    ("Credit is less than", "Credit Limit", "WHERE Credit < CreditLimit", "measured"),
    ("Credit is less than", "Credit Limit today", "WHERE Credit < CreditLimit", "measured"),
    ("Credit is greater than or equal to", "CreditLimit", "WHERE Credit >= CreditLimit", "measured"),
    ("Credit is greater than or equal to", "CreditLimit", "WHERE CreditLimit <= Credit", "measured"),
    ("Credit is less than or equal to", "CreditLimit", "WHERE CreditLimit >= Credit", "measured"),
    ("Credit is greater than", "CreditLimit", "WHERE CreditLimit < Credit", "measured"),
    ("Age or Credit is less than", "CreditLimit", "WHERE Credit < CreditLimit", "measured"),
    ("Credit is less than", "CreditLimit", "WHERE Credit <= CreditLimit",
     ("<", "credit < creditlimit", "customer.credit <= customer.creditlimit")),
    ("Credit is less than", "CreditLimit", "WHERE Credit > CreditLimit",
     ("<", "credit < creditlimit", "customer.credit > customer.creditlimit")),
    ("Credit is less than", "CreditLimit", "WHERE Credit = CreditLimit",
     ("<", "credit < creditlimit", "customer.credit = customer.creditlimit")),
    ("Credit is less than", "CreditLimit", "WHERE Credit < 5 AND CreditLimit >= Credit",
     ("<", "credit < creditlimit", "customer.creditlimit >= customer.credit")),
    ("Credit is less than", "CreditLimit", "WHERE CreditLimit >= Credit AND Credit = CreditLimit",
     ("<", "credit < creditlimit", "customer.creditlimit >= customer.credit")),
    ("Credit is less than or equal to", "CreditLimit", "WHERE Credit < CreditLimit",
     ("<=", "credit <= creditlimit", "customer.credit < customer.creditlimit")),
    ("Credit is less than", "CreditLimit", "", ("<", "credit < creditlimit", None)),
    ("Credit is less than", "CreditLimit", "WHERE Credit < 5", ("<", "credit < creditlimit", None)),
    # a condition on the right-hand column that is no comparison with the left: not measured
    ("Credit is less than", "CreditLimit", "WHERE CreditLimit IS NOT NULL", "unmeasured"),
    ("Credit is less than", "CreditLimit", "WHERE Credit < 5 AND CreditLimit > Age", "unmeasured"),
    ("Age or Credit is less than", "CreditLimit", "WHERE Age < CreditLimit", "unmeasured"),
    ("Credit is less than", "Credit", "WHERE Credit < CreditLimit", "unmeasured"),
    # a side that names no column read: not read at all
    ("Credit is less than", "Foo", "", "nothing"),
    ("Foo is less than", "CreditLimit", "", "nothing"),
])
def test_question_filters_a_column_compared_with_another(shop, cache_dir, left, right, where, expected, snapshot):
    question = CREDIT.format(left, right)
    words = question.removesuffix(".")
    check = qf(shop, cache_dir, question, f"{NAMES} {where}")
    if expected == "measured":
        assert_outcome(check, measured(f"'{words}'"), snapshot)
    elif expected == "unmeasured":
        assert_outcome(check, unmeasured(f"'{words}'"), snapshot)
    elif expected == "nothing":
        assert_outcome(check, unmeasured(), snapshot)
    else:
        assert_outcome(check, columns_compared(words, *expected), snapshot)


# ---------------------------------------------------------------------------------------
# ids
# ---------------------------------------------------------------------------------------
def id_missing(words: str, column: str, value: str, **kw) -> tuple:
    return finding("id", words, f"{column} = {value}", None, **kw)


@pytest.mark.parametrize("question, sql, expected", [
    ("Show the order with OrderId 7.", "SELECT * FROM orders WHERE OrderId = 7", measured("'OrderId 7'")),
    ("Show the order with OrderId 7.", "SELECT * FROM orders WHERE OrderId = '7'", measured("'OrderId 7'")),
    ("Show the order with OrderId 7.", "SELECT * FROM orders WHERE OrderId = ' 7 '", measured("'OrderId 7'")),
    ("Show the order with OrderId 7.", "SELECT * FROM orders WHERE OrderId = '7.0'",
     id_missing("OrderId 7", "OrderId", "7")),
    ("Show the order with OrderId 7.", "SELECT * FROM orders WHERE OrderId = 8", id_missing("OrderId 7", "OrderId", "7")),
    ("Show the order with OrderId 7.", "SELECT * FROM orders", id_missing("OrderId 7", "OrderId", "7")),
    ("Show the order with OrderId 7 and OrderId 7.", "SELECT * FROM orders", id_missing("OrderId 7", "OrderId", "7")),
    ("Show the order with Order ID 7.", "SELECT * FROM orders", id_missing("Order ID 7", "Order ID", "7")),
    ("Show the order with EmployeeId 7.", "SELECT * FROM orders WHERE OrderId = 8",
     unmeasured("'EmployeeId 7': no table the SQL reads has EmployeeId")),
])
def test_question_filters_an_id(shop, cache_dir, question, sql, expected, snapshot):
    assert_outcome(qf(shop, cache_dir, question, sql), expected, snapshot)


def test_question_filters_two_ids(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, "Show the orders OrderId 7 and CustomerId 8.", "SELECT * FROM orders WHERE OrderId = 7")
    assert_outcome(check, id_missing("CustomerId 8", "CustomerId", "8", measured=("'OrderId 7'",)), snapshot)
    check = qf(shop, cache_dir, "Show the orders OrderId 7 and OrderId 8.", "SELECT * FROM orders WHERE OrderId = 8")
    assert_outcome(check, id_missing("OrderId 7", "OrderId", "7", measured=("'OrderId 8'",)), snapshot)


# ---------------------------------------------------------------------------------------
# how many rows
# ---------------------------------------------------------------------------------------
TOP = "Show the top 5 orders by total."
BY_TOTAL = "SELECT * FROM orders ORDER BY Total DESC"


@pytest.mark.parametrize("question, tail, expected", [
    (TOP, "LIMIT 5", measured("'top 5'")),
    (TOP, "LIMIT 5 OFFSET 0", measured("'top 5'")),
    (TOP, "LIMIT 4", finding("rows", "top 5", "5 row(s)", "LIMIT 4")),
    (TOP, "LIMIT 6", finding("rows", "top 5", "5 row(s)", "LIMIT 6")),
    (TOP, "LIMIT 5 OFFSET 5", finding("rows", "top 5", "the first 5 row(s)", "OFFSET 5")),
    (TOP, "LIMIT 5 OFFSET 1", finding("rows", "top 5", "the first 5 row(s)", "OFFSET 1")),
    ("Show the second top 5 orders by total.", "LIMIT 5 OFFSET 5", measured("'top 5'")),
    (TOP, "", unmeasured("'top 5': the SQL has no LIMIT")),
    (TOP, "LIMIT (SELECT 5)", unmeasured("'top 5': the SQL has no LIMIT")),
])
def test_question_filters_how_many_rows(shop, cache_dir, question, tail, expected, snapshot):
    assert_outcome(qf(shop, cache_dir, question, f"{BY_TOTAL} {tail}"), expected, snapshot)


@pytest.mark.parametrize("tail, expected", [
    ("LIMIT 1", measured("'the customer with the highest'")),
    ("LIMIT 1 OFFSET 1", finding("rows", "the customer with the highest", "the first 1 row(s)", "OFFSET 1")),
    ("LIMIT 3", finding("rows", "the customer with the highest", "1 row(s)", "LIMIT 3")),
])
def test_question_filters_the_one_row_a_superlative_asks_for(shop, cache_dir, tail, expected, snapshot):
    check = qf(shop, cache_dir, "Show the customer with the highest credit.",
               f"SELECT Name FROM customer ORDER BY Credit DESC {tail}")
    assert_outcome(check, expected, snapshot)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM (SELECT * FROM orders ORDER BY Total DESC LIMIT 5) UNION SELECT * FROM orders",
    "SELECT * FROM orders UNION SELECT * FROM orders LIMIT 5",
])
def test_question_filters_rows_of_a_union_are_not_measured(shop, cache_dir, sql, snapshot):
    assert_outcome(qf(shop, cache_dir, TOP, sql), unmeasured("'top 5'"), snapshot)


# ---------------------------------------------------------------------------------------
# the SQL quoted in a finding: 160 characters at most
# ---------------------------------------------------------------------------------------
def test_question_filters_quotes_at_most_160_characters(shop, cache_dir, snapshot):
    question = "Show the orders with a total over 20."
    # 160 characters as written back: quoted whole
    zeros = ", ".join(["0"] * 44)
    check = qf(shop, cache_dir, question, f"{IDS} WHERE COALESCE(Total, {zeros}) >= 20")
    written = f"COALESCE(orders.total, {zeros}) >= 20"
    assert len(written) == 160
    assert_outcome(check, compared("over 20", ">", "20", written), snapshot)
    # 161: cut to 157 and an ellipsis
    zeros = ", ".join(["0"] * 46)
    check = qf(shop, cache_dir, question, f"SELECT o.OrderId FROM orders o WHERE COALESCE(o.Total, {zeros}) >= 20")
    written = f"COALESCE(o.total, {zeros}) >= 20"
    assert len(written) == 161
    assert_outcome(check, compared("over 20", ">", "20", written[:157] + "..."), snapshot)


# ---------------------------------------------------------------------------------------
# what is not a value: words that name the schema
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("words", [
    "Launch",  # a table
    "Launches",  # a table, plural
    "Launch's",
    "Model Launch",  # every word a table
    "Ship Years",  # a column, plural
    "Launch Year",  # a column
    '"Model Launches\'s"',  # quoted, with a possessive
    "Models Launch",  # every word a table, one plural
    "Units Sold",  # a column, whose words are not all names
    "Launch Units",  # every word a name, one a plural column
    "Ship Mode",  # a table of two words, singular
    "Orders'",  # a table, as named (its singular is no other word)
])
def test_question_filters_words_that_name_the_schema_are_no_value(tmp_path, cache_dir, words, snapshot):
    # event.Kind holds each of these words, but the question names the schema with them. A
    # database of its own: the schema's names are built once per database (Profile.memo), so
    # each case must build them for a mutant of _schema_names to be run against it.
    check = qf(shop_db(tmp_path / "shop.sqlite"), cache_dir, f"How many {words} events are there?",
               "SELECT COUNT(*) FROM event")
    assert_outcome(check, unmeasured(), snapshot)


def test_question_filters_a_word_that_names_no_schema_is_a_value(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, "How many Talk events are there?", "SELECT COUNT(*) FROM event")
    assert_outcome(check, value_missing("Talk", "event.Kind"), snapshot)


# ---------------------------------------------------------------------------------------
# the check as a whole
# ---------------------------------------------------------------------------------------
def test_question_filters_a_key_is_an_id_column_whatever_its_name(shop, cache_dir, snapshot):
    question = "Show the product with Sku 12."
    assert_outcome(qf(shop, cache_dir, question, "SELECT * FROM product"), id_missing("Sku 12", "Sku", "12"), snapshot)
    assert_outcome(qf(shop, cache_dir, question, "SELECT * FROM product WHERE Sku = 12"), measured("'Sku 12'"),
                   snapshot)


def test_question_filters_every_filter_measured_is_listed(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, "Show the customers from Brazil in Paris.",
               "SELECT Name FROM customer WHERE City = 'Paris' AND Country = 'Brazil'")
    assert_outcome(check, measured("'Brazil' (customer.Country) filtered by 'Brazil'",
                                   "'Paris' (customer.City) filtered by 'Paris'"), snapshot)


def test_question_filters_reads_the_tree_as_written_where_it_cannot_be_qualified(shop, cache_dir, snapshot):
    # an unknown column: the SQL is read as written
    check = qf(shop, cache_dir, BRAZIL, "SELECT Name FROM customer WHERE Nope = 'Brazil'")
    assert_outcome(check, measured("'Brazil' (customer.Country) filtered by 'Brazil'"), snapshot)
    check = qf(shop, cache_dir, BRAZIL, "SELECT Name FROM customer WHERE Nope = 'Canada'")
    assert_outcome(check, value_missing("Brazil", "customer.Country"), snapshot)


def test_question_filters_every_kind_at_once(shop, cache_dir, snapshot):
    question = "Show the top 5 orders of customers from Brazil placed in 2022 with a total over 6."
    sql = ("SELECT o.OrderId FROM orders o JOIN customer c ON c.CustomerId = o.CustomerId "
           "WHERE c.Country = 'Brazil' AND o.ShipYear = 2021 AND o.Total > 6 ORDER BY o.Total DESC LIMIT 5")
    check = qf(shop, cache_dir, question, sql)
    assert_outcome(check, finding("year", "placed in 2022", "a filter on the year 2022", "2021", measured=(
        "'Brazil' (customer.Country) filtered by 'Brazil'", "'over 6'", "'top 5'")), snapshot)
    assert check.terms == {"complete": 0.75}


@pytest.mark.parametrize("question, sql, expected", [
    # a negative bound: 'under 0' is '<= -1' on integers
    ("Show the customers with a credit under 0.", "SELECT Name FROM customer WHERE Credit <= -1",
     measured("'under 0'")),
    ("Show the customers with a credit under 0.", "SELECT Name FROM customer WHERE Credit < -1",
     compared("under 0", "<", "0", "customer.credit < -1")),
    # a bound in parentheses is not read (it is no literal)
    ("Show the customers with a credit under 0.", "SELECT Name FROM customer WHERE Credit <= (1)",
     unmeasured("'under 0'")),
    # a number sqlglot keeps but Python cannot read
    ("Show the orders with a total over 6.", f"{IDS} WHERE Total > 1e", unmeasured("'over 6'")),
    ("Show the orders with a total over 6.", f"{IDS} WHERE Total > -1e", unmeasured("'over 6'")),
    # a BETWEEN with one bound that is no number is no comparison with the other
    ("Show the orders with a total of at least 10.", f"{IDS} WHERE Total BETWEEN 10 AND Total",
     unmeasured("'at least 10'")),
    ("Show the orders with a total over 6.", f"{IDS} WHERE Total BETWEEN Total AND 7", unmeasured("'over 6'")),
    # the SQL quoted as SQLite writes it
    ("Show the orders with a total over 6.", f"{IDS} WHERE strftime('%d', OrderDate) + Total > 7",
     compared("over 6", ">", "6", "STRFTIME('%d', orders.orderdate) + orders.total > 7")),
])
def test_question_filters_the_numbers_the_sql_holds(shop, cache_dir, question, sql, expected, snapshot):
    assert_outcome(qf(shop, cache_dir, question, sql), expected, snapshot)


@pytest.mark.parametrize("op", [">", ">=", "<", "<="])
def test_question_filters_any_ordering_comparison_makes_a_missing_one_no_evidence(shop, cache_dir, op, snapshot):
    check = qf(shop, cache_dir, "Show the orders with a total over 6.", f"{IDS} WHERE OrderDate {op} date('now')")
    assert_outcome(check, unmeasured("'over 6'"), snapshot)


def test_question_filters_a_value_inside_a_longer_literal(shop, cache_dir, snapshot):
    # 'Rio' (three characters) inside 'Rio de Janeiro' names it
    check = qf(shop, cache_dir, "Show the customers in Rio.", "SELECT Name FROM customer WHERE City = 'Rio de Janeiro'")
    assert_outcome(check, measured("'Rio' (customer.City) filtered by 'Rio de Janeiro'"), snapshot)
    # an empty literal before the one that names the value is passed over
    check = qf(shop, cache_dir, BRAZIL, "SELECT Name FROM customer WHERE Name <> '' AND Country = 'Brazil'")
    assert_outcome(check, measured("'Brazil' (customer.Country) filtered by 'Brazil'"), snapshot)


AGENTS = "'Sales Support Agent' (employee.Title): every row the SQL reads already holds it " \
         "(adding the filter changes nothing)"


@pytest.mark.parametrize("sql", [
    # the table holding the value second in its FROM
    "SELECT e.FirstName FROM customer c JOIN employee e ON c.SupportRepId = e.EmployeeId",
    # twice: each alias filtered (an unqualified Title would be ambiguous)
    "SELECT e.FirstName FROM employee e JOIN employee m ON m.EmployeeId = e.EmployeeId "
    "JOIN customer c ON c.SupportRepId = e.EmployeeId",
    # the probe written back in SQLite's dialect (strftime is no standard function)
    "SELECT e.FirstName FROM employee e JOIN customer c ON c.SupportRepId = e.EmployeeId "
    "WHERE strftime('%Y', c.SignupDate) > '2000'",
])
def test_question_filters_the_probe_filters_every_read_of_the_table(shop, cache_dir, sql, snapshot):
    assert_outcome(qf(shop, cache_dir, "Which Sales Support Agent has customers?", sql), unmeasured(AGENTS), snapshot)


def test_question_filters_a_truncated_result_is_never_tried(shop, cache_dir, snapshot):
    # the first five rows are the five Brazilian customers, as the probe's would be: but the
    # result is cut, so the rows after them are unknown
    answer = vouchsql.check(shop, BRAZIL, ["SELECT Name FROM customer ORDER BY Country, CustomerId"],
                            cache_dir=cache_dir, max_rows=5)
    check = {c.name: c for c in answer.checks}["question_filters"]
    assert_outcome(check, value_missing("Brazil", "customer.Country"), snapshot)


def _staff_and_clients(pg, rep_of: str) -> str:
    """Camel-case tables on PostgreSQL: three staff (a General Manager, two Sales Agents) and ten
    clients whose "RepId" is ``rep_of`` (SQL of the series' ``i``); the URL."""
    url, raw, schema = pg
    raw.execute(f'CREATE TABLE {schema}."Staff" ("StaffId" INTEGER PRIMARY KEY, "Name" TEXT, "Title" TEXT)')
    raw.execute(f'CREATE TABLE {schema}."Client" ("ClientId" INTEGER PRIMARY KEY, '
                f'"RepId" INTEGER REFERENCES {schema}."Staff"("StaffId"))')
    raw.execute(f"""INSERT INTO {schema}."Staff" VALUES (1, 'Ann', 'General Manager'), (2, 'Bob', 'Sales Agent'),
                    (3, 'Cy', 'Sales Agent')""")
    raw.execute(f'INSERT INTO {schema}."Client" SELECT i, {rep_of} FROM generate_series(1, 10) i')
    return url


def test_question_filters_probe_quotes_camel_case_names_on_postgres(pg, tmp_path, snapshot):
    url = _staff_and_clients(pg, "2 + i % 2")  # every client's rep is a Sales Agent
    answer = vouchsql.check(url, "Which Sales Agent looks after the clients?",
                            ['SELECT s."Name" FROM "Client" c JOIN "Staff" s ON c."RepId" = s."StaffId"'],
                            cache_dir=str(tmp_path / "cache"))
    check = {c.name: c for c in answer.checks}["question_filters"]
    assert_outcome(check, unmeasured("'Sales Agent' (Staff.Title): every row the SQL reads already holds it "
                                     "(adding the filter changes nothing)"), snapshot)


def test_question_filters_a_query_that_cannot_be_qualified_is_never_tried(shop, cache_dir, snapshot):
    # rowid is no column of the catalogue: qualify fails, so the probe is not built
    check = qf(shop, cache_dir, "Which Sales Support Agent has customers?",
               "SELECT e.FirstName FROM employee e JOIN customer c ON c.SupportRepId = e.EmployeeId WHERE c.rowid > 0")
    assert_outcome(check, value_missing("Sales Support Agent", "employee.Title"), snapshot)


def test_question_filters_a_value_of_a_table_not_read_leaves_the_next_value_measured(shop, cache_dir, snapshot):
    # No customer's rep is the Sales Manager: the filter through SupportRepId changes the answer,
    # and Brazil, a value of the table read, is still read after it.
    check = qf(shop, cache_dir, "Which Sales Manager's customers are in Brazil?", "SELECT Name FROM customer")
    assert_outcome(check, (True, False, {"findings": [
        found("value", "'Sales Manager'", "a filter on employee.Title", None, "customer.SupportRepId"),
        found("value", "'Brazil'", "a filter on customer.Country", None)], "measured": [], "not_measured": []},
        {"complete": 0.0}), snapshot)


@pytest.mark.parametrize("sql, expected", [
    # the stored value and the question's own words are both what a literal may name
    ("SELECT COUNT(*) FROM employee WHERE Title = 'Sales Support Agent'",
     measured("'Sales Agents' (employee.Title) filtered by 'Sales Support Agent'")),
    ("SELECT COUNT(*) FROM employee WHERE Title = 'Sales Agents'",
     measured("'Sales Agents' (employee.Title) filtered by 'Sales Agents'")),
    ("SELECT COUNT(*) FROM employee", value_missing("Sales Agents", "employee.Title")),
])
def test_question_filters_a_quoted_value_found_by_its_words(shop, cache_dir, sql, expected, snapshot):
    assert_outcome(qf(shop, cache_dir, 'How many "Sales Agents" are there?', sql), expected, snapshot)


def test_question_filters_a_filter_on_the_column_for_another_value_is_not_tried(shop, cache_dir, snapshot):
    # every customer in Rio is in Brazil, but the SQL's condition on Country names another value
    check = qf(shop, cache_dir, "Show the customers from Brazil in Rio.",
               "SELECT Name FROM customer WHERE Country <> 'Canada' AND City = 'Rio'")
    assert_outcome(check, finding(
        "value", "'Brazil'", "a filter on customer.Country for 'Brazil'", "customer.country <> 'Canada'",
        measured=("'Rio' (customer.City) filtered by 'Rio'",)), snapshot)


def test_question_filters_a_pattern_is_not_read_as_another_value(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, BRAZIL, "SELECT Name FROM customer WHERE Country LIKE 'C_nada'")
    assert_outcome(check, unmeasured("'Brazil': the SQL filters customer.country LIKE 'C_nada'"), snapshot)


def test_question_filters_a_value_named_twice_is_one_filter(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, "Show the customers from Brazil, yes Brazil.", "SELECT Name FROM customer")
    assert_outcome(check, value_missing("Brazil", "customer.Country"), snapshot)


def test_question_filters_a_column_named_like_an_id_is_an_id_column(shop, cache_dir, snapshot):
    # SupportRepId is no key: its name makes it an id
    question = "Show the customers with SupportRepId 3."
    assert_outcome(qf(shop, cache_dir, question, NAMES), id_missing("SupportRepId 3", "SupportRepId", "3"), snapshot)
    assert_outcome(qf(shop, cache_dir, question, f"{NAMES} WHERE SupportRepId = 3"), measured("'SupportRepId 3'"),
                   snapshot)


def test_question_filters_no_part_of_a_value_found_is_read_again(shop, cache_dir, snapshot):
    # 'Support Agent' is a Department too, but here it is the end of the Title named
    check = qf(shop, cache_dir, "Which Sales Support Agent is the oldest?", "SELECT FirstName FROM employee")
    assert_outcome(check, value_missing("Sales Support Agent", "employee.Title"), snapshot)
    check = qf(shop, cache_dir, "Which employees are in Support Agent?", "SELECT FirstName FROM employee")
    assert_outcome(check, value_missing("Support Agent", "employee.Department"), snapshot)


def test_question_filters_values_of_the_tables_the_question_names(shop, cache_dir, snapshot):
    # employee is neither read nor a neighbour of launch: the question's 'employees' adds it to the index
    check = qf(shop, cache_dir, "Show the launches of the Sales employees.", "SELECT LaunchId FROM launch")
    assert_outcome(check, unmeasured("'Sales': a value of employee.Department, a table the SQL does not read, "
                                     "and no table it reads holds employee's key"), snapshot)


def test_question_filters_a_value_held_by_two_columns_names_both(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, "How many Talk events are there?", "SELECT COUNT(*) FROM event, launch")
    assert_outcome(check, value_missing("Talk", "event.Kind, launch.Note"), snapshot)


def test_question_filters_a_value_filtered_by_its_key_leaves_the_next_measured(shop, cache_dir, snapshot):
    check = qf(shop, cache_dir, "Which Sales Support Agent has customers in Brazil?",
               "SELECT e.FirstName FROM employee e JOIN customer c ON c.SupportRepId = e.EmployeeId "
               "WHERE e.EmployeeId = 3")
    assert_outcome(check, value_missing("Brazil", "customer.Country", measured=(
        "'Sales Support Agent': the SQL filters on the key instead (e.employeeid = 3)",)), snapshot)


def test_question_filters_a_probe_that_fails_is_not_evidence_the_filter_changes_nothing(shop, cache_dir,
                                                                                          monkeypatch, snapshot):
    question = "Which Sales Support Agent has customers?"
    sql = "SELECT e.FirstName FROM employee e JOIN customer c ON c.SupportRepId = e.EmployeeId"
    answer = vouchsql.check(shop, question, [sql], cache_dir=cache_dir)
    check = {c.name: c for c in answer.checks}["question_filters"]
    assert_outcome(check, unmeasured(AGENTS), snapshot)
    # the profile and the values are cached now; the checks' probes alone are not run
    monkeypatch.setattr(checks_base, "CHECK_BUDGET", Budget(queries=0))
    answer = vouchsql.check(shop, question, [sql], cache_dir=cache_dir)
    check = {c.name: c for c in answer.checks}["question_filters"]
    assert_outcome(check, value_missing("Sales Support Agent", "employee.Title"), snapshot)


# -- a value only a table the SQL does not read holds: the filter through the key -----------------
BRAZIL_ORDERS = "Show the orders of customers from Brazil."
THROUGH = "orders.CustomerId"  # the key the filter goes through, which the problem names


@pytest.mark.parametrize("sql", [
    # another table first in the FROM: the one holding the key is still found and filtered
    "SELECT o.OrderId FROM employee e JOIN orders o ON o.OrderId = e.EmployeeId",
    # the table named with its schema
    "SELECT OrderId FROM main.orders",
    # a condition on the key with no constant is no filter on it
    "SELECT OrderId FROM orders WHERE CustomerId IS NOT NULL",
])
def test_question_filters_through_the_key_of_an_unread_table(shop, cache_dir, sql, snapshot):
    assert_outcome(qf(shop, cache_dir, BRAZIL_ORDERS, sql), finding(
        "value", "'Brazil'", "a filter on customer.Country", None, names=(THROUGH,)), snapshot)


def test_question_filters_a_singular_match_in_an_unread_table_counts(shop, cache_dir):
    check = qf(shop, cache_dir, "Show the customers of the Sales Managers.", "SELECT Name FROM customer")
    assert check.fired and check.evidence["findings"][0]["words"] == "'Sales Managers'"


def test_question_filters_a_cut_answer_is_not_tried_through_the_key(shop, cache_dir, snapshot):
    answer = vouchsql.check(shop, BRAZIL_ORDERS, ["SELECT OrderId FROM orders ORDER BY OrderId"], cache_dir=cache_dir,
                            max_rows=5)
    check = {c.name: c for c in answer.checks}["question_filters"]
    assert_outcome(check, unmeasured("'Brazil': a value of customer.Country, a table the SQL does not read "
                                     "(the filter through its key could not be tried)"), snapshot)


def test_question_filters_through_the_key_quotes_camel_case_names_on_postgres(pg, tmp_path, snapshot):
    url = _staff_and_clients(pg, "1 + i % 3")  # a third of the clients are the General Manager's
    answer = vouchsql.check(url, "Which clients does the General Manager look after?", ['SELECT "ClientId" FROM "Client"'],
                            cache_dir=str(tmp_path / "cache"))
    check = {c.name: c for c in answer.checks}["question_filters"]
    assert_outcome(check, finding("value", "'General Manager'", "a filter on Staff.Title", None,
                                  names=("Client.RepId",)), snapshot)
