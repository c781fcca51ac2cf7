"""The text the prompts and the template answer are made of: the schema with its profile,
a result, the recorded definitions, and the ``--no-prose`` template. Every name and value
goes through :mod:`.data_text` (quoted, clipped, escaped: data, never instructions)."""

from __future__ import annotations

from typing import Any

from ..answer import Result
from ..db.figures import TableProfile
from ..db.profile import Profile
from ..definitions import Definitions
from . import data_text as data

RESULT_ROWS_IN_PROMPT = 20
SAMPLE_VALUE_CHARS = 30  # each example value in the schema text
TEMPLATE_ROWS = 3


# -- text the template is made of: the user reads it, so values stay unquoted ------------------------

def _value(v: Any) -> str:
    if v is None:
        return "NULL"
    num = data.number(v)
    return num if num is not None else _clip(str(v), data.VALUE_LIMIT)


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def rows_caption(result: Result) -> str:
    caption = f"{result.row_count} row{'s' if result.row_count != 1 else ''}"
    if result.truncated:
        caption += ", cut off at the row cap"
    if result.row_count > RESULT_ROWS_IN_PROMPT:
        caption += f"; the first {RESULT_ROWS_IN_PROMPT} shown"
    return caption


def template_text(result: Result) -> str:
    """The ``--no-prose`` answer: every number in it is a returned cell or the row count."""
    if result.error is not None:
        return "No answer: the SQL did not run."
    if result.row_count == 0:
        return "No rows matched."
    cols = result.columns

    def row_text(row: list[Any]) -> str:
        return ", ".join(f"{c} {_value(v)}" for c, v in zip(cols, row))

    if result.row_count == 1:
        row = result.rows[0]
        if len(cols) == 1:
            return f"{cols[0]}: {_value(row[0])}."
        return "; ".join(f"{c}: {_value(v)}" for c, v in zip(cols, row)) + "."
    head = f"{result.row_count} rows" + (" (cut off at the row cap)" if result.truncated else "")
    first = "; ".join(row_text(r) for r in result.rows[:TEMPLATE_ROWS])
    more = ", …" if result.row_count > TEMPLATE_ROWS else ""
    return f"{head}. {'First' if more else 'They are'}: {first}{more}."


# -- text the prompts are made of: every name and value through data_text ------------------------------

def schema_text(profile: Profile, dialect: str = "sqlite") -> str:
    """The schema and its profile as the prompts show it: tables, row counts, keys, column
    types, null shares, distinct counts, ranges, example values and stand-in codes. Names are
    written as ``dialect`` writes them in SQL, so the model can copy them into a query.
    (A schema over ``ask``'s token budget gets only some tables: :mod:`.retrieval`.)"""
    return "\n".join(table_text(t, dialect) for t in profile.tables)


def table_text(t: TableProfile, dialect: str = "sqlite") -> str:
    """One table's lines of :func:`schema_text`."""
    lines = []

    def name(n: str) -> str:
        return data.identifier(n, dialect)

    def table(schema: str | None, n: str) -> str:  # schema.table outside the default schema
        return f"{name(schema)}.{name(n)}" if schema else name(n)

    def ref(key: str) -> str:  # a foreign key's table, keyed schema.table outside the default schema
        schema, dot, n = key.partition(".")
        return table(schema, n) if dot and schema and n else name(key)

    head = f"TABLE {table(t.schema_name, t.name)}{' (view)' if t.is_view else ''}: {t.row_count:,} rows"
    if t.primary_key:
        head += f"; primary key ({', '.join(map(name, t.primary_key))})"
    lines.append(head)
    refs = {c: f"{ref(fk.ref_table)}.{name(fk.ref_columns[i])}" for fk in t.foreign_keys
            for i, c in enumerate(fk.columns) if i < len(fk.ref_columns)}
    for c in t.columns:
        bits = [data.type_name(c.type)]
        if c.name in refs:
            bits.append(f"references {refs[c.name]}")
        if t.row_count and c.null_count:
            bits.append(f"{c.null_count / t.row_count:.0%} null")
        if t.row_count:
            bits.append(f"{'≈' if c.distinct_estimated else ''}{c.distinct_count:,} distinct")
        if isinstance(c.min, (int, float)) and not isinstance(c.min, bool) and c.min != c.max:
            bits.append(f"from {data.value(c.min)} to {data.value(c.max)}")
        if c.top_values and (c.distinct_count <= 12 or isinstance(c.top_values[0][0], str)):
            bits.append("e.g. " + ", ".join(data.value(v, SAMPLE_VALUE_CHARS) for v, _ in c.top_values[:3]))
        for s in c.stand_ins:
            bits.append(f"stand-in code {data.value(s.value)} in {s.share:.1%} of rows (means unknown)")
        lines.append(f"  - {name(c.name)}: {'; '.join(bits)}")
    return "\n".join(lines)


def result_text(result: Result, dialect: str = "sqlite", limit: int = RESULT_ROWS_IN_PROMPT) -> str:
    """The shown result as the writer reads it: a line of column names, then a line per row."""
    lines = [" | ".join(data.identifier(c, dialect) for c in result.columns)]
    lines += [" | ".join(data.value(v) for v in row) for row in result.rows[:limit]]
    return "\n".join(lines)


def definitions_text(definitions: Definitions | None) -> str:
    """The recorded definitions as the prompts show them: the user's file is data too."""
    if definitions is None:
        return "(none)"
    lines = [f"- {data.string(term, data.NAME_LIMIT)} means {data.string(meaning, data.TEXT_LIMIT)}"
             for term, meaning in definitions.definitions.items()]
    lines += [f"- note: {data.string(note, data.TEXT_LIMIT)}" for note in definitions.notes]
    lines += [f"- rule {data.string(r.name, data.NAME_LIMIT)}: {data.string(r.describe(), data.TEXT_LIMIT)}"
              for r in definitions.rules]
    lines += [f"- {data.string(target, data.NAME_LIMIT)} is called "
              + ", ".join(data.string(w, data.NAME_LIMIT) for w in words) for target, words in definitions.synonyms.items()]
    lines += [f"- {data.string(target, data.NAME_LIMIT)} holds values such as "
              + ", ".join(data.value(v) for v in values[:12]) for target, values in definitions.values.items()]
    if any(v.logical for v in definitions.verified):
        for t in definitions.logical_tables:
            cols = ", ".join(name if name == expr else f"{name} = {expr}" for name, expr in t.columns)
            lines.append(f"- in verified SQL, __{t.name} is table {t.table}: {data.string(cols, data.TEXT_LIMIT)}")
    lines += [f"- verified question {data.string(v.question, data.TEXT_LIMIT)} has the SQL "
              f"{data.string(' '.join(v.sql.split()), data.TEXT_LIMIT)}" for v in definitions.verified]
    return "\n".join(lines) or "(none)"


__all__ = ["schema_text", "table_text", "result_text", "definitions_text", "template_text", "rows_caption"]
