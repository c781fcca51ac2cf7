"""Semantic layers on the server engines (issue 30, a reviewer's findings): a dbt ratio gives
the same value on SQLite, DuckDB, PostgreSQL and MariaDB; a verified query may open with a
comment before its WITH; a second metric of one name is an error, never dropped; a Cortex
table in a schema that was not read is an error, never another schema's table of that name."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

import vouchsql
from vouchsql.definitions import load_definitions
from vouchsql.definitions_audit import audit

AGES = [-1 if i % 10 == 0 else i % 15 for i in range(1, 201)]  # the pets fixture's ages (conftest)
MEAN_AGE = sum(AGES) / len(AGES)

DBT = """\
semantic_models:
  - name: pets
    model: ref('pets')
    entities: [{name: pet, type: primary, expr: id}]
    measures:
      - {name: total_age, agg: sum, expr: age}
      - {name: pet_count, agg: count, expr: id}
metrics:
  - name: mean_age
    type: ratio
    type_params: {numerator: total_age_metric, denominator: pet_count_metric}
  - {name: total_age_metric, type: simple, type_params: {measure: total_age}}
  - {name: pet_count_metric, type: simple, type_params: {measure: pet_count}}
"""


def _sqlite_pets(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE pets (id INTEGER PRIMARY KEY, owner_id INTEGER, age INTEGER NOT NULL, nick TEXT)")
    con.executemany("INSERT INTO pets VALUES (?, ?, ?, NULL)", [(i, 1 + i % 25, a) for i, a in enumerate(AGES, 1)])
    con.commit()
    con.close()
    return path


def _ratio(url: str, model: Path) -> float:
    with vouchsql.connect(url) as db:
        entries = {e.name: e for e in audit(load_definitions(model), db)}
    entry = entries["mean_age"]
    assert entry.status == "ok", entry.detail
    return float(entry.detail.split("first: ")[-1].split(",")[0].strip("() "))


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "semantic.yml"
    path.write_text(DBT, encoding="utf-8")
    return path


def test_a_ratio_is_a_decimal_division_on_sqlite_and_duckdb(tmp_path, model):
    sqlite_path = _sqlite_pets(tmp_path / "pets.sqlite")
    assert _ratio(str(sqlite_path), model) == pytest.approx(MEAN_AGE, abs=1e-12)
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect(str(tmp_path / "pets.duckdb"))
    con.execute("CREATE TABLE pets (id INTEGER, owner_id INTEGER, age INTEGER, nick TEXT)")
    con.executemany("INSERT INTO pets VALUES (?, ?, ?, NULL)", [(i, 1 + i % 25, a) for i, a in enumerate(AGES, 1)])
    con.close()
    # CAST(… AS REAL) was a 4-byte float on DuckDB: right to about 7 digits only
    assert _ratio(str(tmp_path / "pets.duckdb"), model) == pytest.approx(MEAN_AGE, abs=1e-12)


def test_a_ratio_runs_on_postgresql_and_mariadb(pg, mariadb, model):
    # MariaDB's CAST has no REAL (the ratio failed there); PostgreSQL's REAL is 4 bytes
    assert _ratio(pg[0], model) == pytest.approx(MEAN_AGE, abs=1e-12)
    assert _ratio(mariadb[0], model) == pytest.approx(MEAN_AGE, abs=1e-12)


def test_a_verified_query_may_open_with_a_comment_before_its_with(tmp_path):
    db = _sqlite_pets(tmp_path / "pets.sqlite")
    path = tmp_path / "model.yaml"
    path.write_text("""\
name: pets
tables:
  - name: animals
    base_table: {database: PETS, schema: PUBLIC, table: PETS}
    dimensions: [{name: years, expr: age}]
verified_queries:
  - name: old_pets
    question: How many pets are older than 10?
    sql: |
      -- the pets over ten
      WITH old AS (SELECT * FROM __animals WHERE years > 10) SELECT COUNT(*) FROM old
""", encoding="utf-8")
    with vouchsql.connect(db) as con:
        entries = {e.name: e for e in audit(load_definitions(path), con)}
    assert entries["old_pets"].status == "ok", entries["old_pets"].detail
    assert entries["old_pets"].detail.endswith(f"first: {sum(a > 10 for a in AGES)}")


def test_a_second_metric_of_one_name_is_an_error(tmp_path, model):
    db = _sqlite_pets(tmp_path / "pets.sqlite")
    model.write_text(DBT + "  - {name: mean_age, type: simple, type_params: {measure: total_age}}\n", encoding="utf-8")
    with vouchsql.connect(db) as con:
        entries = [e for e in audit(load_definitions(model), con) if e.name == "mean_age"]
    assert [e.status for e in entries] == ["error", "ok"]
    assert "a second metric named mean_age" in entries[0].detail and "semantic.yml:" in entries[0].source


def test_a_cortex_table_in_a_schema_not_read_is_an_error(pg, tmp_path):
    url, raw, schema = pg
    other = f"vouch_other_{uuid.uuid4().hex[:8]}"
    raw.execute(f"CREATE SCHEMA {other}")
    try:
        raw.execute(f"CREATE TABLE {other}.pets (id INTEGER PRIMARY KEY, age INTEGER)")
        path = tmp_path / "model.yaml"
        path.write_text(f"""\
name: pets
tables:
  - name: animals
    base_table: {{database: test, schema: {other}, table: pets}}
    dimensions: [{{name: years, expr: age}}]
verified_queries:
  - name: pet_count
    question: How many pets are there?
    sql: SELECT COUNT(*) FROM __animals
""", encoding="utf-8")
        with vouchsql.connect(url) as db:  # reads the fixture's schema only
            entries = audit(load_definitions(path), db)
        table = [e for e in entries if e.kind == "table"]
        assert [e.status for e in table] == ["error"]
        assert f"pass --schemas {other}" in table[0].detail and schema in table[0].detail
    finally:
        raw.execute(f"DROP SCHEMA IF EXISTS {other} CASCADE")


@pytest.mark.parametrize("filt", ["5", "{a: 1}"])
def test_a_dbt_filter_that_is_not_text_is_an_error_naming_its_line(tmp_path, model, filt):
    from vouchsql.errors import UserInputError

    model.write_text(DBT + f"  - {{name: odd, type: simple, filter: {filt}, type_params: {{measure: total_age}}}}\n",
                     encoding="utf-8")
    with pytest.raises(UserInputError) as info:
        load_definitions(model)
    assert "semantic.yml:" in info.value.message and "metrics[3].filter: expected text" in info.value.message
