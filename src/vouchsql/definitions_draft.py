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
from typing import TYPE_CHECKING, Any, Callable

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
    return _vouch(facts) if fmt == "vouch" else _cortex(facts, lambda name: _column_expr(db, name))


def _column_expr(db: Database, name: str) -> str:
    """A physical column as an ``expr`` the engine reads back as that column: as written where
    the engine reads the bare name so (a plain identifier it does not fold, or folds to itself),
    else quoted in its dialect (``"AlbumId"`` on PostgreSQL, which would read ``albumid``; a
    name with a space or a keyword anywhere)."""
    from sqlglot import exp
    from sqlglot.dialects.dialect import Dialect

    from .semantic.model import name_sql

    written = name_sql(name, db)
    if written != name:
        return written
    dialect = Dialect.get_or_raise(db.dialect)
    folded = dialect.normalize_identifier(exp.to_identifier(name, quoted=False)).name
    return db.quote(name) if folded != name and dialect.case_sensitive(name) else name


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


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``… where it is taken already; recorded as taken."""
    out, n = name, 2
    while out in taken:
        out, n = f"{name}_{n}", n + 1
    taken.add(out)
    return out


def _database_name(target: str) -> str:
    """The database a connection reads, as far as its target says: a URL's database (its
    first path segment) or a file's stem; empty where the target names none."""
    if "://" in target:
        scheme, rest = target.split("://", 1)
        if scheme.lower() in ("sqlite", "duckdb"):
            target = rest[1:] if rest.startswith("/") else rest
        else:
            path = rest.split("?", 1)[0].split("#", 1)[0]
            _, slash, tail = path.partition("/")
            return tail.split("/", 1)[0] if slash else ""
    stem = re.split(r"[\\/]", target.rstrip("/\\"))[-1]
    return stem.rsplit(".", 1)[0] if "." in stem else stem


def _cortex(facts: dict[str, Any], column_expr: Callable[[str], str]) -> str:
    """The Cortex-style model. Every logical name is the draft's own: a table is named by its
    snake-cased name (its schema too where two schemas hold one name), a column by its
    snake-cased name, and each relationship names those logical tables and columns, as
    Cortex Analyst reads them (primary keys too). A column a relationship joins on, or a
    primary key's, is a dimension. Each ``expr`` is the physical column as ``column_expr``
    writes it for the engine. A relationship inferred from the names is listed in the header
    comment (Cortex's relationships have no field for it)."""
    try:
        import yaml
    except ImportError:
        raise UserInputError("the cortex format is YAML, which needs PyYAML (pip install pyyaml)") from None
    database = _database_name(str(facts["target"]))
    model: dict[str, Any] = {
        "name": _snake(database or "database"),
        "description": f"Drafted by vouch definitions draft from the profile of {facts['target']}; review it.",
        "tables": [], "relationships": []}
    pairs = list(facts["pairs"])
    joined = {(p.left_table.lower(), p.left_column.lower()) for p in pairs}
    joined |= {(p.right_table.lower(), p.right_column.lower()) for p in pairs}
    bare = [_snake(entry["table"].name) for entry in facts["tables"]]
    table_names: set[str] = set()
    logical_table: dict[str, str] = {}  # a table's qualified name, lower-cased → its logical name
    logical_column: dict[tuple[str, str], str] = {}  # (qualified, column), lower-cased → the dimension's name
    schemas: set[str] = set()
    for entry, name in zip(facts["tables"], bare):
        t = entry["table"]
        qualified = _qualified(t)
        lname = _unique(_snake(qualified) if bare.count(name) > 1 else name, table_names)
        logical_table[qualified.lower()] = lname
        schema = t.schema_name or facts["schema"] or ""
        schemas.add(schema)
        logical: dict[str, Any] = {"name": lname, "description": t.comment or "",
                                   "base_table": {"database": database, "schema": schema, "table": t.name}}
        dims, times, measures = [], [], []
        column_names: set[str] = set()
        for item in entry["columns"]:
            c, values = item["column"], item["values"]
            cname = _unique(_snake(c.name), column_names)
            logical_column[(qualified.lower(), c.name.lower())] = cname
            field: dict[str, Any] = {"name": cname, "expr": column_expr(c.name), "data_type": c.type or "TEXT"}
            about = [c.comment] if c.comment else []
            about += [f"{s.value:g} stands in for a missing value ({s.share:.1%})" for s in c.stand_ins]
            if about:
                field["description"] = "; ".join(about)
            sample = values if values is not None else [v for v, _ in c.top_values]
            if sample:
                field["sample_values"] = [v if isinstance(v, (int, float, str)) else str(v) for v in sample]
            if (qualified.lower(), c.name.lower()) in joined or c.name in t.primary_key:
                dims.append(field)
            elif _TIME.search(c.type or ""):
                times.append(field)
            elif _NUMBER.search(c.type or "") and not _is_key(t, c):
                measures.append(field)
            else:
                if values is not None:
                    field["is_enum"] = True
                dims.append(field)
        if t.primary_key:
            logical["primary_key"] = {"columns": [logical_column.get((qualified.lower(), k.lower()), k)
                                                  for k in t.primary_key]}
        for kind, fields in (("dimensions", dims), ("time_dimensions", times), ("facts", measures)):
            if fields:
                logical[kind] = fields
        model["tables"].append(logical)
    relationship_names: set[str] = set()
    inferred: list[str] = []
    for p in pairs:
        left, right = logical_table.get(p.left_table.lower()), logical_table.get(p.right_table.lower())
        left_column = logical_column.get((p.left_table.lower(), p.left_column.lower()))
        right_column = logical_column.get((p.right_table.lower(), p.right_column.lower()))
        if left is None or right is None or left_column is None or right_column is None:
            continue  # a table the draft leaves out (it could not be profiled): noted in the Vouch format
        rname = _unique(f"{left}_{left_column}_to_{right}", relationship_names)
        model["relationships"].append({
            "name": rname, "left_table": left, "right_table": right,
            "relationship_columns": [{"left_column": left_column, "right_column": right_column}],
            "join_type": "left_outer", "relationship_type": "many_to_one"})
        if p.source != "declared":
            inferred.append(rname)
    where = ", ".join(repr(s) for s in sorted(schemas) if s) or "none"
    head = (f"# Drafted by `vouch definitions draft --format cortex` from the profile of {facts['target']}.\n"
            "# A starting Cortex Analyst-style semantic model: review every table, add metrics and verified queries.\n"
            f"# base_table: database {database or '(none: the connection names none)'} and schema {where} are what "
            "this connection calls them;\n"
            "# check that they name the Snowflake database and schema that hold these tables before Cortex reads it.\n")
    for k in range(0, len(inferred), 4):
        head += ("# Relationships inferred from the names, not declared (confirm them): " if k == 0 else "#   ") + \
            ", ".join(inferred[k:k + 4]) + "\n"
    return head + yaml.safe_dump(model, sort_keys=False, allow_unicode=True, width=120)
