"""question_shape pinned at its boundaries (issue 11, part 5): the counting unit, the
events ranking and the entity rules, each at and beside the edge that decides it, on real
SQLite files (a small shop built here, and Chinook / Sakila). ``python bench/mutation.py
--modules question_shape`` is the measure of these tests.

Each finding's part and words, the tables, columns and SQL it names, the parts measured and the
terms are compared in code; the wording of the detail and of each finding's ``sql`` is the
snapshot's (tests/__snapshots__/test_boundaries_question_shape.ambr): after rewording a message,
``pytest tests/test_boundaries_question_shape.py --snapshot-update`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import vouchsql
from vouchsql.checks.question_shape import _composed_of, _is_identifier, _type_class

from test_boundaries import make_db
from wording import Prose


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    """customers, products, orders (each order names its customer and product) and a table
    named ``times``."""
    return make_db(tmp_path_factory.mktemp("shop") / "shop.sqlite", {
        "customers": ("id INTEGER PRIMARY KEY, name TEXT", [(1, "Ann"), (2, "Bo")]),
        "products": ("id INTEGER PRIMARY KEY, title TEXT, price REAL", [(1, "pen", 2.0), (2, "ink", 3.5)]),
        "orders": ("id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), "
                   "product_id INTEGER REFERENCES products(id), qty INTEGER",
                   [(1, 1, 1, 3), (2, 1, 2, 4), (3, 2, 1, 1)]),
        "times": ("id INTEGER PRIMARY KEY, label TEXT", [(1, "t")]),
    })


def shape(path: Path, question: str, sql: str, cache_dir: str):
    answer = vouchsql.check(path, question, [sql], cache_dir=cache_dir)
    return {c.name: c for c in answer.checks}["question_shape"]


def said(part: str, words: str, *facts: str) -> dict:
    """A finding: its part and the question's words, compared in code; its ``sql`` (what the SQL
    does, in words) names each of ``facts``, and its wording is the snapshot's."""
    return {"part": part, "words": words, "sql": Prose(*facts)}


def unit(words: str, sql: str, counted: str, table: str) -> dict:
    """``sql`` counts rows of the tables ``counted``, not of ``table``."""
    return said("count_unit", words, sql, counted, table)


CUSTOMERS = unit("how many customers", "COUNT(*)", "orders", "customers")
ASKED = "How many customers placed orders?"


def assert_fires(check, snapshot, *findings: dict) -> None:
    """The findings in code; the detail (which reports the first finding: its words and what the
    SQL does) and every finding's ``sql`` against the snapshot."""
    assert check.fired is True
    assert check.evidence["findings"] == list(findings)
    first = check.evidence["findings"][0]
    assert first["words"] in check.detail and first["sql"] in check.detail
    assert prose(check) == snapshot


def prose(check) -> dict:
    return {"detail": check.detail, "sql": [f["sql"] for f in check.evidence["findings"]]}


def assert_silent(check) -> None:
    assert check.fired is False, check.detail
    assert check.evidence["findings"] == []


# ---------------------------------------------------------------------------------------
# The counting unit: which phrases are read, and every phrase after one that is not
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("question", [
    ASKED,
    # the first phrase is passed over, the second still read
    "How many times did the shop sell anything, and how many customers placed orders?",   # "times …"
    "How many products per order were sold, and how many customers placed orders?",      # an item in a container
    "How many people live here in the city, and how many customers placed orders?",      # names no table
    "How many orders did customers place in the shop, and how many customers placed orders?",  # counted right
])
def test_question_shape_count_unit_reads_every_phrase(shop, cache_dir, question, snapshot):
    sql = "SELECT COUNT(*) FROM orders WHERE id IN (SELECT id FROM times)"
    check = shape(shop, question, sql, cache_dir)
    assert_fires(check, snapshot, CUSTOMERS)
    assert check.evidence["measured"] == ["aggregate", "entity"]
    assert check.terms == {"complete": 0.5, "retrieve": 1.0}


@pytest.mark.parametrize("question", [
    "How many times did the shop sell?",   # "how many times" counts events, never a unit
    "How many customers each?",           # two words, the second a container word
    "How many customers per order?",
])
def test_question_shape_count_unit_phrases_not_read(shop, cache_dir, question):
    check = shape(shop, question, "SELECT COUNT(*) FROM orders WHERE id IN (SELECT id FROM times)", cache_dir)
    assert_silent(check)


@pytest.mark.parametrize("sql, finding", [
    # the outer SELECT reads no table (and counts nothing): the inner one is still read
    ("SELECT (SELECT COUNT(*) FROM orders)", CUSTOMERS),
    # the outer SELECT reads a table but counts nothing: the inner one is still read
    ("SELECT p.title, (SELECT COUNT(*) FROM orders) AS n FROM products p", CUSTOMERS),
    # a COUNT(DISTINCT …) before the COUNT(*) of the same SELECT
    ("SELECT COUNT(DISTINCT customer_id), COUNT(*) FROM orders", CUSTOMERS),
    # every table counted is named, in order
    ("SELECT COUNT(*) FROM orders o JOIN products p ON p.id = o.product_id",
     unit("how many customers", "COUNT(*)", "orders, products", "customers")),
])
def test_question_shape_count_unit_fires(shop, cache_dir, sql, finding, snapshot):
    assert_fires(shape(shop, ASKED, sql, cache_dir), snapshot, finding)


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(DISTINCT customer_id) FROM orders",
    # a SELECT that also reads a derived table is not read
    "SELECT COUNT(*) FROM orders o JOIN (SELECT id FROM products) p ON p.id = o.product_id",
    # orders reached on their own key: one order per customer row
    "SELECT COUNT(*) FROM customers c JOIN orders o ON o.id = c.id",
    # within each group of one order, one customer
    "SELECT o.id, COUNT(*) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY o.id",
])
def test_question_shape_count_unit_silent(shop, cache_dir, sql):
    assert_silent(shape(shop, ASKED, sql, cache_dir))


REPEATED = said("count_unit", "how many customers", "COUNT(*)", "orders", "customers")  # orders repeat a customer


@pytest.mark.parametrize("sql", [
    # the customers are read, but each stands in the join once per order: COUNT(*) counts orders
    "SELECT COUNT(*) FROM customers c JOIN orders o ON o.customer_id = c.id",
    "SELECT COUNT(*) FROM orders o, customers c WHERE c.id = o.customer_id",
    "SELECT c.id, COUNT(*) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id",
])
def test_question_shape_count_unit_a_join_that_repeats_the_entity(shop, cache_dir, sql, snapshot):
    assert_fires(shape(shop, ASKED, sql, cache_dir), snapshot, REPEATED)


def test_question_shape_count_unit_a_select_with_a_derived_table_counts_nothing(shop, cache_dir, snapshot):
    """The first COUNT reads orders beside a derived table: not read, so it does not count
    the orders asked; the second counts products, a finding."""
    sql = ("SELECT (SELECT COUNT(*) FROM orders o JOIN (SELECT 1 AS k) x ON 1 = 1) "
           "+ (SELECT COUNT(*) FROM products)")
    check = shape(shop, "How many orders are there?", sql, cache_dir)
    assert_fires(check, snapshot, unit("how many orders", "COUNT(*)", "products", "orders"))


# ---------------------------------------------------------------------------------------
# A table composed of the entity's words ("film_category" of "film") counts it
# ---------------------------------------------------------------------------------------
def test_question_shape_a_link_table_counts_its_entity(sakila_path, cache_dir):
    # each film has one category in Sakila: film_category holds one row per film
    assert_silent(shape(sakila_path, "How many films are there?", "SELECT COUNT(*) FROM film_category",
                        cache_dir))
    # and one row per film within a category
    assert_silent(shape(sakila_path, "How many films are in each category?",
                        "SELECT c.name, COUNT(*) FROM film_category fc JOIN category c "
                        "ON c.category_id = fc.category_id GROUP BY c.category_id", cache_dir))


def test_question_shape_a_link_table_that_repeats_its_entity(sakila_path, cache_dir, snapshot):
    # an actor plays in many films: film_actor's rows are pairs, not actors
    assert_fires(shape(sakila_path, "How many actors appear in Action films?",
                       "SELECT COUNT(*) FROM film_actor fa JOIN film_category fc ON fc.film_id = fa.film_id "
                       "JOIN category c ON c.category_id = fc.category_id WHERE c.name = 'Action'", cache_dir),
                 snapshot, said("count_unit", "how many actors", "COUNT(*)", "film_actor", "actor"))
    assert_silent(shape(sakila_path, "How many actors appear in Action films?",
                        "SELECT COUNT(DISTINCT fa.actor_id) FROM film_actor fa JOIN film_category fc "
                        "ON fc.film_id = fa.film_id JOIN category c ON c.category_id = fc.category_id "
                        "WHERE c.name = 'Action'", cache_dir))


def test_question_shape_composed_of(sakila_path, cache_dir):
    profile = vouchsql.connect(sakila_path, cache_dir=cache_dir).profile()
    film, category = profile.table("film"), profile.table("category")
    assert _composed_of("film_category", film) is True
    assert _composed_of("film_category", category) is True
    assert _composed_of("film", film) is False          # the table itself: not composed of itself
    assert _composed_of("film_text", category) is False  # longer, but without the entity's words
    assert _composed_of("inventory", film) is False


# ---------------------------------------------------------------------------------------
# Events ("best selling"): a COUNT(DISTINCT …) of a reference counts things, not the events
# ---------------------------------------------------------------------------------------
SALES = ("FROM InvoiceLine IL JOIN Track T ON T.TrackId = IL.TrackId JOIN Album A ON T.AlbumId = A.AlbumId "
         "JOIN Artist Art ON A.ArtistId = Art.ArtistId")
BEST = "Provide a query that shows the top 3 best selling artists."


def events(sql: str, column: str, table: str = "InvoiceLine", words: str = "best selling") -> dict:
    """``sql`` counts distinct ``column`` values, not the ``table`` rows (the events)."""
    return said("count_unit", words, sql, column, table)


@pytest.mark.parametrize("question, sql, findings", [
    (BEST, f"SELECT Art.Name, COUNT(DISTINCT IL.TrackId) AS n {SALES} GROUP BY Art.Name ORDER BY n DESC LIMIT 3",
     [events("COUNT(DISTINCT IL.TrackId)", "TrackId")]),
    # the events' own key counted distinct is the events
    (BEST, f"SELECT Art.Name, COUNT(DISTINCT IL.InvoiceLineId) AS n {SALES} GROUP BY Art.Name "
           "ORDER BY n DESC LIMIT 3", []),
    # a column of a derived table is not traced: not read
    (BEST, f"SELECT x.Name, COUNT(DISTINCT x.TrackId) AS n FROM (SELECT Art.Name, IL.TrackId {SALES}) x "
           "GROUP BY x.Name ORDER BY n DESC LIMIT 3", []),
    # the question names the entity whose key is counted distinct (no "distinct" word):
    # that COUNT is asked for, the next one in the same output is still read
    ("Which artists are the best selling by the number of customers?",
     f"SELECT Art.Name, COUNT(DISTINCT I.CustomerId) + COUNT(DISTINCT IL.TrackId) AS n {SALES} "
     "JOIN Invoice I ON I.InvoiceId = IL.InvoiceId GROUP BY Art.Name ORDER BY n DESC LIMIT 3",
     [events("COUNT(DISTINCT IL.TrackId)", "TrackId")]),
    ("Which genre is the most popular by the number of customers who bought it?",
     "SELECT g.Name, COUNT(DISTINCT i.CustomerId) AS customers FROM Genre g JOIN Track t ON t.GenreId = g.GenreId "
     "JOIN InvoiceLine il ON il.TrackId = t.TrackId JOIN Invoice i ON i.InvoiceId = il.InvoiceId "
     "GROUP BY g.GenreId, g.Name ORDER BY customers DESC LIMIT 1", []),
])
def test_question_shape_events_counted_distinct(chinook_path, cache_dir, question, sql, findings, snapshot):
    check = shape(chinook_path, question, sql, cache_dir)
    if findings:
        assert_fires(check, snapshot, *findings)
    else:
        assert_silent(check)


# ---------------------------------------------------------------------------------------
# Direction: every ranking of the class named, and an explicit order against the outer ORDER BY
# ---------------------------------------------------------------------------------------
def test_question_shape_direction_names_every_word_and_every_ranking(shop, cache_dir, snapshot):
    check = shape(shop, "Which products are the most expensive, the highest priced?",
                  "SELECT title, MIN(price) FROM products ORDER BY price ASC LIMIT 1", cache_dir)
    assert_fires(check, snapshot, said("direction", "most expensive, highest", "ORDER BY price ASC LIMIT 1",
                                       "MIN(price)"))
    assert check.evidence["measured"] == ["direction", "entity"]


@pytest.mark.parametrize("asked, order, fires", [
    ("descending", "DESC", False), ("descending", "ASC", True),
    ("ascending", "ASC", False), ("ascending", "DESC", True),
    ("ascending", "", False),
])
def test_question_shape_explicit_order(shop, cache_dir, asked, order, fires, snapshot):
    check = shape(shop, f"List the products in {asked} order of price.",
                  f"SELECT title FROM products ORDER BY price {order}", cache_dir)
    assert check.evidence["measured"] == ["direction", "entity"]
    if fires:
        assert_fires(check, snapshot, said("direction", f"in {asked} order", f"ORDER BY price {order}"))
    else:
        assert_silent(check)
        assert not check.detail.startswith("not measured") and check.detail == snapshot


@pytest.mark.parametrize("sql", ["SELECT title FROM products", "SELECT title FROM products ORDER BY title DESC"])
def test_question_shape_explicit_order_not_measured(shop, cache_dir, sql):
    """No ORDER BY, or one by a text column: the order is not measured."""
    check = shape(shop, "List the products in descending order of price.", sql, cache_dir)
    assert_silent(check)
    assert check.evidence["measured"] == ["entity"]


def test_question_shape_explicit_order_adds_no_second_direction_finding(shop, cache_dir, snapshot):
    check = shape(shop, "Which is the cheapest product? List them in ascending order of price.",
                  "SELECT title FROM products ORDER BY price DESC LIMIT 3", cache_dir)
    assert_fires(check, snapshot, said("direction", "cheapest", "ORDER BY price DESC LIMIT 3"))


# ---------------------------------------------------------------------------------------
# Entities: the first one must be held by a table read, the others may be reached within
# two references (a declared foreign key or a column naming a table)
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> Path:
    """sales → clerks (a foreign key), clerks → stores (a column naming it, no foreign key),
    stores → regions (a foreign key) and → clerks (a foreign key, ``manager``, that names no
    table); sales also declares a foreign key to a table that does not exist; store_photos is
    named after stores and links to nothing."""
    return make_db(tmp_path_factory.mktemp("chain") / "chain.sqlite", {
        "regions": ("id INTEGER PRIMARY KEY, name TEXT", [(1, "north")]),
        "stores": ("id INTEGER PRIMARY KEY, region_id INTEGER REFERENCES regions(id), "
                   "manager INTEGER REFERENCES clerks(id), city TEXT", [(1, 1, 1, "Oslo")]),
        "clerks": ("id INTEGER PRIMARY KEY, store_id INTEGER, name TEXT", [(1, 1, "Kim")]),
        "sales": ("id INTEGER PRIMARY KEY, clerk_id INTEGER REFERENCES clerks(id), "
                  "coupon INTEGER REFERENCES coupons(id), amount REAL", [(1, 1, None, 2.5)]),
        "store_photos": ("id INTEGER PRIMARY KEY, url TEXT", [(1, "u")]),
    })


def entity(form: str, read: str, table: str) -> dict:
    """The SQL reads the tables ``read``, none of which holds ``table``."""
    return said("entity", form, read, table)


@pytest.mark.parametrize("question, sql, findings", [
    # the question's first entity (stores, before sales) is not held by the table read
    ("Which stores made sales?", "SELECT id FROM sales", [entity("stores", "sales", "stores")]),
    # sales is first (its first mention), stores is reached: sales → clerks → stores
    ("Which sales did the stores make, and were the sales large?", "SELECT id FROM sales", []),
    ("Which sales came from the stores?", "SELECT id FROM sales", []),
    # regions is three references away from sales, two from clerks
    ("Which sales of the stores came from the regions?", "SELECT id FROM sales",
     [entity("regions", "sales", "regions")]),
    ("Which sales came from the regions?", "SELECT s.id FROM sales s JOIN clerks c ON c.id = s.clerk_id", []),
    ("Which regions had clerks?", "SELECT c.name FROM clerks c JOIN sales s ON s.clerk_id = c.id",
     [entity("regions", "clerks, sales", "regions")]),
    # held through a foreign key whose column names nothing (stores.manager → clerks), through
    # a column naming the table without a foreign key (clerks.store_id)
    ("Which clerks manage stores?", "SELECT city FROM stores", []),
    ("Which stores employ clerks?", "SELECT name FROM clerks", []),
    # a table named after the entity holds it; a table named after part of a two-word entity
    # (store photos) holds it, another table does not
    ("Show the stores.", "SELECT url FROM store_photos", []),
    ("Show the store photos.", "SELECT city FROM stores", []),
    ("Show the store photos.", "SELECT name FROM regions", [entity("store photos", "regions", "store_photos")]),
    # stores is reached (passed over), store photos after it is not
    ("Which sales of the stores came with store photos?", "SELECT id FROM sales",
     [entity("store photos", "sales", "store_photos")]),
    # "in order of" is not the word order; the entity before it is still read
    ("List the regions in order of name.", "SELECT name FROM clerks ORDER BY name",
     [entity("regions", "clerks", "regions")]),
])
def test_question_shape_entities(chain, cache_dir, question, sql, findings, snapshot):
    check = shape(chain, question, sql, cache_dir)
    assert check.evidence["measured"] == ["entity"]
    if findings:
        assert_fires(check, snapshot, *findings)
        assert check.terms == {"complete": 0.0, "retrieve": 0.0}
    else:
        assert_silent(check)
        assert check.terms == {"complete": 1.0, "retrieve": 1.0}


def test_question_shape_entities_not_measured_without_a_table(chain, cache_dir, snapshot):
    check = shape(chain, "How many regions are there?", "SELECT 3", cache_dir)
    assert_silent(check)
    assert (check.evidence["measured"], check.terms) == ([], {})
    assert check.detail.startswith("not measured") and check.detail == snapshot


# ---------------------------------------------------------------------------------------
# What a ranked column is: a size, a time, or neither (text, an identifier)
# ---------------------------------------------------------------------------------------
KINDS = {
    "num": ("INTEGER PRIMARY KEY", None, True), "owner": ("INTEGER REFERENCES owners(id)", None, True),
    "d1": ("DATE", "time", False), "t1": ("TIME", "time", False),
    "happened_at": ("TEXT", "time", False), "created_date": ("TEXT", "time", False),
    "start_time": ("TEXT", "time", False), "log_timestamp": ("TEXT", "time", False),
    "last_datetime": ("TEXT", "time", False),
    "n_int": ("integer", "size", False), "r": ("REAL", "size", False), "nm": ("NUMERIC", "size", False),
    "dc": ("DECIMAL(10, 2)", "size", False), "f": ("FLOAT", "size", False), "db": ("DOUBLE", "size", False),
    "m": ("MONEY", "size", False), "plain": ("", None, False), "title": ("TEXT", None, False),
    "user_id": ("INTEGER", None, True), "zip_code": ("INTEGER", None, True), "api_key": ("INTEGER", None, True),
    "price": ("REAL", "size", False), "qty": ("INTEGER", "size", False), "amount": ("REAL", "size", False),
    "total_trips": ("REAL", "size", False), "mean_price": ("REAL", "size", False),
    "avg_cost": ("REAL", "size", False), "average_fee": ("REAL", "size", False),
}


@pytest.fixture(scope="module")
def kinds(tmp_path_factory) -> Path:
    columns = ", ".join(f"{name} {decl}".strip() for name, (decl, _, _) in KINDS.items())
    row = tuple(1 if name != "title" else "pen" for name in KINDS)
    return make_db(tmp_path_factory.mktemp("kinds") / "kinds.sqlite", {
        "owners": ("id INTEGER PRIMARY KEY, name TEXT", [(1, "Ann")]),
        "items": (columns, [row]),
        "notes": ("id INTEGER PRIMARY KEY, item_num INTEGER, amount TEXT", [(1, 1, "big")]),
    })


def test_question_shape_type_class_and_identifiers(kinds, cache_dir):
    profile = vouchsql.connect(kinds, cache_dir=cache_dir).profile()
    got = {c: (_type_class(profile, "items", c), _is_identifier(profile, "items", c)) for c in KINDS}
    assert got == {c: (cls, ident) for c, (_, cls, ident) in KINDS.items()}
    assert _type_class(profile, "items", "nope") is None
    assert _is_identifier(profile, "nope", "id") is False
    assert _type_class(profile, "notes", "amount") is None


HIGHEST = "Which item has the highest price?"


def nested(levels: int) -> str:
    """``price`` renamed through ``levels`` derived tables (a, b, c, …), ranked by the last name."""
    inner, prev = "SELECT title, price AS a FROM items", "a"
    for i in range(1, levels):
        name = chr(ord("a") + i)
        inner, prev = f"SELECT title, {prev} AS {name} FROM ({inner}) t{i}", name
    return f"SELECT title FROM ({inner}) t ORDER BY {prev} ASC LIMIT 1"


@pytest.mark.parametrize("question, sql, clause", [
    # amount is REAL in items, TEXT in notes: the qualified column is resolved to items
    ("Which item has the highest amount?",
     "SELECT i.title FROM items i JOIN notes n ON n.item_num = i.num ORDER BY i.amount ASC LIMIT 1",
     "ORDER BY i.amount ASC LIMIT 1"),
    ("Which owner has the highest quantity?", "SELECT owner FROM items GROUP BY owner ORDER BY SUM(qty) ASC LIMIT 1",
     "ORDER BY SUM(qty) ASC LIMIT 1"),
    (HIGHEST, "SELECT title, price AS p FROM items ORDER BY p ASC LIMIT 1", "ORDER BY p ASC LIMIT 1"),
    (HIGHEST, "SELECT title FROM items ORDER BY price * 2 ASC LIMIT 1", "ORDER BY price * 2 ASC LIMIT 1"),
    (HIGHEST, "SELECT MIN(p) FROM (SELECT price AS p FROM items) t", "MIN(p)"),
    (HIGHEST, nested(1), "ORDER BY a ASC LIMIT 1"),
    (HIGHEST, nested(4), "ORDER BY d ASC LIMIT 1"),   # four names deep: still traced
    ("Which item was sold at the latest time?", "SELECT title FROM items ORDER BY happened_at ASC LIMIT 1",
     "ORDER BY happened_at ASC LIMIT 1"),
])
def test_question_shape_direction_traces_the_ranked_column(kinds, cache_dir, question, sql, clause, snapshot):
    check = shape(kinds, question, sql, cache_dir)
    assert check.fired is True, check.detail
    assert [f["part"] for f in check.evidence["findings"]] == ["direction"]
    assert clause in check.evidence["findings"][0]["sql"] and check.evidence["findings"][0]["sql"] == snapshot


@pytest.mark.parametrize("question, sql", [
    # unqualified amount of two tables with different classes: not read
    ("Which item has the highest amount?",
     "SELECT title FROM items i JOIN notes n ON n.item_num = i.num ORDER BY amount ASC LIMIT 1"),
    # GROUP_CONCAT is an aggregate of no size
    ("Which owner has the highest quantity?",
     "SELECT owner FROM items GROUP BY owner ORDER BY GROUP_CONCAT(qty) ASC LIMIT 1"),
    (HIGHEST, nested(5)),                              # five names deep: not traced
    (HIGHEST, "SELECT title FROM items ORDER BY title ASC LIMIT 1"),
    (HIGHEST, "SELECT title FROM items ORDER BY user_id ASC LIMIT 1"),
    (HIGHEST, "SELECT title FROM items ORDER BY price ASC"),   # no LIMIT: a listing, not a ranking
])
def test_question_shape_direction_not_measured(kinds, cache_dir, question, sql):
    check = shape(kinds, question, sql, cache_dir)
    assert_silent(check)
    assert "direction" not in check.evidence["measured"]


# ---------------------------------------------------------------------------------------
# Aggregates: what stands for the aggregate the question names
# ---------------------------------------------------------------------------------------
def no(words: str, wanted: str, shown: str) -> dict:
    """The SQL computes no ``wanted`` aggregate; it computes ``shown`` (a list, empty for none)."""
    return said("aggregate", words, wanted, *filter(None, shown.split(", ")))


@pytest.mark.parametrize("question, sql, findings", [
    # "how many trips": a numeric column named trips measures it, no COUNT needed
    ("How many trips did the longest item take?", "SELECT MAX(total_trips) FROM items", []),
    ("How many trips did the longest owner take?", "SELECT MAX(id) FROM owners", [no("how many", "COUNT", "MAX")]),
    # a SUM of a quantity counts; a SUM of an identifier does not; a SUM not read is not a finding
    ("How many pens did the owners buy?", "SELECT SUM(qty) FROM items", []),
    ("How many pens did the owners buy?", "SELECT SUM(user_id) FROM items", [no("how many", "COUNT", "SUM")]),
    ("How many pens did the owners buy?", "SELECT SUM(q) FROM (SELECT qty AS q FROM items) t", []),
    # "average" answered by a column that holds averages
    ("What is the average price of the best item?", "SELECT MAX(mean_price) FROM items", []),
    ("What is the average cost of the best item?", "SELECT MAX(avg_cost) FROM items", []),
    ("What is the average fee of the best item?", "SELECT MAX(average_fee) FROM items", []),
    ("What is the average price of the best item?", "SELECT MAX(price) FROM items", [no("average", "AVG", "MAX")]),
    # an output labelled "total" that averages, after an output without a label
    ("What is the total price of each item?",
     "SELECT title, SUM(price) AS s, AVG(price) AS total_price FROM items GROUP BY title",
     [said("aggregate", "total", "AVG(price) AS total_price")]),
    # an output labelled "total" with no aggregate is no finding
    ("What is the total price of each item?", "SELECT title, price AS total_price FROM items", []),
])
def test_question_shape_aggregates(kinds, cache_dir, question, sql, findings, snapshot):
    check = shape(kinds, question, sql, cache_dir)
    if findings:
        assert_fires(check, snapshot, *findings)
    else:
        assert_silent(check)


def renamed(levels: int) -> tuple[str, str]:
    """A derived table renaming ``price`` ``levels`` times, and the last name."""
    inner, prev = "SELECT title, price AS a FROM items", "a"
    for i in range(1, levels):
        name = chr(ord("a") + i)
        inner, prev = f"SELECT title, {prev} AS {name} FROM ({inner}) t{i}", name
    return inner, prev


@pytest.mark.parametrize("levels, fires", [(3, True), (4, False)])
@pytest.mark.parametrize("form", ["min", "times", "alias"])
def test_question_shape_direction_depth_through_aggregates_arithmetic_and_aliases(kinds, cache_dir, form, levels,
                                                                                   fires, snapshot):
    """Each of MIN(x), x * 2 and an output alias of x costs one step of the four a ranked
    expression is traced through: three renamings still reach price, four do not."""
    inner, v = renamed(levels)
    sql, clause = {
        "min": (f"SELECT MIN({v}) FROM ({inner}) t", f"MIN({v})"),
        "times": (f"SELECT title FROM ({inner}) t ORDER BY {v} * 2 ASC LIMIT 1", f"ORDER BY {v} * 2 ASC LIMIT 1"),
        "alias": (f"SELECT title, {v} AS z FROM ({inner}) t ORDER BY z ASC LIMIT 1", "ORDER BY z ASC LIMIT 1"),
    }[form]
    check = shape(kinds, HIGHEST, sql, cache_dir)
    if fires:
        assert_fires(check, snapshot, said("direction", "highest", clause))
    else:
        assert_silent(check)
        assert check.evidence["measured"] == ["entity"]


@pytest.mark.parametrize("sql, clause", [
    # a qualified column is the table's, not the output alias of the same name
    ("SELECT title AS price FROM items i ORDER BY i.price ASC LIMIT 1", "ORDER BY i.price ASC LIMIT 1"),
    # an unqualified name is the output alias first (price), not the table's column (title)
    ("SELECT title AS descr, price AS title FROM items ORDER BY title ASC LIMIT 1", "ORDER BY title ASC LIMIT 1"),
    ("SELECT title AS descr, price AS Title FROM items ORDER BY TITLE ASC LIMIT 1", "ORDER BY TITLE ASC LIMIT 1"),
])
def test_question_shape_direction_output_aliases(kinds, cache_dir, sql, clause, snapshot):
    assert_fires(shape(kinds, HIGHEST, sql, cache_dir), snapshot, said("direction", "highest", clause))


def test_question_shape_arithmetic_of_an_identifier_is_no_size(kinds, cache_dir):
    check = shape(kinds, HIGHEST, "SELECT title FROM items ORDER BY user_id + 1 ASC LIMIT 1", cache_dir)
    assert_silent(check)
    assert check.evidence["measured"] == ["entity"]


@pytest.mark.parametrize("question, sql, findings", [
    # SUM / COUNT is an average; MAX / MIN is not; one aggregate divided is not
    ("What is the average price?", "SELECT SUM(price) / COUNT(price) FROM items", []),
    ("What is the average price?", "SELECT SUM(price) / COUNT(*) FROM items", []),
    ("What is the average price?", "SELECT MAX(price) / MIN(price) FROM items", [no("average", "AVG", "MAX, MIN")]),
    ("What is the average price?", "SELECT SUM(price) / 2 FROM items", [no("average", "AVG", "SUM")]),
    # an output labelled as an average that computes something else
    ("What is the average price?", "SELECT AVG(price) AS a, SUM(price) AS avg_total FROM items",
     [said("aggregate", "average", "SUM(price) AS avg_total")]),
    ("What is the average price?", "SELECT AVG(price) AS a, SUM(price) AS mean_total FROM items",
     [said("aggregate", "average", "SUM(price) AS mean_total")]),
    ("What is the average price?", "SELECT AVG(price) AS a, COUNT(*) AS avg_n FROM items",
     [said("aggregate", "average", "COUNT(*) AS avg_n")]),
    ("What is the average price?", "SELECT AVG(price) AS a, MAX(price) AS avg_top FROM items",
     [said("aggregate", "average", "MAX(price) AS avg_top")]),
    ("What is the average price?", "SELECT AVG(price) AS a, MIN(price) AS avg_low FROM items",
     [said("aggregate", "average", "MIN(price) AS avg_low")]),
    ("What is the average price?", "SELECT AVG(price) AS avg_price FROM items", []),
    # "maximum": a MAX, or a ranking (ORDER BY with a LIMIT)
    ("What is the maximum price?",
     "SELECT price, COUNT(*) FROM items GROUP BY price ORDER BY price DESC LIMIT 1", []),
    ("What is the maximum price?", "SELECT price, COUNT(*) FROM items GROUP BY price ORDER BY price DESC",
     [no("maximum", "MAX", "COUNT")]),
    ("What is the maximum price?", "SELECT price, COUNT(*) FROM items GROUP BY price LIMIT 1",
     [no("maximum", "MAX", "COUNT")]),
    ("What is the maximum price?", "SELECT GROUP_CONCAT(price) FROM items", [no("maximum", "MAX", "")]),
    # "how much": a COUNT alone is no amount
    ("How much did the items cost?", "SELECT COUNT(*) FROM items", [no("how much", "SUM", "COUNT")]),
    ("How much did the items cost?", "SELECT SUM(price) FROM items", []),
])
def test_question_shape_aggregates_stand_ins(kinds, cache_dir, question, sql, findings, snapshot):
    check = shape(kinds, question, sql, cache_dir)
    assert "aggregate" in check.evidence["measured"]
    if findings:
        assert_fires(check, snapshot, *findings)
    else:
        assert_silent(check)


@pytest.mark.parametrize("sql", ["SELECT title FROM items ORDER BY price ASC LIMIT 1", "SELECT MIN(price) FROM items"])
def test_question_shape_direction_agrees(kinds, cache_dir, sql):
    check = shape(kinds, "Which is the cheapest item?", sql, cache_dir)
    assert_silent(check)
    assert check.evidence["measured"][0] == "direction"


def test_question_shape_several_findings(kinds, cache_dir, snapshot):
    sql = "SELECT AVG(price) FROM items GROUP BY title ORDER BY price ASC LIMIT 1"
    two = shape(kinds, "What is the total price of the most expensive item?", sql, cache_dir)
    assert [f["part"] for f in two.evidence["findings"]] == ["direction", "aggregate"]
    assert prose(two) == snapshot(name="two")
    assert two.evidence["measured"] == ["direction", "aggregate", "entity"]
    assert two.terms == {"complete": pytest.approx(1 / 3, abs=1e-6), "retrieve": 1.0}
    three = shape(kinds, "What is the total price of the notes of the most expensive item?", sql, cache_dir)
    assert [f["part"] for f in three.evidence["findings"]] == ["direction", "aggregate", "entity"]
    assert prose(three) == snapshot(name="three")
    assert three.terms == {"complete": 0.0, "retrieve": 0.0}


def test_question_shape_not_measured_without_a_parse(kinds, cache_dir, snapshot):
    check = shape(kinds, "Which is the cheapest item?", "SELEC 1", cache_dir)
    assert (check.name, check.kind, check.fired) == ("question_shape", "cap", False)
    assert check.detail.startswith("not measured") and check.detail == snapshot


def test_question_shape_a_cte_named_as_a_table_is_not_that_table(kinds, cache_dir, snapshot):
    check = shape(kinds, "Show the notes.", "WITH notes AS (SELECT * FROM owners) SELECT name FROM notes", cache_dir)
    assert_fires(check, snapshot, entity("notes", "owners", "notes"))
