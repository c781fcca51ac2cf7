"""Tests for vouchsql.agreement: normalisation, matching (Definition 1), clusters, agreement."""

from __future__ import annotations

import math
import random
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vouchsql.agreement import (
    NAN,
    Match,
    agreement,
    cluster,
    normalise_rows,
    normalise_value,
    results_match,
    shown_index,
    strict_clusters,
    strict_match,
)
from vouchsql.answer import Agreement, Result, ResultError


def R(rows, columns=None, *, truncated=False, row_count=None):
    """A result from rows (lists); column names default to c0, c1, …"""
    rows = [list(r) for r in rows]
    if columns is None:
        columns = [f"c{i}" for i in range(len(rows[0]) if rows else 0)]
    return Result(columns=list(columns), rows=rows,
                  row_count=len(rows) if row_count is None else row_count, truncated=truncated)


def ERR(msg="boom"):
    return Result(error=ResultError(kind="execution", message=msg))


def M(a, b):
    return results_match(a, b)


# ---------------------------------------------------------------------------------------
# normalise_value / normalise_rows
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        (True, 1),
        (False, 0),
        (7, 7),
        (3.0, 3),
        (0.33333, 0.3333),
        (0.33335001, 0.3334),
        (2.99999, 3),
        (-0.0, 0),
        (-0.00001, 0),
        (Decimal("1.50000"), 1.5),
        (Decimal("4.00"), 4),
        (Decimal("0.12344"), 0.1234),
        (Decimal("12345678901234567890.00001"), 12345678901234567890),
        ("12", 12),
        (" 3.50", 3.5),
        ("-1e3", -1000),
        ("+.5", 0.5),
        ("007", 7),
        ("3.0", 3),
        ("abc", "abc"),
        (" abc ", " abc "),
        ("ABC", "ABC"),
        ("nan", "nan"),  # words that float() would parse stay text
        ("Infinity", "Infinity"),
        ("1_000", "1_000"),
        ("2024-01-01", "2024-01-01"),
        ("", ""),
        (None, None),
        (b"\x01\xff", "01ff"),
        (bytearray(b"\x0a"), "0a"),
    ],
)
def test_normalise_value(value, expected):
    got = normalise_value(value)
    assert got == expected
    assert type(got) is type(expected)


def test_normalise_value_nan_and_inf():
    assert normalise_value(float("nan")) is NAN
    assert normalise_value(Decimal("NaN")) is NAN
    assert NAN == normalise_value(float("nan"))
    assert NAN != 0 and NAN is not None and NAN != "NaN"
    assert normalise_value(float("inf")) == math.inf
    assert normalise_value(float("-inf")) == -math.inf


def test_normalise_value_other_types_become_str():
    import datetime as dt

    assert normalise_value(dt.date(2024, 1, 2)) == "2024-01-02"
    assert normalise_value([1, 2]) == "[1, 2]"


def test_normalise_rows():
    r = R([[1, "2", 3.0, None], [True, "x", 0.123456, b"\x00"]])
    assert normalise_rows(r) == [(1, 2, 3, None), (1, "x", 0.1235, "00")]
    assert normalise_rows(R([])) == []
    assert normalise_rows(Result(columns=[], rows=[[], []], row_count=2)) == [(), ()]


# ---------------------------------------------------------------------------------------
# results_match: concrete cases
# ---------------------------------------------------------------------------------------


def test_identical_results_match():
    a = R([[1, "a"], [2, "b"]])
    assert M(a, a) == Match(True, True)
    assert M(a, R([[1, "a"], [2, "b"]])) == Match(True, True)


def test_column_names_ignored():
    assert M(R([[1]], ["n"]), R([[1]], ["count(*)"])).matched


def test_column_order_ignored():
    a = R([[1, "a"], [2, "b"]], ["id", "name"])
    b = R([["a", 1], ["b", 2]], ["name", "id"])
    assert M(a, b) == Match(True, True)


def test_row_order_ignored():
    a = R([[1, "a"], [2, "b"], [3, "c"]])
    b = R([[3, "c"], [1, "a"], [2, "b"]])
    assert M(a, b).matched


def test_column_permutation_must_be_consistent_per_row():
    # Same column multisets, different row pairing: no permutation works.
    a = R([[1, "a"], [2, "b"]])
    b = R([[1, "b"], [2, "a"]])
    assert M(a, b) == Match(False, True)


def test_projection_onto_extra_columns():
    narrow = R([["a"], ["b"]], ["name"])
    wide = R([[2, "b", 9.5], [1, "a", 9.5]], ["id", "name", "score"])
    assert M(narrow, wide) == Match(True, True)
    assert M(wide, narrow) == Match(True, True)


def test_projection_requires_injective_choice():
    # Two identical narrow columns cannot both map to the wide result's single "x" column.
    narrow = R([[1, 1], [2, 2]])
    wide = R([[1, "p", "q"], [2, "r", "s"]])
    assert not M(narrow, wide).matched
    # ... but they can map to two identical wide columns.
    wide2 = R([[1, "p", 1], [2, "r", 2]])
    assert M(narrow, wide2).matched


def test_projection_with_value_mismatch():
    narrow = R([["a"], ["c"]])
    wide = R([[1, "a"], [2, "b"]])
    assert M(narrow, wide) == Match(False, True)


def test_duplicates_are_a_multiset():
    a = R([["a"], ["a"], ["b"]])
    b = R([["a"], ["b"], ["b"]])
    assert M(a, b) == Match(False, True)
    assert M(a, R([["b"], ["a"], ["a"]])).matched


def test_different_row_counts_never_match():
    assert M(R([[1]]), R([[1], [1]])) == Match(False, True)


def test_rounding_to_four_places():
    assert M(R([[0.33333]]), R([[0.3333]])).matched
    assert not M(R([[0.3333]]), R([[0.3334]])).matched
    assert M(R([[1 / 3]]), R([[Decimal("0.33333333")]])).matched


def test_numeric_strings_and_integral_floats():
    assert M(R([["12"]]), R([[12]])).matched
    assert M(R([[3.0]]), R([[3]])).matched
    assert M(R([[Decimal("3.00")]]), R([["3"]])).matched
    assert M(R([[True]]), R([[1]])).matched
    assert not M(R([["12a"]]), R([[12]])).matched
    assert not M(R([["abc"]]), R([["ABC"]])).matched


def test_null_semantics():
    assert M(R([[None]]), R([[None]])).matched
    assert not M(R([[None]]), R([[0]])).matched
    assert not M(R([[None]]), R([[""]])).matched
    assert not M(R([[None]]), R([["None"]])).matched


def test_nan_matches_nan():
    assert M(R([[float("nan")]]), R([[float("nan")]])).matched
    assert not M(R([[float("nan")]]), R([[0.0]])).matched


def test_errors_never_match():
    e = ERR()
    assert M(e, e) == Match(False, True)
    assert M(e, R([[1]])) == Match(False, True)
    assert M(R([[1]]), e) == Match(False, True)
    assert M(e, ERR()) == Match(False, True)


def test_empty_results():
    # 0 rows == 0 rows: match whatever the columns.
    assert M(R([], ["a"]), R([], ["b", "c"])) == Match(True, True)
    assert M(R([], []), R([], ["x"])) == Match(True, True)
    assert not M(R([], ["a"]), R([[1]], ["a"])).matched


def test_zero_column_result_matches_same_row_count():
    zero = Result(columns=[], rows=[[], []], row_count=2)
    assert M(zero, R([[1], [2]])).matched
    assert not M(zero, R([[1]])).matched


def test_truncation_equal_counts_is_undetermined():
    a = R([[1], [2]], truncated=True)
    b = R([[3], [4]], truncated=True)
    assert M(a, b) == Match(True, False)
    # A complete result of the cap's size differs from one that had more rows.
    assert M(a, R([[1], [2]])) == Match(False, True)
    # The same object is still itself.
    assert M(a, a) == Match(True, True)


def test_truncation_different_counts_is_determined():
    a = R([[1], [2]], truncated=True)
    assert M(a, R([[1]])) == Match(False, True)
    assert M(a, R([[1], [2], [3]], truncated=True)) == Match(False, True)


def test_truncated_uses_stored_row_count():
    a = R([[1], [2]], truncated=True, row_count=1000)
    b = R([[5]], truncated=True, row_count=1000)
    assert M(a, b) == Match(True, False)
    assert M(a, R([[1], [2]])) == Match(False, True)


def test_untruncated_count_is_len_rows():
    # A hand-built result without row_count still compares by its rows.
    a = Result(columns=["x"], rows=[[1], [2]])
    assert M(a, R([[2], [1]])) == Match(True, True)


def test_match_is_truthy_by_matched():
    assert Match(True, True)
    assert Match(True, False)
    assert not Match(False, True)


def test_ambiguous_columns_need_search():
    # Three columns with identical value multisets; only one assignment pairs rows correctly.
    a = R([[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    b = R([[3, 1, 2], [1, 2, 3], [2, 3, 1]])  # rows shuffled
    b_perm = R([[r[2], r[0], r[1]] for r in b.rows])
    assert M(a, b_perm).matched
    c = R([[1, 1, 1], [2, 2, 2], [3, 3, 3]])  # same column multisets, rows paired otherwise
    assert not M(a, c).matched
    assert not M(R([[1, 1], [2, 2]]), R([[1, 2], [2, 1]])).matched


def test_many_identical_columns_match():
    # 12! permutations of identical columns collapse to one group.
    rows = [[i % 3] * 12 + [i] for i in range(200)]
    a = R(rows)
    b = R([list(reversed(r)) for r in rows])
    assert M(a, b).matched


def test_large_results_match_with_projection():
    rnd = random.Random(0)
    rows = [[i, f"name{i % 97}", rnd.random() * 100, None if i % 7 else "x", i % 5]
            for i in range(10_000)]
    a = R(rows)
    perm = [4, 2, 0, 3, 1]
    b = R([[r[j] for j in perm] + [str(r[0])] for r in reversed(rows)])
    changed = [list(r) for r in rows]
    changed[1234][1] = "someone else"
    results = [a, b, R(changed), a, b]
    ag = agreement(results)
    cl = cluster(results)
    assert ag.value == pytest.approx(0.8)
    assert cl == [0, 0, 1, 0, 0]


# ---------------------------------------------------------------------------------------
# strict_match
# ---------------------------------------------------------------------------------------


def test_strict_match():
    a = R([[1, "a"], [2, "b"]])
    assert strict_match(a, R([[2, "b"], [1.0, "a"]], ["x", "y"]))  # row order, names ignored
    assert not strict_match(a, R([["a", 1], ["b", 2]]))  # positional
    assert not strict_match(a, R([[1, "a", 0], [2, "b", 0]]))  # widths differ
    assert results_match(a, R([["a", 1], ["b", 2]])).matched
    assert not strict_match(ERR(), ERR())
    assert not strict_match(a, ERR())
    assert strict_match(R([], ["a"]), R([], ["b"]))
    assert not strict_match(R([], ["a"]), R([], ["a", "b"]))
    assert not strict_match(R([["a"], ["a"], ["b"]]), R([["a"], ["b"], ["b"]]))


def test_strict_clusters_split_what_relaxed_matching_joins():
    a = R([[1, "a"], [2, "b"]])
    swapped = R([["a", 1], ["b", 2]])  # the same under relaxed matching, not under strict
    results = [a, swapped, ERR(), R([[2, "b"], [1.0, "a"]]), ERR(), swapped]
    assert cluster(results) == [0, 0, 1, 0, 2, 0]
    assert strict_clusters(results) == [0, 1, 2, 0, 3, 1]
    assert strict_clusters([]) == []


# ---------------------------------------------------------------------------------------
# cluster / agreement / shown_index
# ---------------------------------------------------------------------------------------


def test_cluster_greedy_in_order():
    x = R([[1]])
    y = R([[2]])
    z = R([[3]])
    assert cluster([x, y, R([[1.0]]), z, R([["2"]])]) == [0, 1, 0, 2, 1]
    assert cluster([]) == []


def test_cluster_errors_get_own_clusters():
    x = R([[1]])
    assert cluster([ERR(), x, ERR(), x]) == [0, 1, 2, 1]


def test_cluster_uses_first_member_as_representative():
    # one ≃ wide and wide ≃ other, but one ≄ other: "other" starts a new cluster.
    one = R([[1], [2]])
    wide = R([[1, "a"], [2, "b"]])
    other = R([["a"], ["b"]])
    assert cluster([wide, one, other]) == [0, 0, 0]
    assert cluster([one, wide, other]) == [0, 0, 1]


def test_agreement_four_of_five():
    good = R([[1, "a"], [2, "b"]])
    same = R([["b", 2], ["a", 1]])
    bad = R([[1, "a"], [3, "b"]])
    ag = agreement([good, same, good, bad, R([[2, "b", 0], [1, "a", 0]])])
    assert ag == Agreement(value=0.8, lower_bound=0.8, truncated_pairs=0)


def test_agreement_all_and_none():
    x = R([[1]])
    assert agreement([x] * 5).value == 1.0
    assert agreement([x, R([[2]]), R([[3]]), ERR(), R([[4]])]).value == pytest.approx(0.2)


def test_agreement_k1():
    assert agreement([R([[1]])]) == Agreement(value=1.0, lower_bound=1.0, truncated_pairs=0)


def test_agreement_shown_error():
    assert agreement([ERR(), R([[1]]), R([[1]])]) == Agreement(value=0.0, lower_bound=0.0,
                                                                truncated_pairs=0)


def test_agreement_empty():
    assert agreement([]).value is None


def test_agreement_truncation_bounds():
    shown = R([[1], [2]], truncated=True)
    others = [R([[9], [8]], truncated=True), R([[1], [2]]), R([[1]]), ERR()]
    ag = agreement([shown, *others])
    # k=0 itself (determined) + 1 undetermined agreeing (the other truncated result); the
    # complete R([[1], [2]]) differs from a result that had more rows; R([[1]]) differs in count.
    assert ag.value == pytest.approx(2 / 5)
    assert ag.lower_bound == pytest.approx(1 / 5)
    assert ag.truncated_pairs == 1


def test_shown_index():
    a = R([[1]])
    b = R([[2]])
    assert shown_index([a, b, b, a, b]) == 1
    assert shown_index([a, b]) == 0  # tie → earliest cluster
    assert shown_index([b, a, a]) == 1
    assert shown_index([ERR(), a]) == 1  # valid clusters rank above errors
    assert shown_index([ERR(), ERR()]) == 0
    with pytest.raises(ValueError):
        shown_index([])


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------

_values = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from([0.5, 1.0, 2.25, 1 / 3, -0.0]),
    st.sampled_from(["a", "b", "1", " 2", "x y"]),
    st.booleans(),
)


@st.composite
def results(draw, min_cols=0, max_cols=4, min_rows=0, max_rows=6, ncols=None, nrows=None):
    if ncols is None:
        ncols = draw(st.integers(min_cols, max_cols))
    if nrows is None:
        nrows = draw(st.integers(min_rows, max_rows))
    rows = [[draw(_values) for _ in range(ncols)] for _ in range(nrows)]
    return Result(columns=[f"c{i}" for i in range(ncols)], rows=rows, row_count=nrows)


@st.composite
def result_pairs(draw):
    """Pairs likely to be related: b is a, shuffled, permuted, perhaps with a cell changed
    or a column added; or an unrelated result of the same shape."""
    a = draw(results(min_cols=1))
    kind = draw(st.sampled_from(["related", "unrelated"]))
    if kind == "unrelated":
        b = draw(results(ncols=len(a.columns), nrows=len(a.rows)))
        return a, b
    rows = [list(r) for r in a.rows]
    rnd = draw(st.randoms(use_true_random=False))
    rnd.shuffle(rows)
    perm = list(range(len(a.columns)))
    rnd.shuffle(perm)
    rows = [[r[j] for j in perm] for r in rows]
    if rows and draw(st.booleans()):
        i, j = rnd.randrange(len(rows)), rnd.randrange(len(perm))
        rows[i][j] = draw(_values)
    if draw(st.booleans()):
        extra = [draw(_values) for _ in rows]
        rows = [r + [v] for r, v in zip(rows, extra)]
    ncols = len(rows[0]) if rows else len(perm)
    return a, Result(columns=[f"d{i}" for i in range(ncols)], rows=rows, row_count=len(rows))


def _shuffle(result: Result, rnd: random.Random, col_perm: list[int] | None = None) -> Result:
    rows = [list(r) for r in result.rows]
    rnd.shuffle(rows)
    if col_perm is not None:
        rows = [[r[j] for j in col_perm] for r in rows]
        columns = [result.columns[j] for j in col_perm]
    else:
        columns = list(result.columns)
    return Result(columns=columns, rows=rows, row_count=len(rows))


_settings = settings(max_examples=300, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(result_pairs())
def test_prop_symmetry(pair):
    a, b = pair
    assert results_match(a, b) == results_match(b, a)
    assert strict_match(a, b) == strict_match(b, a)


@_settings
@given(results(), st.randoms(use_true_random=False))
def test_prop_invariant_to_row_shuffle_and_column_permutation(a, rnd):
    perm = list(range(len(a.columns)))
    rnd.shuffle(perm)
    b = _shuffle(a, rnd, perm)
    assert results_match(a, b) == Match(True, True)
    assert results_match(b, a) == Match(True, True)
    assert strict_match(a, _shuffle(a, rnd))


@_settings
@given(result_pairs(), st.randoms(use_true_random=False))
def test_prop_match_outcome_invariant_under_shuffles(pair, rnd):
    a, b = pair
    before = results_match(a, b)
    perm = list(range(len(b.rows[0]) if b.rows else len(b.columns)))
    rnd.shuffle(perm)
    assert results_match(a, _shuffle(b, rnd, perm)) == before
    perm_a = list(range(len(a.rows[0]) if a.rows else len(a.columns)))
    rnd.shuffle(perm_a)
    assert results_match(_shuffle(a, rnd, perm_a), b) == before


@_settings
@given(results(min_cols=1), st.data())
def test_prop_projection_matches_full(a, data):
    n = len(a.columns)
    keep = data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
    proj = Result(columns=[a.columns[j] for j in keep],
                  rows=[[r[j] for j in keep] for r in a.rows], row_count=len(a.rows))
    assert results_match(proj, a) == Match(True, True)
    assert results_match(a, proj) == Match(True, True)


@_settings
@given(result_pairs())
def test_prop_strict_implies_relaxed(pair):
    a, b = pair
    if strict_match(a, b):
        assert results_match(a, b).matched


@_settings
@given(st.lists(st.one_of(results(max_cols=2, max_rows=3), st.just(ERR())), min_size=1,
                max_size=6), st.data())
def test_prop_agreement_range_and_grid(rs, data):
    # Sometimes mark a few results truncated.
    rs = [r.model_copy(update={"truncated": data.draw(st.booleans())}) if r.error is None
          and data.draw(st.booleans()) else r for r in rs]
    ag = agreement(rs)
    k = len(rs)
    for v in (ag.value, ag.lower_bound):
        assert 0.0 <= v <= 1.0
        assert math.isclose(v * k, round(v * k), abs_tol=1e-9)
    assert ag.lower_bound <= ag.value
    assert 0 <= ag.truncated_pairs <= k - 1
    assert math.isclose((ag.value - ag.lower_bound) * k, ag.truncated_pairs, abs_tol=1e-9)
    if rs[0].error is None:
        assert ag.value >= 1 / k
        ids = cluster(rs)
        assert ids[0] == 0
    else:
        assert ag.value == 0.0


@_settings
@given(st.lists(results(max_cols=2, max_rows=3), min_size=1, max_size=6))
def test_prop_cluster_ids_and_shown_index(rs):
    ids = cluster(rs)
    assert len(ids) == len(rs)
    seen = -1
    for cid in ids:  # ids appear in order 0, 1, 2, …
        assert cid <= seen + 1
        seen = max(seen, cid)
    i = shown_index(rs)
    sizes = {c: ids.count(c) for c in set(ids)}
    assert sizes[ids[i]] == max(sizes.values())
    assert ids.index(ids[i]) == i


def _brute_force_match(a: Result, b: Result) -> bool:
    """Definition 1 by enumeration of every injective column choice (small inputs only)."""
    from collections import Counter
    from itertools import permutations

    if len(a.rows) != len(b.rows):
        return False
    if not a.rows:
        return True
    ra, rb = normalise_rows(a), normalise_rows(b)
    if len(ra[0]) > len(rb[0]):
        ra, rb = rb, ra
    target = Counter(ra)
    return any(Counter(tuple(r[j] for j in choice) for r in rb) == target
               for choice in permutations(range(len(rb[0])), len(ra[0])))


_few_values = st.sampled_from([None, 0, 1, "1", "a", 1.0])


@st.composite
def small_pairs(draw):
    nrows = draw(st.integers(0, 5))
    wa, wb = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    a = [[draw(_few_values) for _ in range(wa)] for _ in range(nrows)]
    if draw(st.booleans()) and wa and wb >= wa:
        # b built from a: shuffled rows, a column choice of a placed among extra columns.
        slots = draw(st.permutations(range(wb)))[:wa]
        b = []
        for r in draw(st.permutations(a)):
            row = [draw(_few_values) for _ in range(wb)]
            for i, j in enumerate(slots):
                row[j] = r[i]
            b.append(row)
    else:
        b = [[draw(_few_values) for _ in range(wb)] for _ in range(nrows)]
    return (Result(columns=["x"] * wa, rows=a, row_count=nrows),
            Result(columns=["y"] * wb, rows=b, row_count=nrows))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_pairs())
def test_prop_agrees_with_brute_force(pair):
    a, b = pair
    expected = _brute_force_match(a, b)
    assert results_match(a, b) == Match(expected, True)
    assert results_match(b, a) == Match(expected, True)


def test_the_entropy_clusters_compare_floats_to_six_places_and_agreement_to_four():
    """IES §3.2 clusters samples for the entropy by full rows with floats rounded to six
    places; agreement's matching (§3.3) rounds to four (issue 29, deviation 8)."""
    from vouchsql.agreement import cluster, strict_clusters
    from vouchsql.answer import Result

    a = Result(columns=["x"], rows=[[0.123411]], row_count=1)
    b = Result(columns=["x"], rows=[[0.123444]], row_count=1)  # the same to four places, not to six
    c = Result(columns=["x"], rows=[[0.1234111]], row_count=1)  # the same as a to six places
    assert cluster([a, b, c]) == [0, 0, 0]
    assert strict_clusters([a, b, c]) == [0, 1, 0]
