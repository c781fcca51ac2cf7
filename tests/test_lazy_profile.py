"""Lazy, per-table profiles: what a check measures is the tables its SQL reads and their join
neighbours; the rest of a large catalogue is read, never scanned; what is reported never
depends on what ran before in the process; the catalogue-wide indexes give what the
pairwise scans they replace gave."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import vouchsql
from vouchsql.db.profile import TableProfile, _join_candidates
from vouchsql.question.shape import EntityNames, names_entity


@pytest.fixture(scope="module")
def wide(tmp_path_factory, chinook_path) -> Path:
    """Chinook plus 300 ledger tables sharing one key name (entry_id) and a column naming
    Chinook's customers (CustomerId), 5 rows each."""
    path = tmp_path_factory.mktemp("wide") / "wide.sqlite"
    src = sqlite3.connect(chinook_path)
    dst = sqlite3.connect(path)
    src.backup(dst)
    src.close()
    for i in range(300):
        dst.execute(f"CREATE TABLE ledger_{i:03d} (entry_id INTEGER PRIMARY KEY, CustomerId INTEGER, "
                    f"amount NUMERIC(10,2), memo TEXT)")
        dst.executemany(f"INSERT INTO ledger_{i:03d} VALUES (?, ?, ?, ?)",
                        [(j, 1 + (i + j) % 59, j * 1.5, f"m{j}") for j in range(5)])
    dst.commit()
    dst.close()
    return path


def _measured(profile) -> list[str]:
    return sorted(t.qualified for t in profile.tables if t.measured)


def test_a_check_measures_what_it_reads_and_its_neighbours(wide, tmp_path):
    with vouchsql.connect(wide, cache_dir=str(tmp_path)) as db:
        prof = db.profile_for(["Track"])
        assert _measured(prof) == ["Album", "Genre", "InvoiceLine", "MediaType", "PlaylistTrack", "Track"]
        assert len(prof.tables) == 311
        stub = prof.find("ledger_007")
        assert stub is not None and not stub.measured and stub.row_count == 0
        assert [c.name for c in stub.columns] == ["entry_id", "CustomerId", "amount", "memo"]
        # asked for by name, a table is measured on first use: the figures are real
        assert prof.table("ledger_007").row_count == 5 and prof.table("ledger_007").measured
        # ... without changing what this profile lists as measured (no history in a profile)
        assert _measured(prof) == ["Album", "Genre", "InvoiceLine", "MediaType", "PlaylistTrack", "Track"]
        answer = vouchsql.check(db, "How many tracks are there?", ["SELECT COUNT(*) FROM Track"])
        assert answer.shown.result.rows == [[3503]]
        assert not {c.name for c in answer.checks if c.fired} & {"missing_table", "bad_join"}
    # each measured table has its own cache entry; the 300 ledgers have none, but the one asked for
    entries = list((tmp_path / "profiles").glob("*/t-*.json"))
    names = sorted(TableProfile.model_validate_json(p.read_text()).name for p in entries)
    assert names == ["Album", "Genre", "InvoiceLine", "MediaType", "PlaylistTrack", "Track", "ledger_007"]


def test_a_key_name_shared_by_many_tables_pairs_none_of_them(wide):
    with vouchsql.connect(wide) as db:
        pairs = _join_candidates(db.schema())
    # 300 tables own entry_id: no pair by that name; CustomerId still refers to Customer
    assert not [p for p in pairs if p.left_column == "entry_id"]
    to_customer = [p for p in pairs if p.left_column == "CustomerId" and p.left_table.startswith("ledger_")]
    assert len(to_customer) == 300 and {p.right_table for p in to_customer} == {"Customer"}


def test_the_same_check_gives_the_same_answer_whatever_ran_before(wide, tmp_path):
    question = "How many invoices did customers from Brazil get?"
    sql = ["SELECT COUNT(*) FROM Invoice i JOIN Customer c ON c.CustomerId = i.CustomerId WHERE c.Country = 'Brazil'"]

    def run(before: list[str]) -> str:
        with vouchsql.connect(wide, cache_dir=str(tmp_path / "c")) as db:
            for other in before:  # other queries first, in the same process and connection
                vouchsql.check(db, "How many rows?", [f"SELECT COUNT(*) FROM {other}"])
            data = json.loads(vouchsql.check(db, question, sql).model_dump_json())
            for c in data["candidates"] + [data["shown"]]:
                c["result"]["elapsed_ms"] = 0
            return json.dumps(data, sort_keys=True)

    fresh = run([])
    assert run(["Track", "Artist", "ledger_001"]) == fresh
    assert run(["Employee", "Playlist"]) == fresh


def test_entity_names_index_matches_the_pairwise_test(datasets_dir, wide):
    for path in [*sorted(datasets_dir.glob("*.sqlite")), wide]:
        with vouchsql.connect(path) as db:
            prof = db.catalogue()
        index = EntityNames(prof)
        for t in prof.tables:
            for c in t.columns:
                assert index.named_by(c.name) == {u.name for u in prof.tables if names_entity(c.name, u)}, (t.name, c.name)
            assert index.naming_tables(t.name) == {u.name for u in prof.tables
                                                   if any(names_entity(c.name, t) for c in u.columns)}, t.name


def test_sqlite_catalogue_in_two_statements_equals_the_per_table_pragmas(datasets_dir, monkeypatch):
    for path in sorted(datasets_dir.glob("*.sqlite")):
        with vouchsql.connect(path) as fast, vouchsql.connect(path) as slow:
            monkeypatch.setattr(slow, "_catalogue", lambda: (_ for _ in ()).throw(sqlite3.DatabaseError("x")))
            assert fast.schema() == slow.schema(), path.name


def test_a_view_over_a_dropped_table_leaves_the_rest_listed(tmp_path):
    path = tmp_path / "broken.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.execute("CREATE TABLE gone (x INTEGER)")
    conn.execute("CREATE VIEW v AS SELECT x FROM gone")
    conn.execute("DROP TABLE gone")
    conn.commit()
    conn.close()
    with vouchsql.connect(path) as db:
        tables = {t.name: t for t in db.schema()}
        assert set(tables) == {"t", "v"} and [c.name for c in tables["t"].columns] == ["id", "v"]
        assert tables["v"].columns == [] and tables["v"].is_view


def test_tables_without_declared_keys_are_not_measured_for_their_keys(tmp_path):
    """A warehouse without declared keys: the id column of a table the query does not touch is
    taken at its name, not measured (measuring it would profile every table)."""
    path = tmp_path / "nokeys.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customer (id INTEGER, name TEXT)")
    conn.execute("CREATE TABLE orders (id INTEGER, customer_id INTEGER, total INTEGER)")
    conn.executemany("INSERT INTO customer VALUES (?, ?)", [(i, f"c{i}") for i in range(1, 11)])
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(i, 1 + i % 10, i) for i in range(1, 41)])
    for i in range(60):
        conn.execute(f"CREATE TABLE audit_{i:02d} (id INTEGER, customer_id INTEGER, note TEXT)")
        conn.execute(f"INSERT INTO audit_{i:02d} VALUES (1, 1, 'x')")
    conn.commit()
    conn.close()
    with vouchsql.connect(path, cache_dir=str(tmp_path / "c")) as db:
        answer = vouchsql.check(db, "How many orders per customer name?",
                                ["SELECT c.name, COUNT(*) FROM orders o JOIN customer c ON c.id = o.customer_id "
                                 "GROUP BY c.name"])
        assert len(answer.shown.result.rows) == 10
        assert not {c.name for c in answer.checks if c.fired} & {"bad_join", "join_key_meaning", "missing_table"}
    cached = sorted(TableProfile.model_validate_json(p.read_text()).name
                    for p in (tmp_path / "c" / "profiles").glob("*/t-*.json"))
    assert cached == ["customer", "orders"]


def test_a_table_many_others_refer_to_measures_a_bounded_set_of_neighbours(wide, tmp_path):
    from vouchsql.db.profile import MAX_NEIGHBOURS

    with vouchsql.connect(wide, cache_dir=str(tmp_path)) as db:
        prof = db.profile_for(["Customer"])
    measured = _measured(prof)
    # Customer's declared neighbours first (Employee, Invoice), then the ledgers by name, up to the bound
    assert len(measured) == 1 + MAX_NEIGHBOURS
    assert {"Customer", "Employee", "Invoice", "ledger_000"} <= set(measured) and "ledger_299" not in measured


def test_connections_to_an_unchanged_file_share_its_catalogue(tmp_path):
    """`vouch serve` opens a connection per request: the second connection to an unchanged
    file reads no catalogue and builds no index again, and answers the same; a write makes
    the next connection read the file anew; other profile settings keep their own indexes."""
    path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id))")
    conn.executemany("INSERT INTO customer VALUES (?, ?, ?)", [(i, f"c{i}", ["Oslo", "Rome"][i % 2]) for i in range(1, 9)])
    conn.executemany("INSERT INTO orders VALUES (?, ?)", [(i, 1 + i % 8) for i in range(1, 30)])
    conn.commit()
    conn.close()
    question, sql = "How many orders per city?", ("SELECT c.city, COUNT(*) FROM orders o JOIN customer c "
                                                  "ON c.id = o.customer_id GROUP BY c.city")

    def request(**settings):
        with vouchsql.connect(path, cache_dir=str(tmp_path / "c"), **settings) as db:
            answer = vouchsql.check(db, question, [sql])
            return db._profile_store.catalogue, db.schema(), answer.model_dump(
                mode="json", include={"shown": {"result": {"rows"}}, "checks": True, "choices": True, "verdict": True})

    first_catalogue, first_schema, first = request()
    again_catalogue, again_schema, again = request()
    assert again_schema is first_schema and again_catalogue is first_catalogue
    assert again == first and first["shown"]["result"]["rows"] == [["Oslo", 15], ["Rome", 14]]

    other_catalogue, other_schema, _ = request(sample_threshold=5)
    assert other_schema is first_schema and other_catalogue is not first_catalogue

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id INTEGER)")
    conn.commit()
    conn.close()
    changed_catalogue, changed_schema, _ = request()
    assert changed_schema is not first_schema and changed_catalogue is not first_catalogue
    assert "refunds" in changed_catalogue.infos and "refunds" not in first_catalogue.infos


def test_postgres_connections_to_an_unchanged_catalogue_share_it(pg, tmp_path):
    """The same on PostgreSQL, keyed on the catalogue rows of the schemas read: an unchanged
    catalogue is shared, and each kind of DDL reflection would see makes the next connection
    read it anew (a table, a column, a column's type, a constraint, a comment, a rename)."""
    url, raw, schema = pg

    def schema_of():
        with vouchsql.connect(url, cache_dir=str(tmp_path / "c")) as db:
            answer = vouchsql.check(db, "How many pets per owner?",
                                    ["SELECT o.name, COUNT(*) FROM pets p JOIN owners o ON o.id = p.owner_id "
                                     "GROUP BY o.name"])
            assert answer.shown.result.error is None
            return db.schema(), db._profile_store.catalogue

    first, first_catalogue = schema_of()
    again, again_catalogue = schema_of()
    assert again is first and again_catalogue is first_catalogue
    seen = first
    for ddl, sees in [
        (f"CREATE TABLE {schema}.refunds (id INTEGER PRIMARY KEY, pet_id INTEGER)", lambda s: "refunds" in s),
        (f"ALTER TABLE {schema}.refunds ADD COLUMN amount NUMERIC(8, 2)",
         lambda s: [c.name for c in s["refunds"].columns] == ["id", "pet_id", "amount"]),
        (f"ALTER TABLE {schema}.refunds ALTER COLUMN amount TYPE BIGINT",
         lambda s: s["refunds"].columns[2].type == "BIGINT"),
        (f"ALTER TABLE {schema}.refunds ADD FOREIGN KEY (pet_id) REFERENCES {schema}.pets(id)",
         lambda s: [f.ref_table for f in s["refunds"].foreign_keys] == ["pets"]),
        (f"COMMENT ON COLUMN {schema}.refunds.amount IS 'paid back'",
         lambda s: s["refunds"].columns[2].comment == "paid back"),
        (f"ALTER TABLE {schema}.refunds RENAME COLUMN amount TO paid", lambda s: s["refunds"].columns[2].name == "paid"),
        (f"DROP TABLE {schema}.refunds", lambda s: "refunds" not in s),
    ]:
        raw.execute(ddl)
        now, _ = schema_of()
        assert now is not seen, ddl
        assert sees({t.name: t for t in now}), ddl
        seen = now
    assert schema_of()[0] is seen  # and unchanged again, shared again
