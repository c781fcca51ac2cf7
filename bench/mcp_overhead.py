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
an added median of at most 50 ms on the demo database (issue 15) and, with ``--sakila``, at most
30 ms on Sakila (issue 28, item 7: the server's own time for a warm check).

``--http`` measures ``vouch serve`` the same way instead: the server on a free loopback port,
``POST /api/check`` over one kept-alive httpx connection (request parsing, the hop to a worker
thread, the per-request bounds, the check, path hiding, size fitting, the JSON back);
``GET /health`` round trips give its floor.

    python bench/mcp_overhead.py [--repeat 15] [--warmup 2] [--sakila ../shared/datasets/sakila.sqlite] [--http]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import shutil
import socket
import subprocess
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
SAKILA_CASES = [
    ("tie, K=2", "Which film has the highest rental rate?",
     ["SELECT title, rental_rate FROM film ORDER BY rental_rate DESC LIMIT 1",
      "SELECT title, rental_rate FROM film WHERE rental_rate = (SELECT MAX(rental_rate) FROM film)"]),
    ("join, K=1", "How many films are in each category?",
     ["SELECT c.name, COUNT(*) FROM category c JOIN film_category fc ON fc.category_id = c.category_id "
      "GROUP BY c.name"]),
    ("599 rows, K=1", "What is the total amount paid by each customer?",
     ["SELECT customer_id, SUM(amount) FROM payment GROUP BY customer_id"]),
    ("count, K=3", "How many films are there?", ["SELECT COUNT(*) FROM film"] * 3),
]


def _ms(seconds: float) -> float:
    return seconds * 1000.0


async def run(args) -> None:
    import vouchsql
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from vouchsql.demo import build_demo

    tmp = Path(tempfile.mkdtemp(prefix="vouch-mcp-bench-"))
    if args.sakila:  # a copy, with its profile cache in the temporary folder like the demo's
        db = tmp / "sakila.sqlite"
        shutil.copyfile(args.sakila, db)
        cases, target, name = SAKILA_CASES, 30, "Sakila"
    else:
        db = build_demo(tmp / "demo.sqlite")
        cases, target, name = CASES, 50, "the demo database"
    cache = str(tmp / "cache")
    vouch = str(Path(sys.executable).with_name("vouch"))

    def direct(question, sqls):
        return vouchsql.check(db, question, sqls, cache_dir=cache)

    async def measure(call, floor_call) -> tuple[list, list]:
        floor = []
        for i in range(args.warmup + args.repeat):
            t = time.perf_counter()
            await floor_call()
            if i >= args.warmup:
                floor.append(_ms(time.perf_counter() - t))
        rows = []
        for label, question, sqls in cases:
            d_times, m_times, added = [], [], []
            for i in range(args.warmup + args.repeat):
                t = time.perf_counter()
                a = direct(question, sqls)
                d = _ms(time.perf_counter() - t)
                t = time.perf_counter()
                b = await call(question, sqls)
                m = _ms(time.perf_counter() - t)
                assert a.verdict.gate == b["verdict"]["gate"], (label, a.verdict.gate, b["verdict"]["gate"])
                if i >= args.warmup:
                    d_times.append(d)
                    m_times.append(m)
                    added.append(m - d)
            rows.append((label, statistics.median(d_times), statistics.median(m_times),
                         statistics.median(added), min(added), a.verdict.gate))
        return rows, floor

    started = time.perf_counter()
    if args.http:
        import httpx

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = subprocess.Popen([vouch, "serve", "--db", f"bench={db}", "--port", str(port)],
                                  env={**os.environ, "VOUCH_CACHE_DIR": cache},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                for _ in range(600):  # the server opens and profiles the database before it listens
                    try:
                        if (await client.get("/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await anyio.sleep(0.05)
                start_s = time.perf_counter() - started

                async def over_http(question, sqls):
                    res = await client.post("/api/check", json={"db": "bench", "question": question,
                                                                "candidates": sqls})
                    assert res.status_code == 200, res.text
                    return res.json()

                async def health():
                    await client.get("/health")

                rows, floor = await measure(over_http, health)
        finally:
            server.terminate()
            server.wait(30)
        surface, floor_name = "vouch serve (HTTP)", "GET /health"
    else:
        params = StdioServerParameters(command=vouch, args=["mcp", "--db", f"bench={db}"],
                                       env={"VOUCH_CACHE_DIR": cache})
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                start_s = time.perf_counter() - started
                await session.list_tools()  # the client caches the output schemas here

                async def over_mcp(question, sqls):
                    res = await session.call_tool("check_sql", {"database": "bench", "question": question,
                                                                "candidates": sqls})
                    assert not res.is_error, res.content[0].text
                    return res.structured_content

                async def list_databases():
                    await session.call_tool("list_databases", {})

                rows, floor = await measure(over_mcp, list_databases)
        surface, floor_name = "MCP stdio", "list_databases"

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    from importlib.metadata import version

    print(f"machine: {platform.machine()}, {os.cpu_count()} vCPU, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}; Python {platform.python_version()}; mcp {version('mcp')}; vouchsql {vouchsql.__version__}")
    print(f"server start (spawn, open and warm {name}, initialize): {start_s:.2f} s")
    print(f"repeats: {args.repeat} (after {args.warmup} warm-up rounds); milliseconds, medians\n")
    print(f"{'case':<20} {'direct':>8} {'server':>8} {'added':>8} {'min add':>8}  gate")
    for label, d, m, add, mn, gate in rows:
        print(f"{label:<20} {d:8.1f} {m:8.1f} {add:8.1f} {mn:8.1f}  {gate}")
    print(f"{floor_name:<20} {'':>8} {statistics.median(floor):8.1f} {'':>8} {min(floor):8.1f}  (transport floor)")
    worst = max(r[3] for r in rows)
    print(f"\nadded by {surface} on {name}, worst case median: {worst:.1f} ms (target <= {target} ms): "
          f"{'met' if worst <= target else 'NOT met'}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--http", action="store_true", help="measure vouch serve (POST /api/check) instead of vouch mcp")
    p.add_argument("--sakila", type=Path, help="Sakila's SQLite file: measure on it instead of the demo database")
    args = p.parse_args(argv)
    if args.sakila and not args.sakila.is_file():
        p.error(f"--sakila: no file at {args.sakila}")
    anyio.run(run, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
