"""What a semantic layer maps to in Vouch's terms (:mod:`vouchsql.definitions`): the plain
data every reader (:mod:`.cortex`, :mod:`.dbt`, :mod:`.wren`) returns, and how SQL written
over a model's logical tables runs on the physical ones."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from ..db.base import Database

_IDENT = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass(frozen=True)
class LogicalTable:
    """A logical table: its name, the physical table it reads, and its columns as
    ``(logical name, SQL expression over the physical table)``."""

    name: str
    table: str
    schema: str | None = None
    columns: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class VerifiedQuery:
    """A question with the SQL a person verified answers it. ``logical``: the SQL reads the
    model's logical tables as ``__name`` (Cortex Analyst's convention)."""

    name: str
    question: str
    sql: str
    logical: bool = False
    verified_by: str | None = None
    source: str = ""  # file:line


@dataclass(frozen=True)
class Runnable:
    """A metric, measure or filter `vouch definitions check` runs once: ``sql`` computes it
    (None where it cannot run on its own; ``why`` says why). ``{from}`` in ``sql`` stands for
    ``table``'s physical table as the engine names it; ``logical``: it reads ``__name`` tables."""

    name: str
    kind: str  # metric, measure, filter
    sql: str | None
    logical: bool = False
    why: str = ""
    source: str = ""
    table: LogicalTable | None = None

    def runnable_sql(self, tables: list[LogicalTable], db: Database) -> str | None:
        if self.sql is None:
            return None
        sql = self.sql.replace("{from}", physical_table(db, self.table)) if self.table else self.sql
        return logical_sql(sql, tables, db) if self.logical else sql


@dataclass
class Mapped:
    """One semantic layer in Vouch's terms. ``unmapped`` names each field that was not read."""

    format: str
    terms: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    synonyms: dict[str, tuple[str, ...]] = field(default_factory=dict)  # table or table.column -> words
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)  # table.column -> sample values
    logical_tables: list[LogicalTable] = field(default_factory=list)
    verified: list[VerifiedQuery] = field(default_factory=list)
    runnables: list[Runnable] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)

    def add_synonyms(self, target: str, words: Iterable[str]) -> None:
        got = list(self.synonyms.get(target, ()))
        got += [w for w in words if w and w not in got]
        if got:
            self.synonyms[target] = tuple(got)


def spaced(name: str) -> str:
    """``average_age`` → ``average age``: a logical name as the words a question uses."""
    return " ".join(name.replace("_", " ").split())


def _name_sql(name: str, db: Database) -> str:
    return name if _IDENT.fullmatch(name) else db.quote(name)


def physical_table(db: Database, table: LogicalTable) -> str:
    """The physical table as the engine names it: looked up in the catalogue (case aside, the
    model's schema where the database has it), else as written."""
    want, schema = table.table.lower(), (table.schema or "").lower()
    found = [t for t in db.schema() if t.name.lower() == want]
    exact = [t for t in found if (t.schema or "").lower() == schema] or found
    if exact:
        return db.table_sql(exact[0].name, exact[0].schema)
    return db.table_sql(table.table)


def logical_sql(sql: str, tables: list[LogicalTable], db: Database) -> str:
    """``sql`` written over ``__name`` logical tables, with each one it reads defined as a CTE
    over its physical table (``WITH __orders AS (SELECT expr AS name, … FROM orders) …``):
    how Cortex Analyst itself runs a verified query."""
    used = [t for t in tables if re.search(rf"(?<![\w\"`.])__{re.escape(t.name)}(?!\w)", sql, re.I)]
    if not used:
        return sql
    ctes = []
    for t in used:
        cols = ", ".join(f"{expr} AS {_name_sql(name, db)}" for name, expr in t.columns) or "*"
        ctes.append(f"{_name_sql('__' + t.name, db)} AS (SELECT {cols} FROM {physical_table(db, t)})")
    body = sql.strip().rstrip(";").strip()
    head = re.match(r"WITH\s+(RECURSIVE\s+)?", body, re.I)
    if head:
        return f"WITH {head.group(1) or ''}{', '.join(ctes)}, {body[head.end():]}"
    return f"WITH {', '.join(ctes)} {body}"
