"""Copies of the shared SQLite databases on DuckDB, PostgreSQL and MariaDB, and the golden
SQL carried over to each engine's dialect (used by tests/test_golden_engines.py).

Copies keep every table and column name exactly as SQLite has it (``Track``, ``InvoiceId``,
``Order Details``): the engines hold mixed-case names as quoted identifiers, as a user who
moved Chinook to PostgreSQL would have them. Primary keys and foreign keys are declared;
types are mapped from the declared SQLite type (``NVARCHAR(120)`` → ``varchar(120)``,
``NUMERIC(10,2)`` → ``numeric(10,2)``, ``DATETIME`` → ``timestamp``/``DATETIME``, ``BLOB`` →
``bytea``/``LONGBLOB``), falling back to text where the stored values do not fit the
declared type (sakila's ``staff.active SMALLINT`` holds ``'t'``). MariaDB gets
``varchar(255)`` for ``TEXT`` columns whose values fit (it cannot index ``TEXT`` without a
length), and keeps the server's collation (``utf8mb4_general_ci``: case-insensitive ``=``).

The golden SQL is written in SQLite's dialect with unquoted names in any case
(``SELECT COUNT(*) FROM Track``). :func:`to_dialect` parses it with sqlglot (which keeps
names as written unless asked to normalize them) and changes only what the engine needs, as a
user of that engine would write it: on PostgreSQL a name of a mixed-case table or column is
written with its exact spelling and quoted (``"Track"``; unquoted, PostgreSQL would fold it
to ``track``), while lower-case names and aliases stay as written, unquoted (PostgreSQL folds
``CUSTOMERS`` to ``customers`` as SQLite ignores case); on MariaDB table names take their
exact spelling (they are case-sensitive there, column names and aliases are not); DuckDB
resolves names without regard to case, so nothing changes. Divisions lose sqlglot's
``NULLIF(x, 0)`` guard (SQLite's x/0 is NULL): a user writes ``a / b`` on every engine.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot
from sqlglot import exp

# -- reading the SQLite source -------------------------------------------------------------


@dataclass
class Column:
    name: str
    declared: str
    notnull: bool
    kinds: set[str]  # sqlite typeof() of the non-null values
    max_len: int  # longest text value
    max_abs: int  # largest absolute integer


@dataclass
class Table:
    name: str
    columns: list[Column]
    primary_key: list[str]
    foreign_keys: list[tuple[list[str], str, list[str]]]
    rows: list[tuple]


@dataclass
class Source:
    path: Path
    tables: list[Table]
    views: list[tuple[str, str]] = field(default_factory=list)  # (name, SELECT in SQLite's dialect)

    def names(self) -> tuple[dict[str, str], dict[str, str]]:
        """lower-case name → exact spelling, for tables (and views) and for columns."""
        tables = {t.name.lower(): t.name for t in self.tables}
        tables.update({name.lower(): name for name, _ in self.views})
        columns: dict[str, str] = {}
        for t in self.tables:
            for c in t.columns:
                columns.setdefault(c.name.lower(), c.name)
        return tables, columns


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_source(path: Path) -> Source:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = str
    tables = []
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                               "ORDER BY rowid"):
        info = con.execute(f"PRAGMA table_info({_q(name)})").fetchall()
        columns, pk = [], []
        for _, cname, ctype, notnull, _, pk_pos in info:
            stats = con.execute(
                f"SELECT group_concat(DISTINCT typeof({_q(cname)})), MAX(length(CASE WHEN typeof({_q(cname)}) = 'text' "
                f"THEN {_q(cname)} END)), MAX(abs(CASE WHEN typeof({_q(cname)}) = 'integer' THEN {_q(cname)} END)) "
                f"FROM {_q(name)}").fetchone()
            kinds = set((stats[0] or "").split(",")) - {"null", ""}
            columns.append(Column(cname, ctype or "", bool(notnull), kinds, stats[1] or 0, stats[2] or 0))
            if pk_pos:
                pk.append((pk_pos, cname))
        fks: dict[int, tuple[list[str], str, list[str]]] = {}
        for fid, _, ref, frm, to, *_ in con.execute(f"PRAGMA foreign_key_list({_q(name)})"):
            entry = fks.setdefault(fid, ([], ref, []))
            entry[0].append(frm)
            entry[2].append(to)
        rows = con.execute(f"SELECT * FROM {_q(name)}").fetchall()
        tables.append(Table(name, columns, [c for _, c in sorted(pk)], list(fks.values()), rows))
    by_lower = {t.name.lower(): t for t in tables}
    for t in tables:  # REFERENCES parent with no column list means the parent's key
        fixed = []
        for cols, ref, ref_cols in t.foreign_keys:
            parent = by_lower.get(ref.lower())
            if parent is None:
                continue
            if any(c is None for c in ref_cols):
                ref_cols = list(parent.primary_key)
            fixed.append((cols, parent.name, ref_cols))
        t.foreign_keys = fixed
    views = []
    for name, sql in con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY rowid"):
        try:
            tree = sqlglot.parse_one(sql, read="sqlite")
            views.append((name, tree.expression.sql(dialect="sqlite")))
        except Exception:  # noqa: BLE001 - a view sqlglot cannot read is left out
            continue
    con.close()
    return Source(path, tables, views)


# -- types ----------------------------------------------------------------------------------

_ARGS = re.compile(r"\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)")
_DATE_TEXT = re.compile(r"^\d{4}-\d\d-\d\d( \d\d:\d\d(:\d\d(\.\d+)?)?)?$")


def column_type(engine: str, col: Column, rows_sample: list, is_key: bool) -> str:
    """The column's type on ``engine`` ("postgres", "mysql", "duckdb")."""
    decl = col.declared.upper()
    args = _ARGS.search(decl)
    kinds = col.kinds
    text = {"postgres": "text", "duckdb": "varchar", "mysql": "varchar(255)" if col.max_len <= 255 else "longtext"}
    if is_key and engine == "mysql":
        text["mysql"] = f"varchar({max(col.max_len, 255)})"

    def fallback():
        if kinds <= {"integer"}:
            return "bigint"
        if kinds <= {"integer", "real"}:
            return {"postgres": "double precision", "duckdb": "double", "mysql": "double"}[engine]
        if kinds <= {"blob"} and kinds:
            return {"postgres": "bytea", "duckdb": "blob", "mysql": "longblob"}[engine]
        return text[engine]

    if "INT" in decl:
        if kinds - {"integer"}:
            return fallback()
        if "BIG" in decl or col.max_abs >= 2**31:
            return "bigint"
        if "SMALL" in decl or "TINY" in decl:
            return "smallint"
        return "integer"
    if "CHAR" in decl or "CLOB" in decl or "TEXT" in decl:
        if kinds - {"text"}:
            return fallback()
        if args and "TEXT" not in decl:
            n = max(int(args.group(1)), col.max_len)
            if decl.startswith("CHAR") or decl.startswith("NCHAR"):
                return f"char({n})"
            return f"varchar({n})"
        return text[engine]
    if "BLOB" in decl:
        return fallback() if kinds - {"blob"} else {"postgres": "bytea", "duckdb": "blob", "mysql": "longblob"}[engine]
    if "REAL" in decl or "FLOA" in decl or "DOUB" in decl:
        return fallback() if kinds - {"integer", "real"} else \
            {"postgres": "double precision", "duckdb": "double", "mysql": "double"}[engine]
    if "DATE" in decl or "TIME" in decl:
        if kinds - {"text"} or not all(_DATE_TEXT.match(v) for v in rows_sample if isinstance(v, str)):
            return fallback()
        if decl == "DATE":
            return "date"
        return {"postgres": "timestamp", "duckdb": "timestamp", "mysql": "datetime"}[engine]
    if "NUMERIC" in decl or "DECIMAL" in decl:
        if kinds - {"integer", "real"}:
            return fallback()
        if args:
            p, s = int(args.group(1)), int(args.group(2) or 0)
            return f"numeric({p},{s})" if engine != "mysql" else f"decimal({p},{s})"
        return {"postgres": "numeric", "duckdb": "decimal(18,4)", "mysql": "decimal(19,4)"}[engine]
    if decl in ("BOOLEAN", "BOOL"):
        return "boolean" if kinds <= {"integer"} else fallback()
    return fallback()


def _layout(engine: str, table: Table, quote) -> tuple[list[str], list[str]]:
    """Column definitions and the column types of ``table`` on ``engine``."""
    keys = set(table.primary_key) | {c for cols, _, _ in table.foreign_keys for c in cols}
    defs, types = [], []
    for i, col in enumerate(table.columns):
        sample = [row[i] for row in table.rows]
        kind = column_type(engine, col, sample, col.name in keys)
        types.append(kind)
        defs.append(f"{quote(col.name)} {kind}" + (" NOT NULL" if col.notnull or col.name in table.primary_key else ""))
    if table.primary_key:
        defs.append(f"PRIMARY KEY ({', '.join(quote(c) for c in table.primary_key)})")
    return defs, types


def _convert(value, kind: str):
    """A SQLite value as the target column wants it."""
    if value is None:
        return None
    if kind in ("boolean",):
        return bool(value)
    if kind.startswith(("varchar", "char", "text", "longtext")) and not isinstance(value, str):
        return str(value)
    return value


# -- the identifiers of the golden SQL ------------------------------------------------------


def to_dialect(sql: str, dialect: str, source: Source) -> str:
    """``sql`` (SQLite dialect) in ``dialect``, names written as a user of that engine would
    write them against the copy (see the module docstring)."""
    if dialect == "sqlite":
        return sql
    tree = sqlglot.parse_one(sql, read="sqlite")
    if not any(t.token_type == sqlglot.tokens.TokenType.CROSS for t in sqlglot.tokenize(sql, read="sqlite")):
        # sqlglot's SQLite parser reads a comma join as CROSS JOIN; written as a comma, it
        # stays one (a user of the other engine writes the comma, and unjoined_table reads
        # an explicit CROSS JOIN as meant)
        for join in tree.find_all(exp.Join):
            if (join.args.get("kind") or "").upper() == "CROSS":
                join.set("kind", None)
    tables, columns = source.names()
    for ident in tree.find_all(exp.Identifier):
        low = ident.name.lower()
        parent = ident.parent
        is_table = isinstance(parent, exp.Table) and parent.args.get("this") is ident
        exact = tables.get(low) if is_table else columns.get(low) or tables.get(low)
        if dialect == "spark" and isinstance(parent, exp.Column) and parent.args.get("table") is ident:
            exact = tables.get(low, exact)
        if exact is None:
            continue
        if dialect == "spark":
            # A table's name, or a column's table qualifier ("Order Details".ProductID).
            qualifier = isinstance(parent, exp.Column) and parent.args.get("table") is ident
            if (is_table or qualifier) and spark_table_name(exact) != exact:
                ident.set("this", spark_table_name(exact))
                ident.set("quoted", False)
            continue
        if dialect == "postgres" and exact != exact.lower():
            # PostgreSQL folds an unquoted name to lower case: a mixed-case name is quoted.
            ident.set("this", exact)
            ident.set("quoted", True)
        elif dialect == "mysql" and is_table and exact != ident.name:
            # MariaDB's table names are case-sensitive (lower_case_table_names = 0).
            ident.set("this", exact)
    for div in tree.find_all(exp.Div):
        div.set("safe", False)
    return tree.sql(dialect=dialect)


def to_sqlite(sql: str, dialect: str) -> str:
    """An engine's SQL read back into SQLite's dialect with plain identifiers, to compare it
    with the goldens' SQLite substrings."""
    tree = sqlglot.parse_one(sql, read=dialect)
    for ident in tree.find_all(exp.Identifier):
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident.name):
            ident.set("quoted", False)
    for div in tree.find_all(exp.Div):  # a plain '/', as SQLite's parser reads one
        div.set("typed", True)
        div.set("safe", True)
    return tree.sql(dialect="sqlite")


# -- making the copies ---------------------------------------------------------------------


def _creation_order(tables: list[Table]) -> tuple[list[Table], set[tuple[str, int]]]:
    """Parents before children; the foreign keys that close a cycle (dropped where the engine
    cannot add a key after the fact), as (table, index)."""
    by_name = {t.name: t for t in tables}
    order, state, cut = [], {}, set()

    def visit(t: Table):
        state[t.name] = 1
        for i, (_, ref, _) in enumerate(t.foreign_keys):
            if ref == t.name:
                continue
            if state.get(ref) == 1:
                cut.add((t.name, i))
            elif ref not in state:
                visit(by_name[ref])
        state[t.name] = 2
        order.append(t)

    for t in tables:
        if t.name not in state:
            visit(t)
    return order, cut


def copy_to_duckdb(source: Source, path: Path) -> list[str]:
    """A DuckDB file holding ``source``; returns notes on what could not be carried over."""
    import duckdb

    notes = []
    con = duckdb.connect(str(path))
    order, cut = _creation_order(source.tables)
    for t in order:
        defs, types = _layout("duckdb", t, _q)
        for i, (cols, ref, ref_cols) in enumerate(t.foreign_keys):
            if (t.name, i) in cut:
                notes.append(f"{t.name}({', '.join(cols)}) -> {ref}: foreign key left out (a cycle; DuckDB "
                             f"cannot add one with ALTER TABLE)")
                continue
            defs.append(f"FOREIGN KEY ({', '.join(_q(c) for c in cols)}) REFERENCES {_q(ref)} "
                        f"({', '.join(_q(c) for c in ref_cols)})")
        con.execute(f"CREATE TABLE {_q(t.name)} ({', '.join(defs)})")
        if t.rows:
            _duckdb_load(con, t, types, path.parent)
    _views(source, "duckdb", lambda sql: con.execute(sql), notes)
    con.close()
    return notes


def _waves(table: Table) -> list[list[tuple]]:
    """The rows in waves where a row's parent under a self-reference is in an earlier wave
    (DuckDB checks a foreign key against the rows already in the table, not those of the
    same statement)."""
    selfs = [(cols, ref_cols) for cols, ref, ref_cols in table.foreign_keys if ref == table.name]
    if not selfs:
        return [table.rows]
    names = [c.name for c in table.columns]
    cols, ref_cols = selfs[0]
    child = [names.index(c) for c in cols]
    parent = [names.index(c) for c in ref_cols]
    done: set = set()
    waves, pending = [], list(table.rows)
    while pending:
        wave, rest = [], []
        for row in pending:
            ref = tuple(row[i] for i in child)
            (wave if None in ref or ref in done or ref == tuple(row[i] for i in parent) else rest).append(row)
        if not wave:  # a dangling reference: let the engine say so
            wave, rest = rest, []
        done.update(tuple(row[i] for i in parent) for row in wave)
        waves.append(wave)
        pending = rest
    return waves


def _duckdb_load(con, table: Table, types: list[str], folder: Path) -> None:
    """COPY from CSV files: DuckDB's executemany takes minutes for sakila."""
    import csv

    cols = ", ".join(_q(c.name) for c in table.columns)
    for n, wave in enumerate(_waves(table)):
        path = folder / f"load_{n}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            out = csv.writer(fh)
            for row in wave:
                cells = []
                for value, kind in zip(row, types):
                    value = _convert(value, kind)
                    if value is None:
                        cells.append("\\N")
                    elif isinstance(value, bytes):
                        cells.append("".join(f"\\x{b:02X}" for b in value))
                    else:
                        cells.append(value)
                out.writerow(cells)
        literal = str(path).replace("'", "''")
        con.execute(f"COPY {_q(table.name)} ({cols}) FROM '{literal}' (FORMAT csv, HEADER false, NULL '\\N', "
                    f"QUOTE '\"', ESCAPE '\"')")
        path.unlink()


def _views(source: Source, dialect: str, run, notes: list[str]) -> None:
    for name, select in source.views:
        try:
            body = to_dialect(select, dialect, source)
            quoted = exp.to_identifier(name, quoted=True).sql(dialect=dialect)
            run(f"CREATE VIEW {quoted} AS {body}")
        except Exception as exc:  # noqa: BLE001 - a view that does not carry over is noted
            notes.append(f"view {name!r} left out: {str(exc).splitlines()[0][:120]}")


def copy_to_postgres(source: Source, conn, schema: str) -> list[str]:
    """``source`` as tables in ``schema`` (created here) over a psycopg autocommit connection."""
    notes = []
    conn.execute(f"CREATE SCHEMA {_q(schema)}")
    conn.execute(f"SET search_path TO {_q(schema)}")
    layouts = {}
    for t in source.tables:
        defs, types = _layout("postgres", t, _q)
        layouts[t.name] = types
        conn.execute(f"CREATE TABLE {_q(t.name)} ({', '.join(defs)})")
        if t.rows:
            with conn.cursor() as cur:
                cols = ", ".join(_q(c.name) for c in t.columns)
                with cur.copy(f"COPY {_q(t.name)} ({cols}) FROM STDIN") as copy:
                    for row in t.rows:
                        copy.write_row([_convert(v, k) for v, k in zip(row, types)])
    for t in source.tables:
        for cols, ref, ref_cols in t.foreign_keys:
            ddl = (f"ALTER TABLE {_q(t.name)} ADD FOREIGN KEY ({', '.join(_q(c) for c in cols)}) "
                   f"REFERENCES {_q(ref)} ({', '.join(_q(c) for c in ref_cols)})")
            try:
                conn.execute(ddl)
            except Exception as exc:  # noqa: BLE001
                try:
                    conn.execute(ddl + " NOT VALID")
                    notes.append(f"{t.name}({', '.join(cols)}) -> {ref}: declared NOT VALID "
                                 f"({str(exc).splitlines()[0][:80]})")
                except Exception as exc2:  # noqa: BLE001
                    notes.append(f"{t.name}({', '.join(cols)}) -> {ref}: left out ({str(exc2).splitlines()[0][:80]})")
    _views(source, "postgres", conn.execute, notes)
    conn.execute("ANALYZE")
    return notes


def copy_to_mariadb(source: Source, cur, database: str) -> list[str]:
    """``source`` as tables of a new ``database`` over a PyMySQL autocommit cursor."""
    notes = []

    def bq(name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    cur.execute(f"CREATE DATABASE {bq(database)}")
    cur.execute(f"USE {bq(database)}")
    cur.execute("SET SESSION foreign_key_checks = 0")
    for t in source.tables:
        defs, types = _layout("mysql", t, bq)
        for cols, ref, ref_cols in t.foreign_keys:
            defs.append(f"FOREIGN KEY ({', '.join(bq(c) for c in cols)}) REFERENCES {bq(ref)} "
                        f"({', '.join(bq(c) for c in ref_cols)})")
        cur.execute(f"CREATE TABLE {bq(t.name)} ({', '.join(defs)}) ENGINE=InnoDB")
        if t.rows:
            cols = ", ".join(bq(c.name) for c in t.columns)
            marks = ", ".join(["%s"] * len(t.columns))
            rows = [tuple(_convert(v, k) for v, k in zip(row, types)) for row in t.rows]
            for start in range(0, len(rows), 5000):
                cur.executemany(f"INSERT INTO {bq(t.name)} ({cols}) VALUES ({marks})", rows[start:start + 5000])
    cur.execute("SET SESSION foreign_key_checks = 1")
    _views(source, "mysql", cur.execute, notes)
    cur.execute("USE test")
    return notes


__all__ = ["Source", "read_source", "to_dialect", "to_sqlite", "copy_to_duckdb", "copy_to_postgres",
           "copy_to_mariadb", "column_type", "copy_to_spark", "spark_type"]


# -- Spark ------------------------------------------------------------------------------------

_SPARK_TYPES = {"integer": "int", "bigint": "bigint", "smallint": "smallint", "double": "double",
                "blob": "binary", "boolean": "boolean", "date": "date", "timestamp": "timestamp"}


def spark_type(col: Column, rows_sample: list, is_key: bool) -> str:
    """The column's Spark SQL type: DuckDB's mapping, with Spark's names (text of any
    declared length is ``string``: Spark's varchar(n) only checks lengths on write)."""
    kind = column_type("duckdb", col, rows_sample, is_key)
    if kind.startswith(("varchar", "char", "text")):
        return "string"
    if kind.startswith(("numeric", "decimal")):
        args = _ARGS.search(kind)
        return f"decimal({args.group(1)},{args.group(2) or 0})" if args else "decimal(18,4)"
    return _SPARK_TYPES.get(kind, "string")


def _spark_value(value, kind: str):
    import datetime as dt
    import decimal

    if value is None:
        return None
    if kind == "string":
        return value if isinstance(value, str) else str(value)
    if kind == "boolean":
        return bool(value)
    if kind == "timestamp":
        return dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    if kind == "date":
        return dt.date.fromisoformat(value[:10]) if isinstance(value, str) else value
    if kind.startswith("decimal"):
        return decimal.Decimal(str(value))
    if kind == "double":
        return float(value)
    if kind == "binary":
        return bytearray(value)
    return value


def copy_to_spark(source: Source, spark, database: str) -> list[str]:
    """``source`` as Parquet tables of a new Spark ``database`` (the session's catalogue),
    each table's keys recorded as the table properties Vouch reads (``vouch.primary_key``,
    ``vouch.foreign_keys``): Spark's own tables cannot declare keys. Table names are kept,
    but Spark's catalogue folds them to lower case (``Track`` → ``track``); columns keep
    their case."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    notes = []
    spark.sql(f"CREATE DATABASE {_bq(database)}")
    for t in source.tables:
        if spark_table_name(t.name) != t.name:
            notes.append(f"table {t.name!r} is {spark_table_name(t.name)!r} (Spark's names hold letters, digits and _ only)")
        keys = set(t.primary_key) | {c for cols, _, _ in t.foreign_keys for c in cols}
        kinds = [spark_type(c, [row[i] for row in t.rows], c.name in keys) for i, c in enumerate(t.columns)]
        schema = StructType([StructField(c.name, _parse_datatype_string(k), not (c.notnull or c.name in t.primary_key))
                             for c, k in zip(t.columns, kinds)])
        rows = [tuple(_spark_value(v, k) for v, k in zip(row, kinds)) for row in t.rows]
        name = f"{_bq(database)}.{_bq(spark_table_name(t.name))}"
        spark.createDataFrame(rows, schema, verifySchema=False).coalesce(1).write.saveAsTable(name)
        props = {}
        if t.primary_key:
            props["vouch.primary_key"] = ",".join(t.primary_key)
        if t.foreign_keys:
            props["vouch.foreign_keys"] = ";".join(f"{','.join(cols)}->{spark_table_name(ref)}({','.join(ref_cols)})"
                                                   for cols, ref, ref_cols in t.foreign_keys)
        if props:
            listed = ", ".join(f"'{k}' = '{v.replace(chr(39), chr(92) + chr(39))}'" for k, v in props.items())
            spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({listed})")
    # A view resolves its names in the database current when it is made.
    here = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase(database)
    try:
        for view, select in source.views:
            try:
                body = to_dialect(select, "spark", source)
                spark.sql(f"CREATE VIEW {_bq(database)}.{_bq(spark_table_name(view))} AS {body}")
            except Exception as exc:  # noqa: BLE001 - a view that does not carry over is noted
                notes.append(f"view {view!r} left out: {str(exc).splitlines()[0][:120]}")
    finally:
        spark.catalog.setCurrentDatabase(here)
    return notes


def spark_table_name(name: str) -> str:
    """A table's name on Spark, whose catalogue takes letters, digits and _ only
    (``Order Details`` → ``Order_Details``; Spark shows it as ``order_details``)."""
    return re.sub(r"\W+", "_", name).strip("_") or name


def _bq(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
