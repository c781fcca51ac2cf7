"""Data in prompts is data: how a name or value read from the database (or the definitions
file, or an earlier model reply) is written into a prompt.

A database is written by whoever filled it, and a table name, a declared type or a cell can
hold text meant for the model ("ignore previous instructions…"). Such text may reach a prompt
only as data, so every item is

- clipped to a bounded length (``…`` after its closing quote says it was cut short);
- escaped: a backslash, ``<`` and every character :meth:`str.isprintable` rejects (line
  breaks, tabs, control and format characters, invisible spaces) become backslash escapes, so
  an item can never start a line of its own, nor open or close a ``<data>`` block;
- quoted: a text value in single quotes as SQL writes it (a quote inside doubled), a name as
  the SQL for it — in the engine's own quoting where it needs quoting, bare where it does
  not, so ``customers.age`` stays readable and a name with a space, a quote or a keyword's
  spelling can be copied into a query as shown. (A name holding a character that had to be
  escaped, or cut short, cannot be; ``SELECT *`` still reaches its column.)

The prompt files put these items inside ``<data name="…">`` … ``</data>`` blocks and say that
what the blocks hold is data, never instructions (:mod:`vouchsql.llm.prompts`).
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

NAME_LIMIT = 128     # characters of a table or column name: twice PostgreSQL's and MySQL's own limit
TYPE_LIMIT = 40      # characters of a declared column type
VALUE_LIMIT = 80     # characters of a cell or a sample value
TEXT_LIMIT = 1000    # characters of a recorded definition, note or rule, an interpretation
LONG_LIMIT = 4000    # characters of a query or an answer text that an earlier step wrote

CUT = "…"
_NAMED_ESCAPES = {"\\": "\\\\", "<": "\\u003c", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# One word, optionally sized: INTEGER, VARCHAR(20), DECIMAL(10, 2). Any other declared type
# is free text and is quoted like a value.
_PLAIN_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\(\d+(, ?\d+)?\))?")


def escape(text: str) -> str:
    """``text`` with no raw line break, control character, backslash or ``<`` left in it."""
    if text.isprintable() and "\\" not in text and "<" not in text:
        return text
    return "".join(_escape_char(ch) for ch in text)


def _escape_char(ch: str) -> str:
    if ch in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _clip(text: str, limit: int) -> tuple[str, str]:
    return (text[:limit], CUT) if len(text) > limit else (text, "")


def string(text: str, limit: int = VALUE_LIMIT) -> str:
    """A text value as a single-quoted, escaped literal of at most ``limit`` characters."""
    body, cut = _clip(text, limit)
    return "'" + escape(body).replace("'", "''") + "'" + cut


def escaped(text: str, limit: int) -> str:
    """Text that stays unquoted (a query shown inside a data block), clipped and escaped."""
    body, cut = _clip(text, limit)
    return escape(body) + cut


def number(v: Any) -> str | None:
    """A number as the prompts and the answer template write it (four decimals at most);
    None for anything that is not a number."""
    if isinstance(v, bool) or isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or abs(v) >= 1e15:
            return repr(v)
        text = f"{v:.4f}".rstrip("0").rstrip(".")
        return "0" if text in {"-0", ""} else text
    if isinstance(v, Decimal):
        return str(v)  # digits, sign, point, exponent, or NaN/Infinity: nothing to escape
    return None


def value(v: Any, limit: int = VALUE_LIMIT) -> str:
    """A cell: NULL, a bare number, or any other value as a quoted string."""
    if v is None:
        return "NULL"
    num = number(v)
    return num if num is not None else string(str(v), limit)


def type_name(declared: str | None) -> str:
    """A declared column type: bare when it is one plain word (sized or not), else quoted."""
    if not declared:
        return "untyped"
    return declared if _PLAIN_TYPE.fullmatch(declared) else string(declared, TYPE_LIMIT)


@lru_cache(maxsize=4096)
def identifier(name: str, dialect: str, limit: int = NAME_LIMIT) -> str:
    """A table or column name as ``dialect`` writes it in SQL: bare when that is safe,
    otherwise in the engine's quoting; then clipped and escaped."""
    body, cut = _clip(name, limit)
    sql = exp.to_identifier(body, quoted=_needs_quotes(body, dialect)).sql(dialect=dialect)
    return escape(sql) + cut


def _needs_quotes(name: str, dialect: str) -> bool:
    if not _ASCII_NAME.fullmatch(name) or name.lower() in _RESERVED:
        return True
    # An engine that folds unquoted names (PostgreSQL to lower case) would read another name.
    return Dialect.get_or_raise(dialect).case_sensitive(name)


# Words a bare name may not spell. sqlglot's generators quote their own dialect's reserved
# words for MySQL, DuckDB and BigQuery but none for SQLite or PostgreSQL, and its parser
# accepts SQL the engines reject (``SELECT order FROM t``), so Vouch adds SQLite's keywords
# (sqlite.org/lang_keywords.html) and DuckDB's reserved words (PostgreSQL's, plus a few) for
# every engine: quoting a word that some engine does not reserve is harmless.
_SQLITE_KEYWORDS = """
abort action add after all alter always analyze and as asc attach autoincrement before begin between by
cascade case cast check collate column commit conflict constraint create cross current current_date
current_time current_timestamp database default deferrable deferred delete desc detach distinct do drop
each else end escape except exclude exclusive exists explain fail filter first following for foreign from
full generated glob group groups having if ignore immediate in index indexed initially inner insert
instead intersect into is isnull join key last left like limit match materialized natural no not nothing
notnull null nulls of offset on or order others outer over partition plan pragma preceding primary query
raise range recursive references regexp reindex release rename replace restrict returning right rollback
row rows savepoint select set table temp temporary then ties to transaction trigger unbounded union unique
update using vacuum values view virtual when where window with without
""".split()
_RESERVED = frozenset(_SQLITE_KEYWORDS) | frozenset(Dialect.get_or_raise("duckdb").generator_class.RESERVED_KEYWORDS)


__all__ = ["escape", "string", "escaped", "number", "value", "type_name", "identifier", "CUT",
           "NAME_LIMIT", "TYPE_LIMIT", "VALUE_LIMIT", "TEXT_LIMIT", "LONG_LIMIT"]
