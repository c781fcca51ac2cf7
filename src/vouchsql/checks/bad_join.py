"""Veto: an equi-join pair whose keys barely overlap, ρ < 0.85 in both directions
(IES eq. 2; Appendix C takes the better direction). ``x [NOT] IN (SELECT y …)`` matches x to y
as a join does, so its pair is measured the same way where both columns are keys; a pair of
other columns fires only where the two share no value at all: partial overlap is often the
point of such a question ("countries with both customers and suppliers"), while a NOT IN over
codes that share none (stored with a leading space on one side) keeps every row."""

from __future__ import annotations

from typing import Any, cast

from ..answer import CheckResult
from . import evidence as ev
from ..rules import RHO_MIN
from ..sql.inspect import pair_sql
from .base import CheckContext, report, unparsed


def join_overlaps(ctx: CheckContext) -> list[dict[str, Any]]:
    """ρ for every distinct equi-join pair of the shown SQL, from the profile or measured."""
    if "join_overlaps" in ctx.cache:
        return cast("list[dict[str, Any]]", ctx.cache["join_overlaps"])  # as stored below
    out: list[dict[str, Any]] = []
    seen: set[frozenset[tuple[str, str]]] = set()
    for j in ctx.inspection.joins if ctx.inspection else []:
        key = frozenset({(j.left.table, j.left.column), (j.right.table, j.right.column)})
        if key in seen:
            continue
        seen.add(key)
        pair = ctx.profile.join_pair(j.left.table, j.left.column, j.right.table, j.right.column) \
            or ctx.probe.overlap(j.left.table, j.left.column, j.right.table, j.right.column)
        out.append({"left": str(j.left), "right": str(j.right), "form": j.written,
                    "rho": None if pair is None else pair.rho,
                    "overlap": None if pair is None else pair.overlap,
                    "left_distinct": None if pair is None else pair.left_distinct,
                    "right_distinct": None if pair is None else pair.right_distinct,
                    "estimated": bool(pair and pair.estimated)})
    ctx.cache["join_overlaps"] = out
    return out


def _bad(ctx: CheckContext, pair: dict[str, Any]) -> bool:
    """A join pair is bad below ρ = 0.85. So is an IN pair of two key columns; an IN pair of
    other columns only where they share no value at all: "countries with both customers and
    suppliers" matches some on purpose, but an IN over columns that share nothing keeps no
    row, and a NOT IN keeps every row, whatever it filters."""
    if pair["rho"] >= RHO_MIN:
        return False
    if pair["form"] not in ("in", "not in"):
        return True
    if pair["overlap"] == 0 and pair["left_distinct"] and pair["right_distinct"]:
        return True
    return all(ctx.profile.is_key_column(*pair[side].rpartition(".")[::2]) for side in ("left", "right"))


class BadJoin:
    name = "bad_join"
    kind = "veto"
    Evidence = ev.BadJoinEvidence
    feeds = ("grounded",)

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.inspection is None:
            return unparsed(self)
        pairs = join_overlaps(ctx)
        rated = [p for p in pairs if p["rho"] is not None]
        bad = [p for p in rated if _bad(ctx, p)]
        # GROUNDED's join share: the rated pairs whose keys overlap (IES eq. 1).
        terms = {"grounded": 1 - len(bad) / len(rated)} if rated else None
        if bad:
            words = "; ".join(
                f"{pair_sql(p['left'], p['right'], p['form'])} shares {p['overlap']} of {p['left_distinct']} and "
                f"{p['right_distinct']} distinct keys (ρ = {p['rho']:.2f} < {RHO_MIN})" for p in bad)
            return report(self, True, f"the join keys barely overlap: {words}", joins=bad, terms=terms)
        if not pairs:
            return report(self, False, "no equi-join column pairs", joins=[])
        if all(p["form"] not in ("in", "not in") for p in pairs):
            return report(self, False, f"{len(pairs)} join pair(s), all with ρ ≥ {RHO_MIN}", joins=pairs, terms=terms)
        return report(self, False, f"{len(pairs)} join pair(s), none whose keys barely overlap (an IN pair of "
                                   f"columns that are not keys only where they share no value)",
                      joins=pairs, terms=terms)
