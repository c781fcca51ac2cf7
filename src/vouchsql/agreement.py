"""Result normalisation, matching, clustering and agreement (IES paper §3.3, Definition 1).

Two results *match* (R ≃ R′) when both ran without error, have the same number of rows, and
the narrower one (fewer columns) equals, as a multiset of normalised rows, the projection of
the wider one onto an injective choice of its columns. Column names and column order are
ignored and the wider result may carry extra columns; with equal widths the choice is a
permutation of the columns. Row order is ignored; duplicate rows count (multisets, not sets).

Values are normalised first (:func:`normalise_value`) so that ``3`` ≃ ``3.0`` ≃ ``"3"`` and
numbers agree to four decimal places.

Conventions worth knowing:

- ``NULL`` (``None``) compares equal to ``NULL`` and unequal to every value, as in SQL's
  ``IS NOT DISTINCT FROM`` and ``GROUP BY`` (not as in ``=``).
- A result with an error matches nothing, not even itself (it is "no result").
- Two results with 0 rows match whatever their columns (0 == 0 rows; the empty multiset
  equals every projection of the empty multiset). Likewise a 0-column result matches any
  result with the same number of rows.
- Truncation: ``truncated`` means rows beyond the cap existed, so a truncated result never
  matches a complete one. When both are truncated with equal row counts, the stored rows
  cannot settle the question. :func:`results_match` then answers
  ``Match(matched=True, determined=False)`` - counted as agreeing by default, while
  :func:`agreement` also reports the opposite bound (``lower_bound``) and how many pairs were
  undetermined. Different row counts are a determined mismatch, truncated or not.
- The row count compared is ``len(rows)`` for an untruncated result (the stored rows are the
  whole result) and the stored ``row_count`` (at least ``len(rows)``) for a truncated one.

Speed: everything is O(rows · cols) with hashing (Counters of tuples), done once per result
per call of :func:`cluster` / :func:`agreement`. The search over column assignments is pruned
by per-column value multisets, identical columns are merged, and each partial assignment is
checked incrementally on the joint row multiset; the search is capped (see
:data:`MAX_SEARCH_STEPS`) and an exhausted search counts as *no match*.
"""

from __future__ import annotations

import numbers
import re
from collections import Counter
from dataclasses import dataclass
from operator import itemgetter
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext
from typing import Any, Callable, Sequence

from vouchsql.answer import Agreement, Result

__all__ = [
    "MAX_SEARCH_STEPS",
    "MAX_SEARCH_CELLS",
    "NAN",
    "Match",
    "normalise_value",
    "normalise_rows",
    "results_match",
    "strict_match",
    "cluster",
    "strict_clusters",
    "agreement",
    "shown_index",
]

#: At most this many candidate column assignments are tried per pair of results ...
MAX_SEARCH_STEPS = 10_000
#: ... and at most about this many row visits in total (each step visits every row), with
#: a floor of ``_MIN_SEARCH_STEPS`` steps. Hitting either cap counts as *no match*.
MAX_SEARCH_CELLS = 5_000_000
_MIN_SEARCH_STEPS = 256

_DECIMALS = 4
_QUANTUM = Decimal(1).scaleb(-_DECIMALS)  # agreement's rounding unit (the ties choice reads it)
#: The entropy layer's clusters compare floats to six places (IES §3.2: "full rows, floats
#: rounded to six places"); agreement's matching compares them to four (§3.3).
ENTROPY_DECIMALS = 6


# --------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------


class _NaNType:
    """The normalised NaN: unlike ``float('nan')`` it equals itself (and only itself), so
    a NaN in one result matches a NaN in another."""

    __slots__ = ()
    _instance: _NaNType | None = None

    def __new__(cls) -> _NaNType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaNType)

    def __hash__(self) -> int:
        return 0x4E614E

    def __repr__(self) -> str:
        return "NaN"

    def __reduce__(self) -> str:
        return "NAN"


NAN = _NaNType()

# Numbers written as text: optional sign, digits with an optional fraction (or a bare
# fraction), optional exponent, surrounding ASCII whitespace. Deliberately not "nan", "inf",
# "1_000" or hex, which Python's float()/int() would also accept.
_NUMERIC = re.compile(r"\s*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*", re.ASCII)
_NUMERIC_START = frozenset("0123456789+-. \t\n\r\f\v")


def _norm_float(x: float, decimals: int = _DECIMALS) -> Any:
    if x != x:
        return NAN
    r = round(x, decimals)
    if r.is_integer():  # False for ±inf, which stay floats
        return int(r)
    return r


def _norm_decimal(d: Decimal, decimals: int = _DECIMALS) -> Any:
    if d.is_nan():
        return NAN
    if d.is_infinite():
        return float(d)
    if d == d.to_integral_value():
        return int(d)
    if d.adjusted() < 15:
        # Go through float so a Decimal and a float holding the same number normalise
        # identically (float rounding of the binary value, as for float inputs).
        return _norm_float(float(d), decimals)
    # Too large for a float to keep the decimals: round exactly.
    with localcontext() as ctx:
        ctx.prec = d.adjusted() + decimals + 2
        try:
            q = d.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN)
        except InvalidOperation:  # pragma: no cover - defensive
            return _norm_float(float(d), decimals)
    if q == q.to_integral_value():
        return int(q)
    return float(q)


def _norm_str(s: str, decimals: int = _DECIMALS) -> Any:
    if not s or s[0] not in _NUMERIC_START or not _NUMERIC.fullmatch(s):
        return s
    if "." not in s and "e" not in s and "E" not in s:
        try:
            return int(s)
        except ValueError:  # more digits than int() accepts from text
            pass
    try:
        return _norm_float(float(s), decimals)
    except (ValueError, OverflowError):  # pragma: no cover - defensive
        return s


def normalise_value(v: Any, decimals: int = _DECIMALS) -> Any:
    """One value → its canonical, hashable form for comparison.

    - ``None`` stays ``None`` (NULL equals NULL and nothing else);
    - ``bool`` → ``int``; ``int`` unchanged;
    - ``float`` / ``Decimal`` → rounded to ``decimals`` places (4 unless asked), and to the ``int`` when the
      rounded value is integral (``3.0`` → ``3``, ``0.33333`` → ``0.3333``); NaN →
      :data:`NAN`, a sentinel equal to itself; ±inf stay floats;
    - numeric strings (``"12"``, ``" 3.50"``, ``"-1e3"``) → the number, normalised the same
      way; any other string is returned unchanged (no case folding, no trimming);
    - ``bytes``-like → lowercase hex string;
    - other numbers (``numbers.Integral`` / ``numbers.Real``, e.g. numpy scalars, Fraction)
      → as int / float; anything else → ``str(v)``.
    """
    t = type(v)
    if t is str:
        return _norm_str(v, decimals)
    if t is int or v is None:
        return v
    if t is float:
        return _norm_float(v, decimals)
    if t is bool:
        return int(v)
    if isinstance(v, Decimal):
        return _norm_decimal(v, decimals)
    if isinstance(v, str):
        return _norm_str(str.__str__(v), decimals)
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return _norm_float(float(v), decimals)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        try:
            return _norm_float(float(v), decimals)
        except (OverflowError, ValueError):  # pragma: no cover - defensive
            return str(v)
    if v is _MISSING:  # a ragged result's padding: equal to itself only
        return v
    return str(v)


_Row = tuple[Any, ...]  # a row, or a column vector, of normalised values
_Signature = frozenset[tuple[Any, int]]  # a column's values with how often each occurs
_Group = tuple[int, int, _Signature, list[int]]  # see _Prepared.groups

# Types whose equal values (in the Python ``==`` / hash sense) always normalise identically,
# so a column of them can be normalised once per distinct value.
_MEMO_TYPES = frozenset({int, float, str, bool, Decimal, type(None)})
_UNCHANGED_TYPES = frozenset({int, type(None)})


def _normalise_column(col: _Row, decimals: int = _DECIMALS) -> _Row:
    types = set(map(type, col))
    if types <= _UNCHANGED_TYPES:
        return col
    if types <= _MEMO_TYPES:
        try:
            memo = {v: normalise_value(v, decimals) for v in set(col)}
        except TypeError:  # an unhashable value, e.g. Decimal('sNaN')
            return tuple(normalise_value(v, decimals) for v in col)
        return tuple(map(memo.__getitem__, col))
    return tuple(normalise_value(v, decimals) for v in col)


class _Missing:
    """Pads short rows of a ragged result; equal to nothing a real value normalises to."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _normalise_columns(rows: Sequence[Sequence[Any]], ncols_hint: int,
                       decimals: int = _DECIMALS) -> tuple[int, list[_Row]]:
    """(width, normalised column vectors) of ``rows``."""
    if not rows:
        return ncols_hint, []
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        width = max(len(r) for r in rows)
        rows = [tuple(r) + (_MISSING,) * (width - len(r)) for r in rows]
    if width == 0:
        return 0, []
    return width, [_normalise_column(c, decimals) for c in zip(*rows)]


def normalise_rows(result: Result) -> list[_Row]:
    """The result's rows as tuples of normalised values (see :func:`normalise_value`), in the
    stored order."""
    width, cols = _normalise_columns(result.rows, len(result.columns))
    if not result.rows:
        return []
    if width == 0:
        return [() for _ in result.rows]
    return list(zip(*cols))


# --------------------------------------------------------------------------------------
# Prepared results (normalise once, reuse across pairs)
# --------------------------------------------------------------------------------------


class _Prepared:
    __slots__ = ("result", "ok", "truncated", "count", "decimals", "_width", "_cols", "_rows",
                 "_row_counts", "_groups")

    def __init__(self, result: Result, decimals: int = _DECIMALS) -> None:
        self.result = result
        self.decimals = decimals
        self.ok = result.error is None
        self.truncated = bool(result.truncated)
        n = len(result.rows)
        self.count = max(result.row_count, n) if self.truncated else n
        self._width: int | None = None
        self._cols: list[_Row] | None = None
        self._rows: list[_Row] | None = None
        self._row_counts: Counter[_Row] | None = None
        self._groups: list[_Group] | None = None

    def _load(self) -> None:
        if self._cols is None:
            self._width, self._cols = _normalise_columns(self.result.rows, len(self.result.columns), self.decimals)

    @property
    def width(self) -> int:
        self._load()
        return self._width  # type: ignore[return-value]

    @property
    def cols(self) -> list[_Row]:
        self._load()
        return self._cols  # type: ignore[return-value]

    @property
    def rows(self) -> list[_Row]:
        if self._rows is None:
            if not self.result.rows:
                self._rows = []
            elif self.width == 0:
                self._rows = [() for _ in self.result.rows]
            else:
                self._rows = list(zip(*self.cols))
        return self._rows

    @property
    def row_counts(self) -> Counter[_Row]:
        if self._row_counts is None:
            self._row_counts = Counter(self.rows)
        return self._row_counts

    @property
    def groups(self) -> list[_Group]:
        """Columns merged when their vectors are identical: (representative index, how many
        columns, value-multiset signature, member indices), in column order."""
        if self._groups is None:
            by_vector: dict[_Row, list[int]] = {}
            for i, col in enumerate(self.cols):
                by_vector.setdefault(col, []).append(i)
            self._groups = [(idx[0], len(idx), frozenset(Counter(self.cols[idx[0]]).items()), idx)
                            for idx in by_vector.values()]
        return self._groups


def _same_counts(a: dict[Any, int], b: dict[Any, int]) -> bool:
    # Counters built from iterables hold no zero counts, so plain dict equality is exact
    # (and much faster than Counter.__eq__ on 3.10+).
    return len(a) == len(b) and dict.__eq__(a, b)


# --------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Match:
    """The outcome of :func:`results_match`.

    ``matched``: whether the results count as matching (for an undetermined pair this is the
    optimistic policy, ``True``). ``determined``: ``False`` only when truncation left the
    question open. Truthiness is ``matched``, so ``if results_match(a, b):`` does the obvious
    thing.
    """

    matched: bool
    determined: bool = True

    def __bool__(self) -> bool:
        return self.matched


_NO = Match(False, True)
_YES = Match(True, True)
_OPEN = Match(True, False)


def _search(narrow: _Prepared, wide: _Prepared) -> bool:
    """Is there an injective choice of ``wide``'s columns whose projection equals ``narrow``
    as a multiset of rows? Both have the same (non-zero) number of rows.

    Identical columns are merged first: identical narrow columns must go to identical wide
    columns, and distinct narrow columns to distinct groups of identical wide columns, so
    the search is an injective map from narrow groups to wide groups with enough columns.
    A narrow group's candidates are the wide groups with the same value multiset. The depth-
    first search assigns the most constrained groups first and checks every partial
    assignment on the joint multiset of the columns assigned so far, interning each row's
    prefix as a class id so that a step costs O(rows).
    """
    a_groups, b_groups = narrow.groups, wide.groups
    b_by_sig: dict[_Signature, list[int]] = {}
    for h, group in enumerate(b_groups):
        b_by_sig.setdefault(group[2], []).append(h)
    cands: list[list[int]] = []
    for _, size, sig, _ in a_groups:
        c = [h for h in b_by_sig.get(sig, ()) if b_groups[h][1] >= size]
        if not c:
            return False
        cands.append(c)
    # Pigeonhole per signature: each narrow group needs its own wide group.
    need = Counter(group[2] for group in a_groups)
    for sig, k in need.items():
        if len(b_by_sig.get(sig, ())) < k:
            return False

    if all(len(c) == 1 for c in cands):
        # No choice to make (the usual case): one direct check of the projection.
        chosen = [c[0] for c in cands]
        if len(set(chosen)) < len(chosen):
            return False
        if narrow.width == 1:
            return True  # one column whose value multiset already matched
        idx = [0] * narrow.width
        for (_, _, _, members), h in zip(a_groups, chosen):
            for i in members:
                idx[i] = b_groups[h][0]
        projected = Counter(map(itemgetter(*idx), wide.rows))
        return _same_counts(projected, narrow.row_counts)

    order = sorted(range(len(a_groups)), key=lambda g: (len(cands[g]), g))
    depth_total = len(order)
    n = narrow.count
    budget = min(MAX_SEARCH_STEPS, max(_MIN_SEARCH_STEPS, MAX_SEARCH_CELLS // max(n, 1)))
    a_cols, b_cols = narrow.cols, wide.cols
    used = [False] * len(b_groups)

    def open_frame(depth: int, cls_a: list[int], cls_b: list[int]) -> list[Any]:
        col_a = a_cols[a_groups[order[depth]][0]]
        ids: dict[tuple[int, Any], int] = {}
        new_a = [ids.setdefault(k, len(ids)) for k in zip(cls_a, col_a)]
        # [ids, new_a, counts of new_a, cls_b, candidate position, wide group taken]
        return [ids, new_a, Counter(new_a), cls_b, 0, -1]

    zeros = [0] * n
    stack = [open_frame(0, zeros, zeros)]
    steps = 0
    while stack:
        frame = stack[-1]
        ids, new_a, counts_a, cls_b, pos, taken = frame
        if taken >= 0:  # coming back after the deeper frame failed
            used[taken] = False
            frame[5] = -1
        cand = cands[order[len(stack) - 1]]
        advanced = False
        while pos < len(cand):
            h = cand[pos]
            pos += 1
            if used[h]:
                continue
            steps += 1
            if steps > budget:
                return False  # cap exhausted: counted as no match
            get = ids.get
            new_b = [get(k) for k in zip(cls_b, b_cols[b_groups[h][0]])]
            if None in new_b or not _same_counts(Counter(new_b), counts_a):
                continue
            if len(stack) == depth_total:
                return True
            used[h] = True
            frame[4], frame[5] = pos, h
            stack.append(open_frame(len(stack), new_a, new_b))
            advanced = True
            break
        if not advanced:
            stack.pop()
    return False


def _match(pa: _Prepared, pb: _Prepared) -> Match:
    if not pa.ok or not pb.ok:
        return _NO
    if pa is pb or pa.result is pb.result:
        return _YES
    if pa.count != pb.count or pa.truncated != pb.truncated:
        # Vouch's engines mark a result truncated only when rows beyond the cap existed, so
        # a truncated result and a complete one of the same stored size certainly differ.
        return _NO
    if pa.truncated:
        return _OPEN
    if pa.count == 0:
        return _YES
    narrow, wide = (pa, pb) if pa.width <= pb.width else (pb, pa)
    if narrow.width == 0:
        return _YES
    if narrow.width == wide.width and _same_counts(narrow.row_counts, wide.row_counts):
        return _YES  # the identity permutation: the common case, settled without search
    return _YES if _search(narrow, wide) else _NO


def results_match(a: Result, b: Result) -> Match:
    """R ≃ R′ (Definition 1), relaxed: see the module docstring for the exact rules.

    Returns ``Match(matched, determined)``: an errored result never matches (determined);
    different row counts never match (determined, even if truncated); equal row counts with
    either side truncated are undetermined and reported as ``Match(True, False)``.
    """
    return _match(_Prepared(a), _Prepared(b))


def _strict(pa: _Prepared, pb: _Prepared) -> bool:
    if not pa.ok or not pb.ok:
        return False
    if pa is pb or pa.result is pb.result:
        return True
    if pa.width != pb.width or pa.count != pb.count or pa.truncated != pb.truncated:
        return False
    if pa.truncated:
        return True  # undetermined; the same optimistic policy as results_match
    return _same_counts(pa.row_counts, pb.row_counts)


def strict_match(a: Result, b: Result) -> bool:
    """Exact match for the entropy variant: both ran, same number of columns, and the same
    multiset of normalised rows with columns compared by position (names ignored), floats to
    :data:`ENTROPY_DECIMALS` places (IES §3.2).

    Truncated results with equal row counts and widths count as matching (undetermined,
    same policy as :func:`results_match`). Values equal at six places are equal at four
    except where rounding to four lands on either side of a half (0.12345 and 0.1234500001),
    so ``strict_match`` implies ``results_match`` but for such ties.
    """
    return _strict(_Prepared(a, ENTROPY_DECIMALS), _Prepared(b, ENTROPY_DECIMALS))


# --------------------------------------------------------------------------------------
# Clusters and agreement
# --------------------------------------------------------------------------------------


def _prepare_all(results: Sequence[Result], decimals: int = _DECIMALS) -> list[_Prepared]:
    """One prepared (normalised-once) object per distinct Result object."""
    seen: dict[int, _Prepared] = {}
    out = []
    for r in results:
        p = seen.get(id(r))
        if p is None:
            p = seen[id(r)] = _Prepared(r, decimals)
        out.append(p)
    return out


def _cluster_prepared(prepared: list[_Prepared], same: Callable[[_Prepared, _Prepared], bool]) -> list[int]:
    ids: list[int] = []
    reps: list[_Prepared] = []  # first member of each cluster of valid results
    rep_ids: list[int] = []
    next_id = 0
    for p in prepared:
        cid = -1
        if p.ok:
            for rep, rid in zip(reps, rep_ids):
                if same(p, rep):
                    cid = rid
                    break
        if cid < 0:
            cid = next_id
            next_id += 1
            if p.ok:
                reps.append(p)
                rep_ids.append(cid)
        ids.append(cid)
    return ids


def cluster(results: list[Result]) -> list[int]:
    """Cluster ids under the relaxed match, greedily in order: each result joins the first
    cluster whose representative (first member) it matches (an undetermined match counts as
    a match), else starts a new cluster. Errored results each get a cluster of their own.
    Ids are 0, 1, 2, … in order of first appearance."""
    return _cluster_prepared(_prepare_all(results), lambda a, b: _match(a, b).matched)


def strict_clusters(results: list[Result]) -> list[int]:
    """Cluster ids as :func:`cluster` gives them, under :func:`strict_match` (the entropy
    layer's clusters); a failed result is its own cluster."""
    return _cluster_prepared(_prepare_all(results, ENTROPY_DECIMALS), _strict)


def agreement(results: list[Result]) -> Agreement:
    """Agreement with the shown answer ``results[0]``: (1/K) Σ_k [R_k ≃ R_0], k = 0 included.

    - ``value``: undetermined (truncated) pairs count as agreeing;
    - ``lower_bound``: the same with undetermined pairs counted as disagreeing;
    - ``truncated_pairs``: how many pairs were undetermined.

    ``value`` is ``0.0`` when ``results[0]`` has an error, and ``None`` for an empty list.
    With K = 1 and a valid result the value is ``1.0``.
    """
    k = len(results)
    if k == 0:
        return Agreement(value=None, lower_bound=None, truncated_pairs=0)
    prepared = _prepare_all(results)
    shown = prepared[0]
    if not shown.ok:
        return Agreement(value=0.0, lower_bound=0.0, truncated_pairs=0)
    agree, sure, open_pairs = 1, 1, 0  # k = 0 matches itself, determined
    for p in prepared[1:]:
        m = _match(shown, p)
        if m.matched:
            agree += 1
            if m.determined:
                sure += 1
        if not m.determined:
            open_pairs += 1
    return Agreement(value=agree / k, lower_bound=sure / k, truncated_pairs=open_pairs)


def shown_index(results: list[Result]) -> int:
    """Index of the first member of the largest cluster (ties → the earliest cluster).
    Clusters of valid results rank above errored ones, so an errored result is chosen only
    when every result errored (then index 0). Raises ``ValueError`` on an empty list."""
    if not results:
        raise ValueError("shown_index needs at least one result")
    ids = cluster(results)
    sizes = Counter(ids)
    ok_cluster = {cid for cid, r in zip(ids, results) if r.error is None}
    first: dict[int, int] = {}
    for i, cid in enumerate(ids):
        first.setdefault(cid, i)
    best = min(first, key=lambda cid: (cid not in ok_cluster, -sizes[cid], cid))
    return first[best]
