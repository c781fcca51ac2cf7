"""Quantifier: "than any" — than every value, or than at least one? (SpecBridge Table S1).

Read only when the question says "than any": a comparison with ``(SELECT MAX(x) …)`` or
``(SELECT MIN(x) …)``, or with ``ALL (…)`` / ``ANY (…)``. ``> MAX`` (and ``< MIN``, ``ALL``)
reads "than every value"; ``> MIN`` (and ``< MAX``, ``ANY``) reads "than at least one". The
alternative swaps MAX and MIN (ALL and ANY) in that subquery.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ..answer import Choice
from ._read import twin, unalias
from .base import ChoiceContext, make_choice, values_note
from .lexicon import Lexicon

_TRIGGER = re.compile(r"(?<!\w)than\s+any(?!\w)", re.I)
_COMPARE = (exp.GT, exp.GTE, exp.LT, exp.LTE)
_SWAP = {exp.Max: exp.Min, exp.Min: exp.Max, exp.All: exp.Any, exp.Any: exp.All}


class Quantifier:
    type = "quantifier"
    lexicon = Lexicon(phrases=("than all", "than every", "than each", "than at least one", "than some",
                               "than the highest", "than the lowest", "than the maximum", "than the minimum",
                               "than the largest", "than the smallest"))

    def detect(self, ctx: ChoiceContext) -> list[Choice]:
        if not _TRIGGER.search(ctx.question or ""):
            return []
        out = []
        for cmp in ctx.tree.find_all(*_COMPARE):
            for side in (cmp.expression, cmp.this):
                target = _quantified(side)
                if target is None:
                    continue
                alt_root = ctx.tree.copy()
                node = twin(alt_root, ctx.tree, target)
                if node is None:
                    continue
                new_cls = _SWAP[type(target)]
                node.replace(new_cls(this=node.this.copy()))
                res = ctx.run(alt_root)
                if res is None:
                    continue
                every = isinstance(target, (exp.All,)) or (
                    isinstance(target, exp.Max) == isinstance(cmp, (exp.GT, exp.GTE)))
                text = (f"\"than any\" can mean than every value or than at least one; "
                        f"{cmp.sql(dialect=ctx.dialect)} reads it as "
                        f"{'every value' if every else 'at least one'}, the alternative as "
                        f"{'at least one' if every else 'every value'}")
                out.append(make_choice(self, text + values_note(ctx, res), ctx, ctx.to_sql(alt_root), res))
        return out


def _quantified(side: exp.Expression) -> exp.Expression | None:
    if isinstance(side, (exp.All, exp.Any)):
        return side
    if isinstance(side, exp.Subquery) and isinstance(side.this, exp.Select):
        projections = side.this.expressions
        if len(projections) == 1 and isinstance(unalias(projections[0]), (exp.Max, exp.Min)):
            return unalias(projections[0])
    return None
