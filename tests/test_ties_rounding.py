"""The ``ties`` detector counts values at a LIMIT cut-off as tied when they are equal after the
normalisation results are compared by (``agreement.normalise_value``: 4 decimals), so a SQLite
REAL sum of 43.61999999999999 ties with 43.62 as PostgreSQL's exact NUMERIC sums do; values
that differ after that rounding do not tie, and exact ties are read as before. Real SQLite
files, no mocks."""

from __future__ import annotations

import math
import sqlite3
from decimal import Decimal

import pytest

import vouchsql
from vouchsql.choices import detect_choices
from vouchsql.choices.ties import _same

UP = math.nextafter(43.62, math.inf)     # 43.620000000000005
DOWN = math.nextafter(43.62, -math.inf)  # 43.61999999999999


def _db(tmp_path, prices=None, invoices=None):
    path = tmp_path / "shop.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, score INTEGER)")
    con.executemany("INSERT INTO items (id, name, price, score) VALUES (?, ?, ?, ?)",
                    [(i + 1, f"item{i + 1}", p, s) for i, (p, s) in enumerate(prices or [])])
    con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer INTEGER, total REAL)")
    con.executemany("INSERT INTO invoices (customer, total) VALUES (?, ?)", invoices or [])
    con.commit()
    con.close()
    return vouchsql.connect(path, cache_dir=str(tmp_path / "cache"))


def _ties(db, question, sql):
    return [c for c in detect_choices(question, db, sql, db.execute(sql), all_choices=True) if c.type == "ties"]


def test_same_reuses_the_result_normalisation():
    assert _same(43.62, UP) and _same(DOWN, 43.62) and _same(Decimal("43.62"), DOWN)
    assert _same(Decimal("43.62000"), Decimal("43.62001"))  # equal at 4 decimals
    assert not _same(43.62, 43.63) and not _same(43.62, 43.6201) and not _same(43.62, 43.61994)
    assert _same(7, 7) and not _same(7, 8) and _same("Rock", "Rock")
    assert not _same("1", "1.0") and not _same("43.62", "43.620000000000005")  # text: exact
    assert not _same(None, None) and not _same(float("nan"), float("nan"))


def test_limit_float_tie_after_rounding_is_found(tmp_path):
    prices = [(50.0, 1), (45.5, 2), (UP, 3), (43.62, 4), (DOWN, 5), (40.0, 6)]
    with _db(tmp_path, prices) as db:
        sql = "SELECT id, price FROM items ORDER BY price DESC LIMIT 3"
        [choice] = _ties(db, "Which 3 items cost the most?", sql)
        assert choice.differs is True and choice.settled_by is None
        assert choice.sql == "SELECT id, price FROM items WHERE price >= 43.61995 ORDER BY price DESC"
        assert choice.result.row_count == 5
        assert sorted(r[0] for r in choice.result.rows) == [1, 2, 3, 4, 5]
        assert choice.description == ("LIMIT 3 cuts through a tie: 3 rows share the value at the cut-off "
                                      "(price = 43.62); the alternative keeps every row tied with the 3rd "
                                      "(5 rows instead of 3)")


def test_limit_ascending_float_tie_after_rounding(tmp_path):
    prices = [(1.0, 1), (2.5, 2), (43.62, 3), (UP, 4), (50.0, 5)]
    with _db(tmp_path, prices) as db:
        [choice] = _ties(db, "Which 3 items are cheapest?", "SELECT id, price FROM items ORDER BY price LIMIT 3")
        assert choice.differs is True
        assert choice.sql == "SELECT id, price FROM items WHERE price <= 43.62005 ORDER BY price"
        assert sorted(r[0] for r in choice.result.rows) == [1, 2, 3, 4]


def test_grouped_sum_with_float_noise_ties(tmp_path):
    # 0.1 + 0.2 is 0.30000000000000004 in binary floating point; 0.3 and 0.15 + 0.15 are 0.3.
    invoices = [(1, 0.5), (2, 0.1), (2, 0.2), (3, 0.3), (4, 0.15), (4, 0.15), (5, 0.29)]
    with _db(tmp_path, invoices=invoices) as db:
        sql = "SELECT customer, SUM(total) s FROM invoices GROUP BY customer ORDER BY s DESC LIMIT 2"
        shown = db.execute(sql)
        assert [r[0] for r in shown.rows] == [1, 2] and shown.rows[1][1] != 0.3  # the noise is there
        [choice] = _ties(db, "Which 2 customers spent the most?", sql)
        assert choice.differs is True
        assert choice.sql == ("SELECT customer, SUM(total) AS s FROM invoices GROUP BY customer "
                              "HAVING SUM(total) >= 0.29995 ORDER BY s DESC")
        assert sorted(r[0] for r in choice.result.rows) == [1, 2, 3, 4]  # 5 (0.29) is not tied
        assert "3 rows share the value at the cut-off (SUM(total) = 0.3)" in choice.description


@pytest.mark.parametrize("near", [43.63, 43.6201, 43.61994])
def test_near_but_different_value_is_no_tie(tmp_path, near):
    prices = [(50.0, 1), (45.5, 2), (max(near, 43.62), 3), (min(near, 43.62), 4), (40.0, 5)]
    with _db(tmp_path, prices) as db:
        assert _ties(db, "Which 3 items cost the most?", "SELECT id, price FROM items ORDER BY price DESC LIMIT 3") == []


def test_page_bottom_tie_after_rounding(tmp_path):
    prices = [(50.0, 1), (45.5, 2), (UP, 3), (43.62, 4), (40.0, 5)]
    with _db(tmp_path, prices) as db:
        [choice] = _ties(db, "Which items rank 2nd and 3rd by price?",
                         "SELECT id, price FROM items ORDER BY price DESC LIMIT 2 OFFSET 1")
        assert choice.differs is True
        assert choice.sql == ("SELECT id, price FROM items WHERE price <= (SELECT price FROM items ORDER BY price "
                              "DESC LIMIT 1 OFFSET 1) AND price >= 43.61995 ORDER BY price DESC")
        assert sorted(r[0] for r in choice.result.rows) == [2, 3, 4]


def test_exact_ties_unchanged(tmp_path):
    prices = [(50.0, 9), (45.5, 8), (43.62, 7), (43.62, 7), (40.0, 6)]
    with _db(tmp_path, prices) as db:
        [ints] = _ties(db, "Which 3 items score best?", "SELECT id, score FROM items ORDER BY score DESC LIMIT 3")
        assert ints.sql == "SELECT id, score FROM items WHERE score >= 7 ORDER BY score DESC"
        assert ints.result.row_count == 4
        [floats] = _ties(db, "Which 3 items cost the most?", "SELECT id, price FROM items ORDER BY price DESC LIMIT 3")
        assert floats.sql == ("SELECT id, price FROM items WHERE price >= (SELECT price FROM items ORDER BY price "
                              "DESC LIMIT 1 OFFSET 2) ORDER BY price DESC")
        assert floats.result.row_count == 4
        [text] = _ties(db, "Which 2 items come first by score?", "SELECT name, score FROM items ORDER BY score LIMIT 1")
        assert text.differs is False  # score 6 is held by one row: nothing tied
