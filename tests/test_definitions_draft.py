"""Issue 30, item 3: ``vouch definitions draft`` writes a starting definitions file from the
profile, in Vouch's format (read back by the definitions setting) and as a Cortex-style
semantic model. On Chinook, Sakila, the demo database and a PostgreSQL copy of Chinook, the
draft loads, and its stand-in codes and value lists are the profile's and the data's."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

import vouchsql
from conftest import DATASETS, PG_URL
from vouchsql.cli import main
from vouchsql.definitions import load_definitions
from vouchsql.definitions_draft import draft

yaml = pytest.importorskip("yaml", reason="PyYAML is needed for the cortex format")


def _sqlite(name: str) -> Path:
    path = DATASETS / f"{name}.sqlite"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/datasets)")
    return path


def _pg_raw():
    """An autocommit connection to the local PostgreSQL server, or a skip naming why not."""
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'vouchsql[postgres]')")
    try:
        return psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True,
                               connect_timeout=3)
    except psycopg.Error as exc:
        pytest.skip(f"PostgreSQL is not reachable at {PG_URL}: {str(exc).strip().splitlines()[0]}")


@pytest.fixture(scope="module")
def pg_chinook():
    from engine_copies import copy_to_postgres, read_source

    raw = _pg_raw()
    schema = f"vouch_draft_{uuid.uuid4().hex[:8]}"
    copy_to_postgres(read_source(_sqlite("chinook")), raw, schema)
    raw.execute("RESET search_path")
    try:
        yield f"{PG_URL}?options=-csearch_path%3D{schema}"
    finally:
        raw.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        raw.close()


def _targets(request) -> dict[str, str]:
    return {"chinook": str(_sqlite("chinook")), "sakila": str(_sqlite("sakila")),
            "demo": str(request.getfixturevalue("demo_db"))}


@pytest.mark.parametrize("name", ["chinook", "sakila", "demo", pytest.param("postgresql", marks=pytest.mark.engines)])
def test_the_draft_loads_and_says_what_the_profile_says(name, request, tmp_path):
    target = request.getfixturevalue("pg_chinook") if name == "postgresql" else _targets(request)[name]
    with vouchsql.connect(target, cache_dir=str(tmp_path)) as db:
        text = draft(db)
        profile = db.profile()
        path = tmp_path / "definitions.toml"
        path.write_text(text, encoding="utf-8")
        loaded = load_definitions(str(path))
        # every stand-in code of the profile is a note, and no other
        stand_ins = {(f"{t.schema_name + '.' if t.schema_name else ''}{t.name}.{c.name}", f"{s.value:g}")
                     for t in profile.tables for c in t.columns for s in c.stand_ins}
        noted = {tuple(m.groups()) for n in loaded.notes for m in [re.match(r"(\S+): (\S+) stands in", n)] if m}
        assert noted == stand_ins
        # every value list is the column's distinct values, as the database returns them
        assert loaded.definitions, "no value list drafted"
        for key, meaning in loaded.definitions.items():
            table, column = key.rsplit(".", 1)
            listed = json.loads("[" + meaning.split(": ", 1)[1].rsplit(" (from the data)", 1)[0] + "]")
            rows = db.execute(f"SELECT DISTINCT {db.quote(column)} FROM "
                              f"{'.'.join(db.quote(p) for p in table.split('.'))} WHERE {db.quote(column)} IS NOT NULL")
            assert sorted(listed) == sorted(r[0] for r in rows.rows), key
            t = next(t for t in profile.tables if t.name == table.split(".")[-1])
            col = next(c for c in t.columns if c.name == column)
            assert col.distinct_count == len(listed)
            if col.distinct_count <= len(col.top_values):  # the profile holds them all
                assert {v for v, _ in col.top_values} == set(listed), key
        declared = sum(len(t.foreign_keys) for t in profile.tables)
        assert sum("a declared foreign key" in n for n in loaded.notes) == declared


def test_the_demo_draft_names_its_stand_in_and_a_category(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path)) as db:
        text = draft(db)
    assert "customers.age: -1 stands in for a missing or unknown value" in text
    assert '"categories.name"' not in text  # every name differs: a list of names, not a category
    assert '"orders.status" = "one of' in text


def test_the_cortex_model_has_every_table_and_relationship(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path)) as db:
        model = yaml.safe_load(draft(db, "cortex"))
        profile = db.profile()
    assert [t["name"] for t in model["tables"]] == [t.name.lower() for t in profile.tables]
    assert len(model["relationships"]) == len(profile.join_pairs)
    customers = next(t for t in model["tables"] if t["name"] == "customers")
    age = next(f for f in customers.get("facts", []) + customers.get("dimensions", []) if f["expr"] == "age")
    assert "-1 stands in for a missing value" in age["description"]
    orders = next(t for t in model["tables"] if t["name"] == "orders")
    assert any(f["expr"] == "status" and f.get("is_enum") for f in orders["dimensions"])
    assert orders["primary_key"] == {"columns": ["order_id"]}


def test_cli_writes_to_stdout_or_a_new_file_only(demo_db, tmp_path, capsys):
    assert main(["definitions", "draft", "--db", str(demo_db), "--cache-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("# Drafted by `vouch definitions draft`")
    out = tmp_path / "d.toml"
    assert main(["definitions", "draft", "--db", str(demo_db), "--out", str(out), "--cache-dir", str(tmp_path)]) == 0
    assert load_definitions(str(out)).notes
    assert main(["definitions", "draft", "--db", str(demo_db), "--out", str(out)]) == 2
    assert "never replaces a file" in capsys.readouterr().err
    assert main(["definitions", "draft", "--db", str(demo_db), "--max-values", "0"]) == 2


@pytest.fixture
def pg_other_schema(tmp_path):
    """A few tables joined by foreign keys in a schema that is not the connection's default
    (mixed-case names, as a copied database keeps them); yields (url, schema)."""
    raw = _pg_raw()
    schema = f"vouch_draft_{uuid.uuid4().hex[:8]}"
    try:
        raw.execute(f'CREATE SCHEMA {schema}')
        raw.execute(f'CREATE TABLE {schema}."CustomerType" ("CustomerTypeID" int PRIMARY KEY, "Label" text)')
        raw.execute(f'CREATE TABLE {schema}."Customer" ("CustomerId" int PRIMARY KEY, "Country" text, '
                    f'"CustomerTypeID" int REFERENCES {schema}."CustomerType")')
        raw.execute(f'CREATE TABLE {schema}."Invoice" ("InvoiceId" int PRIMARY KEY, "CustomerId" int '
                    f'REFERENCES {schema}."Customer", "InvoiceDate" timestamp, "Total" numeric(10,2))')
        raw.execute(f'CREATE TABLE {schema}."InvoiceLine" ("InvoiceLineId" int PRIMARY KEY, "InvoiceId" int '
                    f'REFERENCES {schema}."Invoice", "Quantity" int)')
        raw.execute(f"INSERT INTO {schema}.\"CustomerType\" SELECT i, 'type ' || i FROM generate_series(1, 3) i")
        raw.execute(f"INSERT INTO {schema}.\"Customer\" SELECT i, CASE WHEN i % 2 = 0 THEN 'USA' ELSE 'France' END, "
                    f"1 + i % 3 FROM generate_series(1, 20) i")
        raw.execute(f"INSERT INTO {schema}.\"Invoice\" SELECT i, 1 + i % 20, TIMESTAMP '2024-01-01' + i * "
                    f"INTERVAL '1 day', i * 1.5 FROM generate_series(1, 60) i")
        raw.execute(f'INSERT INTO {schema}."InvoiceLine" SELECT i, 1 + i % 60, 1 + i % 4 FROM generate_series(1, 120) i')
        yield PG_URL, schema
    finally:
        raw.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        raw.close()


def _assert_relationships_name_the_draft(model: dict) -> int:
    """Every relationship's tables are logical tables of the draft and its columns dimensions
    of those tables (Cortex Analyst reads both by their logical names), as are primary keys."""
    tables = {t["name"]: t for t in model["tables"]}
    assert len(tables) == len(model["tables"]), "two logical tables share a name"
    for t in model["tables"]:
        assert t["base_table"]["database"] and t["base_table"]["schema"] and t["base_table"]["table"], t["name"]
        dims = {d["name"] for d in t.get("dimensions", [])}
        assert set(t.get("primary_key", {}).get("columns", [])) <= dims, t["name"]
    for r in model["relationships"]:
        for side in ("left", "right"):
            assert r[f"{side}_table"] in tables, (r["name"], r[f"{side}_table"])
            dims = {d["name"] for d in tables[r[f"{side}_table"]].get("dimensions", [])}
            for rc in r["relationship_columns"]:
                assert rc[f"{side}_column"] in dims, (r["name"], side, rc[f"{side}_column"])
    return len(model["relationships"])


def test_the_chinook_cortex_relationships_name_its_own_tables_and_dimensions(tmp_path):
    with vouchsql.connect(_sqlite("chinook"), cache_dir=str(tmp_path)) as db:
        text = draft(db, "cortex")
        profile = db.profile()
    model = yaml.safe_load(text)
    assert _assert_relationships_name_the_draft(model) == len(profile.join_pairs) > 0
    track = next(t for t in model["tables"] if t["name"] == "track")
    assert track["base_table"] == {"database": "chinook", "schema": "main", "table": "Track"}
    assert "# base_table: database chinook and schema 'main'" in text  # what a person must check
    (tmp_path / "model.yaml").write_text(text, encoding="utf-8")
    assert load_definitions(str(tmp_path / "model.yaml")).notes  # Vouch reads its own draft back


@pytest.mark.parametrize("engine", ["postgresql"])
def test_a_cortex_draft_of_a_postgresql_schema_other_than_the_default(engine, pg_other_schema, tmp_path):
    url, schema = pg_other_schema
    with vouchsql.connect(url, cache_dir=str(tmp_path), schemas=schema) as db:
        text = draft(db, "cortex")
    model = yaml.safe_load(text)
    assert {t["name"] for t in model["tables"]} == {"customer_type", "customer", "invoice", "invoice_line"}
    assert _assert_relationships_name_the_draft(model) == 3
    rel = next(r for r in model["relationships"] if r["left_table"] == "customer")
    assert rel["right_table"] == "customer_type"
    assert rel["relationship_columns"] == [{"left_column": "customer_type_id", "right_column": "customer_type_id"}]
    invoice = next(t for t in model["tables"] if t["name"] == "invoice")
    assert invoice["base_table"] == {"database": "test", "schema": schema, "table": "Invoice"}
    assert invoice["primary_key"] == {"columns": ["invoice_id"]}
    assert f"database test and schema '{schema}'" in text
    (tmp_path / "model.yaml").write_text(text, encoding="utf-8")
    assert load_definitions(str(tmp_path / "model.yaml")).notes


@pytest.mark.parametrize("engine", ["postgresql"])
def test_a_cortex_draft_of_mixed_case_postgresql_columns_runs_a_verified_query_against_its_database(
        engine, pg_other_schema, tmp_path, capsys):
    """PostgreSQL folds an unquoted ``InvoiceId`` to ``invoiceid``: the draft writes each
    ``expr`` as the engine needs it, so a verified query added to the draft runs on the database
    it was drafted from; and it writes no field Vouch's own Cortex reader would not read."""
    url, schema = pg_other_schema
    with vouchsql.connect(url, cache_dir=str(tmp_path), schemas=schema) as db:
        text = draft(db, "cortex")
    model = yaml.safe_load(text)
    invoice = next(t for t in model["tables"] if t["name"] == "invoice")
    exprs = {c["name"]: c["expr"] for kind in ("dimensions", "time_dimensions", "facts") for c in invoice.get(kind, [])}
    assert exprs["invoice_id"] == '"InvoiceId"' and exprs["total"] == '"Total"'
    assert all("description" not in r for r in model["relationships"])
    model["verified_queries"] = [{
        "name": "usa_revenue", "question": "What is the revenue from customers in the USA?",
        "sql": "SELECT SUM(i.total) FROM __invoice AS i JOIN __customer AS c ON c.customer_id = i.customer_id "
               "WHERE c.country = 'USA'"}]
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(model, sort_keys=False), encoding="utf-8")
    defs = load_definitions(str(path))
    assert not [u for u in defs.unmapped if "relationships" in u], defs.unmapped
    assert main(["definitions", "check", str(path), "--db", url, "--schemas", schema]) == 0
    shown = capsys.readouterr().out
    assert "OK       verified query usa_revenue: 1 row(s), first: " in shown, shown
    assert "NOT READ" not in shown


def test_a_draft_lists_relationships_inferred_from_the_names_in_its_header(tmp_path):
    db_path = tmp_path / "shop.sqlite"
    import sqlite3

    raw = sqlite3.connect(db_path)
    raw.executescript("CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, name TEXT);"
                      "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER, amount REAL);"
                      "INSERT INTO customer VALUES (1, 'a'), (2, 'b');"
                      "INSERT INTO orders VALUES (1, 1, 2.0), (2, 2, 3.0), (3, 1, 4.0);")
    raw.commit()
    raw.close()
    with vouchsql.connect(db_path, cache_dir=str(tmp_path)) as db:
        text = draft(db, "cortex")
        inferred = [p for p in db.profile().join_pairs if p.source != "declared"]
    model = yaml.safe_load(text)
    if not inferred:
        pytest.skip("the profile inferred no relationship here")
    assert all("description" not in r for r in model["relationships"])
    assert "# Relationships inferred from the names, not declared (confirm them): orders_customer_id_to_customer" \
        in text
