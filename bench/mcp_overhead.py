#!/usr/bin/env python
"""Benchmark: what ``check_sql`` over MCP stdio adds to the check itself.

Not a test. Builds the demo database into a temporary folder (with its own profile cache),
starts ``vouch mcp --db demo=…`` as a subprocess and connects the official MCP SDK's
``ClientSession`` to it over stdio, exactly as an agent does. Then, for each case (a question
with 1–3 candidate SQL from the demo examples), it alternates

- **direct**: ``vouchsql.check(path, question, candidates)`` in this process (it opens the
  database, reads the cached profile, checks, closes: what the tool does per call), and
- **mcp**: ``session.call_tool("check_sql", …)`` (JSON-RPC over the pipes, argument
  validation, a worker thread, the same check, path hiding and size fitting, the JSON back,
  and the client's validation of the result against the tool's outputSchema),

``--repeat`` times after ``--warmup`` unmeasured rounds, and reports medians in milliseconds:
each side's wall time and the **added** time, the median over rounds of (mcp − direct) for
the same case. ``list_databases`` round trips show the transport's own floor. The target is
an added median of at most 50 ms.

    python bench/mcp_overhead.py [--repeat 15] [--warmup 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

CASES = [
    ("tie, K=3", "Which product has the highest price?",
     ["SELECT name, price FROM products ORDER BY price DESC LIMIT 1",
      "SELECT name, price FROM products WHERE price = (SELECT MAX(price) FROM products) ORDER BY name",
      "SELECT name, price FROM products ORDER BY price DESC LIMIT 1"]),
    ("fan-out join, K=2", "What was the total value of orders placed in 2024?",
     ["SELECT ROUND(SUM(o.total), 2) FROM orders o JOIN order_items oi ON oi.order_id = o.order_id "
      "WHERE o.order_date >= '2024-01-01' AND o.order_date < '2025-01-01'",
      "SELECT ROUND(SUM(total), 2) FROM orders WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01'"]),
    ("NULL group, K=1", "How much revenue came from each customer region?",
     ["SELECT c.region, ROUND(SUM(o.total), 2) AS revenue FROM orders o JOIN customers c "
      "ON c.customer_id = o.customer_id GROUP BY c.region"]),
    ("count, K=3", "How many orders are there?", ["SELECT COUNT(*) FROM orders"] * 3),
]


def _ms(seconds: float) -> float:
    return seconds * 1000.0


async def run(args) -> None:
    import vouchsql
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from vouchsql.demo import build_demo

    tmp = Path(tempfile.mkdtemp(prefix="vouch-mcp-bench-"))
    db = build_demo(tmp / "demo.sqlite")
    cache = str(tmp / "cache")
    vouch = str(Path(sys.executable).with_name("vouch"))
    params = StdioServerParameters(command=vouch, args=["mcp", "--db", f"demo={db}"],
                                   env={"VOUCH_CACHE_DIR": cache})
    started = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            start_s = time.perf_counter() - started
            await session.list_tools()  # the client caches the output schemas here

            def direct(question, sqls):
                return vouchsql.check(db, question, sqls, cache_dir=cache)

            async def over_mcp(question, sqls):
                res = await session.call_tool("check_sql", {"database": "demo", "question": question,
                                                            "candidates": sqls})
                assert not res.is_error, res.content[0].text
                return res.structured_content

            floor = []
            for i in range(args.warmup + args.repeat):
                t = time.perf_counter()
                await session.call_tool("list_databases", {})
                if i >= args.warmup:
                    floor.append(_ms(time.perf_counter() - t))

            rows = []
            for label, question, sqls in CASES:
                d_times, m_times, added = [], [], []
                for i in range(args.warmup + args.repeat):
                    t = time.perf_counter()
                    a = direct(question, sqls)
                    d = _ms(time.perf_counter() - t)
                    t = time.perf_counter()
                    b = await over_mcp(question, sqls)
                    m = _ms(time.perf_counter() - t)
                    assert a.verdict.gate == b["verdict"]["gate"], (label, a.verdict.gate, b["verdict"]["gate"])
                    if i >= args.warmup:
                        d_times.append(d)
                        m_times.append(m)
                        added.append(m - d)
                rows.append((label, statistics.median(d_times), statistics.median(m_times),
                             statistics.median(added), min(added), a.verdict.gate))

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    from importlib.metadata import version

    print(f"machine: {platform.machine()}, {os.cpu_count()} vCPU, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}; Python {platform.python_version()}; mcp {version('mcp')}; vouchsql {vouchsql.__version__}")
    print(f"server start (spawn, open and warm the demo database, initialize): {start_s:.2f} s")
    print(f"repeats: {args.repeat} (after {args.warmup} warm-up rounds); milliseconds, medians\n")
    print(f"{'case':<20} {'direct':>8} {'mcp':>8} {'added':>8} {'min add':>8}  gate")
    for label, d, m, add, mn, gate in rows:
        print(f"{label:<20} {d:8.1f} {m:8.1f} {add:8.1f} {mn:8.1f}  {gate}")
    print(f"{'list_databases':<20} {'':>8} {statistics.median(floor):8.1f} {'':>8} {min(floor):8.1f}  (transport floor)")
    worst = max(r[3] for r in rows)
    print(f"\nadded by MCP stdio, worst case median: {worst:.1f} ms (target <= 50 ms): "
          f"{'met' if worst <= 50 else 'NOT met'}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--warmup", type=int, default=2)
    args = p.parse_args(argv)
    anyio.run(run, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
