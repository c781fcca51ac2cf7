"""Signal (a cap with the ``exact_columns`` setting): the answer returns a column the question
did not ask for.

Spider-style evaluation, and an analyst pasting the answer into a report, both take the
returned columns as the answer: "Sort employee names by their age" answered with ``SELECT
name, age … ORDER BY age`` returns a second column, "Which grade has the most high
schoolers?" answered with ``SELECT grade, COUNT(*) … ORDER BY COUNT(*) DESC LIMIT 1`` returns
the count beside the grade. Models do this often and agree on it, so agreement cannot see it.

Read on the outermost SELECT of two or more returned columns (:mod:`vouchsql.question.columns`
splits the question into its ordering spans and the rest):

- **sort_key**: a returned expression that is also an ORDER BY key (the same expression, its
  alias or its position) and that the question names only inside an ordering span — a column
  whose words appear there and nowhere else, or a COUNT where no count word ("number", "how
  many", "total" …) appears outside the spans. A column the question does not name at all is
  not judged (the question may use another word for it).
- **star**: ``*`` (or ``t.*``) where the question does not ask for every column ("all the
  information", "all details", "everything").

The numbers such an answer shows are right; what is wrong is its shape. Where the columns are
the contract (a program reads the first column, an evaluation compares columns as Spider does)
the ``exact_columns`` setting makes the check a cap; by default it is a signal, named in the
answer but not withholding it. Measured on nine systems' Spider predictions it is 96% precise as
an error detector at A = 1; on human-written answers that people judged correct
(``../shared/cases/external_dev.jsonl``) it fires on 11 of 66, which return a count beside the
names or ``SELECT *``: the two sets disagree on what a right answer's columns are.
"""

from __future__ import annotations

from typing import Any, cast

from sqlglot import exp

from ..answer import CheckResult
from ..question.columns import Asked, asked_words, word_set
from ..question.words import column_words
from ..sql.tree import projection_for
from . import evidence as ev
from .base import CheckContext, report, unparsed

_AGG_WORDS = {exp.Sum: {"total", "sum"}, exp.Avg: {"average", "mean", "avg"}}


def _bare(node: exp.Expression) -> exp.Expression:
    """The expression without table qualifiers: ``T1.name`` and ``name`` are one sort key."""
    return node.transform(lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n)


def _sort_keys(select: exp.Select) -> set[int]:
    """The positions of the projections an ORDER BY key names (an ordinal, an output alias or
    the same expression, qualifiers aside)."""
    bare = cast(exp.Select, _bare(select))  # a SELECT is no Column: transform keeps it a SELECT
    return {i for o in bare.args["order"].expressions if (i := projection_for(bare, o.this)) is not None}


def _column_words(node: exp.Expression) -> set[str]:
    out: set[str] = set()
    for col in ([node] if isinstance(node, exp.Column) else node.find_all(exp.Column)):
        out |= set(column_words(col.name))
    return out


class AskedColumns:
    name = "asked_columns"
    kind = "signal"
    Evidence = ev.AskedColumnsEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None:
            return unparsed(self)
        outer = ctx.tree
        if not isinstance(outer, exp.Select):
            return report(self, False, "not measured: the outermost query is not one SELECT", findings=[], spans=[])
        asked = asked_words(ctx.question or "")
        findings: list[dict[str, Any]] = []
        projections = outer.expressions
        for p in projections:
            if isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star)):
                if not asked.everything:
                    findings.append({"kind": "star", "column": p.sql(dialect=ctx.probe.dialect), "words": "",
                                     "problem": f"the SQL returns every column ({p.sql(dialect=ctx.probe.dialect)}) "
                                                f"where the question asks for some"})
                break
        if outer.args.get("order") is not None and len(projections) >= 2:
            for i in sorted(_sort_keys(outer)):
                p = projections[i]
                found = self._only_to_order(p, asked)
                if found is not None:
                    sql = p.sql(dialect=ctx.probe.dialect)
                    why = (f"which the question uses only to order or rank ('{found}')" if found else
                           "a count no word of the question asks to see (it only ranks by it)")
                    findings.append({"kind": "sort_key", "column": sql, "words": found,
                                     "problem": f"the SQL returns {sql}, {why}, beside what it asks for"})
        spans = list(asked.spans)
        if findings:
            got = report(self, True, "; ".join(f["problem"] for f in findings), findings=findings, spans=spans)
        else:
            got = report(self, False, "every returned column is asked for, or not judged", findings=[], spans=spans)
        # the kind it is with this setting, fired or not, so the JSON says what it would do
        return got.model_copy(update={"kind": "cap"}) if ctx.probe.config.exact_columns else got

    @staticmethod
    def _only_to_order(projection: exp.Expression, asked: Asked) -> str | None:
        """The ordering words that name ``projection`` when the question names it nowhere else
        ("" for a count that only ranks, with no ordering words); None when it is asked for."""
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(inner, exp.Count):
            if asked.counts_asked:
                return None
            # a count the question never asks to see: it only ranks ("the most high schoolers")
            return next((s for s in asked.spans), "")
        words = _column_words(inner)
        for agg, names in _AGG_WORDS.items():
            if inner.find(agg) is not None:
                words |= names
        if not words or words & asked.outside or not words & asked.inside:
            return None
        return next((s for s in asked.spans if word_set(s) & words), asked.spans[0] if asked.spans else "")
