"""Signal: the inner joins keep only a small part of the driving table's rows, so the
answer silently describes a subset. Measured with the WHERE's join equalities and its
filters on the driving table alone (those scope the rows on purpose, so the share is of
the rows they keep); filters on the joined tables are left out.

The dropped rows are outside the question's scope, and the signal stays silent, when
- the WHERE filters on a joined table's columns: the question asks about rows that have
  matching rows (invoices of 2025), so an unmatched row could never be in the answer;
- the query ranks the driving table's groups by a count or sum of the joined rows,
  highest first, for the top of the ranking (a LIMIT, or "most", "top" in the question):
  an unmatched row would rank last with nothing;
- the question names a value of one of the driving table's columns ("each sales agent":
  Title 'Sales Support Agent') and the joins keep exactly the rows with that value: the
  join is how the query scopes the rows the question names."""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from ..answer import CheckResult
from ..sql.edit import column, conjuncts, count_distinct, driving_table, join_equalities, reshape
from ..sql.inspect import table_key
from ._joins import group_keys, outer_select, run_counts
from . import evidence as ev
from .base import CheckContext, report

DROP_SHARE = 0.30
MAX_SCOPES = 3  # named values tried per query (one probe each)
# Compiled on first use (re's own cache): only a joined query that ranks groups reaches it,
# and compiling it at import cost ≈ 1 M instructions of every ``vouch check`` start-up.
_TOP_WORDS = r"(?<!\w)(most|top|best|highest|largest|biggest|greatest|maximum|leading)(?!\w)"


def _has_inner_join(select: exp.Select) -> bool:
    for join in select.args.get("joins") or []:
        outer = (join.side or "").upper() in ("LEFT", "RIGHT", "FULL")
        if not outer and (join.args.get("on") is not None or join.args.get("using")):
            return True
    return bool(join_equalities(select.args.get("where")))




def _aliases(node: exp.Expression) -> set[str] | None:
    """The table aliases a condition reads (``None`` when a column has no table)."""
    out = set()
    for col in node.find_all(exp.Column):
        if not col.table:  # ``o.*`` reads o like any column of it
            return None
        out.add(col.table.lower())
    return out


def _split_where(select: exp.Select,
                 drive: str) -> tuple[list[exp.Expression], list[exp.Expression], list[exp.Expression]]:
    """WHERE conjuncts: join equalities, filters on the driving table alone, filters that
    read a joined table's columns (and reject its NULLs: no IS NULL, COALESCE or OR)."""
    eqs = {id(e) for e in join_equalities(select.args.get("where"))}
    joins: list[exp.Expression] = []
    own: list[exp.Expression] = []
    joined: list[exp.Expression] = []
    for part in conjuncts(select.args.get("where")):
        if id(part) in eqs:
            joins.append(part)
            continue
        aliases = _aliases(part)
        if aliases is None or part.find(exp.Select):
            continue
        if aliases and aliases <= {drive}:
            own.append(part)
        elif aliases - {drive} and (_not_null(part) or not part.find(exp.Is, exp.Coalesce, exp.Or, exp.Not)):
            joined.append(part)
    return joins, own, joined


def _not_null(part: exp.Expression) -> bool:
    """``x IS NOT NULL`` (either spelling) on a plain column or ``o.*``: it rejects the
    joined table's NULLs as plainly as a comparison does, so only matched rows can answer."""
    if isinstance(part, exp.Not) and isinstance(part.this, exp.Is) and not part.this.args.get("negate"):
        part = part.this
    elif not (isinstance(part, exp.Is) and part.args.get("negate")):
        return False
    return isinstance(part.expression, exp.Null) and isinstance(part.this, exp.Column)


def _ranks_groups_by_joined_rows(ctx: CheckContext, select: exp.Select, drive: str) -> bool:
    """The query groups the driving table's rows and ranks them, highest first, by a COUNT
    or SUM of the joined rows, for the top of the ranking."""
    keys, order = group_keys(select), select.args.get("order")
    if not keys or not order or not order.expressions:
        return False
    if any(same is None or not any(a == drive for a, _ in same) for same in keys):
        return False  # a GROUP BY value that is not one of the driving table's columns
    first = order.expressions[0]
    if not first.args.get("desc"):
        return False
    key = first.this
    if isinstance(key, exp.Column) and not key.table:
        hit = next((p for p in select.expressions if isinstance(p, exp.Alias) and p.alias.lower() == key.name.lower()),
                   None)
        key = hit.this if hit is not None else key
    if not isinstance(key, (exp.Count, exp.Sum)):
        return False
    aliases = _aliases(key)
    if aliases is None or drive in aliases:
        return False
    limit = select.args.get("limit")
    if limit is not None:
        # The top of the ranking is the shown rows only when the LIMIT was filled.
        value = limit.args.get("expression") or limit.this
        try:
            k = int(value.this) if isinstance(value, exp.Literal) and not value.is_string else None
        except ValueError:
            k = None
        return k is not None and ctx.result.row_count >= k
    return bool(re.search(_TOP_WORDS, ctx.question or "", re.I))


def _count_rows(ctx: CheckContext, table: exp.Table, conds: list[exp.Expression]) -> int | None:
    probe = exp.select(exp.Count(this=exp.Star())).from_(table.copy())
    if conds:
        probe.set("where", exp.Where(this=exp.and_(*[c.copy() for c in conds])))
    counts = run_counts(ctx, probe)
    return int(counts[0]) if counts else None


def _kept(ctx: CheckContext, select: exp.Select, drive: str, key: str, conds: list[exp.Expression]) -> int | None:
    probe = reshape(select, [count_distinct(column(drive, key, ctx.probe.dialect))], where="drop")
    if conds:
        probe.set("where", exp.Where(this=exp.and_(*[c.copy() for c in conds])))
    counts = run_counts(ctx, probe)
    return int(counts[0]) if counts else None


class JoinDrop:
    name = "join_drop"
    kind = "signal"
    Evidence = ev.JoinDropEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        select = outer_select(ctx)
        if select is None or not _has_inner_join(select):
            return report(self, False, "no inner join in the outer query")
        drive = driving_table(select)
        name = table_key(drive, ctx.profile.default_schema) if drive is not None else None
        key = ctx.profile.entity_key(name) if name is not None else None
        table = ctx.profile.table(name) if name is not None else None
        if drive is None or key is None or table is None or not table.row_count:
            return report(self, False, "not measured: the driving table has no single-column key")
        alias = drive.alias_or_name
        joins, own, joined = _split_where(select, alias.lower())
        kept = _kept(ctx, select, alias, key, joins + own)
        total = _count_rows(ctx, drive, own) if own else table.row_count
        if kept is None or total is None:
            return report(self, False, "not measured: the probe query failed")
        if not total:
            return report(self, False, f"no {table.name} rows pass the query's own filters")
        share = 1 - kept / total
        evidence: dict[str, Any] = {"table": table.name, "rows": total, "kept": kept, "dropped_share": round(share, 4)}
        of = f"{total:,} {table.name} rows" + (" that pass its filters on them" if own else "")
        if share < DROP_SHARE:
            return report(self, False, f"the joins keep {kept:,} of {of}", **evidence)
        why = self._in_scope(ctx, select, drive, key, joins, own, joined, kept)
        if why:
            return report(self, False, f"the joins keep {kept:,} of {of}; the dropped rows are outside the "
                                       f"question's scope: {why}", **evidence)
        return report(self, True, f"the joins keep {kept:,} of {of}; {share:.0%} are dropped before any "
                                  f"filter on the joined tables", **evidence)

    def _in_scope(self, ctx: CheckContext, select: exp.Select, drive: exp.Table, key: str,
                  joins: list[exp.Expression], own: list[exp.Expression], joined: list[exp.Expression],
                  kept: int) -> str | None:
        from ..words import named_values

        alias = drive.alias_or_name
        table = ctx.profile.table(table_key(drive, ctx.profile.default_schema))
        if not kept:
            return None  # every row dropped: no scope explains an empty answer
        assert table is not None  # run() found the driving table in the profile
        if joined:
            return (f"the WHERE filters on the joined rows ({joined[0].sql(dialect=ctx.probe.dialect)}), so only "
                    f"{table.name} rows with matching rows can answer")
        if _ranks_groups_by_joined_rows(ctx, select, alias.lower()):
            return f"the query ranks {table.name} by its joined rows, highest first; an unmatched row ranks last"
        tried = 0
        for cp in table.columns:
            for value, count in named_values(ctx.question, cp, table.row_count):
                if tried >= MAX_SCOPES:
                    return None
                tried += 1
                where = exp.EQ(this=column(alias, cp.name, ctx.probe.dialect), expression=exp.Literal.string(value))
                inside = _kept(ctx, select, alias, key, joins + own + [where])
                scope = _count_rows(ctx, drive, own + [where]) if own or table.sampled else count
                if inside is None or not scope:
                    continue
                if inside == kept and 1 - inside / scope < DROP_SHARE:
                    return (f"the question names {cp.name} '{value}', and the joins keep {inside:,} of the "
                            f"{scope:,} {table.name} rows with it and no other")
        return None
