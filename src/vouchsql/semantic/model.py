"""What a semantic layer maps to in Vouch's terms (:mod:`vouchsql.definitions`): the plain
data every reader (:mod:`.cortex`, :mod:`.dbt`, :mod:`.wren`) returns, and how SQL written
over a model's logical tables runs on the physical ones."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from ..db.base import Database
    from ..db.catalog import TableInfo

_IDENT = re.compile(r"[a-z_][a-z0-9_]*", re.I)
# words reserved in the common engines' SQL: a logical name spelled so is quoted
_RESERVED = frozenset("""all and any as asc between both by case cast check collate column constraint create cross
current_date current_time current_timestamp current_user default desc distinct do else end except false fetch
for foreign from full grant group having in index inner intersect into is join key keys leading left like limit
natural not null offset on only or order outer primary range rank references right row rows select some table
then to trailing true union unique user using values when where window with""".split())


@dataclass(frozen=True)
class LogicalTable:
    """A logical table: its name, the physical table it reads, and its columns as
    ``(logical name, SQL expression over the physical table)``. ``identifiers``: the logical
    names whose expression is a physical column's name as stored (a WrenAI column without an
    ``expression``), quoted in the engine's dialect where it runs. ``bare``: the logical names
    whose expression is a bare identifier (WrenAI's ``"expression": "CustomerId"``): where it
    names a column of the physical table (case aside), that column quoted as the catalogue
    spells it, since the engine would fold it otherwise (PostgreSQL: ``customerid``); left as
    written where it names none. ``sources``: where each column is defined (``file:line``), by
    logical name."""

    name: str
    table: str
    schema: str | None = None
    columns: tuple[tuple[str, str], ...] = ()
    identifiers: frozenset[str] = frozenset()
    sources: tuple[tuple[str, str], ...] = ()
    bare: frozenset[str] = frozenset()

    def column_sql(self, name: str, expr: str, db: Database) -> str:
        if name in self.identifiers:
            return db.quote(expr)
        if name in self.bare:
            found = catalogue_table(db, self)
            spelt = [c.name for c in (found.columns if found else []) if c.name.lower() == expr.lower()]
            if spelt:
                return db.quote(spelt[0] if expr not in spelt else expr)
        return expr

    def source_of(self, name: str) -> str:
        return dict(self.sources).get(name, "")


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
    ``table``'s physical table as the engine names it, ``{join0}``, ``{join1}``… for those of
    ``joins`` (other tables it reads); ``logical``: it reads ``__name`` tables."""

    name: str
    kind: str  # metric, measure, filter
    sql: str | None
    logical: bool = False
    why: str = ""
    source: str = ""
    table: LogicalTable | None = None
    broken: bool = False  # not run because the file is wrong (an undefined measure, say): needs attention
    joins: tuple[LogicalTable, ...] = ()

    def runnable_sql(self, tables: list[LogicalTable], db: Database,
                     omit: dict[str, set[str]] | None = None) -> str | None:
        if self.sql is None:
            return None
        sql = self.sql.replace("{from}", physical_table(db, self.table)) if self.table else self.sql
        for k, joined in enumerate(self.joins):
            sql = sql.replace(f"{{join{k}}}", physical_table(db, joined))
        return logical_sql(sql, tables, db, omit) if self.logical else sql


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


def _bare(name: str) -> bool:
    """Whether a logical name may be written bare: a plain identifier, not a keyword."""
    return bool(_IDENT.fullmatch(name)) and name.lower() not in _RESERVED


def name_sql(name: str, db: Database) -> str:
    """A logical name as SQL: unquoted where it is a plain identifier, so that SQL written over
    it unquoted (``order_id``, ``TrackId``) reads it however the engine folds case; quoted
    otherwise (spaces, a keyword)."""
    return name if _bare(name) else db.quote(name)


def logical_alias(name: str) -> str:
    """``AS name`` for ``FROM __name``, so that expressions written with the logical table's
    name in front (``orders.freight``, Snowflake's own examples) read the CTE; nothing where
    the name is not a plain identifier."""
    return f" AS {name}" if _bare(name) else ""


def catalogue_table(db: Database, table: LogicalTable) -> TableInfo | None:
    """The catalogue's entry for ``table``'s physical table (case aside, the model's schema
    where the database has it), or None."""
    want, schema = table.table.lower(), (table.schema or "").lower()
    found = [t for t in db.schema() if t.name.lower() == want]
    exact = [t for t in found if (t.schema or "").lower() == schema] or found
    return exact[0] if exact else None


def physical_table(db: Database, table: LogicalTable) -> str:
    """The physical table as the engine names it: looked up in the catalogue (case aside, the
    model's schema where the database has it), else as written."""
    found = catalogue_table(db, table)
    if found is not None:
        return db.table_sql(found.name, found.schema)
    return db.table_sql(table.table)


def logical_tables_read(sql: str, tables: list[LogicalTable]) -> list[LogicalTable]:
    """The logical tables ``sql`` reads as ``__name``."""
    return [t for t in tables if re.search(rf"(?<![\w\"`.])__{re.escape(t.name)}(?!\w)", sql, re.I)]


def logical_source(table: LogicalTable, db: Database, omit: Iterable[str] = ()) -> str:
    """The SELECT a logical table is: each column's expression under its logical name, over
    the physical table under the logical table's name (``FROM "Order Details" AS order_lines``,
    so ``order_lines.UnitPrice`` in an expression reads it). ``omit``: logical columns left out."""
    skip = set(omit)
    cols = ", ".join(f"{table.column_sql(name, expr, db)} AS {name_sql(name, db)}"
                     for name, expr in table.columns if name not in skip) or "*"
    return f"SELECT {cols} FROM {physical_table(db, table)} AS {name_sql(table.name, db)}"


def logical_sql(sql: str, tables: list[LogicalTable], db: Database,
                omit: dict[str, set[str]] | None = None) -> str:
    """``sql`` written over ``__name`` logical tables, with each one it reads defined as a CTE
    over its physical table (``WITH __orders AS (SELECT expr AS name, … FROM orders AS orders) …``):
    how Cortex Analyst itself runs a verified query. ``omit``: by logical table name, columns
    left out of its CTE (those whose own expression fails, reported on their own)."""
    used = logical_tables_read(sql, tables)
    if not used:
        return sql
    ctes = []
    for t in used:
        ctes.append(f"{name_sql('__' + t.name, db)} AS ({logical_source(t, db, (omit or {}).get(t.name, ()))})")
    body = sql.strip().rstrip(";").strip()
    # comments before the statement's own WITH ("-- invoices billed to Canada") go before ours
    lead = re.match(r"(?:\s*(?:--[^\n]*(?:\n|$)|/\*.*?\*/))*\s*", body, re.S)
    comments, body = (body[:lead.end()], body[lead.end():]) if lead else ("", body)
    head = re.match(r"WITH\s+(RECURSIVE\s+)?", body, re.I)
    if head:
        return f"{comments}WITH {head.group(1) or ''}{', '.join(ctes)}, {body[head.end():]}"
    return f"{comments}WITH {', '.join(ctes)} {body}"
