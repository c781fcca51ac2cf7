#!/usr/bin/env python
"""Benchmark: the isolation corpora (issue 10, parts 6 and 7) on every engine available here.

Not a test (tests/isolation/ asserts the same things); this prints the counts the issue asks
for. Per engine — SQLite, a DuckDB file, a folder of CSV files, PostgreSQL and MariaDB (the
servers on 127.0.0.1 as their superusers, each in a database of its own that is dropped
afterwards; an engine that cannot be reached is skipped with the reason) — it builds the
world (tests/isolation/worlds.py, servers.py: the Chinook tables, trap views and functions,
secret files, a snapshot of everything a statement could change) and

1. sends every hostile statement (tests/isolation/corpus/hostile_<engine>.toml) through the
   library (``--channels`` adds ``cli``, ``vouch sql``, and ``api``, ``POST /api/check``,
   for the ``nasty`` subset), counting those refused, those that wrote an ``{{OUT}}`` file,
   returned a secret, or changed the world's snapshot (compared once per batch; on a change
   each statement is replayed alone to name it);
2. runs every legitimate read (legit_<engine>.toml): a refusal is a false block;
3. runs the resource cases in a child process (tests/isolation/measure.py), one after the
   other, each with its wall time and peak RSS (the kernel's high-water mark, reset before
   each case), against the time limit + 1 s and 2 × max_result_bytes + 300 MB.

    python bench/isolation.py [--engines sqlite,duckdb,csv,postgresql,mariadb]
                              [--channels library,cli,api] [--max-result-bytes N]
                              [--no-resources] [--details] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from isolation import corpus, runner, worlds  # noqa: E402

MiB = 1024 * 1024


def machine() -> str:
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    import vouchsql

    return (f"{os.cpu_count()} CPUs, {platform.machine()}, {platform.platform()}; Python "
            f"{platform.python_version()}, SQLite {sqlite3.sqlite_version}, vouchsql "
            f"{getattr(vouchsql, '__version__', '?')}; load average {load}")


def api_client(world, home: Path):
    from fastapi.testclient import TestClient

    from vouchsql.server.app import ServerOptions, create_app
    from vouchsql.settings import load_config

    config = load_config(env={}, cwd=home, cache_dir=str(world.cache_dir), timeout=world.timeout)
    return TestClient(create_app(ServerOptions(databases={"w": world.target}, examples={}), config))


def run_engine(engine: str, args, home: Path) -> dict:
    started = time.monotonic()
    try:
        world = worlds.build(engine, home / engine, worlds.new_token())
    except worlds.Unavailable as exc:
        return {"engine": engine, "skipped": str(exc)}
    report: dict = {"engine": engine, "build_s": round(time.monotonic() - started, 1)}
    try:
        hostile = corpus.hostile(engine)
        t = time.monotonic()
        outcomes, unexplained = runner.run_batch(world, hostile, "library")
        report["library"] = summary(outcomes, unexplained, time.monotonic() - t)
        library_kinds = {k: o.kind for k, o in outcomes.items()}
        nasty = corpus.nasty(engine)
        if "cli" in args.channels:
            t = time.monotonic()
            cli, unexplained = runner.run_batch(world, nasty, "cli", expect={c.id: library_kinds[c.id] for c in nasty})
            report["cli"] = summary(cli, unexplained, time.monotonic() - t)
        if "api" in args.channels:
            try:
                client = api_client(world, home)
            except ImportError as exc:
                report["api"] = {"skipped": f"{exc.name} is not installed (the [server] extra)"}
            else:
                with client:
                    t = time.monotonic()
                    api, unexplained = runner.run_batch(world, nasty, "api", client=client)
                    report["api"] = summary(api, unexplained, time.monotonic() - t)
        if world.has_chinook:
            legit = corpus.legit(engine)
            t = time.monotonic()
            results = runner.run_legit(world, legit)
            blocked = [o for o in results.values() if o.refused or o.problems]
            report["legit"] = {"count": len(legit), "false_blocks": len(blocked), "seconds": round(time.monotonic() - t, 2),
                               "blocked": [f"{o.case.id}: [{o.kind}] {o.detail[:160]}" for o in blocked],
                               "changes": world.changes()}
        else:
            report["legit"] = {"skipped": f"Chinook is absent at {worlds.CHINOOK}"}
        if not args.no_resources:
            cases = corpus.resources(engine)
            records = runner.measure(world, cases, timeout=world.timeout, max_result_bytes=args.max_result_bytes)
            bound = runner.rss_bound(args.max_result_bytes)
            report["resources"] = [dict(records[c.id], sql=c.sql, within_time=(records[c.id].get("wall_s") or 1e9)
                                        <= world.timeout + 1.0,
                                        within_memory=(records[c.id].get("peak_rss_bytes") or 1e18) <= bound)
                                   for c in cases]
            report["resource_limits"] = {"time_s": world.timeout + 1.0, "rss_bytes": bound}
    finally:
        world.close()
    return report


def summary(outcomes: dict, unexplained: list[str], seconds: float) -> dict:
    values = list(outcomes.values())
    kinds: dict[str, int] = {}
    for o in values:
        kinds[str(o.kind)] = kinds.get(str(o.kind), 0) + 1
    return {"count": len(values), "refused": sum(o.refused for o in values),
            "wrote_file": sum(bool(o.wrote) for o in values), "leaked_secret": sum(bool(o.leaked) for o in values),
            "state_changes": sum(bool(o.changes) for o in values), "unexplained_changes": unexplained,
            "faults": sum(bool(o.problems) for o in values), "seconds": round(seconds, 2), "kinds": kinds,
            "failures": [o.describe() for o in values if not o.ok]}


def print_report(reports: list[dict], args) -> None:
    print(f"machine: {machine()}")
    print(f"settings: time limit {worlds.World.timeout:g} s per statement; resource cases with max_result_bytes "
          f"{args.max_result_bytes:,} (RSS bound {runner.rss_bound(args.max_result_bytes) / MiB:.0f} MiB); "
          f"channels {','.join(args.channels)}")
    print()
    head = (f"{'engine':<11} {'channel':<8} {'hostile':>7} {'refused':>7} {'changed':>7} {'wrote':>5} "
            f"{'leaked':>6} {'faults':>6} {'secs':>6}   {'legit':>5} {'blocked':>7}")
    print(head)
    print("-" * len(head))
    for r in reports:
        if "skipped" in r:
            print(f"{r['engine']:<11} skipped: {r['skipped']}")
            continue
        legit = r.get("legit", {})
        first = True
        for channel in ("library", "cli", "api"):
            s = r.get(channel)
            if not s:
                continue
            if "skipped" in s:
                print(f"{r['engine']:<11} {channel:<8} skipped: {s['skipped']}")
                continue
            tail = (f"   {legit.get('count', '-'):>5} {legit.get('false_blocks', '-'):>7}" if first and "count" in legit
                    else "")
            changed = s["state_changes"] + (1 if s["unexplained_changes"] else 0)
            print(f"{r['engine'] if first else '':<11} {channel:<8} {s['count']:>7} {s['refused']:>7} {changed:>7} "
                  f"{s['wrote_file']:>5} {s['leaked_secret']:>6} {s['faults']:>6} {s['seconds']:>6}{tail}")
            first = False
    for r in reports:
        for channel in ("library", "cli", "api"):
            for line in (r.get(channel) or {}).get("failures", []):
                print(f"  FAILED {line}")
            if (r.get(channel) or {}).get("unexplained_changes"):
                print(f"  CHANGED {r['engine']} {channel}: {r[channel]['unexplained_changes']}")
        for line in (r.get("legit") or {}).get("blocked", []):
            print(f"  BLOCKED {r['engine']}:{line}")
    if args.details:
        print()
        for r in reports:
            if "library" in r:
                print(f"{r['engine']}: refusals by kind {r['library']['kinds']}")
    if args.no_resources:
        return
    print()
    print(f"{'engine':<11} {'resource case':<28} {'wall s':>7} {'peak MiB':>9} {'base MiB':>9}  outcome")
    for r in reports:
        for rec in r.get("resources", []):
            flag = "" if rec["within_time"] and rec["within_memory"] else "  OVER " + " and ".join(
                w for w, ok in (("time", rec["within_time"]), ("memory", rec["within_memory"])) if not ok)
            outcome = rec.get("raised") or (rec.get("error_kind") or f"{rec.get('row_count')} rows") + (
                f", cut: {rec['truncated_reason']}" if rec.get("truncated_reason") else "")
            print(f"{r['engine']:<11} {rec['id']:<28} {rec.get('wall_s', float('nan')):>7.2f} "
                  f"{(rec.get('peak_rss_bytes') or 0) / MiB:>9.0f} {(rec.get('baseline_rss_bytes') or 0) / MiB:>9.0f}  "
                  f"{outcome}{flag}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default=",".join(corpus.ENGINES))
    parser.add_argument("--channels", default="library,cli,api",
                        help="library, and for the nasty subset cli and api (default: all three)")
    parser.add_argument("--max-result-bytes", type=int, default=32 * MiB)
    parser.add_argument("--no-resources", action="store_true")
    parser.add_argument("--details", action="store_true", help="also print the refusals by error kind")
    parser.add_argument("--json", metavar="FILE", help="also write every number as JSON")
    args = parser.parse_args(argv)
    args.channels = [c.strip() for c in args.channels.split(",") if c.strip()]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(engines) - set(corpus.ENGINES) | set(args.channels) - {"library", "cli", "api"}
    if unknown:
        parser.error(f"unknown engine or channel: {', '.join(sorted(unknown))}")
    for name in list(os.environ):
        if name.startswith("VOUCH_"):
            del os.environ[name]
    json_path = Path(args.json).resolve() if args.json else None
    back = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="vouch-isolation-") as tmp:
        home = Path(tmp)
        os.chdir(home)  # no vouch.toml of the caller's folder applies
        try:
            reports = []
            for engine in engines:
                print(f"... {engine}", file=sys.stderr, flush=True)
                reports.append(run_engine(engine, args, home))
        finally:
            os.chdir(back)
    print_report(reports, args)
    if json_path:
        json_path.write_text(json.dumps({"machine": machine(), "reports": reports}, indent=1, default=str))
    bad = any(r.get(c, {}).get("failures") or r.get(c, {}).get("unexplained_changes") for r in reports
              for c in ("library", "cli", "api")) or any(r.get("legit", {}).get("false_blocks") for r in reports)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
