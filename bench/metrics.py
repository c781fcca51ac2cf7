#!/usr/bin/env python
"""Benchmark: AUROC plus a 2,000-replicate percentile bootstrap on 10,000 scored answers.

Not a test. The issue's target: ``vouchsql.evals.metrics`` computes the AUROC of 10,000
answers and its 2,000-replicate bootstrap interval in at most 2 s.

Three score shapes, because the cost of the batch AUROC grows with the number of distinct
scores (one histogram bin per distinct score per resample):

* ``agreement``  — the agreement share with K = 5 (six values), the common case;
* ``rounded``    — scores stored to four decimals (what the harness stores), ~5,000 distinct;
* ``continuous`` — every score distinct (10,000 values), the worst case.

For each: one ``auroc`` call, then ``bootstrap({"auroc": auroc_stat(...)}, n, replicates=2000)``
(resampling included), ``--repeat`` times; the median and the worst are reported. ``--paired``
adds a second statistic on the same resamples (the paired-difference case: two rules).
``--check`` compares 50 bootstrap replicates with a direct per-resample AUROC.

    python bench/metrics.py
    python bench/metrics.py --n 10000 --replicates 2000 --repeat 5 --paired
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

from vouchsql.evals import metrics as M


def _data(shape: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    y = rng.random(n) < 0.75
    if shape == "agreement":
        p = np.where(y, 0.85, 0.45)
        s = rng.binomial(5, p) / 5
    else:
        s = np.clip(rng.normal(0.55 + 0.2 * y, 0.2), 0, 1)
        if shape == "rounded":
            s = np.round(s, 4)
    return s, y


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--replicates", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--paired", action="store_true", help="two rules on the same resamples")
    ap.add_argument("--check", action="store_true", help="verify replicates against a per-resample loop")
    args = ap.parse_args(argv)

    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "")
    print(f"n = {args.n:,} answers, {args.replicates:,} bootstrap replicates, {args.repeat} repeats\n")
    print(f"{'scores':<11} {'distinct':>8} {'AUROC':>7} {'95% CI':>17} {'auroc ms':>9} "
          f"{'median s':>9} {'worst s':>8}  target ≤ 2 s")
    worst_all = 0.0
    rng = np.random.default_rng(args.seed)
    for shape in ("agreement", "rounded", "continuous"):
        s, y = _data(shape, args.n, rng)
        s2 = np.clip(s + rng.normal(0, 0.05, s.size), 0, 1) if args.paired else None
        times, t_auc = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            a = M.auroc(s, y)
            t_auc.append(time.perf_counter() - start)
            stats = {"auroc": M.auroc_stat(s, y)}
            if s2 is not None:
                stats["other"] = M.auroc_stat(s2, y)
            boot = M.bootstrap(stats, args.n, replicates=args.replicates, seed=args.seed)
            ci = boot.interval("auroc")
            if s2 is not None:
                boot.paired("other", "auroc")
            times.append(time.perf_counter() - start)
        med, worst = statistics.median(times), max(times)
        worst_all = max(worst_all, worst)
        print(f"{shape:<11} {np.unique(s).size:>8,} {a:>7.4f} {ci[0]:>8.4f}–{ci[1]:<8.4f} "
              f"{1000 * statistics.median(t_auc):>9.1f} {med:>9.3f} {worst:>8.3f}  {'met' if worst <= 2 else 'MISSED'}")
        if args.check:
            seen = []

            def record(idx):
                seen.append(idx.copy())
                return np.zeros(idx.shape[0])

            b = M.bootstrap({"auroc": M.auroc_stat(s, y), "idx": record}, args.n, replicates=50, seed=1)
            direct = np.array([M.auroc(s[i], y[i]) for i in np.concatenate(seen)])
            assert np.allclose(b.values["auroc"], direct), "batch AUROC differs from the per-resample AUROC"
            print(f"{'':<11} check: 50 replicates equal the per-resample AUROC")
    print(f"\nworst over all shapes and repeats: {worst_all:.3f} s "
          f"({'target met' if worst_all <= 2 else 'target MISSED'})")
    return 0 if worst_all <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
