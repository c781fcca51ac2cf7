"""Quantifier: "than any" — than every value, or than at least one? (SpecBridge Table S1).

Read only when the question says "than any": a comparison with ``(SELECT MAX(x) …)`` or
``(SELECT MIN(x) …)``, or with ``ALL (…)`` / ``ANY (…)``. ``> MAX`` (and ``< MIN``, ``ALL``)
reads "than every value"; ``> MIN`` (and ``< MAX``, ``ANY``) reads "than at least one". The
alternative swaps MAX and MIN (ALL and ANY) in that subquery.
"""

from __future__ import annotations

import re

from typing import Iterator

from sqlglot import exp

from ..answer import Result
from ..sql.tree import twin, unalias
from .base import ChoiceContext, Site, values_note
from .lexicon import Lexicon

_TRIGGER = re.compile(r"(?<!\w)than\s+any(?!\w)", re.I)
_COMPARE = (exp.GT, exp.GTE, exp.LT, exp.LTE)
_SWAP: dict[type[exp.Expr], type[exp.Expression]] = {exp.Max: exp.Min, exp.Min: exp.Max, exp.All: exp.Any, exp.Any: exp.All}


class Quantifier:
    type = "quantifier"
    lexicon = Lexicon(phrases=("than all", "than every", "than each", "than at least one", "than some",
                               "than the highest", "than the lowest", "than the maximum", "than the minimum",
                               "than the largest", "than the smallest"))

    def sites(self, ctx: ChoiceContext) -> Iterator[Site]:
        if not _TRIGGER.search(ctx.question or ""):
            return
        for cmp in ctx.tree.find_all(*_COMPARE):
            for side in (cmp.expression, cmp.this):
                target = _quantified(side)
                if target is not None:
                    every = isinstance(target, (exp.All,)) or (
                        isinstance(target, exp.Max) == isinstance(cmp, (exp.GT, exp.GTE)))
                    yield ctx.site("swap", target, cmp=cmp, every=every)

    def rewrite(self, tree: exp.Expression, site: Site) -> exp.Expression | None:
        alt_root = tree.copy()
        node = twin(alt_root, tree, site.node)
        if node is None:
            return None
        assert site.node is not None  # it has a twin
        node.replace(_SWAP[type(site.node)](this=node.this.copy()))
        return alt_root

    def describe(self, site: Site, shown: Result, alt: Result) -> str:
        every = site.every
        return (f"\"than any\" can mean than every value or than at least one; "
                f"{site.sql(site.cmp)} reads it as "
                f"{'every value' if every else 'at least one'}, the alternative as "
                f"{'at least one' if every else 'every value'}") + values_note(shown, alt)


def _quantified(side: exp.Expression) -> exp.Expression | None:
    if isinstance(side, (exp.All, exp.Any)):
        return side
    if isinstance(side, exp.Subquery) and isinstance(side.this, exp.Select):
        projections = side.this.expressions
        if len(projections) == 1 and isinstance(unalias(projections[0]), (exp.Max, exp.Min)):
            return unalias(projections[0])
    return None
