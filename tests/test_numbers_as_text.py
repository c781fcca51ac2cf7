"""numbers_as_text: SQLite compares and ranks numbers stored as text as text ('46' > '150');
the check runs the SQL again with those columns read as numbers and fires only where the
answer changes. Two SQLite files built here, with text columns of numbers as some public
schemas have them; verdicts and evidence exactly."""

from __future__ import annotations

import pytest

from test_boundaries import make_db, run_check


@pytest.fixture(scope="module")
def garage(tmp_path_factory):
    return make_db(tmp_path_factory.mktemp("garage") / "garage.sqlite", {
        "car": ("id INTEGER PRIMARY KEY, model TEXT, horsepower TEXT, cylinders INTEGER, part_code TEXT, weight TEXT",
                [(1, "a", "46", 4, "900", "3504"), (2, "b", "150", 6, "1200", "3693"), (3, "c", "230", 8, "77", "4312"),
                 (4, "d", "95", 4, "805", "2372"), (5, "e", "null", 4, "1500", "2833"),
                 (6, "f", "130", 6, "660", "3436")]),
    })


@pytest.fixture(scope="module")
def staff(tmp_path_factory):
    return make_db(tmp_path_factory.mktemp("staff") / "staff.sqlite", {
        # declared without a type: SQLite compares its text with a number by storage class
        "teacher": ("teacher_id INTEGER PRIMARY KEY, name TEXT, age", [(1, "x", "9"), (2, "y", "32"), (3, "z", "41")]),
    })


@pytest.mark.parametrize("db, sql, uses, as_numbers, shown", [
    # as text '46', '95' and 'null' are all > '150'; as numbers 230 is, and 'null' stays text
    ("garage", "SELECT COUNT(*) FROM car WHERE horsepower > 150", ["horsepower > 150"], "1 row: (2)", "1 row: (4)"),
    # as text nothing lies between '40' and '100' ('40' > '100')
    ("garage", "SELECT model FROM car WHERE horsepower BETWEEN 40 AND 100", ["horsepower BETWEEN 40 AND 100"],
     "2 rows: (a), (d)", "0 rows"),
    ("garage", "SELECT MAX(horsepower) FROM car WHERE horsepower <> 'null'", ["MAX(horsepower)"], "1 row: (230.0)",
     "1 row: (95)"),
    ("garage", "SELECT model FROM car WHERE horsepower <> 'null' ORDER BY horsepower DESC LIMIT 1",
     ["ORDER BY horsepower DESC LIMIT 1"], "1 row: (c)", "1 row: (d)"),
    ("staff", "SELECT name FROM teacher WHERE age < 30", ["age < 30"], "1 row: (x)", "0 rows"),
    # compared with a subquery's MIN: the column is read as a number on both sides. As text MIN
    # is '130', and every car but f lies above it; as numbers 46, and every car but a
    ("garage", "SELECT model FROM car WHERE horsepower > (SELECT MIN(horsepower) FROM car)", ["MIN(horsepower)"],
     "5 rows: (b), (c), (d), …", "5 rows: (a), (b), (c), …"),
    # AVG adds the 'null' text as 0: (46 + 150 + 230 + 95 + 0 + 130) / 6 against 651 / 5
    ("garage", "SELECT AVG(horsepower) FROM car", ["AVG(horsepower)"], "1 row: (130.2)", "1 row: (108.5)"),
    # the youngest: as text MIN is '32', as numbers 9 (the MIN compared back with age is read as a number too)
    ("staff", "SELECT name FROM teacher WHERE age = (SELECT MIN(age) FROM teacher)", ["MIN(age)"], "1 row: (x)",
     "1 row: (y)"),
])
def test_fires_where_reading_as_numbers_changes_the_answer(request, db, sql, uses, as_numbers, shown):
    check = run_check(request.getfixturevalue(db), "numbers_as_text", sql)
    assert (check.fired, check.kind) == (True, "cap")
    column = "age" if db == "staff" else "horsepower"
    assert check.evidence == {"columns": [column], "uses": uses, "as_numbers": as_numbers, "shown": shown}


@pytest.mark.parametrize("db, sql, detail", [
    # the same answer read as numbers
    ("garage", "SELECT COUNT(*) FROM car WHERE horsepower >= 0",
     "horsepower stored as text; horsepower >= 0 gives the same answer read as numbers"),
    # equality with a number: SQLite's affinity makes it '150' = '150'; not read
    ("garage", "SELECT model FROM car WHERE horsepower = 150", "no number stored as text is compared or ranked"),
    # a column of numbers
    ("garage", "SELECT model FROM car WHERE cylinders > 4", "no number stored as text is compared or ranked"),
    # every value a number: SQLite's SUM reads the text as numbers, nothing is added as 0
    ("garage", "SELECT SUM(weight) FROM car", "no number stored as text is compared or ranked"),
    # a marker that is not a number ranks as text both ways: 'null' is the largest text either way
    ("garage", "SELECT model FROM car ORDER BY horsepower DESC LIMIT 1",
     "horsepower stored as text; ORDER BY horsepower DESC LIMIT 1 gives the same answer read as numbers"),
    # a code ranks as text on purpose: not read without a number beside it
    ("garage", "SELECT model FROM car ORDER BY part_code LIMIT 2", "no number stored as text is compared or ranked"),
    # two sites in one query, each read as a number (each edit finds its own node)
    ("garage", "SELECT model FROM car WHERE horsepower > 0 AND (weight > 2000 OR weight < 1000)",
     "horsepower, weight stored as text; horsepower > 0, weight > 2000, weight < 1000 gives the same answer "
     "read as numbers"),
    # the MIN compared back with the column: both read as numbers, so the same answer where the
    # text and the numbers rank alike (without that, every such query would look changed)
    ("garage", "SELECT model FROM car WHERE horsepower = (SELECT MAX(horsepower) FROM car WHERE cylinders = 6)",
     "horsepower stored as text; MAX(horsepower) gives the same answer read as numbers"),
])
def test_quiet(request, db, sql, detail):
    check = run_check(request.getfixturevalue(db), "numbers_as_text", sql)
    assert (check.fired, check.detail) == (False, detail)
