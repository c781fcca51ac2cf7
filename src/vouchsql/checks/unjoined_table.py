"""Cap: a table of the query is joined to the others by no condition at all, so each of its
rows pairs with every row of the rest (a cartesian product): ``FROM InvoiceLine il, Track t,
Genre g WHERE g.GenreId = t.GenreId`` repeats every Rock track once per invoice line, and a
SUM over it is thousands of times too large.

Within each SELECT, the tables of its FROM and JOINs are linked by any condition (ON, USING,
NATURAL, or a WHERE conjunct) that compares a column of one with a column of another; a group
of tables linked to no other, each holding more than one row, fires. Not judged, since they
are written on purpose or hold one row: an explicit ``CROSS JOIN``, derived tables, CTEs and
table functions (``CROSS JOIN (SELECT AVG(x) …)``), and any table of at most one row.
"""

from __future__ import annotations

from typing import cast

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.errors import ParseError, TokenError

from ..answer import CheckResult
from ..errors import VouchError
from ..sql.edit import conditions, from_node
from . import evidence as ev
from .base import CheckContext, report, unparsed


def _sources(select: exp.Select) -> dict[str, exp.Expression]:
    """The FROM and JOIN sources of ``select`` by alias (lower case)."""
    from_ = from_node(select)
    items = ([from_.this] if from_ is not None else []) + [j.this for j in select.args.get("joins") or []]
    return {item.alias_or_name.lower(): item for item in items}


def _deliberate(tree: exp.Expression, sql: str, dialect: str | None) -> set[str]:
    """The names and aliases joined by USING, NATURAL or an explicit CROSS JOIN. sqlglot's
    SQLite dialect (and its qualify, on every dialect) reads a comma join as CROSS, so the
    CROSS keyword is looked for in the tokens as written: the name after ``CROSS JOIN`` and
    its alias."""
    out = {j.this.alias_or_name.lower() for j in tree.find_all(exp.Join)
           if j.args.get("using") or j.args.get("method")}
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except (ParseError, TokenError):
        return out
    for i, tok in enumerate(tokens[:-2]):
        if tok.token_type == TokenType.CROSS and tokens[i + 1].token_type == TokenType.JOIN:
            # the name (its last part), then an alias with or without AS
            j = i + 2
            while j + 2 < len(tokens) and tokens[j + 1].token_type == TokenType.DOT:
                j += 2
            out.add(tokens[j].text.lower())
            k = j + 1
            if k < len(tokens) and tokens[k].token_type == TokenType.ALIAS:
                k += 1
            if k < len(tokens) and tokens[k].token_type in (TokenType.VAR, TokenType.IDENTIFIER):
                out.add(tokens[k].text.lower())
    return out


def _links(select: exp.Select, names: set[str]) -> list[tuple[str, str]]:
    """Pairs of sources one condition of ``select`` reads columns of: each conjunct of its
    WHERE and of each ON, subqueries inside it included (``EXISTS (SELECT … WHERE b.x = a.x
    AND b.y = c.y)`` links a and c)."""
    pairs = []
    for part in conditions(select):
        tables = sorted({c.table.lower() for c in part.find_all(exp.Column) if c.table.lower() in names})
        pairs += [(a, b) for i, a in enumerate(tables) for b in tables[i + 1:]]
    return pairs


def _groups(names: set[str], links: list[tuple[str, str]]) -> list[set[str]]:
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in links:
        parent[root(a)] = root(b)
    groups: dict[str, set[str]] = {}
    for n in sorted(names):
        groups.setdefault(root(n), set()).add(n)
    return sorted(groups.values(), key=lambda g: sorted(g))


class UnjoinedTable:
    name = "unjoined_table"
    kind = "cap"
    Evidence = ev.UnjoinedTableEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None or ctx.inspection is None:
            return unparsed(self)
        if not ctx.inspection.qualified_ok:
            return report(self, False, "not measured: the SQL's columns could not be placed in their tables",
                          unjoined=[])
        found: list[str] = []
        exempt = _deliberate(ctx.tree, ctx.shown.sql, ctx.probe.dialect)
        # each table as the SQL writes it (the qualified tree's names are normalised)
        written = {t.alias_or_name.lower(): ".".join(p.name for p in t.parts) for t in ctx.tree.find_all(exp.Table)}
        not_measured = False
        for select in ctx.inspection.qualified.find_all(exp.Select):
            sources = _sources(select)
            if len(sources) < 2:
                continue
            groups = _groups(set(sources), _links(select, set(sources)))
            if len(groups) < 2:
                continue
            judged: list[list[exp.Table]] = []
            for group in groups:
                tables = [sources[a] for a in sorted(group)]
                # a group with a derived table, CTE, table function or explicit cross join may
                # be deliberate: the product is not judged
                if group & exempt or not all(isinstance(t, exp.Table) and isinstance(t.this, exp.Identifier)
                                             for t in tables):
                    break
                plain = cast("list[exp.Table]", tables)  # each one tested a Table just above
                n = _group_rows(ctx, select, group, plain)
                if n is None:
                    not_measured = True
                    break
                if n <= 1:
                    break  # one row (a settings table, a filter to one genre): each row pairs with it alone
                judged.append(plain)
            else:
                # every group of this SELECT holds rows of its own: all but the largest (of equal
                # ones, the FROM table's) are unjoined
                first = next(iter(sources))
                judged.sort(key=lambda g: (-len(g), all(t.alias_or_name.lower() != first for t in g)))
                for unjoined in judged[1:]:
                    for t in unjoined:
                        label = written.get(t.alias_or_name.lower()) or ".".join(p.name for p in t.parts)
                        if label not in found:
                            found.append(label)
        if found:
            listed = ", ".join(found)
            return report(self, True, f"{listed} joined to the other tables by no condition: each of its rows "
                                      f"pairs with every row of the rest (a cartesian product); join it on its key, "
                                      f"or write CROSS JOIN if every pair is meant", unjoined=found)
        if not_measured:
            return report(self, False, "not measured: the probe query failed", unjoined=[])
        return report(self, False, "every table is joined to the others", unjoined=[])


def _group_rows(ctx: CheckContext, select: exp.Select, group: set[str], tables: list[exp.Table]) -> int | None:
    """How many rows the group's tables give under the conditions of ``select`` that read
    only them (0, 1 or 2: at most two are fetched); None if the probe fails."""
    names = set(_sources(select))
    own = [part.copy() for part in conditions(select)
           if {c.table.lower() for c in part.find_all(exp.Column) if c.table.lower() in names} <= group]
    probe = exp.select(exp.Literal.number(1)).from_(tables[0].copy())
    for t in tables[1:]:
        probe = probe.join(t.copy())
    if own:
        probe = probe.where(exp.and_(*own))
    probe = probe.limit(2)
    try:
        return len(ctx.probe.rows(probe, max_rows=2))
    except VouchError:
        return None
