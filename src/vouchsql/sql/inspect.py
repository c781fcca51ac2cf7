"""Reading a SELECT with sqlglot: the base tables it reads, its equi-join column pairs
(ON or WHERE form, aliases resolved), and where each output column comes from.

Columns are qualified against the profile's schema, then traced through CTEs and derived
tables to the base-table columns they come from, so ``x.customer_id`` in an outer query is
known to be ``orders.customer_id`` when ``x`` is a CTE over ``orders``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, ScopeType, build_scope
from sqlglot.schema import MappingSchema

from .edit import conjuncts

if TYPE_CHECKING:  # the SQL layer reads a profile, never builds one: no import of db at run time
    from ..db.profile import Profile

# Names that look like tables but are not the user's: the SQLite catalogue and friends.
CATALOGUE = {"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema",
             "sqlite_sequence", "sqlite_stat1", "sqlite_stat4", "information_schema", "pg_catalog"}

logging.getLogger("sqlglot").setLevel(logging.ERROR)


@dataclass(frozen=True)
class ColumnRef:
    table: str
    column: str

    def __str__(self) -> str:
        return f"{self.table}.{self.column}"


@dataclass(frozen=True)
class JoinRef:
    left: ColumnRef
    right: ColumnRef
    form: str  # "on", "where", or "in" (``x [NOT] IN (SELECT y …)``: the subquery's column is ``right``)
    side: str  # "inner", "left", "right", "full"; for "in": "semi" (IN) or "anti" (NOT IN)

    @property
    def written(self) -> str:
        """How the SQL writes the pair: "on", "where", "in" or "not in"."""
        return "not in" if self.form == "in" and self.side == "anti" else self.form


def pair_sql(left: object, right: object, written: str) -> str:
    """A pair of columns as the condition that matches them: ``a = b`` or ``a IN (SELECT b …)``."""
    if written in ("in", "not in"):
        return f"{left} {written.upper()} (SELECT {right} …)"
    return f"{left} = {right}"


@dataclass
class Output:
    name: str
    expression: exp.Expression
    sources: list[ColumnRef]
    aggregate: str | None  # "sum", "avg", "count", "min", "max", … when the output holds one


@dataclass
class Inspection:
    tree: exp.Expression
    qualified: exp.Expression
    tables: list[str]  # base table names as written, CTE names and table functions excluded
    cte_names: set[str]
    joins: list[JoinRef] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    qualified_ok: bool = True


def schema_mapping(profile: Profile) -> dict[str, dict[str, str]]:
    return {t.name: {c.name: (c.type or "TEXT") for c in t.columns} for t in profile.tables}


def table_key(table: exp.Table, default_schema: str | None = None) -> str:
    """How the profile names a table a query reads: ``schema.name`` outside the default
    schema, ``name`` in it (``main.Track`` on SQLite is ``Track``)."""
    db = table.db
    if db and (default_schema is None or db.lower() != default_schema.lower()):
        return f"{db}.{table.name}"
    return table.name


def _quoted_mapping(profile: Profile, dialect: str, tables: list[str]) -> dict[str, Any]:
    """The schema of the tables a query reads, every name written quoted in ``dialect``: the
    profile holds the names as the engine stores them, so PostgreSQL's ``Track`` must not be
    folded to ``track`` as an unquoted name would be (a dialect that ignores case still folds a
    quoted one). Only the tables read: qualifying needs no other, and a warehouse has
    thousands."""
    def q(name: str) -> str:
        return exp.to_identifier(name, quoted=True).sql(dialect=dialect)

    read = [t for name in dict.fromkeys(tables) if (t := profile.find(name)) is not None]
    if not any(t.schema_name for t in read):
        return {q(t.name): {q(c.name): (c.type or "TEXT") for c in t.columns} for t in read}
    # Tables of several schemas: sqlglot's nested form, the default schema's under its name.
    nested: dict[str, dict[str, dict[str, str]]] = {}
    for t in read:
        nested.setdefault(q(t.schema_name or profile.default_schema or "main"), {})[q(t.name)] = {
            q(c.name): (c.type or "TEXT") for c in t.columns}
    return nested


def _alias_quoted_tables(tree: exp.Expression) -> exp.Expression:
    """Give each unaliased table read by a quoted name (``FROM "Track"``) that name as its
    alias: sqlglot's qualify would alias it with the unquoted name, which PostgreSQL folds
    (``"Track" AS track``), and ``"Track"."AlbumId"`` would then name no table."""
    for table in tree.find_all(exp.Table):
        ident = table.this
        if (isinstance(ident, exp.Identifier) and ident.quoted and not table.alias
                and isinstance(table.parent, (exp.From, exp.Join))):
            table.set("alias", exp.TableAlias(this=ident.copy()))
    return tree


def _mapping_schema(profile: Profile, dialect: str, tables: list[str]) -> MappingSchema:
    """sqlglot's schema object for the tables read, built once per catalogue: building it is
    half of qualify's cost."""
    key = ("mapping", dialect, tuple(sorted({t.lower() for t in tables})))
    return profile.memo(key, lambda: MappingSchema(_quoted_mapping(profile, dialect, tables), dialect=dialect))


def _is_table_function(table: exp.Table) -> bool:
    return not isinstance(table.this, exp.Identifier)


def referenced_tables(tree: exp.Expression, default_schema: str | None = None) -> tuple[list[str], set[str]]:
    """The base tables ``tree`` reads, by their profile keys (:func:`table_key`), and its CTE names."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    names: list[str] = []
    for t in tree.find_all(exp.Table):
        if _is_table_function(t) or not t.name:
            continue
        low = t.name.lower()
        if (low in ctes and not t.db) or low in CATALOGUE or (t.db or "").lower() in CATALOGUE:
            continue
        key = table_key(t, default_schema)
        if key not in names:
            names.append(key)
    return names, ctes


def inspect_sql(tree: exp.Expression, profile: Profile, dialect: str) -> Inspection:
    tables, ctes = referenced_tables(tree, profile.default_schema)
    qualified, ok = tree, False
    mapping = _mapping_schema(profile, dialect, tables)
    # With tables of several schemas the mapping is nested, and an unqualified name is the default schema's.
    default_db = (profile.default_schema or "main") if any("." in t for t in tables) else None
    try:
        qualified = qualify(_alias_quoted_tables(tree.copy()), schema=mapping, db=default_db, dialect=dialect,
                            validate_qualify_columns=False, quote_identifiers=False,
                            identify=False)
        ok = True
    except (OptimizeError, SqlglotError, KeyError, ValueError, AttributeError):
        qualified = tree.copy()
    insp = Inspection(tree=tree, qualified=qualified, tables=tables, cte_names=ctes, qualified_ok=ok)
    try:
        root = build_scope(qualified)
    except (OptimizeError, SqlglotError):
        root = None
    if root is None:
        return insp
    tracer = _Tracer(profile, profile.default_schema)
    for scope in root.traverse():
        insp.joins.extend(_scope_joins(scope, tracer))
    insp.outputs = _outputs(root, tracer)
    return insp


class _Tracer:
    """Resolves a column in a scope to the base-table columns it comes from."""

    def __init__(self, profile: Profile, default_schema: str | None = None) -> None:
        self.profile = profile
        self.default_schema = default_schema

    def resolve(self, scope: Scope, column: exp.Column, depth: int = 0) -> list[ColumnRef]:
        if depth > 8:
            return []
        source = scope.sources.get(column.table) if column.table else None
        if source is None and not column.table:
            tables = [s for s in scope.sources.values() if isinstance(s, exp.Table)]
            source = tables[0] if len(tables) == 1 else None
        if isinstance(source, exp.Table):
            if _is_table_function(source):
                return []
            table = self.profile.find(table_key(source, self.default_schema))
            if table is None:
                return []
            col = table.column(column.name)
            return [ColumnRef(table.qualified, col.name)] if col else []
        if isinstance(source, Scope):
            select = source.expression
            if isinstance(select, exp.Union):
                select = select.left
            for projection in getattr(select, "expressions", []):
                if projection.alias_or_name.lower() == column.name.lower():
                    refs: list[ColumnRef] = []
                    for inner in projection.find_all(exp.Column):
                        refs.extend(self.resolve(source, inner, depth + 1))
                    return refs
        return []

    def resolve_all(self, scope: Scope, node: exp.Expression) -> list[ColumnRef]:
        refs: list[ColumnRef] = []
        for col in node.find_all(exp.Column):
            for ref in self.resolve(scope, col):
                if ref not in refs:
                    refs.append(ref)
        return refs




def _eq_pair(scope: Scope, node: exp.Expression, tracer: _Tracer) -> tuple[ColumnRef, ColumnRef] | None:
    if not isinstance(node, exp.EQ):
        return None
    left, right = node.left, node.right
    if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
        return None
    if left.table and right.table and left.table == right.table:
        return None
    a, b = tracer.resolve(scope, left), tracer.resolve(scope, right)
    if len(a) == 1 and len(b) == 1 and a[0] != b[0]:
        return a[0], b[0]
    return None


def _scope_joins(scope: Scope, tracer: _Tracer) -> list[JoinRef]:
    select = scope.expression
    if not isinstance(select, exp.Select):
        return []
    found: list[JoinRef] = []
    for join in select.args.get("joins") or []:
        side = (join.side or "inner").lower()
        for cond in conjuncts(join.args.get("on")):
            pair = _eq_pair(scope, cond, tracer)
            if pair:
                found.append(JoinRef(pair[0], pair[1], "on", side))
    where = select.args.get("where")
    for cond in conjuncts(where.this if where else None):
        pair = _eq_pair(scope, cond, tracer)
        if pair:
            found.append(JoinRef(pair[0], pair[1], "where", "inner"))
        found.extend(_in_pairs(scope, cond, tracer))
    return found


def _in_pairs(scope: Scope, node: exp.Expression, tracer: _Tracer) -> list[JoinRef]:
    """``x IN (SELECT y …)`` or ``NOT x IN (…)`` as pairs of columns, one per SELECT of a
    UNION: the subquery matches x to y as a join would, so the join checks read the pair too
    (``bad_join`` judges its overlap as a join's only where both columns are keys)."""
    side = "semi"
    if isinstance(node, exp.Not):
        node, side = node.this, "anti"
    query = node.args.get("query") if isinstance(node, exp.In) else None
    inner = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(node.this, exp.Column) or inner is None:
        return []
    sub = next((s for s in scope.subquery_scopes if s.expression is inner), None)
    if sub is None:
        return []
    left = tracer.resolve(scope, node.this)
    found: list[JoinRef] = []
    for branch in sub.traverse():
        select = branch.expression
        if not isinstance(select, exp.Select) or len(select.expressions) != 1 or (
                branch is not sub and branch.scope_type != ScopeType.SET_OPERATION):
            continue
        column = select.expressions[0].unalias()
        right = tracer.resolve(branch, column) if isinstance(column, exp.Column) else []
        if len(left) == 1 and len(right) == 1 and left[0] != right[0]:
            found.append(JoinRef(left[0], right[0], "in", side))
    return found


def _outputs(root: Scope, tracer: _Tracer) -> list[Output]:
    select = root.expression
    while isinstance(select, exp.Union):
        select = select.left
    if not isinstance(select, exp.Select):
        return []
    scope = root
    if select is not root.expression:
        scope = next((s for s in root.traverse() if s.expression is select), root)
    outputs = []
    for projection in select.expressions:
        # The outermost aggregate, also when wrapped: ROUND(AVG(x), 1) is an average.
        agg = next(projection.find_all(exp.AggFunc), None)
        outputs.append(Output(name=projection.alias_or_name, expression=projection,
                              sources=tracer.resolve_all(scope, projection),
                              aggregate=agg.key.lower() if agg is not None else None))
    return outputs
