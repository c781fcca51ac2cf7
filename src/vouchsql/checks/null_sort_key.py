"""Cap: ``ORDER BY x … LIMIT n`` keeps rows whose ``x`` is NULL, so the "first" rows it
returns are the ones whose value is unknown, not the extreme ones.

"The oldest player" written ``ORDER BY birth_date LIMIT 1`` returns a player with no birth
date on SQLite and MariaDB, which sort NULLs first in ascending order; "the latest order"
written ``ORDER BY shipped DESC LIMIT 1`` does the same on PostgreSQL, which sorts them first
in descending order. Agreement cannot see it: every sample sorts the same way.

Read on each SELECT with a LIMIT whose first ORDER BY key is a column (an output alias or a
position naming one included) that the profile says holds NULLs in a table the SELECT reads.
Two probes, the SELECT itself with the key added to what it returns, with and without its
LIMIT, count the rows it keeps whose key is NULL and the rows with a known key it leaves out;
it fires only where a NULL took the place of a known value, so the engine's own NULL ordering
decides: ``NULLS LAST`` or ``WHERE x IS NOT NULL`` keep it quiet, and so do a LIMIT that keeps
every row and a query that asks for the NULL rows (``WHERE x IS NULL``). ``NULLS FIRST``
written out is the writer's choice and is not judged. A correlated subquery is not probed.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.optimizer.scope import build_scope

from ..answer import CheckResult
from ..errors import VouchError
from ..sql.scope import Scope
from ..sql.tree import expand_key, limit_value, selects
from . import evidence as ev
from .base import CheckContext, report, unparsed

_NULLS_FIRST = re.compile(r"\bnulls\s+first\b", re.I)


class NullSortKey:
    name = "null_sort_key"
    kind = "cap"
    Evidence = ev.NullSortKeyEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None:
            return unparsed(self)
        dialect = ctx.probe.dialect
        found: list[dict[str, object]] = []
        not_measured: list[str] = []
        written_selects = selects(ctx.tree)
        # the qualified tree names each column's table, so a correlated subquery is told apart
        qualified = (selects(ctx.inspection.qualified)
                     if ctx.inspection is not None and ctx.inspection.qualified_ok else [])
        # NULLS FIRST written out is the writer's choice (sqlglot reads it as SQLite's default)
        chosen = bool(_NULLS_FIRST.search(ctx.shown.sql))
        for i, select in enumerate(written_selects if not chosen else []):
            order = select.args.get("order")
            limit = limit_value(select)
            if order is None or not order.expressions or limit is None:
                continue
            first = order.expressions[0]
            key = expand_key(select, first.this)
            if not isinstance(key, exp.Column) or not self._may_hold_null(ctx, select, key):
                continue
            written = f"ORDER BY {first.sql(dialect=dialect)} LIMIT {limit}"
            twin = qualified[i] if len(qualified) == len(written_selects) else None
            scope = build_scope(twin.copy()) if twin is not None else None
            correlated = i > 0 and (scope is None or bool(scope.external_columns))
            counts = None if correlated else self._kept_nulls(ctx, select, key)
            if counts is None:
                not_measured.append(written)
            elif counts[0] and counts[1]:
                found.append({"order": written, "column": key.sql(dialect=dialect), "kept_null": counts[0],
                              "known_left_out": counts[1], "limit": limit})
        if found:
            parts = [f"{f['order']} keeps {f['kept_null']} row(s) whose {f['column']} is NULL (unknown) and leaves "
                     f"out {f['known_left_out']} with a known {f['column']}: NULLs sort first that way on this "
                     f"engine, so the rows kept are the unknown ones, not the extreme; add WHERE {f['column']} "
                     f"IS NOT NULL" for f in found]
            return report(self, True, "; ".join(parts), keys=found, not_measured=not_measured)
        if not_measured:
            return report(self, False, f"not measured: {'; '.join(not_measured)} (a correlated subquery, or the "
                                       f"probe failed)", keys=[], not_measured=not_measured)
        return report(self, False, "no ORDER BY … LIMIT keeps a NULL sort key", keys=[], not_measured=[])

    @staticmethod
    def _may_hold_null(ctx: CheckContext, select: exp.Select, key: exp.Column) -> bool:
        """Whether the key's column holds NULLs (the profile's count; the probe decides)."""
        ref = Scope(select, ctx.profile).resolve(key)
        cp = ctx.profile.column(ref.table, ref.column) if ref is not None else None
        return cp is not None and cp.null_count > 0

    @staticmethod
    def _kept_nulls(ctx: CheckContext, select: exp.Select, key: exp.Column) -> tuple[int, int] | None:
        """(rows the LIMIT keeps whose key is NULL, rows with a known key it leaves out): two
        probes, the SELECT with its key added to what it returns, with and without the LIMIT."""
        kept = select.copy()
        kept.set("expressions", [*kept.expressions, exp.alias_(key.copy(), "vouch_k")])
        every = kept.copy()
        every.set("limit", None)
        every.set("offset", None)
        k = exp.column("vouch_k", "vouch_s")

        def over(query: exp.Select, *values: exp.Expr) -> exp.Select:
            return exp.select(*values).from_(
                exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier("vouch_s"))))
        try:
            got = ctx.probe.rows(over(kept, exp.func("COUNT", exp.Star()), exp.func("COUNT", k)), max_rows=1)
            known = ctx.probe.rows(over(every, exp.func("COUNT", k)), max_rows=1)
        except VouchError:
            return None
        rows, kept_known = (int(got[0][0] or 0), int(got[0][1] or 0)) if got else (0, 0)
        return rows - kept_known, (int(known[0][0] or 0) if known else 0) - kept_known
