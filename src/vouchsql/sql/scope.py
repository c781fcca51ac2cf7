"""The base tables of one SELECT by alias, how its columns resolve to base-table columns
(by the profile), its join edges, and whether its joins can repeat a table's rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from .edit import column, conjuncts, from_node
from .inspect import table_key
from .tree import own_nodes, written_ident

if TYPE_CHECKING:  # the SQL layer reads a profile, never builds one: no import of db at run time
    from ..db.profile import ColumnProfile, Profile, TableProfile


@dataclass(frozen=True)
class Ref:
    alias: str  # as written (or the table name when not aliased)
    table: str  # the profile's key of the table (``schema.table`` outside the default schema)
    column: str  # the profile's column name


@dataclass(frozen=True)
class Edge:
    left: Ref
    right: Ref
    node: exp.Expression  # the EQ in an ON or WHERE



class Scope:
    """The base tables of one SELECT by alias, and how its columns resolve."""

    def __init__(self, select: exp.Select, profile: Profile, cte_names: set[str] | None = None) -> None:
        self.select = select
        self.profile = profile
        self.by_alias: dict[str, tuple[exp.Table, TableProfile]] = {}
        self.other_sources = False  # derived tables, CTEs, table functions
        ctes = cte_names if cte_names is not None else _cte_names(select)
        nodes = []
        f = from_node(select)
        if f is not None:
            nodes.append(f.this)
        nodes += [j.this for j in select.args.get("joins") or []]
        self.order: list[str] = []
        for node in nodes:
            if (isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier)
                    and not (node.name.lower() in ctes and not node.db)):
                # by the profile's key: ``sales.orders`` is not the default schema's ``orders``
                tp = profile.table(table_key(node, profile.default_schema))
                if tp is None:
                    self.other_sources = True
                    continue
                alias = node.alias_or_name.lower()
                if alias in self.by_alias:
                    self.other_sources = True  # the same alias twice: do not guess
                self.by_alias[alias] = (node, tp)
                self.order.append(alias)
            else:
                self.other_sources = True

    def table(self, alias: str) -> TableProfile | None:
        hit = self.by_alias.get(alias.lower())
        return hit[1] if hit else None

    def alias_of(self, table: str) -> str | None:
        want = self.profile.find(table)
        hits = [a for a, (_, tp) in self.by_alias.items() if want is not None and tp.qualified == want.qualified]
        return hits[0] if len(hits) == 1 else None

    def written_alias(self, alias: str) -> str:
        node, _ = self.by_alias[alias.lower()]
        return node.alias_or_name

    def written_ident(self, alias: str) -> exp.Identifier:
        """How the query refers to the table of ``alias``, as written (quotes included)."""
        node, _ = self.by_alias[alias.lower()]
        return written_ident(node)

    def column(self, alias: str, name: str, dialect: str) -> exp.Column:
        """``alias.name`` for the stored column ``name`` of the table of ``alias``, written so
        that the engine reads it (PostgreSQL folds an unquoted ``CustomerId``)."""
        return column(self.written_ident(alias), name, dialect)

    def resolve(self, col: exp.Column) -> Ref | None:
        if not isinstance(col, exp.Column) or isinstance(col.this, exp.Star):
            return None
        if col.table:
            hit = self.by_alias.get(col.table.lower())
            if hit is None:
                return None
            node, tp = hit
            cp = tp.column(col.name)
            return Ref(node.alias_or_name, tp.qualified, cp.name) if cp else None
        found = []
        for node, tp in self.by_alias.values():
            cp = tp.column(col.name)
            if cp is not None:
                found.append(Ref(node.alias_or_name, tp.qualified, cp.name))
        if len(found) == 1 and not self.other_sources:
            return found[0]
        if len(found) == 1 and self.other_sources:
            return None  # a derived table might carry the same name
        return None

    def refs(self, node: exp.Expression) -> list[Ref] | None:
        """Every column under ``node`` (own SELECT only) resolved; ``None`` if one cannot be."""
        out = []
        for col in own_nodes(node, exp.Column):
            if isinstance(col.this, exp.Star):
                continue
            ref = self.resolve(col)
            if ref is None:
                return None
            out.append(ref)
        return out

    def aliases_in(self, node: exp.Expression) -> set[str] | None:
        refs = self.refs(node)
        return None if refs is None else {r.alias.lower() for r in refs}

    def column_profile(self, ref: Ref) -> ColumnProfile | None:
        return self.profile.column(ref.table, ref.column)

    # -- joins ----------------------------------------------------------------------------
    def edges(self) -> list[Edge]:
        out = []
        conds = []
        for join in self.select.args.get("joins") or []:
            conds += conjuncts(join.args.get("on"))
        conds += conjuncts(self.select.args.get("where"))
        for c in conds:
            if isinstance(c, exp.EQ) and isinstance(c.left, exp.Column) and isinstance(c.right, exp.Column):
                a, b = self.resolve(c.left), self.resolve(c.right)
                if a and b and a.alias.lower() != b.alias.lower():
                    out.append(Edge(a, b, c))
        return out

    def has_using_or_natural(self) -> bool:
        return any(j.args.get("using") or (j.args.get("method") or "").upper() == "NATURAL"
                   for j in self.select.args.get("joins") or [])

    def fans_out(self, alias: str) -> bool:
        """Whether the joins may repeat rows of the table at ``alias``: some join, walking
        out from it, reaches a column that is not unique on the far side. Unknown shapes
        (derived tables, unjoined tables, USING) count as fanning out."""
        alias = alias.lower()
        if len(self.by_alias) <= 1 and not self.other_sources and not self.select.args.get("joins"):
            return False
        if self.other_sources or self.has_using_or_natural():
            return True
        edges = self.edges()
        seen = {alias}
        frontier = [alias]
        fan = False
        while frontier:
            here = frontier.pop()
            for e in edges:
                for near, far in ((e.left, e.right), (e.right, e.left)):
                    if near.alias.lower() == here and far.alias.lower() not in seen:
                        if not self.profile.is_unique(far.table, far.column):
                            fan = True
                        seen.add(far.alias.lower())
                        frontier.append(far.alias.lower())
        if seen != set(self.by_alias):
            return True  # a table joined without an equality to the rest
        return fan


def _cte_names(node: exp.Expression) -> set[str]:
    root = node.root()
    return {c.alias_or_name.lower() for c in root.find_all(exp.CTE)}
