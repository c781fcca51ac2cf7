"""A dbt project's MetricFlow semantic models and metrics in Vouch's terms, read from the YAML
files alone (no dbt installation).

A project folder (``dbt_project.yml``: every ``.yml``/``.yaml`` under its ``model-paths``) or
one YAML file with ``semantic_models:`` and/or ``metrics:``. Read: a semantic model's
``model: ref('x')`` (the physical table ``x``), ``entities`` (keys, as notes), ``dimensions``
(columns with their words; a time dimension's grain as a note), ``measures`` (``agg`` of
``expr``, as terms and as SQL `definitions check` runs); ``metrics`` of type simple, ratio,
derived and cumulative as terms, simple and same-table ratio ones also as SQL, with the
metric's ``filter`` and each input's own (``measure: {name, filter, fill_nulls_with}``, a
ratio's ``numerator: {name, filter}``) where its ``{{ Dimension('entity__name') }}`` references
resolve. What does not map (a ``median`` measure, ``saved_queries``, ``meta``…) is named in
``unmapped``; what the file gets wrong (an undefined measure, a filter naming an unknown
dimension, an unknown ``agg``) is a runnable marked ``broken``, an error of `definitions check`.
"""

from __future__ import annotations

import re
from pathlib import Path
from dataclasses import dataclass, replace
from typing import Any

from ..errors import UserInputError
from .model import LogicalTable, Mapped, Runnable, spaced
from .source import Where, line_at, line_of, load_structured, read_text

# MetricFlow's aggregations: (function, DISTINCT, what it aggregates)
_AGG = {"sum": ("SUM", False, "{}"), "count": ("COUNT", False, "{}"), "count_distinct": ("COUNT", True, "{}"),
        "average": ("AVG", False, "{}"), "avg": ("AVG", False, "{}"), "min": ("MIN", False, "{}"),
        "max": ("MAX", False, "{}"), "sum_boolean": ("SUM", False, "CASE WHEN {} THEN 1 ELSE 0 END")}
_NOT_PORTABLE = {"median", "percentile"}
_MF_AGGS = ("sum", "count", "count_distinct", "average", "min", "max", "sum_boolean", "median", "percentile")
_REF = re.compile(r"""ref\(\s*(?:['"][^'"]+['"]\s*,\s*)?['"]([^'"]+)['"]\s*(?:,[^)]*)?\)""")
_JINJA = re.compile(r"\{\{\s*(Dimension|TimeDimension|Entity)\(\s*['\"]([^'\"]+)['\"][^)]*\)\s*\}\}")
# the keys read; any other is named in ``unmapped``
_TOP_READ = {"semantic_models", "metrics"}
_DBT_OTHER = {"version", "models", "sources", "seeds", "snapshots", "macros", "exposures", "analyses", "groups",
              "data_tests", "unit_tests"}  # dbt's other properties: not a semantic layer
_MODEL_KEYS = {"name", "description", "model", "entities", "dimensions", "measures", "label"}
_ENTITY_KEYS = {"name", "type", "expr", "description"}
_DIMENSION_KEYS = {"name", "expr", "type", "type_params", "description", "label"}
_MEASURE_KEYS = {"name", "description", "agg", "expr", "label", "create_metric"}
_METRIC_KEYS = {"name", "description", "type", "type_params", "filter", "label"}
_PARAM_KEYS = {"simple": {"measure"}, "ratio": {"numerator", "denominator"}, "derived": {"expr", "metrics"},
               "cumulative": {"measure", "window", "grain_to_date", "cumulative_type_params"}}
_MEASURE_INPUT = {"name", "filter", "fill_nulls_with"}
_METRIC_INPUT = {"name", "filter", "alias", "offset_window", "offset_to_grain"}


def is_dbt(data: Any) -> bool:
    return isinstance(data, dict) and ("semantic_models" in data or "metrics" in data) and "tables" not in data


def read_project(folder: Path) -> Mapped:
    """Every semantic model and metric in the project's model paths."""
    project = folder / "dbt_project.yml"
    where = Where(project)
    paths = ["models"]
    if project.is_file():
        conf = load_structured(read_text(project), project, empty_ok=True) or {}
        where.mapping(conf, "dbt_project.yml")
        paths = list(where.words(conf, "model-paths", "")) or paths
    files = sorted(p for sub in paths for pattern in ("*.yml", "*.yaml")
                   for p in (folder / sub).rglob(pattern) if p.is_file())
    docs = []
    for f in files:
        data = load_structured(read_text(f), f, empty_ok=True)
        if is_dbt(data):
            docs.append((data, Where(f)))
    if not docs:
        raise UserInputError(f"{folder}: no semantic_models or metrics in any YAML file under "
                             f"{', '.join(paths)} (is this a dbt project with MetricFlow models?)")
    return read(docs)


def read(docs: list[tuple[dict[str, Any], Where]]) -> Mapped:
    out = Mapped(format="dbt")
    measures: dict[str, _Agg] = {}
    dimensions: dict[str, tuple[str, str]] = {}  # dimension or entity name -> (expression, physical table)
    for data, where in docs:
        for key in data:
            if key not in _TOP_READ and key not in _DBT_OTHER:
                out.unmapped.append(f"{where.path}:{line_at(data, key)}: {key}"
                                    + (" (saved queries name metrics to group; they hold no SQL or question)"
                                       if key == "saved_queries" else ""))
        for i, raw in enumerate(where.items(data, "semantic_models", "")):
            field = f"semantic_models[{i}]"
            m = where.mapping(raw, field)
            _unknown(out, m, _MODEL_KEYS, field, where)
            name = where.text(m, "name", field)
            ref = where.text(m, "model", field)
            found = _REF.search(ref)
            if not found:
                raise where.fail(m, f"{field}.model", f"expected ref('<model>'), got {ref!r}", "model")
            physical = found.group(1)
            columns: list[tuple[str, str]] = []
            sources: list[tuple[str, str]] = []
            if m.get("description"):
                out.notes.append(f"Table {physical} ('{name}'): {where.text(m, 'description', field)}")
            label = where.text(m, "label", field, required=False)
            out.add_synonyms(physical, [spaced(name), *([label] if label else [])])
            for j, rawe in enumerate(where.items(m, "entities", field)):
                efield = f"{field}.entities[{j}]"
                e = where.mapping(rawe, efield)
                _unknown(out, e, _ENTITY_KEYS, efield, where)
                ename = where.text(e, "name", efield)
                expr = where.text(e, "expr", efield, required=False) or ename
                kind = where.text(e, "type", efield, required=False) or "unspecified"
                said = f": {where.text(e, 'description', efield)}" if e.get("description") else ""
                out.notes.append(f"{physical}.{expr} is the {kind} key of entity '{ename}'{said}")
                dimensions.setdefault(ename, (expr, physical))
                columns.append((ename, expr))
                sources.append((ename, f"{where.path}:{line_of(e)}"))
            for j, rawd in enumerate(where.items(m, "dimensions", field)):
                dfield = f"{field}.dimensions[{j}]"
                d = where.mapping(rawd, dfield)
                _unknown(out, d, _DIMENSION_KEYS, dfield, where)
                dname = where.text(d, "name", dfield)
                expr = where.text(d, "expr", dfield, required=False) or dname
                columns.append((dname, expr))
                sources.append((dname, f"{where.path}:{line_of(d)}"))
                dimensions[dname] = (expr, physical)
                dlabel = where.text(d, "label", dfield, required=False)
                out.add_synonyms(f"{physical}.{expr}", [spaced(dname), *([dlabel] if dlabel else [])])
                if d.get("type_params") is not None:
                    params = where.sub(d, "type_params", dfield)
                    _unknown(out, params, {"time_granularity"}, f"{dfield}.type_params", where)
                    grain = where.text(params, "time_granularity", f"{dfield}.type_params", required=False)
                    if grain:
                        out.notes.append(f"{physical}.{expr} ('{dname}') is a time dimension at the grain of a {grain}")
                if d.get("description"):
                    out.terms[spaced(dname)] = f"{where.text(d, 'description', dfield)} ({expr} of {physical})"
            table = LogicalTable(name=name, table=physical, columns=tuple(columns), sources=tuple(sources))
            out.logical_tables.append(table)
            for j, rawm in enumerate(where.items(m, "measures", field)):
                mfield = f"{field}.measures[{j}]"
                ms = where.mapping(rawm, mfield)
                _unknown(out, ms, _MEASURE_KEYS, mfield, where)
                mname = where.text(ms, "name", mfield)
                agg = where.text(ms, "agg", mfield).lower()
                expr = where.text(ms, "expr", mfield, required=False) or mname
                source = f"{where.path}:{line_of(ms)}"
                if agg not in _AGG:
                    if agg in _NOT_PORTABLE:
                        out.unmapped.append(f"{source}: {mfield} agg '{agg}' (no portable SQL)")
                        continue
                    out.runnables.append(Runnable(
                        name=mname, kind="measure", sql=None, broken=True, source=source,
                        why=f"agg '{agg}' is not a MetricFlow aggregation ({', '.join(_MF_AGGS)})"))
                    continue
                value = _Agg.of(agg, expr, table)
                measures[mname] = value
                said = f"{where.text(ms, 'description', mfield)}; " if ms.get("description") else ""
                out.terms[spaced(mname)] = f"{said}{value.sql()} over {physical} (measure {mname})"
                mlabel = where.text(ms, "label", mfield, required=False)
                if mlabel:
                    out.terms.setdefault(mlabel, f"the same as {spaced(mname)}")
                out.runnables.append(Runnable(name=mname, kind="measure", sql=f"SELECT {value.sql()} FROM {{from}}",
                                              table=table, source=source))
    raw_metrics: dict[str, tuple[dict[str, Any], str, Where]] = {}
    for data, where in docs:
        for i, raw in enumerate(where.items(data, "metrics", "")):
            field = f"metrics[{i}]"
            m = where.mapping(raw, field)
            name = where.text(m, "name", field)
            raw_metrics.setdefault(name, (m, field, where))
    reader = _Metrics(out, raw_metrics, measures, dimensions)
    for name, (m, field, where) in raw_metrics.items():
        got = reader.resolve(name)
        said = f"{where.text(m, 'description', field)}; " if m.get("description") else ""
        kind = (where.text(m, "type", field, required=False) or "").lower()
        out.terms[spaced(name)] = f"{said}{got.text} (metric {name}, {kind or 'no type'})"
        label = where.text(m, "label", field, required=False)
        if label:
            out.terms.setdefault(label, f"the same as {spaced(name)}")
        source = f"{where.path}:{line_of(m)}"
        if got.why and not got.broken:
            out.unmapped.append(f"{source}: {field} ({name}): {got.why}")
        sql = f"SELECT {_sql(got.value)} FROM {{from}}" if got.value is not None else None
        out.runnables.append(Runnable(name=name, kind="metric", sql=sql, why=got.why, source=source,
                                      table=got.value.table if got.value is not None else None, broken=got.broken))
    return out


@dataclass(frozen=True)
class _Agg:
    """One aggregate over one table: ``func([DISTINCT] inner)``, with the rows it reads
    narrowed by ``where`` (inside the aggregate, as MetricFlow applies a filter) and NULL
    replaced by ``fill``."""

    func: str
    inner: str
    table: LogicalTable
    distinct: bool = False
    where: tuple[str, ...] = ()
    fill: str | None = None

    @classmethod
    def of(cls, agg: str, expr: str, table: LogicalTable) -> _Agg:
        func, distinct, inner = _AGG[agg]
        return cls(func, inner.format(expr), table, distinct)

    def sql(self) -> str:
        inner = self.inner
        if self.where:
            cond = self.where[0] if len(self.where) == 1 else " AND ".join(f"({w})" for w in self.where)
            inner = f"CASE WHEN {cond} THEN {inner} END"
        out = f"{self.func}({'DISTINCT ' if self.distinct else ''}{inner})"
        return f"COALESCE({out}, {self.fill})" if self.fill is not None else out


@dataclass(frozen=True)
class _Ratio:
    numerator: _Agg
    denominator: _Agg

    @property
    def table(self) -> LogicalTable:
        return self.numerator.table

    def sql(self) -> str:
        return f"CAST({self.numerator.sql()} AS REAL) / NULLIF({self.denominator.sql()}, 0)"


def _sql(value: _Agg | _Ratio) -> str:
    return value.sql()


@dataclass(frozen=True)
class _Got:
    """A metric read: the term's text, what runs (None where it does not), why it does not,
    and whether that is the file's fault (an undefined measure) rather than Vouch's."""

    text: str
    value: _Agg | _Ratio | None = None
    why: str = ""
    broken: bool = False


class _Metrics:
    """Each metric resolved by name, in any order (a ratio may name metrics defined below it)."""

    def __init__(self, out: Mapped, raw: dict[str, tuple[dict[str, Any], str, Where]],
                 measures: dict[str, _Agg], dimensions: dict[str, tuple[str, str]]):
        self.out, self.raw, self.measures, self.dimensions = out, raw, measures, dimensions
        self.done: dict[str, _Got] = {}
        self.busy: set[str] = set()

    def resolve(self, name: str) -> _Got:
        if name in self.done:
            return self.done[name]
        if name in self.busy:
            return _Got(f"metric {name}", None, f"metric {name!r} is defined in terms of itself", True)
        self.busy.add(name)
        try:
            got = self._read(*self.raw[name])
        finally:
            self.busy.discard(name)
        self.done[name] = got
        return got

    def _read(self, m: dict[str, Any], field: str, where: Where) -> _Got:
        _unknown(self.out, m, _METRIC_KEYS, field, where)
        kind = (where.text(m, "type", field, required=False) or "").lower()
        params = where.sub(m, "type_params", field)
        _unknown(self.out, params, _PARAM_KEYS.get(kind, set()), f"{field}.type_params", where)
        conds, why = self._filters(m.get("filter"))
        if why:
            return _Got(f"a {kind or 'untyped'} metric", None, why, True)
        if kind in ("simple", "cumulative"):
            name, filt, fill = self._input(params.get("measure"), f"{field}.type_params.measure", where, "measure")
            if name is None:
                return _Got("no measure", None, "type_params.measure is missing", True)
            if name not in self.measures:
                return _Got(f"measure {name}", None, f"measure {name!r} is not defined", True)
            more, why = self._filters(filt)
            if why:
                return _Got(f"measure {name}", None, why, True)
            value = self.measures[name]
            value = replace(value, where=value.where + tuple(conds) + tuple(more), fill=fill)
            text = f"{value.sql()} over {value.table.table}"
            if kind == "cumulative":
                return _Got(f"{text}, {self._window(params, field, where)}", None,
                            "a cumulative metric is not run (it accumulates over a time spine)")
            return _Got(text, value)
        if kind == "ratio":
            parts, offsets = [], []
            for side in ("numerator", "denominator"):
                name, filt, _ = self._input(params.get(side), f"{field}.type_params.{side}", where, "metric")
                if name is None:
                    return _Got("a ratio", None, f"type_params.{side} is missing", True)
                if name not in self.raw:
                    return _Got(f"a ratio over {name}", None, f"metric {name!r} ({side}) is not defined", True)
                got = self.resolve(name)
                more, why = self._filters(filt)
                if why or got.broken:
                    return _Got(f"a ratio over {name}", None, why or f"its {side} {name}: {got.why}", True)
                given = params.get(side)
                raw_input: dict[str, Any] = given if isinstance(given, dict) else {}
                offset = raw_input.get("offset_window") or raw_input.get("offset_to_grain")
                if offset:
                    offsets.append(f"{side} offset {offset}")
                alias = f" (as {raw_input['alias']})" if raw_input.get("alias") else ""
                parts.append((name + alias, got, tuple(conds) + tuple(more)))
            text = " / ".join(f"{n}" + (f" where {' and '.join(c)}" if c else "") for n, _, c in parts)
            if offsets:
                return _Got(f"{text}, {', '.join(offsets)}", None, "an offset metric input needs a time spine: not run")
            values = [g.value for _, g, _ in parts]
            if not all(isinstance(v, _Agg) for v in values):
                return _Got(text, None, "a ratio runs where both its metrics are simple metrics that run")
            num, den = (replace(v, where=v.where + c) for v, (_, _, c) in zip(values, parts)
                        if isinstance(v, _Agg))
            if num.table.table != den.table.table:
                return _Got(text, None, "a ratio runs only where both its metrics read one table "
                                        f"({num.table.table} and {den.table.table} need a join)")
            return _Got(text, _Ratio(num, den))
        if kind == "derived":
            expr = where.sql(params, "expr", f"{field}.type_params", required=False) or ""
            inputs = []
            for j, raw in enumerate(where.items(params, "metrics", f"{field}.type_params")):
                ifield = f"{field}.type_params.metrics[{j}]"
                name, filt, _ = self._input(raw, ifield, where, "metric")
                if name is None:
                    continue
                if name not in self.raw:
                    return _Got(f"{expr} over {name}", None, f"metric {name!r} is not defined", True)
                extra = []
                if isinstance(raw, dict):
                    for key, say in (("offset_window", "offset by {}"), ("offset_to_grain", "offset to the {}"),
                                     ("alias", "as {}"), ("filter", "where {}")):
                        if raw.get(key):
                            extra.append(say.format(raw[key] if key != "filter" else filt))
                inputs.append(name + (f" ({', '.join(extra)})" if extra else ""))
            return _Got(f"{expr} over the metrics {', '.join(inputs)}", None, "a derived metric is not run on its own")
        if kind == "conversion":
            return _Got("a conversion metric", None, "metric type 'conversion' is not read")
        return _Got(f"a {kind or 'untyped'} metric", None,
                    f"metric type {kind!r} is not a MetricFlow type (simple, ratio, cumulative, derived, conversion)",
                    True)

    def _input(self, value: Any, field: str, where: Where, what: str) -> tuple[str | None, Any, str | None]:
        """(name, filter, fill_nulls_with as SQL) of a metric input: a name, or a mapping;
        the mapping's keys not read are named in ``unmapped``."""
        if value is None:
            return None, None, None
        if not isinstance(value, dict):
            if isinstance(value, (list, bool)):
                raise where.fail(value, field, f"expected a {what} name or a mapping with name")
            return str(value).strip() or None, None, None
        known = _MEASURE_INPUT if what == "measure" else _METRIC_INPUT
        _unknown(self.out, value, known, field, where)
        name = where.text(value, "name", field)
        fill = value.get("fill_nulls_with")
        if fill is not None and (isinstance(fill, bool) or not isinstance(fill, (int, float))):
            raise where.fail(value, f"{field}.fill_nulls_with", "expected a number", "fill_nulls_with")
        return name, value.get("filter"), None if fill is None else repr(fill)

    def _filters(self, raw: Any) -> tuple[list[str], str]:
        """A filter's conditions with their Jinja references resolved to columns, or why not."""
        if raw is None:
            return [], ""
        out = []
        for text in (raw if isinstance(raw, list) else [raw]):
            sql, why = _filter_sql(str(text).strip(), self.dimensions)
            if sql is None:
                return [], why
            out.append(sql)
        return out, ""

    def _window(self, params: dict[str, Any], field: str, where: Where) -> str:
        """What a cumulative metric accumulates over, in words."""
        inner = where.sub(params, "cumulative_type_params", f"{field}.type_params")
        if inner:
            _unknown(self.out, inner, {"window", "grain_to_date", "period_agg"},
                     f"{field}.type_params.cumulative_type_params", where)
        window = inner.get("window") or params.get("window")
        grain = inner.get("grain_to_date") or params.get("grain_to_date")
        text = (f"accumulated over a trailing window of {window}" if window
                else f"accumulated from the start of each {grain} ({grain} to date)" if grain
                else "accumulated over all time")
        period = inner.get("period_agg")
        return f"{text}, taking the {period} value of each period" if period else text


def _filter_sql(raw: str, dimensions: dict[str, tuple[str, str]]) -> tuple[str | None, str]:
    """A filter's SQL with its Jinja references resolved to columns, or (None, why)."""
    missing: list[str] = []

    def column(match: re.Match[str]) -> str:
        ref = match.group(2).split("__")[-1]
        if ref not in dimensions:
            missing.append(match.group(2))
            return match.group(0)
        expr = dimensions[ref][0]
        return expr if re.fullmatch(r"[\w.]+", expr) else f"({expr})"

    sql = _JINJA.sub(column, raw)
    if missing or "{{" in sql:
        return None, f"filter references {', '.join(missing) or 'a Jinja expression'} that no dimension defines"
    return sql, ""


def _unknown(out: Mapped, node: dict[str, Any], known: set[str], field: str, where: Where) -> None:
    for key in node:
        if key not in known:
            out.unmapped.append(f"{where.path}:{line_at(node, key)}: {field}.{key}")
