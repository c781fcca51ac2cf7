"""A dbt project's MetricFlow semantic models and metrics in Vouch's terms, read from the YAML
files alone (no dbt installation).

A project folder (``dbt_project.yml``: every ``.yml``/``.yaml`` under its ``model-paths``) or
one YAML file with ``semantic_models:`` and/or ``metrics:``. Read: a semantic model's
``model: ref('x')`` (the physical table ``x``), ``entities`` (keys, as notes), ``dimensions``
(columns with their words; a time dimension's grain as a note), ``measures`` (``agg`` of
``expr``, as terms and as SQL `definitions check` runs); ``metrics`` of type simple, ratio,
derived and cumulative as terms, simple and same-table ratio ones also as SQL, with their
``filter`` where its ``{{ Dimension('entity__name') }}`` references resolve. What does not map
(a ``median`` measure, a cumulative window, a filter naming an unknown dimension…) is named in
``unmapped``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, cast

from ..errors import UserInputError
from .model import LogicalTable, Mapped, Runnable, spaced
from .source import Where, line_of, load_structured, read_text

_AGG = {"sum": "SUM({})", "count": "COUNT({})", "count_distinct": "COUNT(DISTINCT {})", "average": "AVG({})",
        "avg": "AVG({})", "min": "MIN({})", "max": "MAX({})",
        "sum_boolean": "SUM(CASE WHEN {} THEN 1 ELSE 0 END)"}
_REF = re.compile(r"""ref\(\s*(?:['"][^'"]+['"]\s*,\s*)?['"]([^'"]+)['"]\s*(?:,[^)]*)?\)""")
_JINJA = re.compile(r"\{\{\s*(Dimension|TimeDimension|Entity)\(\s*['\"]([^'\"]+)['\"][^)]*\)\s*\}\}")
_MODEL_KEYS = {"name", "description", "model", "defaults", "entities", "dimensions", "measures",
               "primary_entity", "label", "config", "meta"}


def is_dbt(data: Any) -> bool:
    return isinstance(data, dict) and ("semantic_models" in data or "metrics" in data) and "tables" not in data


def read_project(folder: Path) -> Mapped:
    """Every semantic model and metric in the project's model paths."""
    project = folder / "dbt_project.yml"
    where = Where(project)
    paths = ["models"]
    if project.is_file():
        conf = load_structured(read_text(project), project) or {}
        where.mapping(conf, "dbt_project.yml")
        paths = list(where.words(conf, "model-paths", "")) or paths
    files = sorted(p for sub in paths for pattern in ("*.yml", "*.yaml")
                   for p in (folder / sub).rglob(pattern) if p.is_file())
    docs = []
    for f in files:
        data = load_structured(read_text(f), f)
        if is_dbt(data):
            docs.append((data, Where(f)))
    if not docs:
        raise UserInputError(f"{folder}: no semantic_models or metrics in any YAML file under "
                             f"{', '.join(paths)} (is this a dbt project with MetricFlow models?)")
    return read(docs)


def read(docs: list[tuple[dict[str, Any], Where]]) -> Mapped:
    out = Mapped(format="dbt")
    measures: dict[str, tuple[str, LogicalTable]] = {}  # measure name -> (SQL expression, table)
    dimensions: dict[str, tuple[str, str]] = {}  # dimension or entity name -> (expression, physical table)
    for data, where in docs:
        for i, raw in enumerate(where.items(data, "semantic_models", "")):
            field = f"semantic_models[{i}]"
            m = where.mapping(raw, field)
            for key in m:
                if key not in _MODEL_KEYS:
                    out.unmapped.append(f"{where.path}: {field}.{key}")
            name = where.text(m, "name", field)
            ref = where.text(m, "model", field)
            found = _REF.search(ref)
            if not found:
                raise where.fail(m, f"{field}.model", f"expected ref('<model>'), got {ref!r}", "model")
            physical = found.group(1)
            columns: list[tuple[str, str]] = []
            if m.get("description"):
                out.notes.append(f"Table {physical} ('{name}'): {where.text(m, 'description', field)}")
            out.add_synonyms(physical, [spaced(name)])
            for j, rawe in enumerate(where.items(m, "entities", field)):
                e = where.mapping(rawe, f"{field}.entities[{j}]")
                ename = where.text(e, "name", f"{field}.entities[{j}]")
                expr = where.text(e, "expr", f"{field}.entities[{j}]", required=False) or ename
                kind = where.text(e, "type", f"{field}.entities[{j}]", required=False) or "unspecified"
                out.notes.append(f"{physical}.{expr} is the {kind} key of entity '{ename}'")
                dimensions.setdefault(ename, (expr, physical))
                columns.append((ename, expr))
            for j, rawd in enumerate(where.items(m, "dimensions", field)):
                dfield = f"{field}.dimensions[{j}]"
                d = where.mapping(rawd, dfield)
                dname = where.text(d, "name", dfield)
                expr = where.text(d, "expr", dfield, required=False) or dname
                columns.append((dname, expr))
                dimensions[dname] = (expr, physical)
                out.add_synonyms(f"{physical}.{expr}", [spaced(dname)])
                params = cast("dict[str, Any]", d.get("type_params")) if isinstance(d.get("type_params"), dict) else {}
                grain = params.get("time_granularity")
                if grain:
                    out.notes.append(f"{physical}.{expr} ('{dname}') is a time dimension at the grain of a {grain}")
                if d.get("description"):
                    out.terms[spaced(dname)] = f"{where.text(d, 'description', dfield)} ({expr} of {physical})"
            table = LogicalTable(name=name, table=physical, columns=tuple(columns))
            out.logical_tables.append(table)
            for j, rawm in enumerate(where.items(m, "measures", field)):
                mfield = f"{field}.measures[{j}]"
                ms = where.mapping(rawm, mfield)
                mname = where.text(ms, "name", mfield)
                agg = (where.text(ms, "agg", mfield) or "").lower()
                expr = where.text(ms, "expr", mfield, required=False) or mname
                if agg not in _AGG:
                    out.unmapped.append(f"{where.path}:{line_of(ms)}: {mfield} agg '{agg}' (no portable SQL)")
                    continue
                sql_expr = _AGG[agg].format(expr)
                measures[mname] = (sql_expr, table)
                said = f"{where.text(ms, 'description', mfield)}; " if ms.get("description") else ""
                out.terms[spaced(mname)] = f"{said}{sql_expr} over {physical} (measure {mname})"
                out.runnables.append(Runnable(name=mname, kind="measure", sql=f"SELECT {sql_expr} FROM {{from}}",
                                              table=table, source=f"{where.path}:{line_of(ms)}"))
    metrics: dict[str, tuple[str, LogicalTable] | None] = {}
    for data, where in docs:
        for i, raw in enumerate(where.items(data, "metrics", "")):
            field = f"metrics[{i}]"
            m = where.mapping(raw, field)
            name = where.text(m, "name", field)
            kind = (where.text(m, "type", field) or "").lower()
            params = cast("dict[str, Any]", m.get("type_params")) if isinstance(m.get("type_params"), dict) else {}
            said = f"{where.text(m, 'description', field)}; " if m.get("description") else ""
            source = f"{where.path}:{line_of(m)}"
            text, runnable, why = _metric(kind, params, m.get("filter"), measures, metrics, dimensions)
            metrics[name] = runnable
            out.terms[spaced(name)] = f"{said}{text} (metric {name}, {kind or 'no type'})"
            if why:
                out.unmapped.append(f"{source}: {field} ({name}): {why}")
            sql = f"SELECT {runnable[0]} FROM {{from}}" if runnable else None
            out.runnables.append(Runnable(name=name, kind="metric", sql=sql, why=why, source=source,
                                          table=runnable[1] if runnable else None))
    return out


def _measure_name(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("name")
    return str(value) if value else None


def _filter_sql(raw: Any, dimensions: dict[str, tuple[str, str]]) -> tuple[str | None, str]:
    """A metric filter's SQL with its Jinja references resolved to columns, or (None, why)."""
    if raw is None:
        return "", ""
    text = " AND ".join(f"({x})" for x in raw) if isinstance(raw, list) else str(raw)
    missing: list[str] = []

    def column(match: re.Match[str]) -> str:
        ref = match.group(2).split("__")[-1]
        if ref not in dimensions:
            missing.append(match.group(2))
            return match.group(0)
        return dimensions[ref][0]

    sql = _JINJA.sub(column, text)
    if missing or "{{" in sql:
        return None, f"filter references {', '.join(missing) or 'a Jinja expression'} that no dimension defines"
    return sql, ""


# ``metrics`` is a Mapping[Any, …]: it is looked up by a name that may be None (a ratio without a numerator)
def _metric(kind: str, params: dict[str, Any], raw_filter: Any, measures: dict[str, tuple[str, LogicalTable]],
            metrics: Mapping[Any, tuple[str, LogicalTable] | None], dimensions: dict[str, tuple[str, str]],
            ) -> tuple[str, tuple[str, LogicalTable] | None, str]:
    """(the term's text, (SQL expression, table) or None, why it is not runnable)."""
    where_sql, why = _filter_sql(raw_filter, dimensions)
    if kind in ("simple", "cumulative"):
        name = _measure_name(params.get("measure"))
        if name not in measures:
            return f"measure {name}", None, f"measure {name!r} is not defined"
        expr, table = measures[name]
        if where_sql:
            # the filter applies inside the aggregate, as MetricFlow applies it to the rows
            inner = re.match(r"(\w+)\((DISTINCT )?(.*)\)$", expr, re.S)
            assert inner is not None  # every _AGG template is FUNC(...)
            expr = f"{inner.group(1)}({inner.group(2) or ''}CASE WHEN {where_sql} THEN {inner.group(3)} END)"
        text = f"{expr} over {table.table}" + (f" where {where_sql}" if where_sql else "")
        if kind == "cumulative":
            window = params.get("window") or params.get("grain_to_date") or "all time"
            return f"{text}, accumulated over {window}", None, "a cumulative window is not run (it needs a time spine)"
        if where_sql is None:
            return text, None, why
        return text, (expr, table), ""
    if kind == "ratio":
        num, den = _measure_name(params.get("numerator")), _measure_name(params.get("denominator"))
        a, b = metrics.get(num), metrics.get(den)
        text = f"{num} / {den}"
        if a is None or b is None or a[1].table != b[1].table:
            return text, None, "a ratio runs only where both metrics are defined above it on one table"
        return text, (f"CAST({a[0]} AS REAL) / NULLIF({b[0]}, 0)", a[1]), ""
    if kind == "derived":
        expr = str(params.get("expr") or "")
        parts = [_measure_name(x) for x in params.get("metrics") or []]
        return f"{expr} over the metrics {', '.join(p for p in parts if p)}", None, "a derived metric is not run on its own"
    return f"a {kind or 'untyped'} metric", None, f"metric type {kind!r} is not read"
