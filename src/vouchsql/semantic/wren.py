"""A WrenAI MDL manifest (JSON) in Vouch's terms.

Read: each model's ``tableReference`` (the physical table; a model defined by ``refSql`` is
named in ``unmapped``), its ``columns`` (a display name and description as the column's words,
a calculated column's ``expression`` as a term; relationship columns are links, not data),
``primaryKey`` and ``relationships`` (``condition``, ``joinType``) as notes, ``metrics``
(``measure`` expressions over ``baseObject`` with their ``dimension``s) as terms, ``views``
(a name for a SQL ``statement``) as terms. Everything else is named in ``unmapped``.
"""

from __future__ import annotations

import re
from typing import Any, cast

from .model import LogicalTable, Mapped, Runnable, spaced
from .source import Where, line_of

_TOP = {"catalog", "schema", "models", "relationships", "metrics", "views", "dataSource", "enumDefinitions",
        "cumulativeMetrics"}


def is_wren(data: Any) -> bool:
    models = data.get("models") if isinstance(data, dict) else None
    return isinstance(models, list) and any(isinstance(m, dict) and ("tableReference" in m or "refSql" in m)
                                            for m in models)


def read(data: Any, where: Where) -> Mapped:
    out = Mapped(format="wren")
    where.mapping(data, "the MDL manifest")
    for key in data:
        if key not in _TOP:
            out.unmapped.append(str(key))
    for key in ("enumDefinitions", "cumulativeMetrics"):
        if data.get(key):
            out.unmapped.append(key)
    physical_of: dict[str, str] = {}
    for i, raw in enumerate(where.items(data, "models", "")):
        field = f"models[{i}]"
        m = where.mapping(raw, field)
        name = where.text(m, "name", field)
        ref = m.get("tableReference")
        if not isinstance(ref, dict):
            out.unmapped.append(f"{field} ({name}): defined by refSql, not a table")
            continue
        physical = where.text(ref, "table", f"{field}.tableReference")
        schema = where.text(ref, "schema", f"{field}.tableReference", required=False)
        physical_of[name] = physical
        props = cast("dict[str, Any]", m.get("properties")) if isinstance(m.get("properties"), dict) else {}
        if props.get("description"):
            out.notes.append(f"Table {physical} ('{name}'): {props['description']}")
        out.add_synonyms(physical, [spaced(name), *([str(props["displayName"])] if props.get("displayName") else [])])
        columns: list[tuple[str, str]] = []
        links = {str(c.get("name")).lower() for c in where.items(m, "columns", field)
                 if isinstance(c, dict) and c.get("relationship")}
        for j, rawc in enumerate(where.items(m, "columns", field)):
            cfield = f"{field}.columns[{j}]"
            c = where.mapping(rawc, cfield)
            cname = where.text(c, "name", cfield)
            if c.get("relationship"):
                continue  # a link to another model, read from the relationships
            expr = where.text(c, "expression", cfield, required=False)
            cprops = cast("dict[str, Any]", c.get("properties")) if isinstance(c.get("properties"), dict) else {}
            if c.get("isCalculated") and expr:
                if _crosses(expr, links):
                    # Wren follows the relationship to compute it; as a column of this one
                    # table it cannot be written, so it is a term only
                    out.unmapped.append(f"{cfield} ({name}.{cname}): a calculated column over a relationship "
                                        f"is a term only, not a column of the table")
                else:
                    columns.append((cname, expr))
                out.terms[spaced(cname)] = (f"{cprops['description']}; " if cprops.get("description") else "") + \
                    f"{expr} on {physical} (calculated column {cname})"
                continue
            column = expr or cname
            columns.append((cname, column))
            out.add_synonyms(f"{physical}.{column}", [spaced(cname), *([str(cprops["displayName"])]
                                                                      if cprops.get("displayName") else [])])
            if cprops.get("description"):
                out.terms.setdefault(spaced(cname), f"{cprops['description']} ({column} of {physical})")
        key = m.get("primaryKey")
        if key:
            out.notes.append(f"Each row of {physical} is one {spaced(name)}: key {key}")
        out.logical_tables.append(LogicalTable(name=name, table=physical, schema=schema, columns=tuple(columns)))
    for i, raw in enumerate(where.items(data, "relationships", "")):
        field = f"relationships[{i}]"
        r = where.mapping(raw, field)
        condition = where.text(r, "condition", field)
        kind = where.text(r, "joinType", field, required=False) or "unspecified"
        out.notes.append(f"Join on {condition} ({kind.lower().replace('_', '-')})")
    for i, raw in enumerate(where.items(data, "metrics", "")):
        field = f"metrics[{i}]"
        m = where.mapping(raw, field)
        name = where.text(m, "name", field)
        base = where.text(m, "baseObject", field)
        dims = [where.text(d, "name", f"{field}.dimension") for d in where.items(m, "dimension", field)
                if isinstance(d, dict)]
        table = next((t for t in out.logical_tables if t.name == base), None)
        for j, rawm in enumerate(where.items(m, "measure", field)):
            ms = where.mapping(rawm, f"{field}.measure[{j}]")
            mname = where.text(ms, "name", f"{field}.measure[{j}]")
            expr = where.text(ms, "expression", f"{field}.measure[{j}]")
            by = f" by {', '.join(dims)}" if dims else ""
            out.terms[spaced(mname)] = f"{expr} over {physical_of.get(base, base)}{by} (metric {name})"
            out.runnables.append(Runnable(name=mname, kind="metric",
                                          sql=f"SELECT {expr} FROM __{base}" if table else None, logical=True,
                                          why="" if table else f"its base object {base} is not a model with a table",
                                          source=f"{where.path}:{line_of(ms)}"))
    for i, raw in enumerate(where.items(data, "views", "")):
        field = f"views[{i}]"
        v = where.mapping(raw, field)
        name = where.text(v, "name", field)
        statement = where.text(v, "statement", field)
        out.terms[spaced(name)] = f"the rows of: {statement} (view {name})"
        sql = _over_logical(statement, out.logical_tables)
        out.runnables.append(Runnable(name=name, kind="view", sql=sql, logical=True,
                                      why="" if sql else "its statement does not parse",
                                      source=f"{where.path}:{line_of(v)}"))
    return out


def _crosses(expr: str, links: set[str]) -> bool:
    """The expression reads another model through a relationship column (``payments.amount``)."""
    return any(re.search(rf"(?<![\w.]){re.escape(link)}\s*\.", expr, re.IGNORECASE) for link in links)


def _over_logical(sql: str, tables: list[LogicalTable]) -> str | None:
    """A view's statement names models as tables; written over ``__model`` it runs through the
    same CTEs as a Cortex verified query. None when it does not parse."""
    import sqlglot  # only when a manifest with views is read
    from sqlglot import exp

    names = {t.name.lower(): t.name for t in tables}
    try:
        tree = sqlglot.parse_one(sql)
    except sqlglot.errors.ParseError:
        return None

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and node.name.lower() in names and not node.args.get("db"):
            return exp.table_(f"__{names[node.name.lower()]}", alias=node.alias or None)
        if isinstance(node, exp.Column) and node.table.lower() in names:
            return exp.column(node.name, table=f"__{names[node.table.lower()]}")
        return node

    return tree.transform(rename).sql()
