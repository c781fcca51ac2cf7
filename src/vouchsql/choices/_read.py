"""Shared reading of one SELECT for the detectors: its base tables by alias, columns resolved
to base-table columns, join edges, whether a join can repeat a table's rows, conjunct lists,
and finding a node's twin in a copied tree (edits are made on copies).

Detectors read the tree as the user wrote it, so the alternative SQL they build is a small,
recognisable edit of the shown SQL rather than sqlglot's fully qualified rewrite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from ..db.profile import ColumnProfile, Profile, TableProfile
from ..sql.edit import column, conjuncts, from_node, set_from  # noqa: F401 - conjuncts, set_from: for the detectors
from ..words import entity_word, name_forms, singular, words_of  # noqa: F401 - for the detectors

_INT_TYPES = re.compile(r"INT|BOOL", re.I)
_NUM_TYPES = re.compile(r"INT|REAL|FLOA|DOUB|NUM|DEC|MONEY|BOOL", re.I)


@dataclass(frozen=True)
class Ref:
    alias: str  # as written (or the table name when not aliased)
    table: str  # the profile's table name
    column: str  # the profile's column name


@dataclass(frozen=True)
class Edge:
    left: Ref
    right: Ref
    node: exp.Expression  # the EQ in an ON or WHERE


# -- tree navigation ----------------------------------------------------------------------

def twin(copy_root: exp.Expression, root: exp.Expression, node: exp.Expression) -> exp.Expression | None:
    """The node of ``copy_root`` (a copy of ``root``) at ``node``'s place."""
    for a, b in zip(root.walk(), copy_root.walk()):
        if a is node:
            return b
    return None


def edit_copy(root: exp.Expression, select: exp.Select) -> tuple[exp.Expression, exp.Select]:
    copy_root = root.copy()
    twin_select = twin(copy_root, root, select)
    if not isinstance(twin_select, exp.Select):  # pragma: no cover - copies keep their shape
        raise ValueError("copied tree lost its shape")
    return copy_root, twin_select


def selects(tree: exp.Expression) -> list[exp.Select]:
    """Every SELECT in the tree, the outermost first."""
    return [s for s in tree.find_all(exp.Select)]


def own_nodes(node: exp.Expression, kind) -> list[exp.Expression]:
    """Nodes of ``kind`` under ``node`` that belong to its own SELECT (not to subqueries)."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kind):
            out.append(n)
        for child in n.iter_expressions():
            if isinstance(child, (exp.Select, exp.Subquery, exp.Union)):
                continue
            stack.append(child)
    out.reverse()
    return out


def and_all(parts: list[exp.Expression]) -> exp.Expression | None:
    if not parts:
        return None
    return exp.and_(*[_paren_or(p) for p in parts])


def _paren_or(node: exp.Expression) -> exp.Expression:
    return exp.Paren(this=node) if isinstance(node, exp.Or) else node


def set_where(select: exp.Select, parts: list[exp.Expression]) -> None:
    cond = and_all(parts)
    select.set("where", exp.Where(this=cond) if cond is not None else None)


def set_having(select: exp.Select, parts: list[exp.Expression]) -> None:
    cond = and_all(parts)
    select.set("having", exp.Having(this=cond) if cond is not None else None)


def limit_value(select: exp.Select) -> int | None:
    limit = select.args.get("limit")
    if limit is None:
        return None
    value = limit.args.get("expression") or limit.this
    if isinstance(value, exp.Literal) and not value.is_string:
        try:
            k = int(value.this)
        except ValueError:
            return None
        return k if k >= 1 else None
    return None


def unalias(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Alias) else node


def output_name(projection: exp.Expression) -> str:
    return projection.alias_or_name


def projection_for(select: exp.Select, key: exp.Expression) -> int | None:
    """Index of the projection an ORDER BY key names: an ordinal, an output alias, or the
    same expression."""
    projections = select.expressions
    if isinstance(key, exp.Literal) and not key.is_string:
        try:
            i = int(key.this) - 1
        except ValueError:
            return None
        return i if 0 <= i < len(projections) else None
    if isinstance(key, exp.Column) and not key.table:
        for i, p in enumerate(projections):
            if isinstance(p, exp.Alias) and p.alias.lower() == key.name.lower():
                return i
    for i, p in enumerate(projections):
        if unalias(p) == key:
            return i
    return None


def expand_key(select: exp.Select, key: exp.Expression) -> exp.Expression:
    """An ORDER BY key with ordinals and output aliases replaced by their expressions."""
    i = projection_for(select, key)
    if i is not None and (isinstance(key, exp.Literal) or (isinstance(key, exp.Column) and not key.table
                                                          and isinstance(select.expressions[i], exp.Alias))):
        return unalias(select.expressions[i]).copy()
    return key.copy()


def has_aggregate(node: exp.Expression) -> bool:
    return bool(own_nodes(node, exp.AggFunc))


def has_window(node: exp.Expression) -> bool:
    return node.find(exp.Window) is not None


# -- sources and columns ------------------------------------------------------------------


def written_ident(node: exp.Expression) -> exp.Identifier:
    """A copy of the identifier a FROM/JOIN item is referred to by: its alias, else its name,
    with the quotes it was written with (``"Track"`` and ``T`` read differently on PostgreSQL)."""
    alias = node.args.get("alias")
    ident = alias.this if isinstance(alias, exp.TableAlias) and isinstance(alias.this, exp.Identifier) else node.this
    return ident.copy() if isinstance(ident, exp.Identifier) else exp.to_identifier(node.alias_or_name)

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
                tp = profile.table(node.name)
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
        hits = [a for a, (_, tp) in self.by_alias.items() if tp.name.lower() == table.lower()]
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
            return Ref(node.alias_or_name, tp.name, cp.name) if cp else None
        found = []
        for node, tp in self.by_alias.values():
            cp = tp.column(col.name)
            if cp is not None:
                found.append(Ref(node.alias_or_name, tp.name, cp.name))
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
                        if not is_unique(self.profile, far.table, far.column):
                            fan = True
                        seen.add(far.alias.lower())
                        frontier.append(far.alias.lower())
        if seen != set(self.by_alias):
            return True  # a table joined without an equality to the rest
        return fan


def _cte_names(node: exp.Expression) -> set[str]:
    root = node.root()
    return {c.alias_or_name.lower() for c in root.find_all(exp.CTE)}


def is_unique(profile: Profile, table: str, column: str) -> bool:
    tp = profile.table(table)
    if tp is None:
        return False
    if len(tp.primary_key) == 1 and tp.primary_key[0].lower() == column.lower():
        return True
    cp = tp.column(column)
    if cp is None or cp.distinct_estimated or tp.sampled or not tp.row_count:
        return False
    return cp.distinct_count == tp.row_count - cp.null_count


def is_key_column(profile: Profile, table: str, column: str) -> bool:
    """A primary key, a declared foreign key, or one end of a profiled join pair."""
    tp = profile.table(table)
    if tp is None:
        return False
    low = column.lower()
    if any(c.lower() == low for c in tp.primary_key):
        return True
    if any(len(fk.columns) == 1 and fk.columns[0].lower() == low for fk in tp.foreign_keys):
        return True
    for p in profile.join_pairs:
        if ((p.left_table.lower() == tp.name.lower() and p.left_column.lower() == low)
                or (p.right_table.lower() == tp.name.lower() and p.right_column.lower() == low)):
            return True
    return False


def is_integer_type(cp: ColumnProfile | None) -> bool:
    return cp is not None and bool(_INT_TYPES.search(cp.type or ""))


def is_numeric_type(cp: ColumnProfile | None) -> bool:
    return cp is not None and bool(_NUM_TYPES.search(cp.type or ""))


def null_supplied(select: exp.Select) -> set[str]:
    """Aliases on the NULL-supplying side of an outer join (their columns can be NULL even
    when the table holds none)."""
    out: set[str] = set()
    joins = select.args.get("joins") or []
    f = from_node(select)
    for i, join in enumerate(joins):
        side = (join.side or "").upper()
        if side in ("LEFT", "FULL"):
            out.add(join.this.alias_or_name.lower())
        if side in ("RIGHT", "FULL"):
            if f is not None:
                out.add(f.this.alias_or_name.lower())
            out.update(j.this.alias_or_name.lower() for j in joins[:i])
    return out


_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")


def question_numbers(question: str) -> list[float]:
    out = []
    for m in _NUMBER.finditer(question or ""):
        text = m.group(0).replace(",", "")
        try:
            out.append(float(text))
        except ValueError:
            continue
    return out


def literal_value(node: exp.Expression) -> float | str | None:
    """A literal's value: a number (also ``-5``) or a string; ``None`` for anything else."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        v = literal_value(node.this)
        return -v if isinstance(v, float) else None
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        try:
            return float(node.this)
        except ValueError:
            return None
    return None


def show(value) -> str:
    if isinstance(value, float):
        return f"{value:g}" if abs(value) < 1e15 else repr(value)
    return repr(value) if isinstance(value, str) else str(value)


# -- what the question counts and scopes ---------------------------------------------------

# Words that introduce the noun being counted: "how many customers", "the number of tracks",
# "the most songs", "fewer orders".
_COUNTING = re.compile(r"(?<!\w)(?:how\s+many|number\s+of|count\s+of|count\s+the|counts\s+of|most|fewest|least|"
                       r"more|fewer)\s+", re.I)
# Words that may stand between the counting words and the noun ("how many different albums").
_FILLER = {"different", "distinct", "unique", "individual", "separate", "total", "the", "of", "all", "our",
           "their", "its", "his", "her", "your"}
_STOP = {"the", "and", "for", "from", "with", "that", "this", "who", "which", "what", "are", "was", "were", "has",
         "have", "had", "each", "every", "all", "any", "per", "show", "list", "provide", "query", "shows", "include",
         "should", "table", "total", "number", "name", "names", "full", "their", "them", "they", "its", "our",
         "not", "but", "how", "many", "much", "most", "least", "more", "less", "than", "into", "over", "under",
         "sum", "count", "id", "ids", "one", "two", "three", "top", "bottom", "first", "last", "also", "only"}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", (text or "").lower())


def counted_table(question: str, tables: list[str]) -> str | None:
    """The table among ``tables`` whose rows the question counts: the noun right after "how
    many", "number of", "count of", "most", "fewest", "more" or "fewer" (a few words such as
    "different" may stand between), matched by name, singular or plural. ``None`` when the
    question counts nothing it names, or names two different tables that way."""
    found: list[str] = []
    text = question or ""
    for m in _COUNTING.finditer(text):
        rest = _words(text[m.end():m.end() + 80])
        while rest and rest[0] in _FILLER:
            rest.pop(0)
        if not rest:
            continue
        best = None
        for table in tables:
            for form in name_forms(table):
                parts = form.split()
                if rest[:len(parts)] == parts and (best is None or len(parts) > best[1]):
                    best = (table, len(parts))
        if best is not None and best[0] not in found:
            found.append(best[0])
    return found[0] if len(found) == 1 else None


def named_values(question: str, column: ColumnProfile, table_rows: int) -> list[tuple[str, int]]:
    """The values of a low-cardinality text column that the question names: more than half
    of a value's words (of three letters or more, singular or plural) appear among the
    question's words ("each sales agent" names 'Sales Support Agent'), the most completely
    named ones only. Read from the profile's most frequent values when they are every value
    of the column; each with its row count."""
    if not column.top_values or column.distinct_count > len(column.top_values) or column.distinct_estimated:
        return []
    if column.distinct_count >= table_rows:  # a unique column (a name) scopes nothing
        return []
    asked = {singular(w) for w in _words(question)}
    scored = []
    for value, count in column.top_values:
        if not isinstance(value, str):
            return []  # a number column: its values are not words
        words = {singular(w) for w in _words(value) if len(w) >= 3 and w not in _STOP}
        if not words:
            continue
        hits = len(words & asked)
        if hits * 2 > len(words):
            scored.append((hits / len(words), value, int(count)))
    best = max((s for s, _, _ in scored), default=None)
    # The values named most completely: "each sales manager" names 'Sales Manager', not
    # 'Sales Support Agent' (two of whose three words it also holds).
    return [(v, n) for s, v, n in scored if s == best]
