"""Does a result match a reference result B? Relaxed matching (IES Definition 1), or, when
B's outermost SELECT ends in ``ORDER BY key … LIMIT k``, with the rows tied at B's cut-off
interchangeable (the rules are set out in :mod:`vouchsql.evals.choices_eval`)."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, cast

from sqlglot import exp

from ..agreement import normalise_value, results_match
from ..answer import Result
from ..errors import VouchError

if TYPE_CHECKING:
    from ..db import Database

MAX_ALIGNMENTS = 5_000  # column mappings tried by the tie-aware match (small results: far fewer)
_TIE_KEY = "vouch_tie_key"


@dataclass
class TieContext:
    """Reference B's rows around its LIMIT cut-off (normalised rows, B's own columns)."""

    k: int
    above: Counter[tuple[Any, ...]]  # rows ranked strictly above the cut-off value
    tied: Counter[tuple[Any, ...]]  # every row of the unlimited reference tied with the k-th on the first key
    width: int
    columns: list[str]


def _norm_row(row: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(normalise_value(v) for v in row)


def tie_context(db: Database, sql_ref: str, ref: Result) -> TieContext | None:
    """What lets a result differ from B only in which tied rows it kept: ``None`` when B has
    no top-level ``ORDER BY … LIMIT k`` or nothing beyond the k-th row ties with it."""
    if ref is None or not ref.ok or ref.truncated:
        return None
    try:
        tree = db.parse(sql_ref)
    except VouchError:
        return None
    if not isinstance(tree, exp.Select) or tree.args.get("offset") or tree.args.get("order") is None:
        return None
    from ..sql.tree import expand_key, limit_value

    k = limit_value(tree)
    if k is None or ref.row_count < k or any(p.find(exp.Star) for p in tree.expressions):
        return None
    key = expand_key(tree, tree.args["order"].expressions[0].this)
    full = tree.copy()
    full.set("limit", None)
    full.set("expressions", [p.copy() for p in tree.expressions] + [exp.alias_(key, _TIE_KEY)])
    res = db.execute(full.sql(dialect=db.dialect))
    if not res.ok or res.truncated or res.row_count <= k:
        return None
    width = len(res.columns) - 1
    rows = [_norm_row(r[:width]) for r in res.rows]
    keys = [normalise_value(r[width]) for r in res.rows]
    cut = keys[k - 1]
    above = Counter(rows[i] for i in range(k) if keys[i] != cut)
    tied = Counter(rows[i] for i in range(len(rows)) if keys[i] == cut)
    if sum(tied.values()) <= k - sum(above.values()):
        return None  # every tied row fits under the LIMIT: nothing is interchangeable
    # The tie context must describe B itself: B's rows are the rows above plus some tied rows.
    if not _fits(Counter(_norm_row(r) for r in ref.rows), above, tied, k):
        return None
    return TieContext(k=k, above=above, tied=tied, width=width, columns=list(res.columns[:width]))


def _fits(got: Counter[tuple[Any, ...]], above: Counter[tuple[Any, ...]], tied: Counter[tuple[Any, ...]],
          k: int) -> bool:
    if sum(got.values()) != k:
        return False
    if any(got[row] < n for row, n in above.items()):
        return False
    rest = got - above
    return all(tied[row] >= n for row, n in rest.items())


def _alignments(alt_cols: list[str], ref_cols: list[str]) -> Iterable[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Injective column mappings (alt indices, ref indices) between the narrower result and
    columns of the wider one; the mapping by column name first, then every other."""
    na, nr = len(alt_cols), len(ref_cols)
    n = min(na, nr)
    seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()

    def by_name() -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
        if na <= nr:
            lower = [c.lower() for c in ref_cols]
            picks = [lower.index(c.lower()) if c.lower() in lower else None for c in alt_cols]
            if None not in picks and len(set(picks)) == n:
                yield tuple(range(na)), tuple(cast("list[int]", picks))  # None ruled out above
        else:
            lower = [c.lower() for c in alt_cols]
            picks = [lower.index(c.lower()) if c.lower() in lower else None for c in ref_cols]
            if None not in picks and len(set(picks)) == n:
                yield tuple(cast("list[int]", picks)), tuple(range(nr))  # None ruled out above
        yield tuple(range(n)), tuple(range(n))

    def every() -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
        if na <= nr:
            for perm in itertools.permutations(range(nr), n):
                yield tuple(range(na)), perm
        else:
            for perm in itertools.permutations(range(na), n):
                yield perm, tuple(range(nr))

    for pair in itertools.chain(by_name(), every()):
        if pair in seen:
            continue
        seen.add(pair)
        yield pair
        if len(seen) >= MAX_ALIGNMENTS:
            return


def match_reference(result: Result | None, ref: Result, ties: TieContext | None = None) -> str | None:
    """``"exact"`` when ``result`` matches the reference under relaxed matching, ``"ties"``
    when it matches only with rows tied at the reference's cut-off interchangeable, else
    ``None``."""
    if result is None or not result.ok or ref is None or not ref.ok:
        return None
    if results_match(result, ref).matched:
        return "exact"
    if ties is None or result.truncated or len(result.rows) != ties.k or not result.rows:
        return None
    alt_rows = [_norm_row(r) for r in result.rows]
    alt_width = len(alt_rows[0])
    alt_cols = list(result.columns) if len(result.columns) == alt_width else [f"c{i}" for i in range(alt_width)]
    for a_idx, r_idx in _alignments(alt_cols, ties.columns):
        got = Counter(tuple(row[i] for i in a_idx) for row in alt_rows)
        above: Counter[tuple[Any, ...]] = Counter()
        for row, n in ties.above.items():
            above[tuple(row[i] for i in r_idx)] += n
        tied: Counter[tuple[Any, ...]] = Counter()
        for row, n in ties.tied.items():
            tied[tuple(row[i] for i in r_idx)] += n
        if _fits(got, above, tied, ties.k):
            return "ties"
    return None
