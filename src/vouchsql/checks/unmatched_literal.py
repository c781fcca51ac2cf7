"""Cap: an answer built on a value the data does not hold (issue 31).

Read: a string (or a number) the SQL compares a column with — ``col = 'x'`` (either way
round), ``<>``/``!=``, ``IN`` / ``NOT IN`` a list, ``LIKE 'x'`` without wildcards or with them
at its ends only (``LIKE '%x%'``, held when some row matches it) — anywhere in
the SQL, on a column of a base table of the comparison's own SELECT whose declared type is not
a number, a date or a time (``hd = 1`` on a column of 'yes'/'no' is read). Measured per column
and string, each with the engine's own comparison:

1. whether some row holds it as written (``col = 'x'``, or ``col LIKE 'x'``): the engine's
   collation, padding and affinity decide, so MariaDB's case-insensitive collations and
   PostgreSQL's ``char(n)`` padding are silent here;
2. if none does, the closest value the column holds (:mod:`.near_values`: case, spacing,
   accents, punctuation, plural, a number or a date written otherwise, an initialism or a
   short code, a close spelling), from one ``LOWER(TRIM(…))`` lookup and the column's most
   frequent values;
3. whether the answer depends on it: the shown SQL is run again with the closest held value in
   the string's place, and the two answers are compared as agreement compares results.

It fires ("near") where the answer changes with the held form — both answers are shown —
("absent") where nothing close is held and the answer is empty, a 0 or a NULL: the data holds
no such value, so the premise is doubtful rather than the answer 0; and ("excludes_nothing")
where a ``<>``, ``NOT IN`` or ``NOT LIKE`` leaves out a value nothing close to which is held:
the condition drops no row (but NULLs), whatever the answer. Several unheld values that each
leave the answer as it is are tried once more all replaced together (``= 'Dog' AND sex =
'Female'`` finds nothing until both are written as stored); if the answer changes then, each
is a "near" finding naming the others (``together``). Where the question's own words name the
held form the SQL is wrong; where they name the SQL's form it is a question for the user. An
unheld value that gives the same answer either way is listed as ``same_answer``. A probe the
engine refuses is "not measured".
"""

from __future__ import annotations

import re
from typing import Any, Literal, cast

from sqlglot import exp

from ..agreement import results_match
from ..answer import CheckResult, Result
from ..db.figures import _is_numeric
from ..errors import VouchError
from ..sql.edit import count_star
from ..sql.scope import Ref, Scope
from ..sql.tree import literal_comparisons, selects, twin
from . import evidence as ev
from .base import CheckContext, report, unparsed
from .near_values import named_in, nearest

HELD_VALUES = 1000  # the most frequent values a column is searched for a close form
MAX_LITERALS = 20  # values probed per answer; the rest are listed as not measured (a bound on probes)
_TEMPORAL = re.compile(r"DATE|TIME", re.I)


def _string(node: exp.Expression | None) -> str | None:
    return node.this if isinstance(node, exp.Literal) and node.is_string else None


def _value(node: exp.Expression | None) -> str | None:
    """The text of a string or number literal (``hdtv = 1`` on a column of 'yes'/'no' is a value
    the column does not hold as much as ``= 'Yes'`` is); a negative number is ``Neg`` of one."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return "-" + cast(str, node.this.this)  # a number literal's text
    return node.this if isinstance(node, exp.Literal) else None


def _like_exact(node: exp.Like) -> bool:
    """A LIKE whose pattern has no wildcard: an equality the engine tests with LIKE's own case
    rules."""
    text = _string(node.expression)
    return text is not None and not re.search(r"[%_]", text) and isinstance(node.this, exp.Column)


def _pattern_core(node: exp.Like) -> str | None:
    """The text of a LIKE pattern that only has wildcards at its ends (``'%Bachelors%'`` →
    ``Bachelors``), at least two characters; None for any other pattern."""
    text = _string(node.expression)
    if text is None or not isinstance(node.this, exp.Column):
        return None
    core = text.strip("%")
    return core if len(core) >= 2 and not re.search(r"[%_]", core) else None


def _negated(node: exp.Expression) -> bool:
    """``<>``/``!=``, ``NOT IN``, ``NOT LIKE`` and ``NOT (x = …)``: a comparison that keeps the
    rows *without* the value (``NOT (x <> 'v')`` keeps those with it)."""
    up = node.parent
    while isinstance(up, exp.Paren):
        up = up.parent
    # sqlglot writes NOT LIKE (and NOT IN, in some versions) as the node's own ``negate``
    return (isinstance(node, exp.NEQ) or bool(node.args.get("negate"))) != isinstance(up, exp.Not)


def _comparisons(select: exp.Select) -> list[tuple[exp.Column, exp.Expression, str, bool]]:
    """(column, the literal's node, how, negated) for each comparison this check reads: ``=``,
    ``<>``, ``IN`` and ``NOT IN`` a list (how "eq"), ``LIKE`` without wildcards ("like") and
    ``LIKE`` with wildcards at the ends only ("pattern")."""
    out = []
    for col, lit, node in literal_comparisons(select):
        if isinstance(node, exp.Like):
            how = "like" if _like_exact(node) else "pattern" if _pattern_core(node) else None
        else:
            how = "eq" if _value(lit) is not None else None
        if how is not None:
            out.append((col, lit, how, _negated(node)))
    return out


def _textual(type_name: str) -> bool:
    """Whether a column of this declared type can hold text whose form differs."""
    return not (_is_numeric(type_name) or _TEMPORAL.search(type_name or ""))


def _folded(node: exp.Expression) -> exp.Expression:
    return exp.Lower(this=exp.Trim(this=node))


def brief(result: Result) -> str:
    """An answer in a few words: ``0 rows``, ``1 row: (0)``, ``3 rows: (a), (b), …``."""
    if result.error is not None:
        return f"an error ({result.error.kind})"
    n = result.row_count
    head = ", ".join("(" + ", ".join("NULL" if v is None else str(v) for v in row) + ")" for row in result.rows[:3])
    more = ", …" if n > 3 else ""
    return f"{n} row{'s' if n != 1 else ''}" + (f": {head}{more}" if n else "")


def nothing_found(result: Result) -> bool:
    """An answer that says "none": no rows, or one row of zeros and NULLs (a COUNT of 0, a SUM
    of NULL)."""
    if result.error is not None:
        return False
    if result.row_count == 0:
        return True
    return result.row_count == 1 and all(v is None or (isinstance(v, (int, float)) and v == 0)
                                         for v in result.rows[0])


class UnmatchedLiteral:
    name = "unmatched_literal"
    kind = "cap"
    Evidence = ev.UnmatchedLiteralEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None:
            return unparsed(self)
        dialect = ctx.probe.dialect
        findings: list[dict[str, Any]] = []
        not_measured: list[str] = []
        same: list[str] = []
        seen: set[tuple[str, str, str, str]] = set()
        # unheld values whose closest held form alone leaves the answer as it is: tried together
        alone: list[tuple[exp.Expression, str, dict[str, Any]]] = []
        for select in selects(ctx.tree):
            scope = None
            for col, lit, how, negated in _comparisons(select):
                text = _value(lit)
                assert text is not None  # _comparisons keeps only literals with a value
                if not text.strip():
                    continue
                scope = scope or Scope(select, ctx.profile)
                ref = scope.resolve(col)
                profile = scope.column_profile(ref) if ref is not None else None
                if ref is None or profile is None or not _textual(profile.type):
                    continue
                key = (ref.table.lower(), ref.column.lower(), text, how)
                if key in seen:
                    continue
                seen.add(key)
                op = ("<>" if negated else "=") if how == "eq" else ("NOT LIKE" if negated else "LIKE")
                written = f"{col.sql(dialect=dialect)} {op} {lit.sql(dialect=dialect)}"
                if len(seen) > MAX_LITERALS:
                    not_measured.append(written)
                    continue
                got = self._held(ctx, scope, ref, lit, text, how)
                if got is None:
                    not_measured.append(written)
                    continue
                if got is True:
                    continue
                where = {"sql": written, "column": f"{ref.table}.{ref.column}", "literal": text}
                finding = self._judge(ctx, lit, text, got, how, negated)
                if finding is None:
                    not_measured.append(written)
                elif isinstance(finding, tuple):
                    replacement, would = finding
                    if would:
                        alone.append((lit, replacement, {**where, **would}))
                    same.append(written)
                else:
                    findings.append({**where, **finding})
        if len(alone) > 1:
            together = self._together(ctx, alone)
            if together:
                findings += together
                same = [w for w in same if w not in {f["sql"] for f in together}]
        evidence: dict[str, Any] = {"not_measured": not_measured, "same_answer": same}
        if findings:
            return report(self, True, "; ".join(_say(f) for f in findings), literals=findings, **evidence)
        if not_measured:
            return report(self, False, f"not measured: {'; '.join(not_measured)} (the engine refused the probe)",
                          literals=[], **evidence)
        if same:
            return report(self, False, f"no row holds the value of {'; '.join(same)} as written, but the answer "
                                       f"is the same with the closest held value", literals=[], **evidence)
        return report(self, False, "every string compared is held by some row as written", literals=[], **evidence)

    def _judge(self, ctx: CheckContext, node: exp.Expression, text: str, held: list[tuple[str, int]],
               how: str = "eq", negated: bool = False) -> dict[str, Any] | tuple[str, dict[str, Any]] | None:
        """The finding for a string no row holds: a dict (fires), ``(replacement, finding)``
        where the answer is the same with the closest held value in its place (the finding
        it would be, should the answer change with the other unheld values replaced too), or
        None (the rerun could not run)."""
        shown = ctx.result
        core = text.strip("%") if how == "pattern" else text
        near = nearest(core, held)
        q = ctx.question or ""
        if near is None:
            if negated:
                # x <> 'v' where no row holds v (nor anything close): the condition drops no
                # row but those where x is NULL, whatever the answer.
                return {"finding": "excludes_nothing", "question": "written" if named_in(q, core) else "neither",
                        "answer": brief(shown)}
            if not nothing_found(shown):
                return "", {}  # nothing close to try, and an answer that is not "none"
            return {"finding": "absent", "question": "written" if named_in(q, core) else "neither",
                    "answer": brief(shown)}
        value, form, rows = near
        replacement = text.replace(core, value) if how == "pattern" else value
        other = self._rerun(ctx, [(node, replacement)])
        if other is None:
            return None
        says = {(True, False): "stored", (False, True): "written", (True, True): "both"}.get(
            (named_in(q, value), named_in(q, core)), "neither")
        finding = {"finding": "near", "stored": value, "near": form, "rows": rows, "question": says,
                   "answer": brief(shown), "answer_with_stored": brief(other)}
        if results_match(shown, other).matched:
            return replacement, finding
        return finding

    @staticmethod
    def _rerun(ctx: CheckContext, edits: list[tuple[exp.Expression, str]]) -> Result | None:
        """The shown SQL run again with each literal node replaced by its string; None when it
        cannot run or either answer is cut off (a cut answer cannot say whether they differ)."""
        assert ctx.tree is not None  # run() reads only a parsed tree
        tree = ctx.tree.copy()
        for node, value in edits:
            target = twin(tree, ctx.tree, node)
            assert target is not None  # node is in ctx.tree, so its copy has a twin
            target.replace(exp.Literal.string(value))
        other = ctx.probe.run(tree)
        shown = ctx.result
        if other.error is not None or shown.error is not None or shown.truncated or other.truncated:
            return None
        return other

    def _together(self, ctx: CheckContext,
                  alone: list[tuple[exp.Expression, str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Unheld values that each leave the answer as it is alone, replaced all at once: a
        filter on 'Dog' AND 'Female' finds nothing whichever one is written as stored ('dog',
        'F') until both are. The findings when the answer changes then, else none."""
        other = self._rerun(ctx, [(node, value) for node, value, _ in alone])
        if other is None or results_match(ctx.result, other).matched:
            return []
        written = [f["sql"] for _, _, f in alone]
        return [{**f, "answer_with_stored": brief(other), "together": [w for w in written if w != f["sql"]]}
                for _, _, f in alone]

    @staticmethod
    def _held(ctx: CheckContext, scope: Scope, ref: Ref, written: exp.Expression, text: str,
              how: str) -> list[tuple[str, int]] | Literal[True] | None:
        """True when some row holds ``text`` as written (by the engine's comparison), else the
        column's candidate values as ``(value, rows)``: the rows equal under ``LOWER(TRIM(…))``
        first, then the most frequent values. None when the engine refuses the probe."""
        dialect = ctx.probe.dialect
        table, _ = scope.by_alias[ref.alias.lower()]
        source = table.copy()
        source.set("alias", None)
        column = scope.column(ref.alias, ref.column, dialect)
        column.set("table", None)
        literal = written.copy()  # compared as the SQL writes it: a number stays a number
        test = exp.EQ if how == "eq" else exp.Like
        exact = exp.select(exp.Literal.number(1)).from_(source.copy()).where(
            test(this=column.copy(), expression=literal.copy())).limit(1)
        folded = (exp.select(exp.Min(this=column.copy()), count_star()).from_(source.copy())
                  .where(exp.EQ(this=_folded(column.copy()), expression=_folded(exp.Literal.string(text)))))
        frequent = (exp.select(column.copy(), count_star()).from_(source.copy())
                    .where(exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null())))
                    .group_by(column.copy()).order_by(exp.Ordered(this=count_star(), desc=True))
                    .limit(HELD_VALUES))
        try:
            if ctx.probe.rows(exact, max_rows=1):
                return True
            # a pattern is matched by the engine's LIKE above; folding its wildcards finds nothing
            held = [] if how == "pattern" else [(v, n) for v, n in ctx.probe.rows(folded, max_rows=1) if n]
            # a scan of the whole column, like every probe bounded by the query timeout
            held += ctx.probe.rows(frequent, max_rows=HELD_VALUES)
        except VouchError:
            return None
        return [(v if isinstance(v, str) else str(v), int(n or 0)) for v, n in held if v is not None]


def _say(f: dict[str, Any]) -> str:
    holds = "matches" if " LIKE " in f["sql"] and "%" in f["literal"] else "holds"
    if f["finding"] == "excludes_nothing":
        return (f"{f['sql']}: no row of {f['column']} {holds} '{f['literal']}' or anything close to it, so the "
                f"condition drops no row but those where {f['column']} is NULL: the value to leave out is "
                f"written otherwise, or the data holds none")
    if f["finding"] == "absent":
        head = (f"{f['sql']}: no row of {f['column']} {holds} '{f['literal']}' or anything close to it, and the "
                f"answer is {f['answer']}")
        if f["question"] == "written":
            return head + ": the question names a value the data does not hold (its premise is doubtful), " \
                          "so the answer is not evidence that there are none"
        return head + ": the data holds no such value, so the answer is not evidence that there are none"
    also = f" (and {', '.join(f['together'])} written as stored too)" if f.get("together") else ""
    head = (f"{f['sql']}: no row of {f['column']} {holds} '{f['literal']}' as written; "
            f"{f['rows']} {'rows hold' if f['rows'] != 1 else 'row holds'} {f['stored']!r} ({_FORM_WORDS[f['near']]}), "
            f"and with it{also} the answer is {f['answer_with_stored']} instead of {f['answer']}")
    if f["question"] == "stored":
        return head + f": the question names {f['stored']!r}, so write the value as stored"
    if f["near"] in SAME_VALUE:
        return head + ": write the value as stored, or compare both sides normalised (LOWER(TRIM(…)) for case " \
                      "and spaces)"
    return head + f": ask whether '{f['literal']}' means {f['stored']!r}"


# Forms that write the same value otherwise; the rest (plural, stem, initials, a short form, a
# close spelling) may name another thing, which only the person asking can say.
SAME_VALUE = ("case", "accents", "punctuation", "number", "date")


_FORM_WORDS = {"case": "the same apart from case and spaces", "accents": "the same apart from accents",
               "punctuation": "the same apart from spaces and punctuation", "plural": "the same word, singular or plural",
               "number": "the same number written otherwise", "date": "the same date written otherwise",
               "stem": "the same word with another ending",
               "initialism": "initials and the words they stand for", "abbreviation": "a short form and a long one", "spelling": "a close spelling"}
