"""Veto: an equi-join pair whose two columns hold keys of different entities.

``bad_join`` measures whether the keys' values overlap; dense integer ids all start at 1, so
``country_id = customer_id`` overlaps fully and passes it. This check reads what each column
*identifies* instead (:mod:`vouchsql.db.keys`): a declared foreign key is followed to the key
it references, a name such as ``customer_id`` or ``CustomerId`` to the key of table
``customer``/``customers``, and a table's key is its own. A pair follows its keys' meaning
when both columns reach the same key (or carry the same, non-generic name); it joins
different entities when they reach different keys, and then the check names the link the
join should have taken when the schema has one (``Customer.SupportRepId references
Employee.EmployeeId``). A column neither the catalogue nor the names place (``a.code =
b.ref``, a country name) is "not measured", never a guess.

Its own check rather than part of ``bad_join``: ``bad_join`` is a measurement of the data and
feeds GROUNDED's join share; this one reads only the schema, so it runs no query, and each
keeps its own evidence and golden cases.
"""

from __future__ import annotations

from typing import Any

from ..answer import CheckResult
from ..db.keys import GENERIC, Col, Domain, KeyMap, key_map, norm
from ..sql.inspect import pair_sql
from . import evidence as ev
from .base import CheckContext, report, unparsed

MAX_SUGGESTIONS = 3
MAX_TABLES_FOR_PATHS = 500  # the path search reads every column's key once per profile (~0.5 s at 500 tables)


class JoinKeyMeaning:
    name = "join_key_meaning"
    kind = "veto"
    Evidence = ev.JoinKeyMeaningEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.inspection is None:
            return unparsed(self)
        km = key_map(ctx.profile)
        pairs: list[dict[str, Any]] = []
        seen: set[frozenset[tuple[str, str]]] = set()
        for j in ctx.inspection.joins:
            left, right = Col(j.left.table, j.left.column), Col(j.right.table, j.right.column)
            key = frozenset({(left.table.lower(), left.column.lower()), (right.table.lower(), right.column.lower())})
            if key in seen:
                continue
            seen.add(key)
            pairs.append(judge(km, left, right, j.written))
        if not pairs:
            return report(self, False, "no equi-join column pairs", pairs=[])
        wrong = [p for p in pairs if p["verdict"] == "different_entities"]
        if wrong:
            parts = [p["reason"] + _advice(p["should_take"]) for p in wrong]
            return report(self, True, "the join keys belong to different entities: " + "; ".join(parts), pairs=pairs)
        follows = sum(p["verdict"] == "follows" for p in pairs)
        unmeasured = [pair_sql(p["left"], p["right"], p["form"]) for p in pairs if p["verdict"] == "not_measured"]
        detail = f"{follows} of {len(pairs)} join pair(s) follow their keys' meaning"
        if unmeasured:
            detail += f"; not measured (no key the catalogue or the names place): {', '.join(unmeasured)}"
        return report(self, False, detail, pairs=pairs)


def judge(km: KeyMap, left: Col, right: Col, form: str) -> dict[str, Any]:
    """One pair's verdict, reason and, for different entities, the links it should take."""
    dl, dr = km.domain(left.table, left.column), km.domain(right.table, right.column)
    bare_l, bare_r = norm(km.bare(left.table, left.column)), norm(km.bare(right.table, right.column))
    same_name = bare_l == bare_r and bare_l not in GENERIC
    out: dict[str, Any] = {"left": str(left), "right": str(right), "form": form,
           "left_key": str(dl.root) if dl else None, "right_key": str(dr.root) if dr else None,
           "should_take": []}
    if dl is not None and dr is not None:
        if dl.root == dr.root:
            return {**out, "verdict": "follows", "reason": _same_root(left, right, dl, dr)}
        declared = any(s.how == "declared" for s in dl.steps + dr.steps)
        if same_name and not declared:
            # Two tables keyed by one name (book.isbn, book_detail.isbn): one key domain.
            return {**out, "verdict": "follows", "reason": f"both columns are named {left.column}"}
        reason = f"{pair_sql(left, right, form)} joins {_holds(left, dl)} to {_holds(right, dr)}"
        return {**out, "verdict": "different_entities", "reason": reason,
                "should_take": suggestions(km, left, right)}
    if same_name:
        return {**out, "verdict": "follows",
                "reason": f"both columns are named {left.column} (not a key the schema places)"}
    unplaced = [str(c) for c, d in ((left, dl), (right, dr)) if d is None]
    return {**out, "verdict": "not_measured",
            "reason": f"not measured: no declared foreign key or name says what {' and '.join(unplaced)} "
                      f"identif{'y' if len(unplaced) > 1 else 'ies'}"}


def _advice(should_take: list[str]) -> str:
    if should_take and should_take[0].startswith("through "):
        return f"; the tables link {should_take[0]}"
    if should_take:
        return f"; the join should follow {' or '.join(should_take)}"
    return ""


def _chain(d: Domain) -> str:
    return "; ".join(str(s) for s in d.steps)


def _same_root(left: Col, right: Col, dl: Domain, dr: Domain) -> str:
    if not dr.steps and dl.steps:
        return _chain(dl)
    if not dl.steps and dr.steps:
        return _chain(dr)
    return f"{_chain(dl)}; {_chain(dr)}: both hold {dl.root} keys"


def _holds(col: Col, d: Domain) -> str:
    if not d.steps:
        return f"the key of {d.root.table}"
    return f"keys of {d.root.table} ({_chain(d)})"


def _link_text(a: Col, b: Col, da: Domain, db: Domain) -> str:
    if not db.steps and da.steps:
        return _chain(da)
    if not da.steps and db.steps:
        return _chain(db)
    return f"{a} = {b} (both hold {da.root} keys)"


def suggestions(km: KeyMap, left: Col, right: Col) -> list[str]:
    """The links between the pair's two tables, those that keep one of the pair's columns
    first; with no direct link, a table between them that links to both."""
    links = km.links(left.table, right.table)
    # A column that references the other's key first; two columns that both reference a
    # third table's key only when no direct reference exists.
    direct = [x for x in links if not x[2].steps or not x[3].steps]
    links = direct or links
    if links:
        links = sorted(links, key=lambda x: (x[0] != left and x[1] != right))
        out: list[str] = []
        for a, b, da, db in links:
            text = _link_text(a, b, da, db)
            if text not in out:
                out.append(text)
        return out[:MAX_SUGGESTIONS]
    if left.table.lower() == right.table.lower() or len(km.profile.tables) > MAX_TABLES_FOR_PATHS:
        return []
    steps = km.path(left.table, right.table)
    if not steps:
        return []
    between = []
    for st in steps:
        for t in (st.source.table, st.target.table):
            if t.lower() not in (left.table.lower(), right.table.lower()) and t not in between:
                between.append(t)
    return [f"through {', '.join(between)}: " + "; ".join(str(st) for st in steps)]
