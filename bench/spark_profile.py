#!/usr/bin/env python
"""Benchmark: profiling a 100M-row table on local Spark (issue 16, part 5) within its budget.

Not a test. Makes (once, reused from ``--data-dir``, default ``bench/.data``) a folder of
Parquet data written by Spark from ``spark.range(N)``: ``sales`` (N rows: ``id`` bigint,
``customer_id`` skewed towards low ids, ``category`` text of 8 values with 5% NULL,
``amount`` double with -1 in 1% of rows — the stand-in code the profile must find —
``sale_date`` rising with the id) and ``customers`` (1,000 rows). Then opens the folder as
``spark-local:///…`` in a fresh local session and times ``db.profile(refresh=True)`` with an
empty cache, per table, and prints what the profile says of ``sales``: its row count and how
it was had, the sample, whether the profile was cut short (``partial``/``timed_out``: the
budget is ``profile_statements`` statements and ``profile_timeout`` seconds per table), and
the stand-in found.

    python bench/spark_profile.py                      # 100,000,000 rows
    python bench/spark_profile.py --rows 10000000 --repeat 3
    python bench/spark_profile.py --analyze            # ANALYZE TABLE first: the row count from statistics

Results and the command are in bench/README.md (section spark_profile).
"""

from __future__ import annotations

import os
import sys

# bench/profile.py would shadow the standard library's profile module, which pyspark's
# cProfile import needs: drop this folder from the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GENERATOR_VERSION = 1


def _session(cores: str):
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{cores}]").appName("vouch-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "8").config("spark.driver.memory", "2g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def make_data(spark, folder: Path, rows: int) -> None:
    """The Parquet folders, written once (a ``_vouch_rows`` file says for how many rows)."""
    mark = folder / "_vouch_rows"
    if mark.is_file() and mark.read_text().strip() == f"{rows}:{GENERATOR_VERSION}":
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    start = time.perf_counter()
    h = "((id * 2654435761) % 4294967296)"
    spark.range(rows).selectExpr(
        "id",
        f"CAST(floor(pow(({h} % 1000000) / 1000000.0, 2) * 1000) AS INT) AS customer_id",
        f"CASE WHEN {h} % 20 = 0 THEN NULL ELSE element_at(array('books', 'games', 'music', 'garden', "
        f"'tools', 'toys', 'food', 'home'), CAST({h} % 8 AS INT) + 1) END AS category",
        f"CASE WHEN {h} % 100 = 7 THEN -1.0 ELSE round(({h} % 50000) / 100.0 + 1, 2) END AS amount",
        f"date_add(DATE'2020-01-01', CAST(floor(id * 1826.0 / {rows}) AS INT)) AS sale_date",
    ).write.parquet(str(folder / "sales"))
    spark.range(1000).selectExpr("CAST(id AS INT) AS id", "concat('customer ', id) AS name",
                                 "CASE WHEN id % 6 = 0 THEN NULL ELSE concat('r', id % 5) END AS region") \
        .coalesce(1).write.parquet(str(folder / "customers"))
    mark.write_text(f"{rows}:{GENERATOR_VERSION}")
    print(f"generated {rows:,} rows in {time.perf_counter() - start:.1f} s into {folder}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--data-dir", type=Path, default=REPO / "bench" / ".data")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cores", default="*", help="local[N] for the Spark session (default: every core)")
    ap.add_argument("--analyze", action="store_true", help="ANALYZE TABLE … COMPUTE STATISTICS before profiling")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    sys.path.insert(0, str(REPO / "src"))
    import vouchsql

    spark = _session(args.cores)
    folder = args.data_dir / f"spark_sales_{args.rows}"
    args.data_dir.mkdir(parents=True, exist_ok=True)
    (args.data_dir / ".gitignore").write_text("*\n")
    make_data(spark, folder, args.rows)
    target = f"spark-local://{folder}"
    runs = []
    for _ in range(args.repeat):
        cache = tempfile.mkdtemp(prefix="vouch-bench-cache-")
        try:
            start = time.perf_counter()
            db = vouchsql.connect(target, cache_dir=cache, no_cache=True)
            if args.analyze:
                for t in db.schema():
                    spark.sql(f"ANALYZE TABLE `{db.default_schema}`.`{t.name}` COMPUTE STATISTICS")
                db = vouchsql.connect(target, cache_dir=cache, no_cache=True)
            opened = time.perf_counter() - start
            profile = db.profile(refresh=True)
            seconds = time.perf_counter() - start
            sales = profile.table("sales")
            amount = sales.column("amount")
            runs.append({
                "seconds": round(seconds, 2), "open_s": round(opened, 2), "query_s": round(db.query_ms / 1000, 2),
                "row_count": sales.row_count, "row_count_estimated": sales.row_count_estimated,
                "row_source": sales.sources.get("row_count", "COUNT(*)"),
                "sampled": sales.sampled, "sample_size": sales.sample_size, "sample_method": sales.sample_method,
                "partial": sales.partial, "timed_out": sales.timed_out,
                "stand_ins": [(s.value, s.count) for s in amount.stand_ins] if amount else None,
                "budget": {"profile_timeout_s": db.config.profile_timeout,
                           "profile_statements": db.config.profile_statements},
            })
            db.close()
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    report = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg(), "python": platform.python_version(),
                          "spark": spark.version, "cores": args.cores},
              "rows": args.rows, "analyze": args.analyze, "runs": runs,
              "median_s": statistics.median(r["seconds"] for r in runs)}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"spark {spark.version}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
              f"{args.rows:,} rows; ANALYZE first: {args.analyze}")
        for r in runs:
            print(json.dumps(r))
        print(f"median {report['median_s']:.1f} s (budget: profile_timeout {runs[0]['budget']['profile_timeout_s']:g} s "
              f"and {runs[0]['budget']['profile_statements']} statements per table)")
    ok = all(not r["partial"] and not r["timed_out"] and r["stand_ins"] for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
