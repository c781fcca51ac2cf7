"""Cap: a string the SQL compares a column with for equality is held by no row of that column
as written, but is once case and surrounding spaces are set aside, so the filter keeps none of
the rows it names: ``l.name = 'English'`` where Sakila's ``language.name`` is ``CHAR(20)``
stored padded (``'English             '``) on SQLite, or ``g.Name = 'rock'`` where the genre is
``'Rock'`` on an engine that compares case-sensitively.

Read: ``col = 'x'`` (either way round) and ``col IN ('x', …)`` anywhere in the SQL, on a column
of a base table of the comparison's own SELECT whose declared type is not a number, a date or a
time (case and spaces mean nothing there). Measured per column and string on the whole
table: one COUNT of the rows equal to it as written; only where that is 0, one of the rows
equal to it under ``LOWER(TRIM(…))`` on both sides, with one such value to show. An engine that
already ignores trailing spaces (PostgreSQL's ``char(n)``, MariaDB's PAD SPACE collations) or
case (MariaDB's default collations) finds the row in the first COUNT and the check stays silent;
a probe the engine refuses (a column that is not text) is "not measured".
"""

from __future__ import annotations

import re

from sqlglot import exp

from ..db.profile import _is_numeric
from ..errors import VouchError
from ..sql.edit import count_star
from ..sql.scope import Scope
from ..sql.tree import selects
from . import evidence as ev
from .base import CheckContext, report, unparsed


def _string(node: exp.Expression | None) -> str | None:
    return node.this if isinstance(node, exp.Literal) and node.is_string else None


def _comparisons(select: exp.Select) -> list[tuple[exp.Column, str]]:
    """(column, string) for each equality of a column with a string that
    belongs to ``select`` itself (not to a subquery of it)."""
    out = []
    for node in select.find_all(exp.EQ, exp.In):
        if node.parent_select is not select:
            continue
        if isinstance(node, exp.EQ):
            for col, lit in ((node.this, node.expression), (node.expression, node.this)):
                if isinstance(col, exp.Column) and _string(lit) is not None:
                    out.append((col, _string(lit)))
        elif isinstance(node.this, exp.Column) and not node.args.get("query"):
            out.extend((node.this, _string(v)) for v in node.expressions if _string(v) is not None)
    return out


_TEMPORAL = re.compile(r"DATE|TIME", re.I)


def _textual(type_name: str) -> bool:
    """Whether a column of this declared type can hold text whose case or padding differs."""
    return not (_is_numeric(type_name) or _TEMPORAL.search(type_name or ""))


def _folded(node: exp.Expression) -> exp.Expression:
    return exp.Lower(this=exp.Trim(this=node))


class UnmatchedLiteral:
    name = "unmatched_literal"
    kind = "cap"
    Evidence = ev.UnmatchedLiteralEvidence
    feeds = ()

    def run(self, ctx: CheckContext):
        if ctx.tree is None:
            return unparsed(self)
        dialect = ctx.db.dialect
        findings: list[dict] = []
        not_measured: list[str] = []
        seen: set[tuple[str, str, str]] = set()
        for select in selects(ctx.tree):
            scope = None
            for col, text in _comparisons(select):
                if not text.strip():
                    continue
                scope = scope or Scope(select, ctx.profile)
                ref = scope.resolve(col)
                profile = scope.column_profile(ref) if ref is not None else None
                if profile is None or not _textual(profile.type):
                    continue
                key = (ref.table.lower(), ref.column.lower(), text)
                if key in seen:
                    continue
                seen.add(key)
                written = f"{col.sql(dialect=dialect)} = '{text}'"
                got = self._probe(ctx, scope, ref, text)
                if got is None:
                    not_measured.append(written)
                elif got:
                    rows, example = got
                    findings.append({"sql": written, "column": f"{ref.table}.{ref.column}", "literal": text,
                                     "stored": example, "rows": rows})
        if findings:
            detail = "; ".join(
                f"{f['sql']}: no row of {f['column']} holds '{f['literal']}' as written, so the filter keeps "
                f"none of the rows it names; {f['rows']} {'rows hold' if f['rows'] != 1 else 'row holds'} it once "
                f"case and surrounding spaces are set aside (stored as {f['stored']!r}): write the value as "
                f"stored, or compare LOWER(TRIM(…)) on both sides" for f in findings)
            return report(self, True, detail, literals=findings, not_measured=not_measured)
        if not_measured:
            return report(self, False, f"not measured: {'; '.join(not_measured)} (the engine refused the probe)",
                          literals=[], not_measured=not_measured)
        return report(self, False, "every string compared for equality is held by some row as written, "
                                   "or by none even set apart from case and spaces", literals=[], not_measured=[])

    @staticmethod
    def _probe(ctx: CheckContext, scope: Scope, ref, text: str) -> tuple[int, str] | bool | None:
        """False when some row holds ``text`` as written, or none does even folded; (rows, a
        stored value) when only folded ones do; None when the engine refuses the probe."""
        dialect = ctx.db.dialect
        table, _ = scope.by_alias[ref.alias.lower()]
        source = table.copy()
        source.set("alias", None)
        column = scope.column(ref.alias, ref.column, dialect)
        column.set("table", None)
        literal = exp.Literal.string(text)
        exact = exp.select(exp.Literal.number(1)).from_(source.copy()).where(exp.EQ(this=column.copy(),
                                                                                   expression=literal.copy())).limit(1)
        folded = (exp.select(count_star(), exp.Min(this=column.copy())).from_(source.copy())
                  .where(exp.EQ(this=_folded(column.copy()), expression=_folded(literal.copy()))))
        try:
            if ctx.db.query(exact.sql(dialect=dialect), max_rows=1, from_tree=True):
                return False
            rows = ctx.db.query(folded.sql(dialect=dialect), max_rows=1, from_tree=True)
        except VouchError:
            return None
        n, example = (rows[0][0] or 0, rows[0][1]) if rows else (0, None)
        return (int(n), str(example)) if n else False
