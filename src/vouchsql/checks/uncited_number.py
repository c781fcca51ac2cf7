"""Cap: a number in the answer text that the result does not support (IES §3.2).

A number x written with d decimals is cited when some returned cell c, or c×100 (a share
written as a percentage), or the row count satisfies |x − c| ≤ ½·10^−d. Numbers that appear
in the question or hint, and the integers 1 to 5, are ignored. Beyond the paper, numbers
inside text cells (a year in a date, a figure in a label) also count as cells.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ..answer import CheckResult
from . import evidence as ev
from .base import CheckContext, report

# 1,234.5 · 1234 · .5 · 12.50 — a sign only when the minus starts a token ("-3", "(−3"),
# so the parts of 2024-01-31 stay positive.
# Compiled on first use (re's own cache): only a check given an answer text reads it, and
# compiling it at import cost ≈ 1 M instructions of every ``vouch check`` start-up.
_NUMBER = r"(?<![\w.])([-−])?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?!\w)"


@dataclass(frozen=True)
class Written:
    text: str
    value: float
    decimals: int


def numbers_in(text: str | None) -> list[Written]:
    out = []
    for m in re.finditer(_NUMBER, text or ""):
        assert text is not None  # a match means there is text
        sign, body = m.group(1), m.group(2)
        start = m.start(1) if sign else m.start(2)
        if sign and start > 0 and not (text[start - 1].isspace() or text[start - 1] in "([=:$€£"):
            sign = None
        digits = body.replace(",", "")
        decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
        value = float(digits) * (-1 if sign else 1)
        out.append(Written((("-" if sign else "") + body), value, decimals))
    return out


def _cell_values(ctx: CheckContext) -> list[float]:
    values: set[float] = {float(ctx.result.row_count)}
    for row in ctx.result.rows:
        for cell in row:
            if isinstance(cell, bool) or cell is None:
                continue
            if isinstance(cell, (int, float)):
                values.update((float(cell), float(cell) * 100))
            elif isinstance(cell, str):
                for n in numbers_in(cell):
                    values.update((n.value, n.value * 100))
    return sorted(values)


def _cited(x: Written, cells: list[float]) -> bool:
    tol = 0.5 * 10 ** (-x.decimals) + 1e-9
    i = bisect.bisect_left(cells, x.value - tol)
    return i < len(cells) and cells[i] <= x.value + tol


def _schema(cited: list[str]) -> dict[str, float] | None:
    """SCHEMA is measured once the text cites a number the result holds (the designed rule)."""
    return {"schema": 1.0} if cited else None


class UncitedNumber:
    name = "uncited_number"
    kind = "cap"
    Evidence = ev.UncitedNumberEvidence
    feeds = ("schema",)

    def run(self, ctx: CheckContext) -> CheckResult:
        if not ctx.answer_text:
            return report(self, False, "not measured: no answer text")
        if ctx.result.error is not None:
            return report(self, False, "not measured: the shown SQL has no result")
        ignored = {n.value for n in numbers_in(ctx.question) + numbers_in(ctx.hint)}
        cells = _cell_values(ctx)
        cited: list[str] = []
        uncited: list[str] = []
        for n in numbers_in(ctx.answer_text):
            if n.value in ignored or (n.decimals == 0 and 1 <= n.value <= 5):
                continue
            (cited if _cited(n, cells) else uncited).append(n.text)
        if uncited:
            return report(self, True, f"the answer text states {', '.join(uncited)}, which no returned cell, "
                                      f"cell×100 or the row count supports", uncited=uncited, cited=cited,
                          terms=_schema(cited))
        return report(self, False, f"{len(cited)} number(s) in the text, all found in the result"
                      if cited else "no number in the text to check", uncited=[], cited=cited, terms=_schema(cited))
