"""Cap: the result merges different entities that share a name.

``GROUP BY Track.Name`` (without the track's key) adds up every track called "Intro" into one
row; ``GROUP BY P.Name`` merges the two playlists called "Music". The check fires only on
evidence from the data: the grouped column is a label of its table (a ``name`` or ``title``
column, nearly unique there: at least ``MIN_LABEL_SHARE`` of the rows have a label of their
own, so it names rows rather than categories such as a job title), the table's key is not
grouped by, and a probe over the query's own rows finds groups holding more than one key —
among the rows the result shows, when it has a LIMIT.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from ..answer import CheckResult
from ..errors import VouchError
from ..sql.edit import column as column_ref
from . import evidence as ev
from ._joins import tables_by_alias
from .base import CheckContext, report

MIN_LABEL_SHARE = 0.75
_LABELS = ("name", "title")
_EXAMPLES = 3
_PROBE_ROWS = 1000


def _label_columns(select: exp.Select, ctx: CheckContext) -> list[tuple[exp.Column, str, str, str]]:
    """(the GROUP BY column, its table, its name as the profile spells it, that table's key) for
    each grouped label whose table's key is not grouped by."""
    group = select.args.get("group")
    if group is None:
        return []
    aliases = tables_by_alias(select, ctx.profile)
    grouped = [e for e in group.expressions if isinstance(e, exp.Column) and e.table]
    grouped_names = {(e.table.lower(), e.name.lower()) for e in grouped}
    out = []
    for col in grouped:
        name = col.name.lower().replace("_", "")
        if not name.endswith(_LABELS):
            continue
        table = aliases.get(col.table.lower())
        profile = ctx.profile.table(table) if table else None
        if table is None or profile is None:
            continue
        key = ctx.profile.entity_key(table)
        column = ctx.profile.column(table, col.name)
        if key is None or column is None or not profile.row_count:
            continue
        if (col.table.lower(), key.lower()) in grouped_names or any(n == key.lower() for _, n in grouped_names):
            continue  # grouped by the key too (or a column of that name): entities stay apart
        share = column.distinct_count / profile.row_count
        if MIN_LABEL_SHARE <= share < 1:
            out.append((col, profile.qualified, column.name, key))
    return out


def _merged(ctx: CheckContext, select: exp.Select, col: exp.Column, key: str) -> list[Any] | None:
    """The labels of the query's groups that hold more than one key (``None``: not measured)."""
    probe = select.copy()
    for arg in ("order", "limit", "offset"):
        probe.set(arg, None)
    keys = exp.Count(this=exp.Distinct(expressions=[column_ref(col.args.get("table"), key, ctx.probe.dialect)]))
    probe.set("expressions", [col.copy()])
    having = exp.GT(this=keys, expression=exp.Literal.number(1))
    old = probe.args.get("having")
    probe.set("having", exp.Having(this=exp.and_(old.this, having) if old is not None else having))
    try:
        rows = ctx.probe.rows(probe, max_rows=_PROBE_ROWS)
    except VouchError:
        return None
    return [r[0] for r in rows]


# Compiled on first use (re's own cache): only a question that names a label reaches it, and
# compiling it at import cost ≈ 2 M instructions of every ``vouch check`` start-up.
_SHARED = (r"\b(same|share|shares|shared|sharing|duplicate|duplicates|duplicated|repeated|repeat|"
           r"identical|common|more than once|appear more|occur more|used (?:more|by more))\b")


def _label_asked(question: str, label: str) -> bool:
    """The question groups by the label itself: "track names that appear more than once",
    "first names shared by more than two actors", "for each title" — merging is what it asks."""
    q = " " + re.sub(r"[^a-z0-9]+", " ", (question or "").lower()) + " "
    word = next((w for w in _LABELS if label.lower().replace("_", "").endswith(w)), None)
    if word is None or not re.search(rf" {word}s? ", q):
        return False
    return bool(re.search(_SHARED, q) or re.search(rf" (per|by|each|every) (\w+ )?{word} ", q))


class MergedEntities:
    name = "merged_entities"
    kind = "cap"
    Evidence = ev.MergedEntitiesEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        insp, result = ctx.inspection, ctx.result
        if insp is None or not insp.qualified_ok or result.error is not None:
            return report(self, False, "not measured: no result or the SQL could not be read")
        select = insp.qualified
        if not isinstance(select, exp.Select):
            return report(self, False, "not measured: not a plain SELECT")
        labels = [lab for lab in _label_columns(select, ctx) if not _label_asked(ctx.question, lab[2])]
        if not labels:
            return report(self, False, "no grouped label without its table's key")
        shown = {str(v) for row in result.rows for v in row}
        measured = 0
        for col, table, label, key in labels:
            merged = _merged(ctx, select, col, key)
            if merged is None:
                continue
            measured += 1
            if select.args.get("limit") is not None:
                merged = [m for m in merged if str(m) in shown]
            if merged:
                examples = ", ".join(repr(m) for m in merged[:_EXAMPLES])
                return report(self, True, f"GROUP BY {table}.{label} merges different {table} rows that share "
                                          f"a {label}: {len(merged)} group(s) hold more than one {key} "
                                          f"(e.g. {examples}); group by {table}.{key} as well to keep them apart",
                              column=f"{table}.{label}", key=f"{table}.{key}", merged=len(merged),
                              examples=[str(m) for m in merged[:_EXAMPLES]])
        if not measured:
            # A probe the engine refused says nothing about the groups: not "none merged".
            return report(self, False, "not measured: the probe query failed")
        return report(self, False, "each grouped label names one row of its table in this result")
