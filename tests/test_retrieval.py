"""Schema retrieval for ``ask`` (:mod:`vouchsql.prompting.retrieval`) on a real SQLite file of a few
hundred tables made here: a shop, a music catalogue, a school and the routing rules' tables
among generated staging, audit and ledger tables. The right tables come first, join
neighbours are brought in, routing rules come first and forbidden tables never show, the
budget holds, a small schema's prompt is unchanged, and ``vouch ask`` (the scripted model
server, no network) sends only the retrieved tables."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

import vouchsql
from fakes import ask_cache, demo_profile  # noqa: F401 - fixtures
from fakes.servers import Script, ScriptedServer
from vouchsql.definitions import definitions_from_dict
from vouchsql.prompting import retrieval
from vouchsql.prompting.context import schema_text
from vouchsql.prompting.retrieval import estimate_tokens, rank_tables, schema_for_prompt, schema_index

CORE = """
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, country TEXT);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers (customer_id),
                     order_date TEXT, freight REAL);
CREATE TABLE artists (artist_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE albums (album_id INTEGER PRIMARY KEY, title TEXT, artist_id INTEGER REFERENCES artists (artist_id));
CREATE TABLE tracks (track_id INTEGER PRIMARY KEY, name TEXT, album_id INTEGER REFERENCES albums (album_id),
                     milliseconds INTEGER);
CREATE TABLE students (student_id INTEGER PRIMARY KEY, full_name TEXT);
CREATE TABLE courses (course_id INTEGER PRIMARY KEY, title TEXT);
CREATE TABLE enrollments (pupil INTEGER REFERENCES students (student_id), class INTEGER REFERENCES courses (course_id),
                          grade TEXT);
CREATE TABLE inventory_issue_history (issue_id INTEGER PRIMARY KEY, chemical TEXT, issued_kg REAL);
CREATE TABLE storage_report_2023 (report_id INTEGER PRIMARY KEY, chemical TEXT, usage_kg REAL);
CREATE TABLE storage_report_2024 (report_id INTEGER PRIMARY KEY, chemical TEXT, usage_kg REAL);
INSERT INTO customers VALUES (1, 'Ana', 'Silva', 'Brazil'), (2, 'Tom', 'Berg', 'Norway');
INSERT INTO orders VALUES (1, 1, '2024-01-02', 12.5), (2, 2, '2024-02-03', 3.0);
INSERT INTO artists VALUES (1, 'Iron Maiden'), (2, 'Miles Davis');
INSERT INTO albums VALUES (1, 'Powerslave', 1), (2, 'Kind of Blue', 2);
INSERT INTO tracks VALUES (1, 'Aces High', 1, 271000), (2, 'So What', 2, 562000);
INSERT INTO students VALUES (1, 'Ines Moreau'), (2, 'Raj Okafor');
INSERT INTO courses VALUES (1, 'Algebra'), (2, 'Chemistry');
INSERT INTO enrollments VALUES (1, 1, 'A'), (2, 2, 'B');
INSERT INTO inventory_issue_history VALUES (1, 'acetone', 2.5);
INSERT INTO storage_report_2023 VALUES (1, 'acetone', -1.0);
INSERT INTO storage_report_2024 VALUES (1, 'acetone', -2.0);
"""
PREFIXES = ["stg", "raw", "audit", "bak", "hist", "tmp", "fin", "hr", "crm", "ops"]
ENTITIES = ["ledger", "journal", "payment", "vendor", "shipment", "ticket", "campaign", "asset", "budget",
            "contract", "device", "session", "invoice", "employee", "warehouse", "customer", "order"]
SUFFIXES = ["log", "snapshot", "daily", "archive", "changes", "entries", "v2", "summary"]
DISTRACTORS = 300


@pytest.fixture(scope="module")
def many_tables(tmp_path_factory):
    """Eleven tables that mean something among 300 generated ones (a few share words with
    them: crm_customer_log, stg_order_daily), each with an id, a few columns and two rows."""
    path = tmp_path_factory.mktemp("many") / "many.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(CORE)
    rng = random.Random(7)
    names: set[str] = set()
    while len(names) < DISTRACTORS:
        names.add(f"{rng.choice(PREFIXES)}_{rng.choice(ENTITIES)}_{rng.choice(SUFFIXES)}")
    for name in sorted(names):
        conn.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, status TEXT, amount REAL, loaded_at TEXT)")
        conn.execute(f"INSERT INTO {name} VALUES (1, 'open', 1.5, '2024-01-01'), (2, 'closed', 2.5, '2024-01-02')")
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module")
def db(many_tables, cache_dir):
    # conftest's module-wide cache folder: the value sample and the tables' profiles are made once
    with vouchsql.connect(many_tables, cache_dir=cache_dir) as opened:
        yield opened


@pytest.fixture(scope="module")
def index(db):
    return schema_index(db)


RULES = definitions_from_dict({
    "definitions": {"usage": "the weight issued, from the inventory issue history"},
    "rules": [{"name": "usage_reads_issues", "when": ["usage", "used"], "must_read": ["inventory_issue_history"],
               "must_not_read": ["storage_report_*"]}]})


# -- ranking ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("question, first", [
    ("Which customers from Brazil paid the most freight on their orders?", {"customers", "orders"}),
    ("Which albums has Iron Maiden made?", {"albums", "artists"}),
    ("What is the longest track, in milliseconds?", {"tracks"}),
])
def test_the_tables_a_question_names_come_first(index, question, first):
    order = rank_tables(index, question).order
    assert set(order[:len(first)]) == first, order[:5]


def test_a_joined_table_comes_before_a_namesake_elsewhere(index):
    """crm_customer_log matches *customer* as well as ``customers`` does, but only
    ``customers`` joins ``orders``: the group that answers both words comes first."""
    order = rank_tables(index, "Which customer placed the order with the highest freight?").order
    assert order[:2] == ["orders", "customers"] or order[:2] == ["customers", "orders"], order[:5]


def test_join_neighbours_are_brought_in(index):
    # The bridge: no word of the question names enrollments, but it joins the two tables.
    ranking = rank_tables(index, "Which students take the Algebra course?")
    assert set(ranking.order[:3]) == {"students", "courses", "enrollments"}, ranking.order[:5]
    assert ranking.why["enrollments"].startswith("joins ")
    # A lookup: the artist of an album comes with it, for its name.
    ranking = rank_tables(index, "List every album title.")
    assert ranking.order[0] == "albums" and "artists" in ranking.order[:3], ranking.order[:5]
    assert ranking.why["artists"] == "referenced by albums"


def test_routing_rules_come_first_and_forbidden_tables_are_dropped(index):
    ranking = rank_tables(index, "How much acetone was used last year?", definitions=RULES)
    assert ranking.order[0] == "inventory_issue_history"
    assert ranking.why["inventory_issue_history"] == "rule usage_reads_issues"
    assert ranking.dropped == ["storage_report_2023", "storage_report_2024"]
    assert not set(ranking.dropped) & set(ranking.order)
    # A question the rule does not apply to still sees the storage reports.
    other = rank_tables(index, "What does the storage report hold for acetone?", definitions=RULES)
    assert other.dropped == [] and other.order[0].startswith("storage_report_")


def test_the_query_takes_defined_terms_verb_stems_and_weighs_numbers_less():
    weights = retrieval.question_terms("Which tracks were rented in 2024 for usage?", definitions=RULES)
    assert weights["track"] == 1.0 and weights["rented"] == 1.0 and weights["rent*"] == 0.5
    assert weights["2024"] == pytest.approx(1 / 3)
    assert {"inventory", "issue", "history", "weight"} <= set(weights)  # the meaning of 'usage'
    assert "which" not in weights and "were" not in weights


def test_the_python_bm25_scores_as_fts5_does(index):
    words = ["customer", "order", "freight", "iron", "rent*", "ledger"]
    fts = index.scores(words)
    python = retrieval._PythonBM25(index.docs).scores(words)
    assert fts.keys() == python.keys()
    for w in fts:
        assert fts[w].keys() == python[w].keys(), w
        for table, score in fts[w].items():
            assert python[w][table] == pytest.approx(score, rel=1e-6), (w, table)


# -- how a table answers a word: coverage, stems, values, named tables, prefixes --------------------

def _info(name, columns, pk=None, fks=(), values=None):
    from vouchsql.db.base import ColumnInfo, ForeignKeyInfo, TableInfo

    return TableInfo(name=name, columns=[ColumnInfo(c, "TEXT") for c in columns], primary_key=[pk] if pk else [],
                     foreign_keys=[ForeignKeyInfo([c], t, [k]) for c, t, k in fks])


# A rental shop beside staging tables that share its words, all made here.
SHOP = [
    _info("customer", ["customer_id", "first_name", "store_id"], pk="customer_id"),
    _info("language", ["language_id", "name"], pk="language_id"),
    _info("film", ["film_id", "title", "language_id"], pk="film_id", fks=[("language_id", "language", "language_id")]),
    _info("category", ["category_id", "name"], pk="category_id"),
    _info("film_category", ["film_id", "category_id"],
          fks=[("film_id", "film", "film_id"), ("category_id", "category", "category_id")]),
    _info("inventory", ["inventory_id", "film_id", "store_id"], pk="inventory_id", fks=[("film_id", "film", "film_id")]),
    _info("rental", ["rental_id", "rental_date", "inventory_id", "customer_id"], pk="rental_id",
          fks=[("inventory_id", "inventory", "inventory_id"), ("customer_id", "customer", "customer_id")]),
    _info("rental_tax", ["id", "rented_on", "amount"], pk="id"),
    _info("rental_budget", ["id", "rented_on", "budget"], pk="id"),
    _info("stg_customer_log", ["id", "customer_id", "loaded_at"], pk="id"),
    _info("wp_posts", ["post_id", "title", "author_id"], pk="post_id", fks=[("author_id", "wp_users", "user_id")]),
    _info("wp_users", ["user_id", "login"], pk="user_id"),
    _info("stg_posts", ["id", "title"], pk="id"),
    _info("stg_users", ["id", "login"], pk="id"),
    _info("order_items", ["order_item_id", "quantity", "discount_code"], pk="order_item_id"),
    _info("discount", ["id", "percent"], pk="id"),
    *[_info(f"audit_{i}", ["id", "status", "amount"], pk="id") for i in range(40)],
]
SHOP_VALUES = {"category": ["Horror", "Comedy", "Action"], "film": ["Academy Dinosaur", "Horror Hotel Nights"],
               "audit_3": ["horror movies"]}


@pytest.fixture(scope="module")
def shop():
    return retrieval.SchemaIndex(SHOP, SHOP_VALUES)


def test_a_declared_key_column_joins_only_where_it_is_declared(shop):
    # rental.customer_id is declared to point at customer: no guess from its name elsewhere;
    # the staging log's undeclared customer_id is still joined by its name.
    assert shop.links["rental"] == {"inventory": "ref", "customer": "ref"}
    assert shop.links["stg_customer_log"] == {"customer": "ref"}
    assert shop.joined("rental", "customer") and not shop.joined("stg_customer_log", "customer")


def test_a_word_and_its_stem_are_one_word_and_a_fully_covered_name_wins(shop):
    query = retrieval._match(shop, "How often was each film rented?", None, None)
    # 'rented' begins 'rental' (the stem, STEM_MATCH sure) and covers all of its name; the
    # staging tables hold the word in a column named half by it.
    assert query.match["rental"]["rented"] == pytest.approx(retrieval.STEM_MATCH * retrieval.Q_NAME)
    assert query.match["rental_tax"]["rented"] == pytest.approx(
        retrieval.Q_COLUMN * (retrieval.COVERED + (1 - retrieval.COVERED) / 2))
    assert "rent*" not in query.weight  # folded into its word
    order = rank_tables(shop, "How often was each film rented?").order
    assert set(order[:3]) == {"rental", "inventory", "film"}, order[:6]  # the film joins its rentals
    assert order.index("rental") < order.index("rental_tax")


def test_a_whole_value_named_in_the_question_brings_its_table(shop):
    query = retrieval._match(shop, "How many customers rented a Horror film?", None, None)
    assert query.match["category"]["horror"] == retrieval.Q_CELL  # the whole value 'Horror'
    # A word inside a longer value counts less, and less again when the question does not
    # capitalise it.
    assert query.match["film"]["horror"] == pytest.approx(retrieval.Q_VALUE)
    lower = retrieval._match(shop, "how many customers rented a horror film?", None, None)
    assert lower.match["audit_3"]["horror"] == pytest.approx(retrieval.Q_VALUE * retrieval.VALUE_LOWER)
    order = rank_tables(shop, "How many customers rented a Horror film?").order
    assert set(order[:6]) == {"customer", "rental", "inventory", "film", "film_category", "category"}, order[:8]


def test_a_column_named_in_full_beats_a_table_named_by_one_of_its_words(shop):
    query = retrieval._match(shop, "How many items were sold under each discount code?", None, None)
    assert query.match["order_items"]["discount"] == pytest.approx(retrieval.Q_COLUMN)  # all of discount_code
    assert rank_tables(shop, "How many items were sold under each discount code?").order[0] == "order_items"


def test_a_table_the_question_names_outright_comes_first(shop):
    ranking = rank_tables(shop, "Looking at the rental_tax table, what is the total amount?")
    assert ranking.order[0] == "rental_tax", ranking.order[:5]
    query = retrieval._match(shop, "Show every row of the Discount table.", None, None)
    assert query.match["discount"][retrieval.NAMED_TABLE] == 1.0


def test_a_module_prefix_counts_a_quarter_of_a_word(shop):
    # wp_ begins two names that a declared key joins: a module; stg_ begins unjoined ones.
    assert shop.cover_terms["wp_posts"] == ("post",) and shop.cover_terms["wp_users"] == ("user",)
    assert shop.cover_terms["stg_posts"] == ("stg", "post")
    query = retrieval._match(shop, "How many posts has each user written?", None, None)
    quarter = 1 / (1 + retrieval.PREFIX_WEIGHT)
    assert query.match["wp_posts"]["post"] == pytest.approx(retrieval.COVERED + (1 - retrieval.COVERED) * quarter)
    assert query.match["stg_posts"]["post"] == pytest.approx(retrieval.COVERED + (1 - retrieval.COVERED) / 2)
    assert rank_tables(shop, "How many posts has each user written?").order[:2] in (
        ["wp_posts", "wp_users"], ["wp_users", "wp_posts"])


def test_a_lookup_that_answers_a_word_comes_before_one_that_does_not(shop):
    # film (the seed) references language and film_category references category: category
    # answers 'category', so it is the first lookup although film comes first in the group.
    ranking = rank_tables(shop, "How many rentals per film category?")
    assert ranking.order[:4] == ["film", "film_category", "inventory", "rental"], ranking.order[:8]
    assert ranking.order[4:6] == ["category", "language"], ranking.order[:8]
    assert ranking.why["category"] == "referenced by film_category" and ranking.why["language"] == "referenced by film"


def test_the_ranking_is_the_same_in_every_process(tmp_path):
    """No set's iteration order (which the hash seed changes) reaches the ranking."""
    import os
    import subprocess
    import sys

    script = tmp_path / "rank.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_retrieval import SHOP, SHOP_VALUES\n"
        "from vouchsql.prompting import retrieval\n"
        "index = retrieval.SchemaIndex(SHOP, SHOP_VALUES)\n"
        "for q in ['How many customers rented a Horror film?', 'How many posts has each user written?']:\n"
        "    print(retrieval.rank_tables(index, q).order[:20])\n")
    outs = {subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(outs) == 1 and "rental" in next(iter(outs))


# -- the prompt's schema text ------------------------------------------------------------------------

@pytest.mark.parametrize("budget", [80, 400, 1500])
def test_the_budget_holds(db, budget):
    ctx = schema_for_prompt(db, "Which customers from Brazil paid the most freight?", budget=budget,
                            definitions=RULES)
    assert not ctx.full and ctx.total == DISTRACTORS + 11
    assert ctx.tokens == estimate_tokens(ctx.text) <= budget
    blocks = [line for line in ctx.text.splitlines() if line.startswith("TABLE ")]
    assert [b.split()[1].rstrip(":") for b in blocks] == ctx.tables
    assert ctx.omitted == ctx.total - len(ctx.tables) - len(ctx.listed)
    last = ctx.text.splitlines()[-1]
    assert last.startswith(f"NOT SHOWN: {ctx.total - len(ctx.tables):,} more of the database's {ctx.total:,} tables")
    if budget >= 400:
        assert ctx.tables[:2] in (["customers", "orders"], ["orders", "customers"])
        assert ctx.listed and all(name in last for name in ctx.listed)


def test_forbidden_tables_are_not_in_the_prompt(db):
    ctx = schema_for_prompt(db, "How much acetone was used?", budget=1500, definitions=RULES)
    assert ctx.tables[0] == "inventory_issue_history"
    assert "storage_report" not in ctx.text and ctx.dropped == ["storage_report_2023", "storage_report_2024"]


def test_a_small_schema_gives_the_whole_unchanged_prompt(demo_db, ask_cache):
    with vouchsql.connect(demo_db, cache_dir=ask_cache) as demo:
        whole = schema_text(demo.profile(), demo.dialect)
        ctx = schema_for_prompt(demo, "How many stores are there?", budget=8000)
        assert ctx.full and ctx.text == whole and ctx.listed == [] and ctx.omitted == 0
        assert ctx.tables == demo.table_names()
        assert schema_for_prompt(demo, "How many stores?", budget=0).text == whole  # 0: always whole
        narrowed = schema_for_prompt(demo, "How many stores are there?", budget=300)
        assert not narrowed.full and narrowed.tables[0] == "stores" and narrowed.tokens <= 300


# -- vouch ask -----------------------------------------------------------------------------------------

def test_vouch_ask_sends_only_the_retrieved_tables(many_tables, cache_dir, capsys):
    from vouchsql import cli

    sql = "SELECT c.country, SUM(o.freight) AS freight FROM orders o JOIN customers c USING (customer_id) GROUP BY 1"
    with ScriptedServer(Script(samples=[sql])) as srv:
        code = cli.main(["ask", "--db", str(many_tables), "--cache-dir", cache_dir, "--model", "openai:m",
                         "--base-url", srv.base_url, "--k", "2", "--schema-tokens", "900", "--json",
                         "How much freight did the orders of each customer country pay?"])
    assert code == 0
    answer = json.loads(capsys.readouterr().out)
    held = answer["prompt_schema"]
    assert held["full"] is False and held["total_tables"] == DISTRACTORS + 11 and held["budget"] == 900
    assert held["tables"][:2] in (["orders", "customers"], ["customers", "orders"])
    assert held["omitted"] == held["total_tables"] - len(held["tables"]) - len(held["listed"])
    for call in srv.calls:
        if call.stage in ("decide", "generate"):
            shown = [line.split()[1].rstrip(":") for line in call.user.splitlines() if line.startswith("TABLE ")]
            assert shown == held["tables"]
            assert "NOT SHOWN: " in call.user and "TABLE albums" not in call.user
    assert answer["shown"]["result"]["rows"] == [["Brazil", 12.5], ["Norway", 3.0]]


# -- synonyms and units: the schema's words for the question's --------------------------------------

TRADE = [
    _info("order_items", ["order_item_id", "order_id", "quantity", "unit_price"], pk="order_item_id",
          fks=[("order_id", "orders", "order_id")]),
    _info("orders", ["order_id", "order_date"], pk="order_id"),
    _info("products", ["product_id", "name", "weight_kg"], pk="product_id"),
    _info("product_log", ["id", "weight", "loaded_at"], pk="id"),
    _info("product_history", ["id", "product_name", "weighted_score"], pk="id"),
    _info("staff", ["staff_id", "first_name"], pk="staff_id"),
    _info("employee", ["employee_id", "first_name", "title"], pk="employee_id"),
    _info("track", ["track_id", "name", "milliseconds"], pk="track_id"),
    _info("songbook_log", ["id", "loaded_at"], pk="id"),
    *[_info(f"stg_{i}", ["id", "status", "amount", "quantity"], pk="id") for i in range(30)],
]


@pytest.fixture(scope="module")
def trade():
    return retrieval.SchemaIndex(TRADE, {"stg_1": ["track of the week"]})


def test_no_lexicon_names_tables_the_definitions_file_does(trade):
    """Issue 26: no built-in list says what schemas call things ('song' is no table's word
    here); a database's own definitions file does, and its meaning is searched for as the
    question's words."""
    from vouchsql.definitions import Definitions

    assert not hasattr(retrieval, "SYNONYMS")
    songs = retrieval._match(trade, "How long is the longest song?", None, None)
    assert "track" not in songs.match
    defs = Definitions(definitions={"song": "a row of the track table"})
    songs = retrieval._match(trade, "How long is the longest song?", None, defs)
    assert songs.match["track"]["track"] == pytest.approx(retrieval.Q_NAME)
    assert rank_tables(trade, "How long is the longest song?", definitions=defs).order[0] == "track"
    # A table named by the question's own word needs no definition.
    assert rank_tables(trade, "How many staff are there?").order[0] == "staff"


def test_a_trailing_unit_needs_no_cover(trade):
    # weight_kg answers "weight" in full, as a weight column does; weighted_score does not
    # hold the word 'weight' at all (and _for_cover keeps a one-word name whole).
    query = retrieval._match(trade, "What is the average product weight?", None, None)
    assert query.match["products"]["weight"] == pytest.approx(retrieval.Q_COLUMN)
    assert query.match["product_log"]["weight"] == pytest.approx(retrieval.Q_COLUMN)
    assert "weight" not in query.match.get("product_history", {})
    assert query.match["products"]["product"] > query.match["product_log"]["product"]
    assert rank_tables(trade, "What is the average product weight?").order[0] == "products"
    assert retrieval._for_cover(("kg",)) == ("kg",) and retrieval._for_cover(("price", "usd")) == ("price",)
    assert retrieval._for_cover(("kg", "price")) == ("kg", "price")  # only a trailing unit
