"""``vouch definitions draft``: a starting definitions file written from the profile, for a
person to review (issue 30, item 3).

It holds only what the data shows, each entry saying where it comes from:

- **stand-in codes** the profile found (a 0 or -1 standing for "unknown"), as notes;
- **value lists** of low-cardinality text columns (every distinct value, read from the
  database, when there are at most ``max_values``), as definitions keyed ``table.column``;
- **keys**: declared foreign keys and keys inferred from the names, with how many values match
  (the profile's join pairs), as notes;
- **comments** of tables and columns, as notes and definitions.

Two formats: Vouch's own (TOML, read back by :func:`vouchsql.definitions.load_definitions`),
and a Snowflake Cortex Analyst–style semantic model (YAML: logical tables with dimensions,
time dimensions, facts, primary keys, sample values, relationships). Nothing is guessed beyond
the data: a draft never invents a metric or a meaning.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .errors import UserInputError

if TYPE_CHECKING:
    from .db import Database
    from .db.figures import ColumnProfile, TableProfile

MAX_VALUES = 12
_NUMBER = re.compile(r"INT|REAL|NUM|DEC|FLOAT|DOUBLE|MONEY|BIGINT|SMALLINT", re.IGNORECASE)
_TIME = re.compile(r"DATE|TIME", re.IGNORECASE)
_TEXT = re.compile(r"CHAR|TEXT|STRING|CLOB|VARCHAR|NAME|ENUM", re.IGNORECASE)
_KEYISH = re.compile(r"(^id$|_id$|Id$|ID$)")


def _is_key(table: TableProfile, column: ColumnProfile) -> bool:
    fks = {c for fk in table.foreign_keys for c in fk.columns}
    return column.name in table.primary_key or column.name in fks or bool(_KEYISH.search(column.name))


def _values(db: Database, table: TableProfile, column: ColumnProfile, max_values: int) -> list[Any] | None:
    """Every distinct value of a low-cardinality text column (NULL left out), or None. A
    column whose values do not repeat (names, e-mail addresses of a small table) is no
    category, however few its values."""
    if column.distinct_estimated or not 0 < column.distinct_count <= max_values:
        return None
    if column.null_estimated or column.distinct_count >= table.row_count - column.null_count:
        return None
    if not _TEXT.search(column.type or "") or _is_key(table, column):
        return None
    name = db.quote(column.name)
    ref = ".".join(db.quote(p) for p in ([table.schema_name] if table.schema_name else []) + [table.name])
    result = db.execute(f"SELECT DISTINCT {name} FROM {ref} WHERE {name} IS NOT NULL ORDER BY 1",
                        max_rows=max_values + 1)
    if result.error is not None or result.truncated or len(result.rows) > max_values:
        return None
    return [row[0] for row in result.rows]


def _qualified(table: TableProfile) -> str:
    return f"{table.schema_name}.{table.name}" if table.schema_name else table.name


def _facts(db: Database, max_values: int) -> dict[str, Any]:
    """What the draft says, from the profile, in one structure both formats are written from."""
    profile = db.profile()
    notes: list[str] = []
    definitions: dict[str, str] = {}
    tables = []
    for t in profile.tables:
        if t.error:
            notes.append(f"{_qualified(t)} could not be profiled ({t.error}); review it by hand")
            continue
        if t.comment:
            notes.append(f"{_qualified(t)}: {t.comment} (the table's comment)")
        columns = []
        for c in t.columns:
            key = f"{_qualified(t)}.{c.name}"
            for s in c.stand_ins:
                notes.append(f"{key}: {s.value:g} stands in for a missing or unknown value in {s.share:.1%} of its "
                             f"values ({s.reason}; a stand-in code the profile found)")
            values = _values(db, t, c, max_values)
            described = []
            if c.comment:
                described.append(c.comment)
            if values is not None:
                described.append(f"one of {len(values)} value{'s' if len(values) != 1 else ''}: "
                                 + ", ".join(json.dumps(v, ensure_ascii=False) if isinstance(v, str) else str(v)
                                             for v in values))
            if described:
                definitions[key] = "; ".join(described) + " (from the data)"
            columns.append({"column": c, "values": values})
        tables.append({"table": t, "columns": columns})
    for fk_table in profile.tables:
        for fk in fk_table.foreign_keys:
            notes.append(f"{_qualified(fk_table)}.{', '.join(fk.columns)} refers to {fk.ref_table}."
                         f"{', '.join(fk.ref_columns)} (a declared foreign key)")
    for p in profile.join_pairs:
        if p.source != "declared":
            share = "" if p.rho is None else f"; {p.rho:.0%} of the distinct keys match"
            notes.append(f"{p.left_table}.{p.left_column} appears to refer to {p.right_table}.{p.right_column} "
                         f"(inferred from the names{share}); confirm it")
    return {"target": profile.target, "engine": profile.engine, "notes": notes, "definitions": definitions,
            "tables": tables, "pairs": profile.join_pairs, "schema": profile.default_schema}


def draft(db: Database, fmt: str = "vouch", max_values: int = MAX_VALUES) -> str:
    """The draft for ``db`` (an open Database) as text: ``vouch`` (TOML) or ``cortex`` (YAML)."""
    if fmt not in ("vouch", "cortex"):
        raise UserInputError(f"unknown draft format {fmt!r}: vouch (Vouch's TOML) or cortex (a Cortex-style "
                             f"semantic model, YAML)")
    facts = _facts(db, max_values)
    return _vouch(facts) if fmt == "vouch" else _cortex(facts)


def _toml(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def _vouch(facts: dict[str, Any]) -> str:
    lines = [f"# Drafted by `vouch definitions draft` from the profile of {facts['target']} ({facts['engine']}).",
             "# Every entry comes from the data: review each, delete what is wrong, and add what words mean",
             "# here and which tables answer which questions ([[rules]]); see docs/asking.md.",
             "", "notes = ["]
    lines += [f"  {_toml(n)}," for n in facts["notes"]]
    lines += ["]", "", "[definitions]"]
    lines += [f"{_toml(k)} = {_toml(v)}" for k, v in facts["definitions"].items()]
    return "\n".join(lines) + "\n"


def _snake(name: str) -> str:
    out = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"\W+", "_", out).strip("_").lower() or "column"


def _cortex(facts: dict[str, Any]) -> str:
    try:
        import yaml
    except ImportError:
        raise UserInputError("the cortex format is YAML, which needs PyYAML (pip install pyyaml)") from None
    model: dict[str, Any] = {
        "name": _snake(str(facts["target"]).rsplit("/", 1)[-1].split(".")[0]) or "database",
        "description": f"Drafted by vouch definitions draft from the profile of {facts['target']}; review it.",
        "tables": [], "relationships": []}
    for entry in facts["tables"]:
        t = entry["table"]
        logical: dict[str, Any] = {"name": _snake(t.name), "description": t.comment or "",
                                   "base_table": {"schema": t.schema_name or facts["schema"] or "", "table": t.name}}
        if t.primary_key:
            logical["primary_key"] = {"columns": list(t.primary_key)}
        dims, times, measures = [], [], []
        for item in entry["columns"]:
            c, values = item["column"], item["values"]
            field: dict[str, Any] = {"name": _snake(c.name), "expr": c.name, "data_type": c.type or "TEXT"}
            about = [c.comment] if c.comment else []
            about += [f"{s.value:g} stands in for a missing value ({s.share:.1%})" for s in c.stand_ins]
            if about:
                field["description"] = "; ".join(about)
            sample = values if values is not None else [v for v, _ in c.top_values]
            if sample:
                field["sample_values"] = [v if isinstance(v, (int, float, str)) else str(v) for v in sample]
            if _TIME.search(c.type or ""):
                times.append(field)
            elif _NUMBER.search(c.type or "") and not _is_key(t, c):
                measures.append(field)
            else:
                if values is not None:
                    field["is_enum"] = True
                dims.append(field)
        for name, fields in (("dimensions", dims), ("time_dimensions", times), ("facts", measures)):
            if fields:
                logical[name] = fields
        model["tables"].append(logical)
    for p in facts["pairs"]:
        model["relationships"].append({
            "name": f"{_snake(p.left_table)}_{_snake(p.left_column)}_to_{_snake(p.right_table)}",
            "left_table": _snake(p.left_table), "right_table": _snake(p.right_table),
            "relationship_columns": [{"left_column": p.left_column, "right_column": p.right_column}],
            "join_type": "left_outer", "relationship_type": "many_to_one",
            **({} if p.source == "declared" else {"description": "inferred from the names; confirm it"})})
    head = (f"# Drafted by `vouch definitions draft --format cortex` from the profile of {facts['target']}.\n"
            "# A starting Cortex Analyst-style semantic model: review every table, add metrics and verified queries.\n")
    return head + yaml.safe_dump(model, sort_keys=False, allow_unicode=True, width=120)
