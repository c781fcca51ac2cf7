"""vouchsql.evals.metrics against independent computations: AUROC against scipy's Mann–Whitney U,
the bootstrap against a per-resample loop, McNemar against scipy's binomial test, ECE, Brier,
Wilson, κ, the gate quantities and the risk–coverage curve on hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vouchsql.evals import metrics as M

scipy_stats = pytest.importorskip("scipy.stats")


# ---------------------------------------------------------------------------------------
# AUROC
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_auroc_is_mann_whitney_u_over_n1_n0(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    y = rng.random(n) < rng.uniform(0.2, 0.8)
    y[0], y[1] = True, False
    # Half the seeds discrete (many ties, like the agreement share), half continuous.
    s = np.round(rng.random(n) * 5) / 5 if seed % 2 == 0 else rng.normal(y * 0.5, 1.0)
    u = scipy_stats.mannwhitneyu(s[y], s[~y], alternative="two-sided").statistic
    assert M.auroc(s, y) == pytest.approx(u / (y.sum() * (~y).sum()), abs=1e-12)


def test_auroc_ties_count_one_half():
    assert M.auroc([0.5, 0.5], [1, 0]) == 0.5
    assert M.auroc([0.8, 0.8, 0.2], [1, 0, 0]) == pytest.approx((0.5 + 1) / 2)
    assert M.auroc([0.9, 0.1], [1, 0]) == 1.0
    assert M.auroc([0.1, 0.9], [1, 0]) == 0.0


def test_auroc_with_one_class_is_undefined():
    assert math.isnan(M.auroc([0.1, 0.2], [1, 1]))
    assert M.jsonable({"a": M.auroc([0.1], [0])}) == {"a": None}


# ---------------------------------------------------------------------------------------
# Bootstrap
# ---------------------------------------------------------------------------------------
def _recording(store: list):
    def stat(idx):
        store.append(idx.copy())
        return np.zeros(idx.shape[0])
    return stat


def test_bootstrap_auroc_equals_auroc_of_each_resample():
    rng = np.random.default_rng(7)
    n = 120
    y = rng.random(n) < 0.6
    s = np.round(rng.random(n), 1)
    seen: list = []
    boot = M.bootstrap({"auc": M.auroc_stat(s, y), "idx": _recording(seen)}, n, replicates=300, seed=3, chunk=64)
    idx = np.concatenate(seen)
    assert idx.shape == (300, n)
    direct = np.array([M.auroc(s[i], y[i]) for i in idx])
    np.testing.assert_allclose(boot.values["auc"], direct, equal_nan=True)
    lo, hi = boot.interval("auc")
    assert lo == pytest.approx(np.nanpercentile(direct, 2.5))
    assert hi == pytest.approx(np.nanpercentile(direct, 97.5))


def test_bootstrap_is_seeded_and_chunking_does_not_change_it():
    rng = np.random.default_rng(1)
    y = rng.random(200) < 0.5
    s = rng.random(200)
    a = M.bootstrap({"auc": M.auroc_stat(s, y)}, 200, replicates=500, seed=11)
    b = M.bootstrap({"auc": M.auroc_stat(s, y, chunk_cells=1000)}, 200, replicates=500, seed=11)
    c = M.bootstrap({"auc": M.auroc_stat(s, y)}, 200, replicates=500, seed=12)
    np.testing.assert_array_equal(a.values["auc"], b.values["auc"])
    assert not np.array_equal(a.values["auc"], c.values["auc"])
    assert M.DEFAULT_REPLICATES == 2000


def test_paired_difference_uses_the_same_resamples():
    rng = np.random.default_rng(5)
    n = 150
    y = rng.random(n) < 0.5
    s1 = rng.normal(y * 1.0, 1)
    s2 = s1 + rng.normal(0, 0.5, n)
    boot = M.bootstrap({"a": M.auroc_stat(s1, y), "b": M.auroc_stat(s2, y), "a2": M.auroc_stat(s1, y)}, n,
                       replicates=400, seed=0)
    assert boot.paired("a", "a2") == [0.0, 0.0], "a statistic minus itself is exactly zero on every resample"
    diffs = boot.values["b"] - boot.values["a"]
    assert boot.paired("b", "a") == [pytest.approx(np.percentile(diffs, 2.5)), pytest.approx(np.percentile(diffs, 97.5))]
    res = M.paired_difference(M.auroc_stat(s2, y), M.auroc_stat(s1, y), n, M.auroc(s2, y), M.auroc(s1, y),
                              replicates=400, seed=0)
    assert res["diff"] == pytest.approx(M.auroc(s2, y) - M.auroc(s1, y))
    assert res["ci"][0] <= res["diff"] <= res["ci"][1]


def test_mean_and_ratio_stats():
    v = np.array([1.0, 0.0, np.nan, 1.0])
    idx = np.array([[0, 1, 2, 3], [0, 0, 0, 0], [2, 2, 2, 2]])
    out = M.mean_stat(v)(idx)
    assert out[0] == pytest.approx(2 / 3) and out[1] == 1.0 and math.isnan(out[2])
    num, den = np.array([1, 0, 2]), np.array([1, 1, 2])
    np.testing.assert_allclose(M.ratio_stat(num, den)(np.array([[0, 1, 2], [1, 1, 1]])), [3 / 4, 0.0])


def test_interval_ignores_undefined_replicates():
    assert M.interval(np.array([np.nan, 1.0, 1.0])) == [1.0, 1.0]
    assert all(math.isnan(x) for x in M.interval(np.array([np.nan])))


# ---------------------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------------------
def test_ece_and_brier_hand_worked():
    s = [0.05, 0.15, 0.95, 0.95]
    y = [0, 1, 1, 0]
    # bins: [0, .1) conf .05 acc 0 → .05; [.1, .2) conf .15 acc 1 → .85; [.9, 1] conf .95 acc .5 → .45 (2 answers)
    assert M.ece(s, y) == pytest.approx((0.05 + 0.85 + 2 * 0.45) / 4)
    assert M.brier(s, y) == pytest.approx((0.05**2 + 0.85**2 + 0.05**2 + 0.95**2) / 4)


def test_ece_bins_are_equal_width_with_the_last_closed():
    bins = M.reliability([0.0, 0.3, 0.59, 0.6, 0.8, 1.0], [1, 1, 0, 0, 1, 1])
    assert len(bins) == 10
    assert [b["n"] for b in bins] == [1, 0, 0, 1, 0, 1, 1, 0, 1, 1]
    assert bins[9]["confidence"] == 1.0 and bins[9]["accuracy"] == 1.0
    # A perfectly calibrated case: in each bin the share right equals the mean score.
    s = [0.25] * 4 + [0.75] * 4
    y = [1, 0, 0, 0, 1, 1, 1, 0]
    assert M.ece(s, y) == pytest.approx(0.0)


# ---------------------------------------------------------------------------------------
# Proportions, McNemar, κ
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("k, n, lo, hi", [
    (8, 10, 0.4902, 0.9433),
    (0, 10, 0.0, 0.2775),
    (10, 10, 0.7225, 1.0),
    (50, 100, 0.4038, 0.5962),
    (1, 20, 0.0089, 0.2361),
])
def test_wilson_known_values(k, n, lo, hi):
    got = M.wilson(k, n)
    assert got[0] == pytest.approx(lo, abs=5e-5) and got[1] == pytest.approx(hi, abs=5e-5)


def test_wilson_empty():
    assert all(math.isnan(x) for x in M.wilson(0, 0))


@pytest.mark.parametrize("a_only, b_only, same", [(5, 1, 10), (0, 7, 3), (12, 12, 0), (30, 11, 50), (0, 0, 5), (200, 170, 9)])
def test_mcnemar_exact_is_the_two_sided_binomial_test(a_only, b_only, same):
    a = [1] * a_only + [0] * b_only + [1] * same
    b = [0] * a_only + [1] * b_only + [1] * same
    got = M.mcnemar_exact(a, b)
    assert (got["a_only"], got["b_only"]) == (a_only, b_only)
    expected = 1.0 if a_only + b_only == 0 else \
        scipy_stats.binomtest(min(a_only, b_only), a_only + b_only, 0.5).pvalue
    assert got["p"] == pytest.approx(expected, rel=1e-9)


def test_cohen_kappa_hand_worked():
    # Wikipedia's example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no → κ = 0.4
    a = ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert M.cohen_kappa(a, b) == pytest.approx(0.4)
    assert M.cohen_kappa([1, 1, 0, 0, 1, 0], [1, 0, 0, 0, 1, 1]) == pytest.approx(1 / 3)
    assert M.cohen_kappa([1, 0, 1], [1, 0, 1]) == 1.0
    assert math.isnan(M.cohen_kappa([1, 1], [1, 1]))


# ---------------------------------------------------------------------------------------
# Gate and risk–coverage
# ---------------------------------------------------------------------------------------
def test_gate_quantities_hand_worked():
    gates = ["pass", "pass", "pass", "flag", "abstain", "abstain", "abstain", "flag"]
    right = [1, 1, 0, 1, 1, 0, 0, 0]
    g = M.gate_quantities(gates, right)
    assert g["gate"] == {"pass": [2, 1], "flag": [1, 1], "abstain": [1, 2]}
    assert g["pass_accuracy"] == pytest.approx(2 / 3)
    assert g["pass_share"] == pytest.approx(3 / 8)
    assert g["correct_withheld"] == pytest.approx(1 / 4)
    assert g["wrong_withheld"] == pytest.approx(2 / 4)
    assert math.isnan(M.gate_quantities(["flag"], [1])["pass_accuracy"])


def test_risk_coverage_hand_worked():
    s = [1.0, 1.0, 0.8, 0.6, 0.6, 0.2]
    y = [1, 0, 1, 1, 0, 0]
    rc = M.risk_coverage(s, y)
    assert rc["threshold"] == [1.0, 0.8, 0.6, 0.2]
    assert rc["coverage"] == pytest.approx([2 / 6, 3 / 6, 5 / 6, 1.0])
    assert rc["accuracy"] == pytest.approx([1 / 2, 2 / 3, 3 / 5, 3 / 6])
    assert rc["risk"] == pytest.approx([1 / 2, 1 / 3, 2 / 5, 1 / 2])
    assert rc["aurc"] == pytest.approx(2 / 6 * 0.5 + 1 / 6 * (1 / 3) + 2 / 6 * 0.4 + 1 / 6 * 0.5)


def test_jsonable_turns_numpy_and_nan_into_json():
    out = M.jsonable({"a": np.float64(0.5), "b": np.int64(3), "c": [np.nan, np.inf], "d": np.array([1, 2]),
                      "e": np.bool_(True)})
    assert out == {"a": 0.5, "b": 3, "c": [None, None], "d": [1, 2], "e": True}
