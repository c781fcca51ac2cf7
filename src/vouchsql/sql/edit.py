"""Edits of a parsed SELECT that Vouch runs to measure something about it: the same FROM,
joins and (optionally) WHERE with other projections. Edits copy; the input tree is never
changed."""

from __future__ import annotations

from contextlib import closing
from functools import lru_cache
from typing import cast

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

_SHAPE_ARGS = ("group", "having", "order", "limit", "offset", "distinct", "qualify")


def conjuncts(node: exp.Expr | None) -> list[exp.Expression]:
    """The AND-ed parts of a condition (a WHERE, HAVING or ON clause, or an expression), with
    parentheses around a condition opened; a parenthesised subquery is one part."""
    if node is None:
        return []
    if isinstance(node, (exp.Where, exp.Having)):
        return conjuncts(node.this)
    if isinstance(node, exp.Paren) and not isinstance(node.this, exp.Select):
        return conjuncts(node.this)
    if isinstance(node, exp.And):
        return conjuncts(node.left) + conjuncts(node.right)
    # typed Expr (the base of sqlglot's traits); every node it builds is an Expression
    return [cast(exp.Expression, node)]


def conditions(select: exp.Select) -> list[exp.Expression]:
    """The conjuncts of ``select``'s WHERE and of each of its joins' ON."""
    parts = conjuncts(select.args.get("where"))
    for j in select.args.get("joins") or []:
        parts += conjuncts(j.args.get("on"))
    return parts


def from_node(select: exp.Select) -> exp.From | None:
    """The FROM clause: newer sqlglot names the argument ``from_``, older ``from``."""
    return select.args.get("from_") or select.args.get("from")


def set_from(select: exp.Select, node: exp.From) -> None:
    select.set("from_" if "from_" in exp.Select.arg_types else "from", node)


def base_tables(select: exp.Select) -> list[exp.Table]:
    """The plain tables in this SELECT's FROM and JOINs (not subqueries or functions)."""
    tables = []
    from_ = from_node(select)
    nodes = [from_.this] if from_ is not None else []
    nodes += [j.this for j in select.args.get("joins") or []]
    for node in nodes:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            tables.append(node)
    return tables


def driving_table(select: exp.Select) -> exp.Table | None:
    from_ = from_node(select)
    node = from_.this if from_ is not None else None
    return node if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) else None


def join_equalities(where: exp.Expression | None) -> list[exp.Expression]:
    """The ``a.x = b.y`` conjuncts of a WHERE that join two different tables."""
    out: list[exp.Expression] = []
    stack = [where.this] if where is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Paren):
            stack.append(node.this)
        elif isinstance(node, exp.And):
            stack.extend([node.left, node.right])
        elif (isinstance(node, exp.EQ) and isinstance(node.left, exp.Column) and isinstance(node.right, exp.Column)
              and node.left.table and node.right.table and node.left.table != node.right.table):
            out.append(node)
    return out


def reshape(select: exp.Select, projections: list[exp.Expression], *, where: str = "keep") -> exp.Select:
    """The SELECT with new projections and no grouping, ordering or limit.
    ``where``: ``keep`` the WHERE, ``joins`` keep only its join equalities, ``drop`` it."""
    probe = select.copy()
    for arg in _SHAPE_ARGS:
        probe.set(arg, None)
    probe.set("expressions", projections)
    if where != "keep":
        conds = join_equalities(select.args.get("where")) if where == "joins" else []
        probe.set("where", exp.Where(this=exp.and_(*[c.copy() for c in conds])) if conds else None)
    return probe


def count_star() -> exp.Expression:
    return exp.Count(this=exp.Star())


def count_distinct(column: exp.Expression) -> exp.Expression:
    return exp.Count(this=exp.Distinct(expressions=[column]))


def stored_name(name: str, dialect: str | None) -> exp.Identifier:
    """An identifier for a name as the database stores it (a profile's table or column
    name, or an identifier already normalised by sqlglot's qualify): quoted where ``dialect``
    would otherwise fold it (PostgreSQL reads an unquoted ``CustomerId`` as ``customerid``),
    where it is not a plain word, or where the dialect would read it as a keyword (a key
    named ``group`` or ``order``); plain otherwise, so the SQL reads as a user writes it."""
    ident = exp.to_identifier(name)
    if not ident.quoted and _must_quote(name, dialect):
        ident.set("quoted", True)
    return ident


@lru_cache(maxsize=4096)
def _must_quote(name: str, dialect: str | None) -> bool:
    if dialect and Dialect.get_or_raise(dialect).case_sensitive(name):
        return True
    if dialect == "sqlite":
        return _sqlite_refuses(name)
    # sqlglot's generators quote reserved words for only some dialects (MySQL, DuckDB and
    # others; not PostgreSQL or Spark), and its parser takes ``SELECT group FROM group``, so
    # neither can say what an engine refuses. Where the dialect ships no list, quote every
    # word some engine reserves: a quoted lower-case name reads the same on each of them.
    reserved = _reserved(dialect)
    return name.lower() in reserved


@lru_cache(maxsize=None)
def _reserved(dialect: str | None) -> frozenset[str]:
    own = Dialect.get_or_raise(dialect).generator_class.RESERVED_KEYWORDS if dialect else set()
    if own:
        return frozenset(own)
    words: set[str] = set()
    for other in ("mysql", "duckdb", "presto", "bigquery"):
        words |= Dialect.get_or_raise(other).generator_class.RESERVED_KEYWORDS
    return frozenset(words)


def _sqlite_refuses(name: str) -> bool:
    """Whether SQLite itself refuses ``name`` bare as a table, an alias and a qualifier: the
    engine is the authority on its keywords (``group`` and ``order`` are refused, ``key``
    and ``date`` are not)."""
    import sqlite3

    quoted = '"' + name.replace('"', '""') + '"'
    probe = f"SELECT {name}.{name} FROM (SELECT 1 AS {quoted}) AS {name}"
    with closing(sqlite3.connect(":memory:")) as conn:
        try:
            conn.execute("EXPLAIN " + probe)
        except sqlite3.Error:
            return True
    return False


def column(table: "str | exp.Identifier | None", name: str, dialect: str | None = None) -> exp.Column:
    """``table.name`` for a stored column ``name``. ``table``: an identifier as the query
    writes it (kept, quotes and all), or a stored or normalised name (see :func:`stored_name`)."""
    if isinstance(table, exp.Identifier):
        ref: exp.Identifier | None = table.copy()
    else:
        ref = stored_name(table, dialect) if table else None
    return exp.Column(this=stored_name(name, dialect), table=ref)
