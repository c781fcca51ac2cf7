"""The measures of the evaluation harnesses, vectorised with numpy (IES §4.4, PremiseSQL App. B.8).

- :func:`auroc`: the rank statistic, ties counted one half (the Mann–Whitney U over n₁·n₀).
- :func:`bootstrap`: percentile bootstrap over items. Every statistic is computed on the *same*
  resamples, so :func:`interval` of one statistic and :func:`paired_difference` of two come from
  one set of replicates (default 2,000, seeded).
- :func:`ece` (10 equal-width bins) with :func:`reliability` (the table behind the diagram),
  :func:`brier`, :func:`wilson`, :func:`mcnemar_exact`, :func:`cohen_kappa`,
  :func:`gate_quantities` and :func:`risk_coverage`.

Undefined quantities (an AUROC with one class only, a pass accuracy with no pass) are ``nan``;
:func:`jsonable` turns them into ``null``.

A bootstrap statistic is a *batch* function: it takes an integer array ``idx`` of shape
``(b, n)`` (each row one resample of the item indices) and returns ``b`` values. The helpers
:func:`mean_stat` and :func:`auroc_stat` build the common ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeAlias

import numpy as np

from ..errors import UserInputError

DEFAULT_REPLICATES = 2000
DEFAULT_SEED = 0
BINS = 10
Z95 = 1.959963984540054  # the 97.5% point of the standard normal

BatchStat = Callable[[np.ndarray], np.ndarray]
# Per-item scores (or other values) and right/wrong labels: a list, or an array of them.
Scores: TypeAlias = Sequence[float] | np.ndarray
Labels: TypeAlias = Sequence[bool] | np.ndarray

__all__ = [
    "DEFAULT_REPLICATES", "DEFAULT_SEED", "auroc", "auroc_stat", "mean_stat", "ratio_stat",
    "bootstrap", "interval", "paired_difference", "ece", "reliability", "brier", "wilson",
    "mcnemar_exact", "cohen_kappa", "gate_quantities", "risk_coverage", "jsonable", "Bootstrap",
]


def _arrays(scores: Scores, labels: Labels) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels as arrays. A NaN score is refused here, so every metric treats it
    the same way: NaN has no rank (NaN != NaN would rank each one apart in AUROC while the
    bootstrap's np.unique ties them), no bin and no squared error."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels).astype(bool)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be 1-d and the same length ({s.shape} vs {y.shape})")
    bad = np.flatnonzero(np.isnan(s))
    if bad.size:
        raise UserInputError(f"{bad.size} score(s) are NaN (first at position {int(bad[0])}): a score must be a "
                             f"number; drop those answers or give them a score before measuring")
    return s, y


# ---------------------------------------------------------------------------------------
# AUROC
# ---------------------------------------------------------------------------------------
def auroc(scores: Scores, labels: Labels) -> float:
    """P(s⁺ > s⁻) + ½·P(s⁺ = s⁻) over all (right, wrong) pairs; ``nan`` without both classes."""
    s, y = _arrays(scores, labels)
    n1 = int(y.sum())
    n0 = y.size - n1
    if n1 == 0 or n0 == 0:
        return float("nan")
    ranks = _average_ranks(s)
    u = ranks[y].sum() - n1 * (n1 + 1) / 2
    return float(u / (n1 * n0))


def _average_ranks(s: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank (scipy.stats.rankdata 'average')."""
    order = np.argsort(s, kind="mergesort")
    sorted_s = s[order]
    new_group = np.r_[True, sorted_s[1:] != sorted_s[:-1]]
    group = np.cumsum(new_group) - 1
    starts = np.flatnonzero(new_group)
    ends = np.r_[starts[1:], s.size]  # exclusive
    avg = (starts + ends + 1) / 2.0  # mean of the 1-based ranks start+1 … end
    ranks = np.empty(s.size)
    ranks[order] = avg[group]
    return ranks


def auroc_stat(scores: Scores, labels: Labels, chunk_cells: int = 1_000_000) -> BatchStat:
    """A batch AUROC for :func:`bootstrap`. Scores are reduced once to dense ranks over their u
    distinct values and each item to one code (label·u + rank); a resample is then one integer
    histogram of codes (wrong and right answers per distinct score) and a cumulative sum,
    O(b·(n + u)) with no per-resample sort. Ties count ½: with W⁻ the wrong answers strictly
    below a value and T⁻ those at it, 2·wins = Σ n⁺·(2W⁻ + T⁻), kept in integers."""
    s, y = _arrays(scores, labels)
    _, dense = np.unique(s, return_inverse=True)
    u = int(dense.max()) + 1 if dense.size else 1
    code = dense.astype(np.int64) + y.astype(np.int64) * u

    def stat(idx: np.ndarray) -> np.ndarray:
        b, n = idx.shape
        out = np.empty(b)
        step = max(1, chunk_cells // (2 * u))
        for lo in range(0, b, step):
            part = idx[lo:lo + step]
            rows = part.shape[0]
            flat = code[part]
            flat += (np.arange(rows, dtype=np.int64) * (2 * u))[:, None]
            hist = np.bincount(flat.ravel(), minlength=rows * 2 * u).reshape(rows, 2, u)
            n_neg, n_pos = hist[:, 0, :], hist[:, 1, :]
            twice = np.cumsum(n_neg, axis=1)
            twice *= 2
            twice -= n_neg  # 2·(wrong strictly below) + (wrong tied)
            wins2 = np.einsum("ij,ij->i", n_pos, twice)
            p = n_pos.sum(axis=1)
            q = n - p
            with np.errstate(invalid="ignore", divide="ignore"):
                out[lo:lo + rows] = np.where((p > 0) & (q > 0), wins2 / (2.0 * p * q), np.nan)
        return out

    return stat


def mean_stat(values: Scores) -> BatchStat:
    """The mean of a per-item value (``nan`` items, such as malformed responses, are left out)."""
    v = np.asarray(values, dtype=float)

    has_nan = bool(np.isnan(v).any())

    def stat(idx: np.ndarray) -> np.ndarray:
        if not has_nan:
            means: np.ndarray = v[idx].mean(axis=1)
            return means
        x = v[idx]
        n = (~np.isnan(x)).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, np.nansum(x, axis=1) / n, np.nan)

    return stat


def ratio_stat(numerator: Scores, denominator: Scores) -> BatchStat:
    """Σ numerator / Σ denominator per resample, e.g. pass accuracy = Σ[right ∧ pass] / Σ[pass]."""
    a = np.asarray(numerator, dtype=float)
    d = np.asarray(denominator, dtype=float)

    def stat(idx: np.ndarray) -> np.ndarray:
        den = d[idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, a[idx].sum(axis=1) / den, np.nan)

    return stat


# ---------------------------------------------------------------------------------------
# Bootstrap
# ---------------------------------------------------------------------------------------
@dataclass
class Bootstrap:
    """Replicate values of every statistic on one set of resamples."""

    replicates: int
    seed: int
    values: dict[str, np.ndarray]

    def interval(self, name: str, level: float = 0.95) -> list[float]:
        return interval(self.values[name], level)

    def paired(self, a: str, b: str, level: float = 0.95) -> list[float]:
        """Percentile interval of stat(a) − stat(b) over the same resamples."""
        return interval(self.values[a] - self.values[b], level)


def bootstrap(stats: Mapping[str, BatchStat], n: int, *, replicates: int = DEFAULT_REPLICATES,
              seed: int = DEFAULT_SEED, chunk: int = 250) -> Bootstrap:
    """Resample the n items with replacement ``replicates`` times (``numpy.random.default_rng(seed)``,
    drawn in chunks so memory stays bounded) and evaluate every statistic on each resample."""
    if replicates < 1:
        raise ValueError("replicates must be at least 1")
    rng = np.random.default_rng(seed)
    values = {name: np.empty(replicates) for name in stats}
    if n == 0:
        for v in values.values():
            v.fill(np.nan)
        return Bootstrap(replicates, seed, values)
    for lo in range(0, replicates, chunk):
        rows = min(chunk, replicates - lo)
        idx = rng.integers(0, n, size=(rows, n), dtype=np.int64 if n > 2**31 - 1 else np.int32)
        for name, stat in stats.items():
            values[name][lo:lo + rows] = stat(idx)
    return Bootstrap(replicates, seed, values)


def interval(values: np.ndarray, level: float = 0.95) -> list[float]:
    """The percentile interval of replicate values, ignoring replicates where the statistic was
    undefined (``nan``); ``[nan, nan]`` when none was defined."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return [float("nan"), float("nan")]
    alpha = (1 - level) / 2
    lo, hi = np.percentile(v, [100 * alpha, 100 * (1 - alpha)])
    return [float(lo), float(hi)]


def paired_difference(stat_a: BatchStat, stat_b: BatchStat, n: int, point_a: float, point_b: float, *,
                      replicates: int = DEFAULT_REPLICATES, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """{"diff": a − b, "ci": percentile interval of a − b over the same resamples}."""
    boot = bootstrap({"a": stat_a, "b": stat_b}, n, replicates=replicates, seed=seed)
    return {"diff": point_a - point_b, "ci": boot.paired("a", "b")}


# ---------------------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------------------
def _bin_index(s: np.ndarray, bins: int) -> np.ndarray:
    # Scores are stored to 4 decimals: 0.3 * 10 may be 2.9999…, which belongs in bin 3.
    index: np.ndarray = np.clip(np.floor(s * bins + 1e-9).astype(int), 0, bins - 1)
    return index


def reliability(scores: Scores, labels: Labels, bins: int = BINS) -> list[dict[str, Any]]:
    """Per equal-width bin [k/B, (k+1)/B) (the last bin closed): n, mean score, accuracy."""
    s, y = _arrays(scores, labels)
    b = _bin_index(s, bins)
    n = np.bincount(b, minlength=bins)
    conf = np.bincount(b, weights=s, minlength=bins)
    right = np.bincount(b, weights=y.astype(float), minlength=bins)
    out = []
    for k in range(bins):
        out.append({"lo": k / bins, "hi": (k + 1) / bins, "n": int(n[k]),
                    "confidence": float(conf[k] / n[k]) if n[k] else float("nan"),
                    "accuracy": float(right[k] / n[k]) if n[k] else float("nan")})
    return out


def ece(scores: Scores, labels: Labels, bins: int = BINS) -> float:
    """Σ_bins (n_b / n)·|accuracy_b − mean score_b| over 10 equal-width bins."""
    s, y = _arrays(scores, labels)
    if s.size == 0:
        return float("nan")
    b = _bin_index(s, bins)
    gap = np.abs(np.bincount(b, weights=y.astype(float), minlength=bins)
                 - np.bincount(b, weights=s, minlength=bins))
    return float(gap.sum() / s.size)  # n_b/n · |Σy/n_b − Σs/n_b| = |Σy − Σs| / n


def brier(scores: Scores, labels: Labels) -> float:
    s, y = _arrays(scores, labels)
    return float(np.mean((s - y) ** 2)) if s.size else float("nan")


# ---------------------------------------------------------------------------------------
# Proportions and paired tests
# ---------------------------------------------------------------------------------------
def wilson(successes: int, n: int, level: float = 0.95) -> list[float]:
    """The Wilson score interval for a proportion; ``[nan, nan]`` when n = 0."""
    if n <= 0:
        return [float("nan"), float("nan")]
    z = Z95 if level == 0.95 else _z(level)
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return [lo, hi]


def _z(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2)


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> dict[str, Any]:
    """Exact (binomial) McNemar test on paired binary outcomes: of the discordant pairs,
    ``b_only`` (a wrong, b right) vs ``a_only``; two-sided p = min(1, 2·P(X ≤ min) ), X ~ Bin(d, ½)."""
    x = np.asarray(a).astype(bool)
    z = np.asarray(b).astype(bool)
    a_only = int((x & ~z).sum())
    b_only = int((~x & z).sum())
    d = a_only + b_only
    if d == 0:
        return {"a_only": 0, "b_only": 0, "p": 1.0}
    k = min(a_only, b_only)
    tail = sum(math.comb(d, i) for i in range(k + 1))
    p = min(1.0, 2 * tail / 2**d)  # exact integer arithmetic, one rounding at the end
    return {"a_only": a_only, "b_only": b_only, "p": p}


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's κ = (p_o − p_e) / (1 − p_e) for two raters over any categories; ``nan`` if p_e = 1."""
    x = np.asarray(a)
    z = np.asarray(b)
    if x.shape != z.shape or x.size == 0:
        return float("nan")
    cats, inv = np.unique(np.concatenate([x, z]), return_inverse=True)
    ia, ib = inv[: x.size], inv[x.size:]
    po = float(np.mean(ia == ib))
    pe = float(np.sum(np.bincount(ia, minlength=cats.size) * np.bincount(ib, minlength=cats.size))) / x.size**2
    return float("nan") if pe == 1 else (po - pe) / (1 - pe)


# ---------------------------------------------------------------------------------------
# The gate
# ---------------------------------------------------------------------------------------
GATES = ("pass", "flag", "abstain")


def gate_quantities(gates: Sequence[str], labels: Labels) -> dict[str, Any]:
    """pass accuracy = P(right | pass), pass share = P(pass), correct withheld = P(abstain | right),
    wrong withheld = P(abstain | wrong), and the table {gate: [right, wrong]}."""
    g = np.asarray(gates)
    y = np.asarray(labels).astype(bool)
    table = {gate: [int(((g == gate) & y).sum()), int(((g == gate) & ~y).sum())] for gate in GATES}
    n = g.size
    n_pass = sum(table["pass"])
    right, wrong = int(y.sum()), int((~y).sum())
    return {
        "pass_accuracy": table["pass"][0] / n_pass if n_pass else float("nan"),
        "pass_share": n_pass / n if n else float("nan"),
        "correct_withheld": table["abstain"][0] / right if right else float("nan"),
        "wrong_withheld": table["abstain"][1] / wrong if wrong else float("nan"),
        "gate": table,
    }


def risk_coverage(scores: Scores, labels: Labels) -> dict[str, Any]:
    """For every attainable threshold t (each distinct score, highest first): coverage = share
    with s ≥ t, accuracy of those shown, risk = 1 − accuracy. Tied answers enter together, so
    every point is an operating point; the area under risk(coverage) (AURC, step-wise) too."""
    s, y = _arrays(scores, labels)
    if s.size == 0:
        return {"threshold": [], "coverage": [], "accuracy": [], "risk": [], "aurc": float("nan")}
    values, inv = np.unique(-s, return_inverse=True)  # ascending -s = descending s
    n_at = np.bincount(inv)
    right_at = np.bincount(inv, weights=y.astype(float))
    shown = np.cumsum(n_at)
    right = np.cumsum(right_at)
    coverage = shown / s.size
    accuracy = right / shown
    risk = 1 - accuracy
    widths = np.diff(np.r_[0.0, coverage])
    return {"threshold": (-values).tolist(), "coverage": coverage.tolist(), "accuracy": accuracy.tolist(),
            "risk": risk.tolist(), "aurc": float(np.sum(widths * risk))}


# ---------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------
def jsonable(value: Any, digits: int | None = None) -> Any:
    """numpy scalars to Python, nan/inf to None, recursively; floats rounded if ``digits``."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, digits) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v, digits) for v in value.tolist()]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        if not math.isfinite(f):
            return None
        return round(f, digits) if digits is not None else f
    return value


def proportion(flags: Iterable[bool]) -> dict[str, Any]:
    """{"k", "n", "rate", "ci"} with a Wilson interval."""
    v = [bool(f) for f in flags]
    k, n = sum(v), len(v)
    return {"k": k, "n": n, "rate": k / n if n else float("nan"), "ci": wilson(k, n)}
