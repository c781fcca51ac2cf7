"""``vouch definitions check FILE --db …``: run every verified query, metric, measure, filter
and view of a definitions file once and say which no longer run or return nothing — a semantic
model drifts when the schema changes (issue 30, item 2). Also names the physical tables the
file maps that the database lacks, and every field the file's format reader could not map."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .semantic import logical_sql
from .semantic.model import logical_source, logical_tables_read, name_sql, physical_table

if TYPE_CHECKING:
    from .db import Database
    from .definitions import Definitions
    from .semantic import LogicalTable


@dataclass(frozen=True)
class Entry:
    kind: str  # verified query, metric, measure, filter, view, table
    name: str
    status: str  # ok, empty, error, not run (an error: the file itself is wrong, or the SQL fails)
    detail: str
    source: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "not run")


def audit(defs: Definitions, db: Database) -> list[Entry]:
    """One entry per verified query, runnable and mapped table, in the file's order."""
    out: list[Entry] = []
    names = {(t.schema or "").lower() + "." + t.name.lower() for t in db.schema()} | \
        {t.name.lower() for t in db.schema()}
    for t in defs.logical_tables:
        if t.table.lower() not in names:
            out.append(Entry("table", t.name, "error", f"the database has no table {t.table}{_elsewhere(db, t.table)}"))
        elif (unread := _named_schema_unread(db, t)):
            out.append(Entry("table", t.name, "error", unread))
    tables = list(defs.logical_tables)
    omit: dict[str, set[str]] = {}
    logical = [v.sql for v in defs.verified if v.logical] + [r.sql for r in defs.runnables if r.logical and r.sql]
    read = {t.name for sql in logical for t in logical_tables_read(sql, tables)}
    for t in tables:
        if t.name in read and t.table.lower() in names:
            for column, entry in _failing_columns(db, t):
                omit.setdefault(t.name, set()).add(column)
                out.append(entry)
    for v in defs.verified:
        sql = logical_sql(v.sql, tables, db, omit) if v.logical else v.sql
        out.append(_run(db, "verified query", v.name, sql, v.source))
    for r in defs.runnables:
        runnable = r.runnable_sql(tables, db, omit)
        if runnable is None:
            out.append(Entry(r.kind, r.name, "error" if r.broken else "not run", r.why or "cannot run on its own",
                             r.source))
        else:
            out.append(_run(db, r.kind, r.name, runnable, r.source))
    return out


def _elsewhere(db: Database, table: str) -> str:
    """Where a table the file maps is, when the catalogue read lacks it: the schemas of the
    database that hold a table of that name (``--schemas`` reads them), from the standard
    ``information_schema``; nothing where the engine keeps none (one namespace)."""
    name = table.lower().replace("'", "''")
    result = db.execute(f"SELECT DISTINCT table_schema FROM information_schema.tables "
                        f"WHERE LOWER(table_name) = '{name}'", max_rows=20)
    if result.error is not None:
        return ""
    read = {(t.schema or db.default_schema or "").lower() for t in db.schema()} | {(db.default_schema or "").lower()}
    others = sorted(str(r[0]) for r in result.rows if r[0] is not None and str(r[0]).lower() not in read)
    if others:
        held = f"schema {others[0]} has one" if len(others) == 1 else f"schemas {', '.join(others)} have one"
        return (f" in the schemas read ({', '.join(sorted(s for s in read if s)) or 'the default'}); {held}: "
                f"pass --schemas {others[0]} (or --schemas '*')")
    return ""


def _named_schema_unread(db: Database, table: LogicalTable) -> str:
    """Where the file names the table's schema and that schema holds the table, but only
    another schema's table of that name was read: the file's items would read the wrong
    table (a Cortex ``base_table`` in schema ``sales`` while ``--schemas`` read ``public``).
    A schema the database does not have (Snowflake's ``PUBLIC`` over a SQLite copy) is not
    this case: the table is read wherever the catalogue has it."""
    if not table.schema:
        return ""
    schemas = {(t.schema or db.default_schema or "").lower() for t in db.schema() if t.name.lower() == table.table.lower()}
    if table.schema.lower() in schemas:
        return ""
    name, schema = table.table.lower().replace("'", "''"), table.schema.lower().replace("'", "''")
    result = db.execute(f"SELECT 1 FROM information_schema.tables WHERE LOWER(table_name) = '{name}' "
                        f"AND LOWER(table_schema) = '{schema}'", max_rows=1)
    if result.error is not None or not result.rows:
        return ""
    return (f"the file reads {table.table} in schema {table.schema}, which was not read; the schemas read have "
            f"another {table.table} ({', '.join(sorted(s for s in schemas if s))}): pass --schemas {table.schema}")


def _failing_columns(db: Database, table: LogicalTable) -> list[tuple[str, Entry]]:
    """The logical columns of ``table`` whose own expression does not run, each as an error
    entry: they are left out of the table's CTE, so an item that does not read them is not
    blamed for them. Each column is tried alone only when the whole table does not run."""
    if not table.columns or db.execute(logical_source(table, db), max_rows=1).error is None:
        return []
    out = []
    for name, expr in table.columns:
        sql = f"SELECT {table.column_sql(name, expr, db)} FROM {physical_table(db, table)} AS {name_sql(table.name, db)}"
        result = db.execute(sql, max_rows=1)
        if result.error is not None:
            out.append((name, Entry("column", f"{table.name}.{name}", "error",
                                    f"its expression {expr} does not run: {result.error.message}",
                                    table.source_of(name))))
    return out


def _run(db: Database, kind: str, name: str, sql: str, source: str) -> Entry:
    result = db.execute(sql)
    if result.error is not None:
        return Entry(kind, name, "error", result.error.message, source)
    if not result.rows or all(v is None for row in result.rows for v in row):
        return Entry(kind, name, "empty", "returns no rows" if not result.rows else "returns only NULL", source)
    if kind == "filter" and result.rows[0][0] == 0:  # run as SELECT COUNT(*) … WHERE its condition
        return Entry(kind, name, "empty", "matches no row", source)
    first = ", ".join(repr(v) for v in result.rows[0][:4])
    return Entry(kind, name, "ok", f"{result.row_count} row(s){'+' if result.truncated else ''}, first: {first}", source)
