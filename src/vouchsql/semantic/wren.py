"""A WrenAI MDL manifest (JSON) in Vouch's terms.

Read: each model's ``tableReference`` (the physical table; a model defined by ``refSql`` is
named in ``unmapped``), its ``columns`` (a display name and description as the column's words,
a calculated column's ``expression`` as a term; relationship columns are links, not data),
``primaryKey`` and ``relationships`` (``condition``, ``joinType``) as notes, ``metrics``
(``measure`` expressions over ``baseObject`` with their ``dimension``s) as terms, ``views``
(a name for a SQL ``statement``) as terms; a view with ``properties.question`` is a verified
query (the question and the SQL that answers it). A column without an ``expression`` is the
physical column of its name, quoted in the engine's dialect; so is an ``expression`` that is
one identifier naming a column of the model's table (``"expression": "CustomerId"``), as the
catalogue spells it. Everything else is named in ``unmapped``.
"""

from __future__ import annotations

import re
from typing import Any

from .model import LogicalTable, Mapped, Runnable, VerifiedQuery, spaced
from .source import Where, line_at, line_of

# the keys read; any other is named in ``unmapped`` (``catalog`` and ``schema`` name the MDL's own
# namespace, not the database's: accepted and not used)
_TOP = {"catalog", "schema", "models", "relationships", "metrics", "views"}
_MODEL = {"name", "tableReference", "refSql", "columns", "primaryKey", "properties"}
_COLUMN = {"name", "type", "expression", "isCalculated", "notNull", "relationship", "properties"}
_RELATIONSHIP = {"name", "models", "joinType", "condition", "properties"}
_METRIC = {"name", "baseObject", "dimension", "measure", "properties"}
_MEASURE = {"name", "type", "expression", "isCalculated", "notNull", "properties"}
_VIEW = {"name", "statement", "properties"}
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_wren(data: Any) -> bool:
    models = data.get("models") if isinstance(data, dict) else None
    return isinstance(models, list) and any(isinstance(m, dict) and ("tableReference" in m or "refSql" in m)
                                            for m in models)


def read(data: Any, where: Where) -> Mapped:
    out = Mapped(format="wren")
    where.mapping(data, "the MDL manifest")
    _unknown(out, data, _TOP, "", where)
    physical_of: dict[str, str] = {}
    for i, raw in enumerate(where.items(data, "models", "")):
        field = f"models[{i}]"
        m = where.mapping(raw, field)
        _unknown(out, m, _MODEL, field, where)
        name = where.text(m, "name", field)
        ref = m.get("tableReference")
        if not isinstance(ref, dict):
            out.unmapped.append(f"{field} ({name}): defined by refSql, not a table")
            continue
        physical = where.text(ref, "table", f"{field}.tableReference")
        schema = where.text(ref, "schema", f"{field}.tableReference", required=False)
        _unknown(out, ref, {"catalog", "schema", "table"}, f"{field}.tableReference", where)
        physical_of[name] = physical
        props = _properties(out, m, field, where, {"displayName", "description"})
        if props.get("description"):
            out.notes.append(f"Table {physical} ('{name}'): {props['description']}")
        out.add_synonyms(physical, [spaced(name), *([str(props["displayName"])] if props.get("displayName") else [])])
        columns: list[tuple[str, str]] = []
        sources: list[tuple[str, str]] = []
        identifiers: set[str] = set()
        bare: set[str] = set()  # an expression that is one identifier: a physical column, where the table has it
        links = {str(c.get("name")).lower() for c in where.items(m, "columns", field)
                 if isinstance(c, dict) and c.get("relationship")}
        for j, rawc in enumerate(where.items(m, "columns", field)):
            cfield = f"{field}.columns[{j}]"
            c = where.mapping(rawc, cfield)
            _unknown(out, c, _COLUMN, cfield, where)
            cname = where.text(c, "name", cfield)
            if c.get("relationship"):
                continue  # a link to another model, read from the relationships
            expr = where.sql(c, "expression", cfield, required=False)
            cprops = _properties(out, c, cfield, where, {"displayName", "description"})
            sources.append((cname, f"{where.path}:{line_of(c)}"))
            if expr and _BARE.fullmatch(expr):
                bare.add(cname)  # Wren reads identifiers case-sensitively: quoted as the catalogue spells it
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
            if not expr:
                identifiers.add(cname)  # the physical column of this name, as stored
            out.add_synonyms(f"{physical}.{column}", [spaced(cname), *([str(cprops["displayName"])]
                                                                      if cprops.get("displayName") else [])])
            if cprops.get("description"):
                out.terms.setdefault(spaced(cname), f"{cprops['description']} ({column} of {physical})")
        key = m.get("primaryKey")
        if key:
            out.notes.append(f"Each row of {physical} is one {spaced(name)}: key {key}")
        out.logical_tables.append(LogicalTable(name=name, table=physical, schema=schema, columns=tuple(columns),
                                               identifiers=frozenset(identifiers), sources=tuple(sources),
                                               bare=frozenset(bare)))
    for i, raw in enumerate(where.items(data, "relationships", "")):
        field = f"relationships[{i}]"
        r = where.mapping(raw, field)
        _unknown(out, r, _RELATIONSHIP, field, where)
        condition = where.sql(r, "condition", field)
        models = r.get("models")
        if models is not None and (not isinstance(models, list) or not all(isinstance(x, str) for x in models)):
            raise where.fail(r, f"{field}.models", "expected a list of model names", "models")
        kind = where.text(r, "joinType", field, required=False) or "unspecified"
        said = _properties(out, r, field, where, {"description"}).get("description")
        between = f", between {' and '.join(models)}" if models else ""
        out.notes.append(f"Join on {condition} ({kind.lower().replace('_', '-')}{between})"
                         + (f": {said}" if said else ""))
    for i, raw in enumerate(where.items(data, "metrics", "")):
        field = f"metrics[{i}]"
        m = where.mapping(raw, field)
        _unknown(out, m, _METRIC, field, where)
        name = where.text(m, "name", field)
        base = where.text(m, "baseObject", field)
        mdesc = _properties(out, m, field, where, {"description"}).get("description")
        dims = [where.text(d, "name", f"{field}.dimension") for d in where.items(m, "dimension", field)
                if isinstance(d, dict)]
        table = next((t for t in out.logical_tables if t.name == base), None)
        for j, rawm in enumerate(where.items(m, "measure", field)):
            msfield = f"{field}.measure[{j}]"
            ms = where.mapping(rawm, msfield)
            _unknown(out, ms, _MEASURE, msfield, where)
            mname = where.text(ms, "name", msfield)
            expr = where.sql(ms, "expression", msfield)
            said = _properties(out, ms, msfield, where, {"description"}).get("description") or mdesc
            by = f" by {', '.join(dims)}" if dims else ""
            out.terms[spaced(mname)] = (f"{said}; " if said else "") + \
                f"{expr} over {physical_of.get(base, base)}{by} (metric {name})"
            out.runnables.append(Runnable(name=mname, kind="metric",
                                          sql=f"SELECT {expr} FROM __{base}" if table else None, logical=True,
                                          why="" if table else f"its base object {base} is not a model with a table",
                                          source=f"{where.path}:{line_of(ms)}"))
    for i, raw in enumerate(where.items(data, "views", "")):
        field = f"views[{i}]"
        v = where.mapping(raw, field)
        _unknown(out, v, _VIEW, field, where)
        name = where.text(v, "name", field)
        statement = where.sql(v, "statement", field)
        props = _properties(out, v, field, where, {"question", "description", "summary"})
        said = props.get("description") or props.get("summary")
        out.terms[spaced(name)] = (f"{said}; " if said else "") + f"the rows of: {statement} (view {name})"
        sql = _over_logical(statement, out.logical_tables)
        question = where.text(props, "question", f"{field}.properties", required=False)
        if question and sql:
            # a question with the SQL that answers it: a verified query, checked against answers
            out.verified.append(VerifiedQuery(name=name, question=question, sql=sql, logical=True,
                                              source=f"{where.path}:{line_of(v)}"))
            continue
        out.runnables.append(Runnable(name=name, kind="view", sql=sql, logical=True,
                                      why="" if sql else "its statement does not parse",
                                      source=f"{where.path}:{line_of(v)}"))
    return out


def _unknown(out: Mapped, node: dict[str, Any], known: set[str], field: str, where: Where) -> None:
    for key, value in node.items():
        if key not in known and value not in (None, "", [], {}):  # an empty one holds nothing to read
            out.unmapped.append(f"{where.path}:{line_at(node, key)}: {field}.{key}" if field
                                else f"{where.path}:{line_at(node, key)}: {key}")


def _properties(out: Mapped, node: dict[str, Any], field: str, where: Where, known: set[str]) -> dict[str, Any]:
    """``node.properties`` (a mapping; empty where absent), its keys not read named in ``unmapped``."""
    props = where.sub(node, "properties", field)
    _unknown(out, props, known, f"{field}.properties", where)
    return props


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
