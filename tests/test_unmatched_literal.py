"""unmatched_literal: a string compared with a column that no row stores as written (by the
engine's own comparison), where the answer changes with the closest held form or, with nothing
close, says "none". Real SQLite files, DuckDB, PostgreSQL and MariaDB; the evidence exactly."""

from __future__ import annotations

import pytest

import vouchsql
from test_boundaries import make_db, run_check


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    path = tmp_path_factory.mktemp("literals") / "shop.sqlite"
    return make_db(path, {
        "region": ("id INTEGER PRIMARY KEY, name CHAR(10), code TEXT",
                   [(1, "North     ", "N"), (2, "South     ", "S"), (3, "East      ", "E")]),
        "store": ("id INTEGER PRIMARY KEY, region_id INTEGER REFERENCES region(id), city TEXT, size INTEGER",
                  [(i, 1 + i % 3, ["Oslo", "Rome", "Lima", "OSLO "][i % 4], i) for i in range(1, 13)]),
    })


def literals(check) -> list[tuple]:
    return [(x["sql"], x["column"], x["literal"], x["stored"], x["rows"]) for x in check.evidence["literals"]]


@pytest.mark.parametrize("sql, expected", [
    # padded CHAR values: never equal on SQLite
    ("SELECT COUNT(*) FROM store s JOIN region r ON r.id = s.region_id WHERE r.name = 'North'",
     [("r.name = 'North'", "region.name", "North", "North     ", 1)]),
    # the literal on the left, and a case no row stores ('Oslo' and 'OSLO ' are held, 'oslo' is not)
    ("SELECT COUNT(*) FROM store WHERE 'oslo' = city",
     [("city = 'oslo'", "store.city", "oslo", "OSLO ", 6)]),
    # IN: each string measured; 'Rome' is held as written, 'lima' only folded
    ("SELECT COUNT(*) FROM store WHERE city IN ('Rome', 'lima')",
     [("city = 'lima'", "store.city", "lima", "Lima", 3)]),
    # in an ON and in a CASE, and the same column and string read once
    ("SELECT SUM(CASE WHEN r.code = 'n' THEN 1 ELSE 0 END) FROM store s JOIN region r ON r.id = s.region_id "
     "AND r.code = 'n'",
     [("r.code = 'n'", "region.code", "n", "N", 1)]),
])
def test_unmatched_literal_fires(shop, sql, expected):
    check = run_check(shop, "unmatched_literal", sql)
    assert check.fired, check.detail
    assert literals(check) == expected
    assert check.evidence["not_measured"] == []
    assert all(x["finding"] == "near" and x["near"] == "case" for x in check.evidence["literals"])
    assert "write the value as stored" in check.detail


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM store s JOIN region r ON r.id = s.region_id WHERE TRIM(r.name) = 'North'",
    "SELECT COUNT(*) FROM store WHERE city = 'Oslo'",  # held as written (beside 'OSLO ')
    "SELECT city FROM store WHERE city = 'Paris' OR size = 3",  # nothing close, but an answer that is not "none"
    "SELECT COUNT(*) FROM store WHERE city = '   '",  # only spaces: nothing to compare
    "SELECT COUNT(*) FROM store WHERE size = '3'",  # a number written as text, equal by affinity
    "SELECT COUNT(*) FROM store WHERE city <> 'Oslo'",  # held as written
    "SELECT COUNT(*) FROM store WHERE city LIKE 'oslo'",  # LIKE ignores ASCII case on SQLite: held
    "SELECT COUNT(*) FROM store WHERE city LIKE 'os%'",  # a pattern, not a value
    # a correct 0 for values the data holds: nothing to find
    "SELECT COUNT(*) FROM store WHERE city = 'Lima' AND size = 2",
    # the string of a subquery is the subquery's, held as written there
    "SELECT COUNT(*) FROM store WHERE region_id IN (SELECT id FROM region WHERE code = 'N')",
    "WITH s AS (SELECT city FROM store) SELECT COUNT(*) FROM s WHERE city = 'oslo'",  # a CTE's column
])
def test_unmatched_literal_is_silent(shop, sql):
    check = run_check(shop, "unmatched_literal", sql)
    assert not check.fired, check.detail
    assert check.evidence["literals"] == [] and check.evidence["not_measured"] == []


def test_a_value_with_nothing_close_and_an_answer_of_none_fires_as_absent(shop):
    check = run_check(shop, "unmatched_literal", "SELECT COUNT(*) FROM store WHERE city = 'Paris'",
                      question="How many stores are in Paris?")
    assert check.fired
    assert check.evidence["literals"] == [
        {"sql": "city = 'Paris'", "column": "store.city", "literal": "Paris", "finding": "absent",
         "question": "written", "answer": "1 row: (0)"}]
    assert check.detail == (
        "city = 'Paris': no row of store.city holds 'Paris' or anything close to it, and the answer is 1 row: (0): "
        "the question names a value the data does not hold (its premise is doubtful), so the answer is not evidence "
        "that there are none")


def test_an_unheld_value_that_does_not_change_the_answer_is_listed_not_fired(shop):
    # 'lima' is 'Lima' apart from case, but no Lima store is bigger than 100 either way
    check = run_check(shop, "unmatched_literal", "SELECT COUNT(*) FROM store WHERE city = 'lima' AND size > 100")
    assert not check.fired
    assert check.evidence == {"literals": [], "not_measured": [], "same_answer": ["city = 'lima'"]}


def test_the_gate_is_withheld_when_it_fires(shop):
    answer = vouchsql.check(shop, "How many stores are in the north?",
                            ["SELECT COUNT(*) FROM store s JOIN region r ON r.id = s.region_id WHERE r.name = 'North'"]
                            * 5, cache_dir=str(shop.parent / "cache"))
    assert answer.shown.result.rows == [[0]]
    assert answer.verdict.gate == "flag" and "unmatched_literal" in answer.verdict.reasons


def _servers_agree(url, raw, schema, tmp_path, execute):
    for statement in (f"CREATE TABLE {schema}.region (id INTEGER PRIMARY KEY, name CHAR(10), code VARCHAR(5))",
                      f"INSERT INTO {schema}.region VALUES (1, 'North', 'N'), (2, 'South', 'S')"):
        execute(statement)

    def check(sql):
        answer = vouchsql.check(url, "How many regions?", [sql], cache_dir=str(tmp_path))
        return {c.name: c for c in answer.checks}["unmatched_literal"]
    return check


def test_postgresql_pads_char_itself_and_compares_case(pg, tmp_path):
    url, raw, schema = pg
    check = _servers_agree(url, raw, schema, tmp_path, raw.execute)
    # char(10) compares without its padding: the filter keeps North, silent
    got = check("SELECT COUNT(*) FROM region WHERE name = 'North'")
    assert not got.fired and got.evidence["literals"] == []
    # but PostgreSQL compares case: 'n' is no code
    got = check("SELECT COUNT(*) FROM region WHERE code = 'n'")
    assert got.fired and literals(got) == [("code = 'n'", "region.code", "n", "N", 1)]


def test_mariadb_collation_ignores_case_and_padding(mariadb, tmp_path):
    url, cur, name = mariadb
    check = _servers_agree(url, cur, name, tmp_path, cur.execute)
    for sql in ("SELECT COUNT(*) FROM region WHERE name = 'North'", "SELECT COUNT(*) FROM region WHERE code = 'n'"):
        got = check(sql)
        assert not got.fired and got.evidence["literals"] == [], got.detail


# -- the boundaries: every word of the report, several strings, the forms skipped -----------------
def test_two_strings_are_reported_word_for_word(shop):
    check = run_check(shop, "unmatched_literal", "SELECT COUNT(*) FROM store s JOIN region r ON r.id = s.region_id "
                                                 "WHERE r.code = 'n' OR s.city = 'lima'")
    assert check.detail == (
        "r.code = 'n': no row of region.code holds 'n' as written; 1 row holds 'N' (the same apart from case and "
        "spaces), and with it the answer is 1 row: (4) instead of 1 row: (0): write the value as stored, or "
        "compare both sides normalised (LOWER(TRIM(…)) for case and spaces); "
        "s.city = 'lima': no row of store.city holds 'lima' as written; 3 rows hold 'Lima' (the same apart from "
        "case and spaces), and with it the answer is 1 row: (3) instead of 1 row: (0): write the value as stored, "
        "or compare both sides normalised (LOWER(TRIM(…)) for case and spaces)")
    assert check.evidence == {"literals": [
        {"sql": "r.code = 'n'", "column": "region.code", "literal": "n", "finding": "near", "stored": "N",
         "near": "case", "rows": 1, "question": "neither", "answer": "1 row: (0)", "answer_with_stored": "1 row: (4)"},
        {"sql": "s.city = 'lima'", "column": "store.city", "literal": "lima", "finding": "near", "stored": "Lima",
         "near": "case", "rows": 3, "question": "neither", "answer": "1 row: (0)",
         "answer_with_stored": "1 row: (3)"}],
        "not_measured": [], "same_answer": []}


@pytest.mark.parametrize("sql, literal, stored, near, question", [
    ("SELECT COUNT(*) FROM person WHERE sex = 'female'", "female", "F", "abbreviation", "written"),
    ("SELECT COUNT(*) FROM person WHERE country = 'United States'", "United States", "USA", "initialism", "written"),
    ("SELECT COUNT(*) FROM person WHERE state = 'North Carolina'", "North Carolina", "NorthCarolina",
     "punctuation", "written"),
    ("SELECT COUNT(*) FROM person WHERE degree IN ('Bachelors')", "Bachelors", "Bachelor", "plural", "neither"),
    ("SELECT COUNT(*) FROM person WHERE born = '05/01/1990'", "05/01/1990", "1990-05-01", "date", "neither"),
    ("SELECT COUNT(*) FROM person WHERE code = '7'", "7", "007", "number", "neither"),
    ("SELECT COUNT(*) FROM person WHERE city = 'Zurich'", "Zurich", "Zürich", "accents", "neither"),
    ("SELECT COUNT(*) FROM person WHERE city LIKE 'Zurich'", "Zurich", "Zürich", "accents", "neither"),
])
def test_closest_held_forms(tmp_path, sql, literal, stored, near, question):
    path = make_db(tmp_path / "people.sqlite", {"person": (
        "id INTEGER PRIMARY KEY, sex TEXT, country TEXT, state TEXT, degree TEXT, born TEXT, code TEXT, city TEXT",
        [(i, "FM"[i % 2], ["USA", "Canada"][i % 2], ["NorthCarolina", "Texas"][i % 2],
          ["Bachelor", "Master"][i % 2], ["1990-05-01", "1985-12-31"][i % 2], ["007", "012"][i % 2],
          ["Zürich", "Genève"][i % 2]) for i in range(10)])})
    check = run_check(path, "unmatched_literal", sql,
                      question="How many people are female, from the United States, in North Carolina?")
    assert check.fired, check.detail
    (got,) = check.evidence["literals"]
    assert (got["literal"], got["stored"], got["near"], got["question"], got["rows"]) == (
        literal, stored, near, question, 5)
    assert (got["answer"], got["answer_with_stored"]) == ("1 row: (0)", "1 row: (5)")


@pytest.mark.parametrize("sql, found", [
    ("SELECT COUNT(*) FROM store WHERE city IN ('  ', 'lima')", ["lima"]),  # a blank string does not stop the list
    # a CTE's column first, then a base table's
    ("WITH s AS (SELECT city FROM store) SELECT COUNT(*) FROM s JOIN store t ON t.city = s.city "
     "WHERE s.city = 'oslo' OR t.city = 'lima'", ["lima"]),
    # the same column and string twice (read once), then another
    ("SELECT COUNT(*) FROM store WHERE city = 'rome' OR city = 'rome' OR ((((city = 'lima'))))", ["lima", "rome"]),
    # a number column first: skipped, not the end of the search
    ("SELECT COUNT(*) FROM store WHERE size <> '99' AND city = 'lima'", ["lima"]),
    # a derived table's condition is met first; the outer SELECT's own is still read
    ("SELECT COUNT(*) FROM (SELECT * FROM region WHERE code = 'N') r JOIN store s ON s.region_id = r.id "
     "WHERE ((((s.city = 'lima'))))", ["lima"]),
])
def test_the_search_goes_on_past_what_it_skips(shop, sql, found):
    check = run_check(shop, "unmatched_literal", sql)
    assert check.fired and sorted(x["literal"] for x in check.evidence["literals"]) == found, check.detail


def test_the_silent_report_word_for_word(shop):
    check = run_check(shop, "unmatched_literal", "SELECT COUNT(*) FROM store WHERE city = 'Oslo'")
    assert (check.fired, check.detail, check.evidence) == (
        False, "every string compared is held by some row as written",
        {"literals": [], "not_measured": [], "same_answer": []})


def test_sql_that_did_not_pass_the_gate_is_not_measured(shop):
    check = run_check(shop, "unmatched_literal", "DELETE FROM store WHERE city = 'oslo'")
    assert (check.fired, check.detail) == (False, "not measured: the SQL could not be parsed")


def test_postgresql_refuses_a_probe_and_skips_number_and_date_columns(pg, tmp_path):
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.tagged (id INTEGER PRIMARY KEY, tags TEXT[], seen DATE)")
    raw.execute(f"INSERT INTO {schema}.tagged VALUES (1, ARRAY['a'], DATE '2024-01-01')")

    def check(sql):
        answer = vouchsql.check(url, "How many?", [sql], cache_dir=str(tmp_path))
        return {c.name: c for c in answer.checks}["unmatched_literal"]

    got = check("SELECT COUNT(*) FROM tagged WHERE tags = '{b}' OR tags = '{c}'")  # no LOWER(TRIM()) of an array
    assert (got.fired, got.detail, got.evidence) == (
        False, "not measured: tags = '{b}'; tags = '{c}' (the engine refused the probe)",
        {"literals": [], "not_measured": ["tags = '{b}'", "tags = '{c}'"], "same_answer": []})
    # a mixed-case column is quoted as PostgreSQL needs it
    raw.execute(f'CREATE TABLE {schema}.coded (id INTEGER PRIMARY KEY, "Code" TEXT)')
    raw.execute(f"INSERT INTO {schema}.coded VALUES (1, 'N')")
    got = check('SELECT COUNT(*) FROM coded WHERE "Code" = \'n\'')
    assert got.fired and [(x["column"], x["stored"]) for x in got.evidence["literals"]] == [("coded.Code", "N")]
    for sql in ("SELECT COUNT(*) FROM tagged WHERE id = '999'", "SELECT COUNT(*) FROM tagged WHERE seen = '1999-01-01'"):
        got = check(sql)
        assert not got.fired and got.evidence == {"literals": [], "not_measured": [], "same_answer": []}, got.detail


def test_mariadb_writes_the_column_in_its_own_dialect(mariadb, tmp_path):
    url, cur, name = mariadb
    cur.execute(f"CREATE TABLE {name}.place (id INT PRIMARY KEY, `city name` VARCHAR(20) COLLATE utf8mb4_bin)")
    cur.execute(f"INSERT INTO {name}.place VALUES (1, 'Oslo'), (2, 'Rome')")
    answer = vouchsql.check(url, "How many?", ["SELECT COUNT(*) FROM place WHERE `city name` = 'oslo'"],
                            cache_dir=str(tmp_path))
    got = {c.name: c for c in answer.checks}["unmatched_literal"]
    assert got.fired and [(x["sql"], x["column"], x["literal"], x["stored"], x["rows"])
                          for x in got.evidence["literals"]] == [("`city name` = 'oslo'", "place.city name", "oslo", "Oslo", 1)]
    # held as written: found by a lookup MariaDB reads as a column, not as the string "city name"
    answer = vouchsql.check(url, "How many?", ["SELECT COUNT(*) FROM place WHERE `city name` = 'Oslo'"],
                            cache_dir=str(tmp_path))
    got = {c.name: c for c in answer.checks}["unmatched_literal"]
    assert not got.fired and got.evidence == {"literals": [], "not_measured": [], "same_answer": []}


# -- the same people on every engine: a held form found by the engine's own comparison -----------
PEOPLE = [(i, "FM"[i % 2], ["USA", "Canada"][i % 3 == 0]) for i in range(1, 13)]


def _people_checks(connect_url, tmp_path):
    def check(sql, question="How many people?"):
        answer = vouchsql.check(connect_url, question, [sql], cache_dir=str(tmp_path / "cache"))
        return {c.name: c for c in answer.checks}["unmatched_literal"]
    return check


def _assert_people(check, case_blind: bool):
    got = check("SELECT COUNT(*) FROM people WHERE country = 'United States'",
                "How many people live in the United States?")
    assert got.fired, got.detail
    (lit,) = got.evidence["literals"]
    assert (lit["stored"], lit["near"], lit["question"], lit["answer"], lit["answer_with_stored"]) == (
        "USA", "initialism", "written", "1 row: (0)", "1 row: (8)")
    # a correct 0: every value is held, the answer is 0 because no row passes all three: silent
    got = check("SELECT COUNT(*) FROM people WHERE country = 'Canada' AND sex = 'F' AND id > 100")
    assert not got.fired and got.evidence["literals"] == [], got.detail
    # case: where the engine's collation ignores case the value is held, and nothing fires
    got = check("SELECT COUNT(*) FROM people WHERE sex = 'f'")
    assert got.fired is (not case_blind), got.detail


def test_duckdb_people(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "people.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, sex VARCHAR, country VARCHAR)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?)", PEOPLE)
    con.close()
    _assert_people(_people_checks(str(path), tmp_path), case_blind=False)


def test_sqlite_people(tmp_path):
    path = make_db(tmp_path / "people.sqlite", {"people": ("id INTEGER PRIMARY KEY, sex TEXT, country TEXT", PEOPLE)})
    _assert_people(_people_checks(path, tmp_path), case_blind=False)


def test_postgresql_people(pg, tmp_path):
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.people (id INTEGER PRIMARY KEY, sex CHAR(3), country TEXT)")
    for row in PEOPLE:
        raw.execute(f"INSERT INTO {schema}.people VALUES (%s, %s, %s)", row)
    _assert_people(_people_checks(url, tmp_path), case_blind=False)


def test_mariadb_people(mariadb, tmp_path):
    url, cur, name = mariadb
    cur.execute(f"CREATE TABLE {name}.people (id INT PRIMARY KEY, sex CHAR(3), country VARCHAR(20))")
    cur.executemany(f"INSERT INTO {name}.people VALUES (%s, %s, %s)", PEOPLE)
    _assert_people(_people_checks(url, tmp_path), case_blind=True)


def test_a_number_compared_with_a_text_column(tmp_path):
    path = make_db(tmp_path / "flags.sqlite", {"channel": (
        "id INTEGER PRIMARY KEY, hd TEXT, code TEXT", [(i, ["yes", "no"][i % 2], ["007", "012"][i % 2])
                                                       for i in range(1, 11)])})
    # 1 where the column says 'yes'/'no': nothing close, an empty answer
    got = run_check(path, "unmatched_literal", "SELECT id FROM channel WHERE hd = 1")
    assert got.fired and got.evidence["literals"] == [
        {"sql": "hd = 1", "column": "channel.hd", "literal": "1", "finding": "absent", "question": "neither",
         "answer": "0 rows"}]
    # 7 where the column says '007': the same number written otherwise, and the answer changes
    got = run_check(path, "unmatched_literal", "SELECT COUNT(*) FROM channel WHERE code = 7")
    assert got.fired
    (lit,) = got.evidence["literals"]
    assert (lit["stored"], lit["near"], lit["answer"], lit["answer_with_stored"]) == ("007", "number", "1 row: (0)",
                                                                                     "1 row: (5)")
    # a number the text column holds as written (SQLite gives the literal the column's affinity)
    got = run_check(path, "unmatched_literal", "SELECT COUNT(*) FROM channel WHERE code = '012' OR hd = 'yes'")
    assert not got.fired and got.evidence["literals"] == []


def test_sqlite_reads_a_double_quoted_name_that_is_no_column_as_a_string(tmp_path):
    """Spider-style SQL writes strings in double quotes; SQLite falls back to a string where no
    column has the name, and the check reads it the same way."""
    path = make_db(tmp_path / "q.sqlite", {"singer": ("id INTEGER PRIMARY KEY, name TEXT, citizenship TEXT",
                                                      [(i, f"s{i}", ["France", "Japan"][i % 2]) for i in range(1, 9)])})
    got = run_check(path, "unmatched_literal", 'SELECT COUNT(*) FROM singer WHERE citizenship = "france"')
    assert got.fired and [(x["literal"], x["stored"]) for x in got.evidence["literals"]] == [("france", "France")]
    # a double-quoted name that is a column stays a column; so does a CTE's column list
    for sql in ('SELECT COUNT(*) FROM singer WHERE "citizenship" = \'France\'',
                'WITH t("c") AS (SELECT citizenship FROM singer) SELECT COUNT(*) FROM t WHERE "c" = \'France\''):
        got = run_check(path, "unmatched_literal", sql)
        assert not got.fired and got.evidence["literals"] == [], got.detail


def test_probes_are_bounded_per_answer(shop):
    # 25 values in one IN list: the first 20 are probed, the rest are listed as not measured
    values = ", ".join(f"'town{i}'" for i in range(25))
    got = run_check(shop, "unmatched_literal", f"SELECT COUNT(*) FROM store WHERE city IN ({values})")
    assert len(got.evidence["not_measured"]) == 5
    assert got.evidence["not_measured"][0] == "city = 'town20'"


def test_a_cut_off_answer_is_not_measured_rather_than_the_same(shop):
    # 'oslo' is held only as 'Oslo'/'OSLO ': the <> keeps every row either way up to the cap of 5
    got = run_check(shop, "unmatched_literal", "SELECT a.id FROM store a CROSS JOIN store b WHERE a.city <> 'oslo'",
                    max_rows=5)
    assert not got.fired
    assert got.evidence["same_answer"] == [] and got.evidence["not_measured"] == ["a.city <> 'oslo'"]


# -- several unheld values together; LIKE patterns; a <> that drops nothing (issue 26) ---------------

def _check(path, sql: str, cache_dir: str):
    """The check on a shared database file, its profile cached in the test's folder (never beside it)."""
    answer = vouchsql.check(path, "What does the query return?", [sql], cache_dir=cache_dir)
    return next(c for c in answer.checks if c.name == "unmatched_literal")


def _findings(check) -> list[tuple]:
    return [(x["sql"], x["finding"], x.get("stored"), x.get("together", [])) for x in check.evidence["literals"]]


@pytest.mark.parametrize("db, sql, expected", [
    # each value alone written as stored still finds nothing: the other one is unheld too
    ("chinook", "SELECT COUNT(*) FROM Customer WHERE Country = 'brazil' AND City = 'sao paulo'",
     [("Country = 'brazil'", "near", "Brazil", ["City = 'sao paulo'"]),
      ("City = 'sao paulo'", "near", "São Paulo", ["Country = 'brazil'"])]),
    ("sakila", "SELECT COUNT(*) FROM film f JOIN film_category fc ON fc.film_id = f.film_id "
               "JOIN category c ON c.category_id = fc.category_id WHERE c.name = 'action' AND f.rating = 'pg'",
     [("c.name = 'action'", "near", "Action", ["f.rating = 'pg'"]),
      ("f.rating = 'pg'", "near", "PG", ["c.name = 'action'"])]),
])
def test_unheld_values_are_tried_together(request, cache_dir, db, sql, expected):
    check = _check(request.getfixturevalue(f"{db}_path"), sql, cache_dir)
    assert check.fired, check.detail
    assert _findings(check) == expected
    assert check.evidence["same_answer"] == []
    assert "written as stored too) the answer is 1 row" in check.detail


def test_a_value_with_nothing_close_is_not_tried_together(chinook_path, cache_dir):
    # 'brazil' alone leaves 0; 'Pariz' has nothing close held (absent: the answer is 0), so
    # there is nothing to write for it and 'brazil' stays a value that changes nothing
    check = _check(chinook_path, "SELECT COUNT(*) FROM Customer WHERE Country = 'brazil' AND City = 'Pariz'", cache_dir)
    assert _findings(check) == [("City = 'Pariz'", "absent", None, [])]
    assert check.evidence["same_answer"] == ["Country = 'brazil'"]


@pytest.mark.parametrize("db, sql, stored", [
    ("chinook", "SELECT t.Name FROM Track t JOIN Genre g ON g.GenreId = t.GenreId WHERE g.Name LIKE '%Metals%'", "Metal"),
    ("sakila", "SELECT f.title FROM film f JOIN film_category fc ON fc.film_id = f.film_id "
               "JOIN category c ON c.category_id = fc.category_id WHERE c.name LIKE '%Actions%'", "Action"),
])
def test_a_pattern_no_row_matches_is_read_like_a_value(request, cache_dir, db, sql, stored):
    check = _check(request.getfixturevalue(f"{db}_path"), sql, cache_dir)
    assert check.fired, check.detail
    (finding,) = check.evidence["literals"]
    assert (finding["finding"], finding["stored"], finding["near"]) == ("near", stored, "plural")
    assert "matches '%" in check.detail and finding["answer"] == "0 rows"


@pytest.mark.parametrize("db, sql, literal", [
    ("chinook", "SELECT COUNT(*) FROM Customer WHERE Country <> 'French'", "French"),
    ("sakila", "SELECT COUNT(*) FROM film WHERE rating NOT IN ('X-rated')", "X-rated"),
])
def test_a_not_equal_on_a_value_nothing_close_to_which_is_held_excludes_nothing(request, cache_dir, db, sql, literal):
    check = _check(request.getfixturevalue(f"{db}_path"), sql, cache_dir)
    assert check.fired, check.detail
    (finding,) = check.evidence["literals"]
    assert (finding["finding"], finding["literal"], finding.get("stored")) == ("excludes_nothing", literal, None)
    assert "<> '" in finding["sql"] and "drops no row" in check.detail


@pytest.mark.parametrize("db, sql", [
    ("chinook", "SELECT COUNT(*) FROM Customer WHERE Country <> 'Brazil'"),  # held
    ("chinook", "SELECT COUNT(*) FROM Customer WHERE Country NOT LIKE '%Braz%'"),  # a pattern some row matches
    ("sakila", "SELECT COUNT(*) FROM film WHERE rating <> 'PG'"),
])
def test_a_not_equal_on_a_held_value_is_silent(request, cache_dir, db, sql):
    check = _check(request.getfixturevalue(f"{db}_path"), sql, cache_dir)
    assert not check.fired and check.evidence["literals"] == [], check.detail


@pytest.mark.parametrize("where, read", [
    ("a = 'x'", [("eq", False)]),
    ("a <> 'x'", [("eq", True)]),
    ("NOT (a = 'x')", [("eq", True)]),
    ("NOT (a <> 'x')", [("eq", False)]),  # keeps the rows with the value
    ("a NOT IN ('x', 'y')", [("eq", True), ("eq", True)]),
    ("a LIKE 'xy%' OR a NOT LIKE '%yz%'", [("pattern", False), ("pattern", True)]),
    ("a LIKE '%x%'", []),  # one character between the wildcards: not read
    ("a LIKE 'x_y'", []),  # a wildcard inside: not read
])
def test_which_comparisons_are_read_and_which_leave_the_value_out(where, read):
    import sqlglot

    from vouchsql.checks.unmatched_literal import _comparisons

    got = _comparisons(sqlglot.parse_one(f"SELECT 1 FROM t WHERE {where}"))
    assert [(how, negated) for _, _, how, negated in got] == read
