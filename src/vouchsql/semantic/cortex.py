"""A Snowflake Cortex Analyst semantic model (YAML) in Vouch's terms.

Read: each logical table's ``base_table`` (the physical table), its ``dimensions``,
``time_dimensions``, ``facts`` (and the older ``measures``) as logical columns with their
``expr``, ``synonyms`` and ``sample_values``; ``metrics`` and ``filters`` (table-level and
model-level) as terms with their expression (written over the columns' logical names, with or
without the logical table's name in front: ``SUM(orders.freight)``); ``primary_key`` and
``relationships`` as notes (a relationship naming a table the model lacks is an error);
``custom_instructions`` as a note; ``verified_queries`` (question and SQL over the ``__table``
logical names) as verified queries. Everything else is named in ``unmapped``.
"""

from __future__ import annotations

from typing import Any

from .model import LogicalTable, Mapped, Runnable, VerifiedQuery, logical_alias, spaced
from .source import Where, _kind, line_at, line_of

_TOP = {"name", "description", "tables", "relationships", "verified_queries", "custom_instructions",
        "metrics", "filters"}
_TABLE = {"name", "description", "base_table", "synonyms", "primary_key", "dimensions", "time_dimensions",
          "facts", "measures", "metrics", "filters"}
_COLUMN = {"name", "expr", "description", "synonyms", "data_type", "sample_values", "unique", "is_enum",
           "default_aggregation"}
_COLUMN_KINDS = ("dimensions", "time_dimensions", "facts", "measures")
_MEASURE = {"name", "expr", "description", "synonyms"}
_BASE = {"database", "schema", "table"}
_RELATIONSHIP = {"name", "left_table", "right_table", "relationship_columns", "relationship_type", "join_type"}
_VERIFIED = {"name", "question", "sql", "verified_by", "verified_at", "use_as_onboarding_question"}


def is_cortex(data: Any) -> bool:
    """A mapping with ``tables``: Vouch's own format has no such key, so a malformed Cortex
    model (``tables:`` a mapping, say) is reported as one, not as unknown Vouch keys."""
    return isinstance(data, dict) and "tables" in data


def read(data: Any, where: Where) -> Mapped:
    out = Mapped(format="cortex")
    where.mapping(data, "the semantic model")
    _unknown(out, data, _TOP, "", where)
    if data.get("custom_instructions"):
        out.notes.append(f"Instructions: {where.text(data, 'custom_instructions', '')}")
    by_name: dict[str, LogicalTable] = {}
    if not isinstance(data.get("tables"), list):
        raise where.fail(data, "tables", f"expected a list of logical tables (a Cortex Analyst semantic model), "
                                         f"got {_kind(data.get('tables'))}", "tables")
    for i, raw in enumerate(where.items(data, "tables", "")):
        field = f"tables[{i}]"
        t = where.mapping(raw, field)
        _unknown(out, t, _TABLE, field, where)
        name = where.text(t, "name", field)
        base = where.mapping(t.get("base_table"), f"{field}.base_table") if "base_table" in t else None
        if base is None:
            raise where.fail(t, f"{field}.base_table", "missing: the physical table this logical table reads")
        _unknown(out, base, _BASE, f"{field}.base_table", where)
        physical = where.text(base, "table", f"{field}.base_table")
        schema = where.text(base, "schema", f"{field}.base_table", required=False)
        columns: list[tuple[str, str]] = []
        sources: list[tuple[str, str]] = []
        if t.get("description"):
            out.notes.append(f"Table {physical} ('{name}'): {where.text(t, 'description', field)}")
        out.add_synonyms(physical, [spaced(name), *where.words(t, "synonyms", field)])
        for kind in _COLUMN_KINDS:
            for j, rawc in enumerate(where.items(t, kind, field)):
                cfield = f"{field}.{kind}[{j}]"
                c = where.mapping(rawc, cfield)
                _unknown(out, c, _COLUMN, cfield, where)
                cname = where.text(c, "name", cfield)
                expr = where.sql(c, "expr", cfield, required=False) or cname
                columns.append((cname, expr))
                sources.append((cname, f"{where.path}:{line_at(c, 'expr')}"))
                column = _column_of(expr)
                target = f"{physical}.{column or cname}"
                out.add_synonyms(target, [spaced(cname), *where.words(c, "synonyms", cfield)])
                values = where.words(c, "sample_values", cfield)
                if values:
                    out.values[target] = values
                if c.get("description"):
                    out.terms[spaced(cname)] = (f"{where.text(c, 'description', cfield)} "
                                                f"(column {expr} of {physical})")
                elif column is None:
                    out.terms[spaced(cname)] = f"{expr} on {physical}"
        if t.get("primary_key") is not None:
            pk = t["primary_key"]
            if not isinstance(pk, dict):
                raise where.fail(t, f"{field}.primary_key", f"expected a mapping (columns: [...]), got {_kind(pk)}",
                                 "primary_key")
            _unknown(out, pk, {"columns"}, f"{field}.primary_key", where)
            cols = where.words(pk, "columns", f"{field}.primary_key")
            if cols:
                out.notes.append(f"Each row of {physical} is one {spaced(name)}: key {', '.join(cols)}")
        table = LogicalTable(name=name, table=physical, schema=schema, columns=tuple(columns),
                             sources=tuple(sources))
        by_name[name.lower()] = table
        out.logical_tables.append(table)
        _measures(out, t, field, table, where)
    _measures(out, data, "", None, where)
    for i, raw in enumerate(where.items(data, "relationships", "")):
        field = f"relationships[{i}]"
        r = where.mapping(raw, field)
        _unknown(out, r, _RELATIONSHIP, field, where)
        left, right = where.text(r, "left_table", field), where.text(r, "right_table", field)
        pairs = []
        for j, rc in enumerate(where.items(r, "relationship_columns", field)):
            rcfield = f"{field}.relationship_columns[{j}]"
            rc = where.mapping(rc, rcfield)
            _unknown(out, rc, {"left_column", "right_column"}, rcfield, where)
            pairs.append(f"{left}.{where.text(rc, 'left_column', rcfield)} = "
                         f"{right}.{where.text(rc, 'right_column', rcfield)}")
        missing = [n for n in (left, right) if n.lower() not in by_name]
        if missing:
            rname = where.text(r, "name", field, required=False) or f"{left} to {right}"
            out.runnables.append(Runnable(
                name=rname, kind="relationship", sql=None, broken=True, source=f"{where.path}:{line_of(r)}",
                why=f"{field} names {' and '.join(missing)}, which the model defines no logical table for"))
        kind = where.text(r, "relationship_type", field, required=False) or "unspecified"
        join = where.text(r, "join_type", field, required=False) or "inner"
        names = {n: by_name[n.lower()].table for n in (left, right) if n.lower() in by_name}
        out.notes.append(f"Join {names.get(left, left)} to {names.get(right, right)} on {' and '.join(pairs) or '?'} "
                         f"({kind}, {join} join)")
    for i, raw in enumerate(where.items(data, "verified_queries", "")):
        field = f"verified_queries[{i}]"
        v = where.mapping(raw, field)
        out.verified.append(VerifiedQuery(
            # the question is text only, like SQL (`question: 42` is an error, not the question "42")
            name=where.text(v, "name", field), question=where.sql(v, "question", field),
            sql=where.sql(v, "sql", field), logical=True,
            verified_by=where.text(v, "verified_by", field, required=False),
            source=f"{where.path}:{line_of(v)}"))
        _unknown(out, v, _VERIFIED, field, where)
    return out


def _column_of(expr: str) -> str | None:
    """The physical column an ``expr`` names, bare or quoted (``AlbumId``, ``"AlbumId"``,
    ``"Order Date"``, as a draft writes them); None for an expression."""
    text = expr.strip()
    if len(text) > 2 and (text[0], text[-1]) in (('"', '"'), ("`", "`"), ("[", "]")):
        inner = text[1:-1]
        return inner if text[0] not in inner and "]" not in inner else None
    return text if text.replace("_", "").isalnum() else None


def _measures(out: Mapped, parent: dict[str, Any], field: str, table: LogicalTable | None, where: Where) -> None:
    """Metrics and filters of a table (or of the model): terms, and what `definitions check` runs."""
    prefix = f"{field}." if field else ""
    for kind in ("metrics", "filters"):
        for i, raw in enumerate(where.items(parent, kind, field)):
            mfield = f"{prefix}{kind}[{i}]"
            m = where.mapping(raw, mfield)
            _unknown(out, m, _MEASURE, mfield, where)
            name = where.text(m, "name", mfield)
            expr = where.sql(m, "expr", mfield)
            over = f" over {table.table}" if table else ""
            said = f"{where.text(m, 'description', mfield)}; " if m.get("description") else ""
            if kind == "metrics":
                out.terms[spaced(name)] = f"{said}{expr}{over} (metric {name})"
                sql = f"SELECT {expr} FROM __{table.name}{logical_alias(table.name)}" if table else None
            else:
                out.terms[spaced(name)] = f"{said}the rows{over} where {expr} (filter {name})"
                sql = f"SELECT COUNT(*) FROM __{table.name}{logical_alias(table.name)} WHERE {expr}" if table else None
            for syn in where.words(m, "synonyms", mfield):
                out.terms.setdefault(syn, f"the same as {spaced(name)}")
            out.runnables.append(Runnable(name=name, kind=kind[:-1], sql=sql, logical=True,
                                          why="" if sql else f"a model-level {kind[:-1]} reads its tables "
                                                                 f"by name, joined as the relationships say",
                                          source=f"{where.path}:{line_of(m)}"))


def _unknown(out: Mapped, node: dict[str, Any], known: set[str], field: str, where: Where) -> None:
    for key in node:
        if key not in known:
            out.unmapped.append(f"{field}.{key}" if field else str(key))
