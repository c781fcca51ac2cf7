"""A verified query vouches only for the question it answers (issue 30): a question that adds
a qualifier the database's vocabulary names (a filter of the semantic model, a word of a
column's name) or a period relative to today ("last year") asks for other rows, so a right
answer to it is never withheld against the broader verified query; a paraphrase that adds
nothing still is. Northwind (never a fixture of the reading) and a Spider database."""

from __future__ import annotations

from pathlib import Path

import pytest

import vouchsql

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
NORTHWIND = SHARED / "northwind.sqlite"
POKER = SHARED / "spider" / "poker_player.sqlite"
CORTEX = Path(__file__).parent / "fixtures" / "semantic" / "cortex"

MODEL = """\
name: northwind_orders
tables:
  - name: orders
    base_table: {database: NORTHWIND, schema: main, table: Orders}
    dimensions:
      - {name: ship_country, expr: ShipCountry, sample_values: [Germany, France]}
    time_dimensions:
      - {name: shipped_date, expr: ShippedDate}
      - {name: required_date, expr: RequiredDate}
    filters:
      - {name: unshipped, expr: shipped_date IS NULL}
      - {name: shipped_late, expr: shipped_date > required_date}
verified_queries:
  - name: orders_to_germany
    question: How many orders were shipped to Germany?
    sql: SELECT COUNT(*) FROM __orders WHERE ship_country = 'Germany'
"""


def _verified(db: Path, definitions: Path, question: str, sql: str):
    answer = vouchsql.check(str(db), question, [sql], definitions=str(definitions))
    return next(c for c in answer.checks if c.name == "verified_query"), answer


@pytest.fixture
def model(tmp_path: Path) -> Path:
    if not NORTHWIND.exists():
        pytest.skip("the shared Northwind database is not here")
    path = tmp_path / "model.yaml"
    path.write_text(MODEL, encoding="utf-8")
    return path


@pytest.mark.parametrize("question, sql, qualifier", [
    ("How many orders were shipped late to Germany?",
     "SELECT COUNT(*) FROM Orders WHERE ShipCountry = 'Germany' AND ShippedDate > RequiredDate", "late"),
    ("How many unshipped orders were going to Germany?",
     "SELECT COUNT(*) FROM Orders WHERE ShipCountry = 'Germany' AND ShippedDate IS NULL", "unship"),
    ("How many orders were shipped to Germany last year?",
     "SELECT COUNT(*) FROM Orders WHERE ShipCountry = 'Germany' AND ShippedDate >= date('now', '-1 year')",
     "period:last year"),
])
def test_a_right_answer_to_a_narrower_question_is_not_withheld(model, question, sql, qualifier):
    vq, answer = _verified(NORTHWIND, model, question, sql)
    assert not vq.fired and vq.evidence.get("name") is None
    assert qualifier in vq.evidence["reading"]["qualifiers"]
    assert "verified_query" not in [r.code for r in answer.verdict.reason_codes]


def test_a_paraphrase_that_adds_nothing_is_still_vetoed(model):
    vq, _ = _verified(NORTHWIND, model, "What is the number of orders shipped to Germany?",
                      "SELECT COUNT(*) FROM Orders WHERE ShipCountry = 'France'")
    assert vq.fired and vq.kind == "veto" and vq.evidence["name"] == "orders_to_germany"
    right, _ = _verified(NORTHWIND, model, "What is the number of orders shipped to Germany?",
                         "SELECT COUNT(*) FROM Orders WHERE ShipCountry = 'Germany'")
    assert not right.fired and right.evidence["agrees"] is True


def test_a_column_word_the_verified_question_lacks_is_a_qualifier():
    """"finished first" names Best_Finish: not the verified "How many poker players are there?"."""
    vq, _ = _verified(POKER, CORTEX / "poker_player.yaml", "How many poker players finished first?",
                      "SELECT count(*) FROM poker_player WHERE Best_Finish = 1")
    assert not vq.fired and vq.evidence.get("name") is None
    assert "finish" in vq.evidence["reading"]["qualifiers"]
    again, _ = _verified(POKER, CORTEX / "poker_player.yaml", "Count the number of poker players.",
                         "SELECT count(*) FROM poker_player WHERE Best_Finish = 1")
    assert again.fired and again.evidence["name"] == "poker_player_count"


def test_a_value_names_the_table_that_holds_it():
    """"Beverages products" names the category table as "products in the Beverages category"
    does: the reading adds the one table that holds a named value."""
    from vouchsql.question.reading import likeness, read_question
    from vouchsql.question.values import value_index

    if not NORTHWIND.exists():
        pytest.skip("the shared Northwind database is not here")
    short = "What's the mean unit price of Beverages products?"
    long = "What is the average unit price of products in the Beverages category?"
    with vouchsql.connect(NORTHWIND) as db:
        profile = db.profile_for(["Products", "Categories"])
        a = read_question(short, profile, value_index(db, profile, short))
        b = read_question(long, profile, value_index(db, profile, long))
    assert {e.rpartition(".")[2] for e in a.entities} == {"products", "categories"} and a.values == {"beverages"}
    assert likeness(a, b).exact


SAKILA = SHARED / "sakila.sqlite"
SAKILA_MODEL = Path(__file__).resolve().parents[1] / "bench" / "cases" / "sakila_cortex.yaml"


@pytest.mark.parametrize("question, sql", [
    # the verified "List the inactive customers.", asked more broadly
    ("List the customers.", "SELECT first_name, last_name FROM customer"),
    # the verified "… rental rate of films for each rating", asked of long films only
    ("What is the average rental rate of long films for each rating?",
     "SELECT rating, AVG(rental_rate) FROM film WHERE length > 150 GROUP BY rating"),
    # "active" is a column's word before the entity: it qualifies the customers counted
    ("How many active customers does each store have?",
     "SELECT store_id, COUNT(*) FROM customer WHERE active = 1 GROUP BY store_id"),
])
def test_a_word_before_the_entity_qualifies_it(question, sql):
    """A modifier of the entity ("inactive", "long", "active") is read whether or not the
    database's vocabulary holds the word: the broader and the narrower question differ."""
    if not SAKILA.exists():
        pytest.skip("the shared Sakila database is not here")
    vq, _ = _verified(SAKILA, SAKILA_MODEL, question, sql)
    assert not vq.fired and vq.evidence.get("name") is None


def test_a_paraphrase_on_sakila_is_still_vetoed():
    if not SAKILA.exists():
        pytest.skip("the shared Sakila database is not here")
    vq, _ = _verified(SAKILA, SAKILA_MODEL, "Show the ten longest films.",
                      "SELECT title, length FROM film ORDER BY length ASC LIMIT 10")
    assert vq.fired and vq.kind == "veto" and vq.evidence["name"] == "longest_films"


def test_a_lower_case_word_names_no_value_of_a_column_of_names():
    """"still" is the surname of one Sakila customer (STILL): written in lower case it is a word
    of the question, not a named value, so the paraphrase matches its verified query."""
    if not SAKILA.exists():
        pytest.skip("the shared Sakila database is not here")
    vq, _ = _verified(SAKILA, SAKILA_MODEL, "How many rentals are still not returned?",
                      "SELECT COUNT(*) FROM rental WHERE return_date IS NOT NULL")
    assert vq.evidence["reading"]["values"] == [] and vq.evidence["reading"]["entities"] == ["rental"]
    assert vq.fired and vq.evidence["name"] == "unreturned_rentals"
