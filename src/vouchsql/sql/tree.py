"""Reading and editing one parsed statement, node by node: finding a node's twin in a copy
(edits are made on copies; the shown tree is never changed), the SELECTs of a tree and the
nodes that belong to one SELECT, setting WHERE and HAVING from conjunct lists, literal LIMIT
and OFFSET values, ORDER BY keys resolved to the projections they name, literal values.

The detectors read the tree as the user wrote it, so what they build is a small,
recognisable edit of the shown SQL rather than sqlglot's fully qualified rewrite.
"""

from __future__ import annotations

from typing import Any, Iterator, TypeVar, cast, overload

from sqlglot import exp

from .edit import conjuncts, from_node  # noqa: F401 - one home for the tree helpers


def twin(copy_root: exp.Expression, root: exp.Expression, node: exp.Expr | None) -> exp.Expression | None:
    """The node of ``copy_root`` (a copy of ``root``) at ``node``'s place."""
    for a, b in zip(root.walk(), copy_root.walk()):
        if a is node:
            # every node sqlglot builds is an Expression (Expr is the base of its traits)
            return cast(exp.Expression, b)
    return None


def edit_copy(root: exp.Expression, select: exp.Select) -> tuple[exp.Expression, exp.Select]:
    """A copy of ``root`` and, in it, the twin of ``select`` (to edit)."""
    copy_root = root.copy()
    twin_select = twin(copy_root, root, select)
    if not isinstance(twin_select, exp.Select):  # pragma: no cover - copies keep their shape
        raise ValueError("copied tree lost its shape")
    return copy_root, twin_select


def selects(tree: exp.Expression) -> list[exp.Select]:
    """Every SELECT in the tree, the outermost first."""
    return [s for s in tree.find_all(exp.Select)]


# string bounds: sqlglot before 30 has no Expr (its base class was Expression)
_E = TypeVar("_E", bound="exp.Expr")
_F = TypeVar("_F", bound="exp.Expr")


@overload
def own_nodes(node: exp.Expr, kind: type[_E]) -> list[_E]: ...


@overload
def own_nodes(node: exp.Expr, kind: tuple[type[_E], type[_F]]) -> list[_E | _F]: ...


def own_nodes(node: exp.Expr, kind: type[exp.Expr] | tuple[type[exp.Expr], ...]) -> list[Any]:
    """Nodes of ``kind`` under ``node`` that belong to its own SELECT (not to subqueries)."""
    out: list[exp.Expr] = []
    stack: list[exp.Expr] = [node]
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
    """The parts AND-ed, an OR part in parentheses; ``None`` for no parts."""
    if not parts:
        return None
    # and_ is typed as a Condition; what it builds (an And, or the one part) is an Expression
    return cast(exp.Expression, exp.and_(*[exp.Paren(this=p) if isinstance(p, exp.Or) else p for p in parts]))


def set_where(select: exp.Select, parts: list[exp.Expression]) -> None:
    cond = and_all(parts)
    select.set("where", exp.Where(this=cond) if cond is not None else None)


def set_having(select: exp.Select, parts: list[exp.Expression]) -> None:
    cond = and_all(parts)
    select.set("having", exp.Having(this=cond) if cond is not None else None)


def limit_value(select: exp.Select) -> int | None:
    """The LIMIT of a SELECT when it is a literal number of at least 1."""
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


def offset_value(select: exp.Select) -> int | None:
    """The OFFSET of a SELECT (``LIMIT m, k`` reads as ``LIMIT k OFFSET m``): 0 when none,
    ``None`` when it is not a literal number."""
    offset = select.args.get("offset")
    if offset is None:
        return 0
    value = offset.args.get("expression") or offset.this
    if isinstance(value, exp.Literal) and not value.is_string:
        try:
            m = int(value.this)
        except ValueError:
            return None
        return m if m >= 0 else None
    return None


def unalias(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Alias) else node


def output_name(projection: exp.Expression) -> str:
    return projection.alias_or_name


def output_ident(projection: exp.Expression) -> exp.Identifier:
    """A copy of the identifier a projection's output is named by, with the quotes it was
    written with, for an outer query that reads it (``"group"`` stays quoted; an unquoted
    ``Country`` stays unquoted, so PostgreSQL folds it the same way on both sides)."""
    ident = projection.args.get("alias") if isinstance(projection, exp.Alias) else projection.this
    if isinstance(projection, (exp.Alias, exp.Column)) and isinstance(ident, exp.Identifier):
        return ident.copy()
    return exp.to_identifier(output_name(projection))


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


def written_ident(node: exp.Expression) -> exp.Identifier:
    """A copy of the identifier a FROM/JOIN item is referred to by: its alias, else its name,
    with the quotes it was written with (``"Track"`` and ``T`` read differently on PostgreSQL)."""
    alias = node.args.get("alias")
    ident = alias.this if isinstance(alias, exp.TableAlias) and isinstance(alias.this, exp.Identifier) else node.this
    return ident.copy() if isinstance(ident, exp.Identifier) else exp.to_identifier(node.alias_or_name)


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


def literal_value(node: exp.Expr | None) -> float | str | None:
    """A literal's value: a number (also ``-5``) or a string; ``None`` for anything else."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        v = literal_value(node.this)
        return -v if isinstance(v, float) else None
    if isinstance(node, exp.Literal):
        if node.is_string:
            return cast(str, node.this)  # a string literal's text
        try:
            return float(node.this)
        except ValueError:
            return None
    return None


def literal_comparisons(select: exp.Select) -> list[tuple[exp.Column, exp.Expression, exp.Expression]]:
    """(column, literal, comparison) for each comparison of a column with a literal that
    belongs to ``select`` itself (not to a subquery of it): ``=`` and ``<>`` either way round,
    each value of ``IN``/``NOT IN`` a list, and ``LIKE``. The literal is a string, a number or
    a negated number (:func:`literal_value` reads it)."""
    out: list[tuple[exp.Column, exp.Expression, exp.Expression]] = []
    # find_all types the nodes as their common base, Condition (not an Expression in sqlglot 30)
    found = cast("Iterator[exp.EQ | exp.NEQ | exp.In | exp.Like]", select.find_all(exp.EQ, exp.NEQ, exp.In, exp.Like))
    for node in found:
        if node.parent_select is not select:
            continue
        if isinstance(node, (exp.EQ, exp.NEQ)):
            for col, lit in ((node.this, node.expression), (node.expression, node.this)):
                if isinstance(col, exp.Column) and literal_value(lit) is not None:
                    out.append((col, lit, node))
        elif isinstance(node, exp.In):
            if isinstance(node.this, exp.Column) and not node.args.get("query"):
                out.extend((node.this, v, node) for v in node.expressions if literal_value(v) is not None)
        elif isinstance(node.this, exp.Column) and literal_value(node.expression) is not None:
            out.append((node.this, node.expression, node))
    return out
