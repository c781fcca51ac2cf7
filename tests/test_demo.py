"""The embedded demo database: reproducible, small, and holding every trap."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from vouchsql.demo import DEFAULT_SEED, DESCRIPTION, EXAMPLES, build_demo, is_demo_database
from vouchsql.errors import UserInputError


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module", params=[DEFAULT_SEED, 123])
def demo(request, tmp_path_factory) -> sqlite3.Connection:
    path = tmp_path_factory.mktemp(f"demo{request.param}") / "demo.sqlite"
    build_demo(path, seed=request.param)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    yield conn
    conn.close()


def one(conn: sqlite3.Connection, sql: str):
    return conn.execute(sql).fetchone()[0]


def overlap(conn: sqlite3.Connection, a_table: str, a_col: str,
            b_table: str, b_col: str) -> float:
    """rho = max(|A∩B|/|A|, |A∩B|/|B|) over the distinct non-NULL keys."""
    return one(conn, f"""
        WITH a AS (SELECT DISTINCT {a_col} AS k FROM {a_table} WHERE {a_col} IS NOT NULL),
             b AS (SELECT DISTINCT {b_col} AS k FROM {b_table} WHERE {b_col} IS NOT NULL),
             i AS (SELECT k FROM a INTERSECT SELECT k FROM b)
        SELECT MAX((SELECT COUNT(*) FROM i) * 1.0 / (SELECT COUNT(*) FROM a),
                   (SELECT COUNT(*) FROM i) * 1.0 / (SELECT COUNT(*) FROM b))
    """)


# --------------------------------------------------------------------------
# Build properties
# --------------------------------------------------------------------------
def test_same_seed_gives_identical_bytes_and_other_seed_differs(tmp_path):
    a = build_demo(tmp_path / "a" / "demo.sqlite")
    b = build_demo(tmp_path / "b" / "demo.sqlite", seed=DEFAULT_SEED)
    c = build_demo(tmp_path / "c" / "demo.sqlite", seed=DEFAULT_SEED + 1)
    assert _sha256(a) == _sha256(b)
    assert _sha256(a) != _sha256(c)
    # Different data, not just different bytes.
    ca, cc = sqlite3.connect(a), sqlite3.connect(c)
    try:
        q = "SELECT group_concat(first_name || last_name || age, ',') FROM customers"
        assert one(ca, q) != one(cc, q)
    finally:
        ca.close()
        cc.close()


def test_rebuild_over_existing_file_is_identical(tmp_path):
    path = tmp_path / "demo.sqlite"
    first = _sha256(build_demo(path))
    assert _sha256(build_demo(path)) == first
    # No temp or journal files are left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.sqlite"]


def test_an_existing_file_that_is_not_a_demo_database_is_replaced_only_with_force(tmp_path):
    path = tmp_path / "demo.sqlite"
    path.write_bytes(b"keep me")
    with pytest.raises(UserInputError, match="not a Vouch demo database"):
        build_demo(path)
    assert path.read_bytes() == b"keep me"
    assert build_demo(path, force=True) == path
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"
    assert is_demo_database(path)


def test_returns_path_and_accepts_str(tmp_path):
    out = build_demo(str(tmp_path / "x.db"))
    assert isinstance(out, Path) and out.exists()


def test_file_is_small(tmp_path):
    path = build_demo(tmp_path / "demo.sqlite")
    size = path.stat().st_size
    assert 200_000 < size < 5 * 1024 * 1024


def test_file_settings_and_integrity(demo):
    assert one(demo, "PRAGMA page_size") == 4096
    assert one(demo, "PRAGMA journal_mode").lower() == "delete"
    assert one(demo, "PRAGMA integrity_check") == "ok"
    assert demo.execute("PRAGMA foreign_key_check").fetchall() == []


def test_schema_and_sizes(demo):
    tables = {r[0] for r in demo.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"customers", "stores", "categories", "products", "tags",
            "product_tags", "orders", "order_items", "payments", "returns",
            "loyalty_accounts"} <= tables
    assert one(demo, "SELECT COUNT(*) FROM customers") == 1200
    assert one(demo, "SELECT COUNT(*) FROM products") == 240
    assert 3000 <= one(demo, "SELECT COUNT(*) FROM orders") <= 5000
    # Realistic formats: ISO dates, money with at most 2 decimals.
    assert one(demo, """SELECT COUNT(*) FROM orders
                        WHERE order_date NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'""") == 0
    assert one(demo, "SELECT COUNT(*) FROM orders WHERE total <> ROUND(total, 2)") == 0
    assert one(demo, "SELECT COUNT(*) FROM products WHERE price <> ROUND(price, 2)") == 0


def test_declared_foreign_keys(demo):
    fks = {(r[2], r[3], r[4]) for r in demo.execute(
        "SELECT * FROM pragma_foreign_key_list('orders')")}
    assert ("customers", "customer_id", "customer_id") in fks
    assert ("stores", "store_id", "store_id") in fks
    assert demo.execute("SELECT * FROM pragma_foreign_key_list('loyalty_accounts')").fetchall() == []
    pks = [r[1] for r in demo.execute("PRAGMA table_info(product_tags)") if r[5]]
    assert pks == ["product_id", "tag_id"]


# --------------------------------------------------------------------------
# The seven deliberate data features
# --------------------------------------------------------------------------
def test_feature1_many_to_many_joins_repeat_rows(demo):
    n_products = one(demo, "SELECT COUNT(*) FROM products")
    joined = one(demo, "SELECT COUNT(*) FROM products p JOIN product_tags pt USING (product_id)")
    assert joined > 2 * n_products
    share_2_to_4 = one(demo, """
        SELECT AVG(n BETWEEN 2 AND 4) FROM (
            SELECT p.product_id, COUNT(pt.tag_id) AS n
            FROM products p LEFT JOIN product_tags pt USING (product_id)
            GROUP BY p.product_id)""")
    assert share_2_to_4 > 0.75
    n_orders = one(demo, "SELECT COUNT(*) FROM orders")
    order_rows = one(demo, "SELECT COUNT(*) FROM orders o JOIN order_items oi USING (order_id)")
    assert order_rows > 1.8 * n_orders
    assert one(demo, "SELECT COUNT(*) FROM (SELECT order_id FROM order_items "
                     "GROUP BY order_id HAVING COUNT(*) >= 2)") > n_orders / 2


def test_feature2_nulls_in_grouping_and_filter_columns(demo):
    null_region = one(demo, "SELECT COUNT(*) FROM customers WHERE region IS NULL")
    assert null_region == 120  # 10% of 1200
    # NULL-region customers do show up once customers are joined to orders.
    assert one(demo, """SELECT COUNT(DISTINCT c.customer_id) FROM customers c
                        JOIN orders o USING (customer_id) WHERE c.region IS NULL""") > 50
    assert one(demo, """SELECT COUNT(*) FROM (SELECT c.region FROM orders o
                        JOIN customers c USING (customer_id) GROUP BY c.region)
                        WHERE region IS NULL""") == 1
    null_codes = one(demo, "SELECT COUNT(*) FROM orders WHERE discount_code IS NULL")
    n_orders = one(demo, "SELECT COUNT(*) FROM orders")
    assert 0.6 * n_orders < null_codes < n_orders
    assert one(demo, "SELECT COUNT(*) FROM products WHERE category_id IS NULL") == 9
    assert one(demo, "SELECT COUNT(*) FROM products WHERE weight_kg IS NULL") == 18


def test_feature3_ties_at_the_extreme(demo):
    assert one(demo, "SELECT MAX(price) FROM products") == 1299.00
    tied = one(demo, "SELECT COUNT(*) FROM products WHERE price = (SELECT MAX(price) FROM products)")
    assert tied == 5
    top = demo.execute("""SELECT customer_id, COUNT(*) AS n FROM orders
                          GROUP BY customer_id ORDER BY n DESC LIMIT 3""").fetchall()
    assert top[0][1] == top[1][1] > top[2][1]


def test_feature4_values_exactly_on_round_cutoffs(demo):
    assert one(demo, "SELECT COUNT(*) FROM orders WHERE total = 100.00") >= 8
    assert one(demo, "SELECT COUNT(*) FROM orders WHERE total >= 100") > \
        one(demo, "SELECT COUNT(*) FROM orders WHERE total > 100")
    assert one(demo, "SELECT COUNT(*) FROM products WHERE price = 50.00") == 6
    assert one(demo, "SELECT COUNT(*) FROM customers WHERE age = 30") >= 8
    assert one(demo, "SELECT COUNT(*) FROM orders WHERE order_date = '2024-01-01'") >= 6


def test_feature5_minus_one_means_unknown(demo):
    n = one(demo, "SELECT COUNT(*) FROM customers")
    unknown = one(demo, "SELECT COUNT(*) FROM customers WHERE age = -1")
    assert unknown == 48
    assert unknown / n >= 0.03
    assert one(demo, "SELECT MIN(age) FROM customers WHERE age <> -1") >= 18
    assert one(demo, "SELECT MAX(age) FROM customers") <= 90
    assert one(demo, "SELECT COUNT(*) FROM customers WHERE age < 0 AND age <> -1") == 0
    assert one(demo, "SELECT AVG(age) FROM customers") < \
        one(demo, "SELECT AVG(age) FROM customers WHERE age >= 0")


def test_feature6_entities_without_related_rows(demo):
    no_orders = one(demo, """SELECT COUNT(*) FROM customers c LEFT JOIN orders o
                             USING (customer_id) WHERE o.order_id IS NULL""")
    assert no_orders == 96  # 8% of 1200
    assert one(demo, """SELECT COUNT(*) FROM products
                        WHERE product_id NOT IN (SELECT product_id FROM order_items)""") >= 12
    assert demo.execute("""SELECT s.name FROM stores s LEFT JOIN orders o USING (store_id)
                           WHERE o.order_id IS NULL""").fetchall() == [("Harbor Point",)]
    assert one(demo, """SELECT COUNT(*) FROM categories c LEFT JOIN products p
                        USING (category_id) WHERE p.product_id IS NULL""") >= 1


def test_feature7_join_looking_columns_that_barely_overlap(demo):
    rho = overlap(demo, "loyalty_accounts", "customer_id", "customers", "customer_id")
    assert rho < 0.3
    assert one(demo, "SELECT COUNT(*) FROM loyalty_accounts WHERE customer_id >= 90000") > 500
    # ... but some rows do match, so the naive join returns something.
    assert one(demo, """SELECT COUNT(*) FROM loyalty_accounts l
                        JOIN customers c ON c.customer_id = l.customer_id""") == 40
    # The declared key overlaps properly.
    assert overlap(demo, "orders", "customer_id", "customers", "customer_id") == 1.0
    assert overlap(demo, "order_items", "order_id", "orders", "order_id") == 1.0


# --------------------------------------------------------------------------
# EXAMPLES and DESCRIPTION
# --------------------------------------------------------------------------
def test_examples_shape():
    assert 6 <= len(EXAMPLES) <= 10
    for ex in EXAMPLES:
        assert {"title", "question", "sql", "shows"} <= set(ex)
        assert set(ex) <= {"title", "question", "sql", "alt_sql", "shows"}
        assert all(isinstance(v, str) and v.strip() for v in ex.values())
    assert len({ex["title"] for ex in EXAMPLES}) == len(EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["title"] for e in EXAMPLES])
def test_example_runs_and_returns_rows(demo, example):
    rows = demo.execute(example["sql"]).fetchall()
    assert len(rows) >= 1
    if "alt_sql" in example:
        alt = demo.execute(example["alt_sql"]).fetchall()
        assert len(alt) >= 1
        # Each example is a trap: the careful query answers differently.
        assert alt != rows


def test_description_mentions_every_feature_table():
    assert isinstance(DESCRIPTION, str)
    for word in ["product_tags", "customers.region", "price", "100.00", "`-1`",
                 "Harbor Point", "loyalty_accounts.customer_id"]:
        assert word in DESCRIPTION
