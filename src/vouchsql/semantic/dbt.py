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
resolve: the entity names the semantic model (the measure's own, or the one whose primary key
it is, joined through the measure's foreign key of it); a measure's ``non_additive_dimension``
counts only the rows at that dimension's MAX or MIN. What does not map (a ``median`` measure, ``saved_queries``, ``meta``…) is named in
``unmapped``; what the file gets wrong (an undefined measure, a filter naming an unknown
dimension, an unknown ``agg``) is a runnable marked ``broken``, an error of `definitions check`.
"""

from __future__ import annotations

import re
from pathlib import Path
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

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
_MODEL_KEYS = {"name", "description", "model", "entities", "dimensions", "measures", "label", "primary_entity"}
_ENTITY_KEYS = {"name", "type", "expr", "description"}
_DIMENSION_KEYS = {"name", "expr", "type", "type_params", "description", "label"}
_MEASURE_KEYS = {"name", "description", "agg", "expr", "label", "create_metric", "non_additive_dimension"}
_METRIC_KEYS = {"name", "description", "type", "type_params", "filter", "label"}
_PARAM_KEYS = {"simple": {"measure"}, "ratio": {"numerator", "denominator"}, "derived": {"expr", "metrics"},
               "cumulative": {"measure", "window", "grain_to_date", "cumulative_type_params"},
               "conversion": {"conversion_type_params"}}
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
    models: dict[str, _Model] = {}
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
            entities: dict[str, tuple[str, str]] = {}
            dims: dict[str, str] = {}
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
                entities[ename] = (kind.lower(), expr)
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
                dims[dname] = expr
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
            keyed = {n for n, (k, _) in entities.items() if k in _ROW_KEYS}
            named = where.text(m, "primary_entity", field, required=False)
            if named:
                out.notes.append(f"Each row of {physical} is one '{named}' (the primary entity of '{name}')")
            if name in models:  # MetricFlow refuses two semantic models of one name
                out.runnables.append(Runnable(
                    name=name, kind="semantic model", sql=None, broken=True, source=f"{where.path}:{line_of(m)}",
                    why=f"a second semantic model named {name}; names must be unique, and this one is not read"))
                continue
            model = _Model(name, table, entities, dims, keyed | ({named} if named else set()))
            models[name] = model
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
                window, why = _non_additive(out, ms, mfield, where, model, mname)
                if why:
                    out.runnables.append(Runnable(name=mname, kind="measure", sql=None, broken=True, source=source,
                                                  why=why))
                    continue
                value = replace(_Agg.of(agg, expr, table), window=window)
                measures[mname] = value
                said = f"{where.text(ms, 'description', mfield)}; " if ms.get("description") else ""
                out.terms[spaced(mname)] = f"{said}{value.text()} (measure {mname})"
                mlabel = where.text(ms, "label", mfield, required=False)
                if mlabel:
                    out.terms.setdefault(mlabel, f"the same as {spaced(mname)}")
                src, joined = _source([value])
                out.runnables.append(Runnable(name=mname, kind="measure", sql=f"SELECT {value.sql()} FROM {src}",
                                              table=table, joins=joined, source=source))
    raw_metrics: dict[str, tuple[dict[str, Any], str, Where]] = {}
    for data, where in docs:
        for i, raw in enumerate(where.items(data, "metrics", "")):
            field = f"metrics[{i}]"
            m = where.mapping(raw, field)
            name = where.text(m, "name", field)
            if name in raw_metrics:  # MetricFlow refuses a project with two metrics of one name
                first = raw_metrics[name]
                out.runnables.append(Runnable(
                    name=name, kind="metric", sql=None, broken=True, source=f"{where.path}:{line_of(m)}",
                    why=f"a second metric named {name} (the first is at {first[2].path}:{line_of(first[0])}); "
                        f"names must be unique, and this one is not read"))
                continue
            raw_metrics[name] = (m, field, where)
    reader = _Metrics(out, raw_metrics, measures, models)
    for name, (m, field, where) in raw_metrics.items():
        got = reader.resolve(name)
        said = f"{where.text(m, 'description', field)}; " if m.get("description") else ""
        kind = (where.text(m, "type", field, required=False) or "").lower()
        out.terms[spaced(name)] = f"{said}{got.text} (metric {name}, {kind or 'no type'})"
        label = where.text(m, "label", field, required=False)
        if label:
            out.terms.setdefault(label, f"the same as {spaced(name)}")
        source = f"{where.path}:{line_of(m)}"
        # a metric read as a term but not run is listed once, as NOT RUN with why (not as unread)
        if got.value is None:
            out.runnables.append(Runnable(name=name, kind="metric", sql=None, why=got.why, source=source,
                                          broken=got.broken))
            continue
        src, joined = _source(got.value.parts())
        out.runnables.append(Runnable(name=name, kind="metric", sql=f"SELECT {got.value.sql()} FROM {src}",
                                      source=source, table=got.value.table, joins=joined))
    return out


_ROW_KEYS = ("primary", "unique")  # entity types whose key names one row: a join to them adds no rows


@dataclass
class _Model:
    """One semantic model as filters resolve against it: its table, entities (name → (type,
    expression)), dimensions (name → expression), and the entities a ``entity__dimension``
    reference may name it by (its primary and unique entities, its ``primary_entity``)."""

    name: str
    table: LogicalTable
    entities: dict[str, tuple[str, str]]
    dims: dict[str, str]
    named_by: set[str]

    def column(self, name: str) -> str | None:
        if name in self.dims:
            return self.dims[name]
        return self.entities[name][1] if name in self.entities else None


class _Cond(NamedTuple):
    """A filter condition: the SQL that runs, and the same in words for the term (a joined
    dimension named by its table, not by the alias the SQL reads it under)."""

    sql: str
    text: str


@dataclass(frozen=True)
class _Join:
    """A many-to-one join from a measure's table to another semantic model's, through an
    entity that is a foreign key on the first and the primary (or unique) key of the second:
    the dimensions ``columns`` (alias, expression) are read from the second."""

    entity: str
    fk: str
    target: LogicalTable
    key: str
    columns: tuple[tuple[str, str], ...]

    @property
    def alias(self) -> str:
        return f"vouch_{_word(self.entity)}"


@dataclass(frozen=True)
class _Window:
    """A measure's ``non_additive_dimension``: only the rows at the dimension's latest (MAX) or
    earliest (MIN) value count, within each of the ``groups`` (entity, expression) where given."""

    func: str
    name: str
    expr: str
    groups: tuple[tuple[str, str], ...]
    alias: str

    def text(self) -> str:
        which = "latest" if self.func == "MAX" else "earliest"
        per = f" of each {', '.join(g for g, _ in self.groups)}" if self.groups else ""
        return (f"only the rows at the {which} {self.name}{per} ({self.expr} equal to its {self.func}: "
                f"non-additive over {self.name})")


@dataclass(frozen=True)
class _Agg:
    """One aggregate over one table: ``func([DISTINCT] inner)``, with the rows it reads
    narrowed by ``where`` (inside the aggregate, as MetricFlow applies a filter), NULL
    replaced by ``fill``, other semantic models' dimensions read through ``joins``, and a
    non-additive dimension's ``window``."""

    func: str
    inner: str
    table: LogicalTable
    distinct: bool = False
    where: tuple[_Cond, ...] = ()
    fill: str | None = None
    joins: tuple[_Join, ...] = ()
    window: _Window | None = None

    @classmethod
    def of(cls, agg: str, expr: str, table: LogicalTable) -> _Agg:
        func, distinct, inner = _AGG[agg]
        return cls(func, inner.format(expr), table, distinct)

    def parts(self) -> list[_Agg]:
        return [self]

    def sql(self, words: bool = False) -> str:
        conds = [c.text if words else c.sql for c in self.where]
        if self.window is not None and not words:
            conds.append(f"{self.window.expr} = {self.window.alias}")
        inner = self.inner
        if conds:
            cond = conds[0] if len(conds) == 1 else " AND ".join(f"({w})" for w in conds)
            inner = f"CASE WHEN {cond} THEN {inner} END"
        out = f"{self.func}({'DISTINCT ' if self.distinct else ''}{inner})"
        return f"COALESCE({out}, {self.fill})" if self.fill is not None else out

    def text(self) -> str:
        """The aggregate in words for the term: its table, the joins its filters read, the window."""
        out = f"{self.sql(words=True)} over {self.table.table}"
        for j in self.joins:
            out += (f", joined to {j.target.table} through entity {j.entity} "
                    f"({self.table.table}.{j.fk} = {j.target.table}.{j.key})")
        return out + (f", {self.window.text()}" if self.window is not None else "")


@dataclass(frozen=True)
class _Ratio:
    numerator: _Agg
    denominator: _Agg

    @property
    def table(self) -> LogicalTable:
        return self.numerator.table

    def parts(self) -> list[_Agg]:
        return [self.numerator, self.denominator]

    def sql(self) -> str:
        # * 1.0, as MetricFlow writes it: a decimal division on every engine (CAST AS REAL is a
        # 4-byte float on PostgreSQL and DuckDB, and no type at all to MariaDB's CAST)
        return f"({self.numerator.sql()}) * 1.0 / NULLIF({self.denominator.sql()}, 0)"


def _source(aggs: list[_Agg]) -> tuple[str, tuple[LogicalTable, ...]]:
    """What the aggregates read: ``{from}`` (the measure's table), or, where a filter reads
    another semantic model or a window narrows the rows, that table with each window computed
    beside its rows and each joined model's dimensions under their aliases (``{join0}``… for
    the joined tables): ``(SELECT *, MAX(d) OVER () AS vouch_w_m, fk AS vouch_fk_e FROM {from})
    AS vouch_m LEFT JOIN (SELECT key AS vouch_key, expr AS d_x FROM {join0}) AS vouch_e ON …``.
    The measure's own expressions read the first, unqualified, and meet no name of the second."""
    joins: dict[str, _Join] = {}
    windows: dict[str, _Window] = {}
    for agg in aggs:
        if agg.window is not None:
            windows[agg.window.alias] = agg.window
        for j in agg.joins:
            have = joins.get(j.entity)
            joins[j.entity] = j if have is None else \
                replace(have, columns=have.columns + tuple(c for c in j.columns if c not in have.columns))
    if not joins and not windows:
        return "{from}", ()
    extra = [f"{w.func}({w.expr}) OVER ({'PARTITION BY ' + ', '.join(e for _, e in w.groups) if w.groups else ''})"
             f" AS {w.alias}" for w in windows.values()]
    extra += [f"{j.fk} AS vouch_fk_{_word(j.entity)}" for j in joins.values()]
    sql = f"(SELECT *, {', '.join(extra)} FROM {{from}}) AS vouch_m"
    for k, j in enumerate(joins.values()):
        cols = ", ".join(f"{expr} AS {alias}" for alias, expr in j.columns)
        sql += (f" LEFT JOIN (SELECT {j.key} AS vouch_key, {cols} FROM {{join{k}}}) AS {j.alias}"
                f" ON vouch_m.vouch_fk_{_word(j.entity)} = {j.alias}.vouch_key")
    return sql, tuple(j.target for j in joins.values())


def _word(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _non_additive(out: Mapped, ms: dict[str, Any], field: str, where: Where, model: _Model,
                  measure: str) -> tuple[_Window | None, str]:
    """A measure's ``non_additive_dimension`` (``name``, ``window_choice`` min or max, the
    default min, ``window_groupings``: entities of its model), or why it is wrong."""
    if ms.get("non_additive_dimension") is None:
        return None, ""
    nfield = f"{field}.non_additive_dimension"
    nad = where.sub(ms, "non_additive_dimension", field)
    _unknown(out, nad, {"name", "window_choice", "window_groupings"}, nfield, where)
    dim = where.text(nad, "name", nfield)
    choice = (where.text(nad, "window_choice", nfield, required=False) or "min").lower()
    if choice not in ("min", "max"):
        return None, f"{nfield}.window_choice {choice!r} is not min or max"
    expr = model.dims.get(dim)
    if expr is None:
        return None, f"{nfield}.name {dim!r} is not a dimension of semantic model {model.name}"
    groups = []
    for g in where.words(nad, "window_groupings", nfield):
        if g not in model.entities:
            return None, f"{nfield}.window_groupings: {g!r} is not an entity of semantic model {model.name}"
        groups.append((g, model.entities[g][1]))
    return _Window(choice.upper(), dim, expr, tuple(groups), f"vouch_w_{_word(measure)}"), ""


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
                 measures: dict[str, _Agg], models: dict[str, _Model]):
        self.out, self.raw, self.measures, self.models = out, raw, measures, models
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
        filt = _filter_of(m, field, where)
        if kind in ("simple", "cumulative"):
            name, more, fill = self._input(params.get("measure"), f"{field}.type_params.measure", where, "measure")
            if name is None:
                return _Got("no measure", None, "type_params.measure is missing", True)
            if name not in self.measures:
                return _Got(f"measure {name}", None, f"measure {name!r} is not defined", True)
            value, _, why, broken = self._narrow(self.measures[name], filt, more)
            value = replace(value, fill=fill)
            if why:
                said = " and ".join(str(f).strip() for f in (filt, more) if f is not None)
                return _Got(f"{value.text()}, filtered by {said}", None, why, broken)
            text = value.text()
            if kind == "cumulative":
                return _Got(f"{text}, {self._window(params, field, where)}", None,
                            "a cumulative metric is not run (it accumulates over a time spine)")
            return _Got(text, value)
        if kind == "ratio":
            parts: list[tuple[str, _Got, Any]] = []
            offsets = []
            for side in ("numerator", "denominator"):
                name, more, _ = self._input(params.get(side), f"{field}.type_params.{side}", where, "metric")
                if name is None:
                    return _Got("a ratio", None, f"type_params.{side} is missing", True)
                if name not in self.raw:
                    return _Got(f"a ratio over {name}", None, f"metric {name!r} ({side}) is not defined", True)
                got = self.resolve(name)
                if got.broken:
                    return _Got(f"a ratio over {name}", None, f"its {side} {name}: {got.why}", True)
                given = params.get(side)
                raw_input: dict[str, Any] = given if isinstance(given, dict) else {}
                offset = raw_input.get("offset_window") or raw_input.get("offset_to_grain")
                if offset:
                    offsets.append(f"{side} offset {offset}")
                alias = f" (as {raw_input['alias']})" if raw_input.get("alias") else ""
                parts.append((name + alias, got, more))
            values, texts, whys = [], [], []
            for label, got, more in parts:
                if not isinstance(got.value, _Agg):
                    given_filters = [str(f).strip() for f in (filt, more) if f is not None]
                    texts.append(label + (f" where {' and '.join(given_filters)}" if given_filters else ""))
                    whys.append("a ratio runs where both its metrics are simple metrics that run")
                    continue
                value, conds, why, broken = self._narrow(got.value, filt, more)
                if why and broken:
                    return _Got(f"a ratio over {label}", None, why, True)
                if why:
                    given_filters = [str(f).strip() for f in (filt, more) if f is not None]
                    texts.append(label + f" where {' and '.join(given_filters)}")
                    whys.append(why)
                    continue
                texts.append(label + (f" where {' and '.join(c.text for c in conds)}" if conds else ""))
                values.append(value)
            text = " / ".join(texts)
            if offsets:
                return _Got(f"{text}, {', '.join(offsets)}", None, "an offset metric input needs a time spine: not run")
            if whys:
                return _Got(text, None, whys[0])
            num, den = values
            if num.table.table != den.table.table:
                return _Got(text, None, "a ratio runs only where both its metrics read one table "
                                        f"({num.table.table} and {den.table.table} need a join)")
            return _Got(text, _Ratio(num, den))
        if kind == "derived":
            expr = where.sql(params, "expr", f"{field}.type_params", required=False) or ""
            inputs = []
            for j, raw in enumerate(where.items(params, "metrics", f"{field}.type_params")):
                ifield = f"{field}.type_params.metrics[{j}]"
                name, more, _ = self._input(raw, ifield, where, "metric")
                if name is None:
                    continue
                if name not in self.raw:
                    return _Got(f"{expr} over {name}", None, f"metric {name!r} is not defined", True)
                extra = []
                if isinstance(raw, dict):
                    for key, say in (("offset_window", "offset by {}"), ("offset_to_grain", "offset to the {}"),
                                     ("alias", "as {}"), ("filter", "where {}")):
                        if raw.get(key):
                            extra.append(say.format(raw[key] if key != "filter" else more))
                inputs.append(name + (f" ({', '.join(extra)})" if extra else ""))
            said = f", where {str(filt).strip()}" if filt is not None else ""
            return _Got(f"{expr} over the metrics {', '.join(inputs)}{said}", None,
                        "a derived metric is not run on its own")
        if kind == "conversion":
            return _Got(self._conversion(params, field, where), None,
                        "a term only; not run: a conversion metric follows each entity from a base event to a "
                        "conversion event within a window")
        return _Got(f"a {kind or 'untyped'} metric", None,
                    f"metric type {kind!r} is not a MetricFlow type (simple, ratio, cumulative, derived, conversion)",
                    True)

    def _narrow(self, value: _Agg, *raws: Any) -> tuple[_Agg, list[_Cond], str, bool]:
        """``value`` with the filters ``raws`` (each None, a filter or a list of them) applied:
        each ``{{ Dimension('entity__name') }}`` resolved against the measure's semantic model
        (a dimension of another model read through a join). Also the conditions added, and why
        a filter cannot apply (with whether that is the file's fault)."""
        if value.window is not None and any(raw is not None for raw in raws):
            return (value, [], f"a filter on a measure with a non_additive_dimension ({value.window.name}) is not "
                               f"run (its {value.window.func} window and the filter would have to apply in "
                               f"MetricFlow's order)", False)
        home = self.models[value.table.name]
        conds: list[_Cond] = []
        joins = list(value.joins)
        for raw in raws:
            if raw is None:
                continue
            for text in (raw if isinstance(raw, list) else [raw]):
                cond, more, why, broken = _filter_sql(str(text).strip(), home, self.models)
                if cond is None:
                    return value, [], why, broken
                conds.append(cond)
                joins += more
        return replace(value, where=value.where + tuple(conds), joins=tuple(joins)), conds, "", False

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
        return name, _filter_of(value, field, where), None if fill is None else repr(fill)

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

    def _conversion(self, params: dict[str, Any], field: str, where: Where) -> str:
        """A conversion metric in words, from its ``conversion_type_params``."""
        pfield = f"{field}.type_params.conversion_type_params"
        inner = where.sub(params, "conversion_type_params", f"{field}.type_params")
        _unknown(self.out, inner, {"base_measure", "conversion_measure", "entity", "window", "calculation",
                                   "constant_properties"}, pfield, where)

        def measure(key: str) -> str:
            name, _, _ = self._input(inner.get(key), f"{pfield}.{key}", where, "measure")
            return name or "?"

        calc = where.text(inner, "calculation", pfield, required=False) or "conversion_rate"
        entity = where.text(inner, "entity", pfield, required=False)
        window = where.text(inner, "window", pfield, required=False)
        return (f"a conversion metric: the {calc.replace('_', ' ')} from {measure('base_measure')} to "
                f"{measure('conversion_measure')}" + (f" of each {entity}" if entity else "")
                + (f" within {window}" if window else ""))


def _filter_sql(raw: str, home: _Model, models: dict[str, _Model]) -> tuple[_Cond | None, list[_Join], str, bool]:
    """A filter as a condition with its Jinja references resolved against ``home`` (the
    measure's semantic model), the joins it needs, or (None, [], why, whether the file is wrong)."""
    problems: list[_Unresolved] = []
    joins: list[_Join] = []
    words: list[str] = []

    def column(match: re.Match[str]) -> str:
        got = _reference(match.group(2), home, models)
        if isinstance(got, _Unresolved):
            problems.append(got)
            words.append(match.group(0))
            return match.group(0)
        sql, text, join = got
        if join is not None:
            joins.append(join)
        words.append(text)
        return sql

    sql = _JINJA.sub(column, raw)
    if problems:
        return None, [], problems[0].why, any(p.broken for p in problems)
    if "{{" in sql:
        return None, [], "filter references a Jinja expression that no dimension defines", True
    said = iter(words)
    return _Cond(sql, _JINJA.sub(lambda _: next(said), raw)), joins, "", False


class _Unresolved(NamedTuple):
    why: str
    broken: bool  # the file is wrong (a dimension no model defines), not only beyond what runs


def _reference(ref: str, home: _Model, models: dict[str, _Model]) -> tuple[str, str, _Join | None] | _Unresolved:
    """``Dimension('entity__name')`` (or ``TimeDimension``, ``Entity``) as (SQL, words, the
    join it needs), or (why not, whether the file is wrong). The entity in front names the
    semantic model: the measure's own where that entity names its rows, else the model whose
    primary (or unique) key it is, joined through the measure's foreign key of that entity."""
    parts = ref.split("__")
    name, path = parts[-1], parts[:-1]
    local = home.column(name)
    if len(path) > 1:
        return _Unresolved(f"filter references {ref}: a join through the entities {', '.join(path)} in turn "
                           f"(more than one join) is not run", False)
    owners = [m for m in models.values() if m.column(name) is not None and (not path or path[0] in m.named_by)]
    # the measure's own where the entity names it; also where no model is named by that entity
    # and the measure's model does not hold it as a foreign key (a model without entities)
    if local is not None and (not path or any(m is home for m in owners)
                              or (not owners and path[0] not in home.entities)):
        text = local if re.fullmatch(r"[\w.]+", local) else f"({local})"
        return text, text, None
    if not owners:
        if path and any(m.column(name) is not None for m in models.values()):
            return _Unresolved(f"filter references {ref}: no semantic model whose primary entity is {path[0]} "
                               f"defines {name}", True)
        return _Unresolved(f"filter references {ref} that no dimension defines", True)
    target = owners[0]
    if not path:
        return _Unresolved(f"filter references {ref} with no entity in front: a dimension of {target.name}, "
                           f"which needs a join from {home.name}; not run", False)
    entity = path[0]
    key = target.entities.get(entity)
    if entity not in home.entities or key is None or key[0] not in _ROW_KEYS:
        return _Unresolved(f"filter references {ref}: it needs a join to {target.name} through entity {entity}, "
                           + (f"which {home.name} has no key for" if entity not in home.entities
                              else f"which {target.name} has no primary or unique key for") + "; not run", False)
    expr = target.column(name)
    assert expr is not None
    alias = f"d_{_word(name)}"
    join = _Join(entity, home.entities[entity][1], target.table, key[1], ((alias, expr),))
    said = f"{target.table.table}.{expr}" if re.fullmatch(r"\w+", expr) else f"({expr} of {target.table.table})"
    return f"{join.alias}.{alias}", said, join


def _unknown(out: Mapped, node: dict[str, Any], known: set[str], field: str, where: Where) -> None:
    for key in node:
        if key not in known:
            out.unmapped.append(f"{where.path}:{line_at(node, key)}: {field}.{key}")


def _filter_of(parent: dict[str, Any], field: str, where: Where) -> str | list[str] | None:
    """A metric's or an input's ``filter``: text, or a list of texts (a number or a mapping
    there is the file's error, never a condition ``CASE WHEN 5``)."""
    value = parent.get("filter")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise where.fail(parent, f"{field}.filter", "expected text or a list of texts", "filter")
