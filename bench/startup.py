"""How fast the ``vouch`` command starts (issue 11, part 7).

Runs ``vouch --help`` and ``vouch check`` on Chinook (cached profile) ``--repeat`` times each
in fresh processes and prints the median and best wall times and the median CPU time (user +
system, less sensitive than wall time to other people's load), then the ten costliest imports
of each command (``python -X importtime``, cumulative milliseconds), then the floor: the same
measurements for a bare interpreter and for what no check can do without (sqlglot with its
SQLite dialect, pydantic with one model). Targets on the development machine: ``--help`` ≤ 100 ms,
``check`` ≤ 250 ms median. The machine may be shared: the load average is printed; compare
ratios within one run.

Each command runs what the ``vouch`` executable runs (``vouchsql.cli:run``: a one-request
command such as ``check`` turns the garbage collector and pydantic's plugin scan off before its
imports, and the process skips the last collection). ``vouch check via main()`` is the library call the first version of
this benchmark timed (the collector on throughout), kept so that its numbers compare; the floor
is given both ways too.

Bytecode: an installed package has its ``.pyc`` files; a checkout run with
``PYTHONDONTWRITEBYTECODE=1`` compiles every module on every start (≈ 0.25 s more for
``check``). The children therefore write and read bytecode under a temporary
``PYTHONPYCACHEPREFIX`` (warmed by one run), never in the working tree; ``--no-bytecode``
measures the compile-every-time case instead.

``--instructions`` also counts the instructions each command executes (one run each under
valgrind's callgrind, about a minute): a count does not depend on the machine's load, so
two versions compare exactly on a busy machine.

    python bench/startup.py [--repeat 11] [--datasets ../shared/datasets] [--no-bytecode] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
CODE = "from vouchsql.cli import run; run()"  # what the `vouch` executable runs
MAIN = "import sys; from vouchsql.cli import main; sys.exit(main(sys.argv[1:]))"
_SQLGLOT = "import sqlglot; sqlglot.parse_one('SELECT 1', read='sqlite')"
_PYDANTIC = ("from pydantic import BaseModel\nclass M(BaseModel):\n    x: int\n"
             "M(x=1).model_dump(mode='json')")
FLOOR = {
    "python -c pass": "pass",
    "sqlglot (import, SQLite dialect, one parse)": _SQLGLOT,
    "pydantic (import, one model built and dumped)": _PYDANTIC,
    "both": _SQLGLOT + "\n" + _PYDANTIC,
    "both, collector off": "import gc; gc.disable()\n" + _SQLGLOT + "\n" + _PYDANTIC,
    # as the `vouch` executable runs a one-request command (vouchsql.cli.main)
    "both, collector and pydantic's plugin scan off (as vouch check runs)":
        "import gc, os; gc.disable(); os.environ.setdefault('PYDANTIC_DISABLE_PLUGINS', '__all__')\n"
        + _SQLGLOT + "\n" + _PYDANTIC,
}


def timed(code: str, argv: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *argv], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu


def imports(argv: list[str], env: dict, top: int = 10) -> list[tuple[int, str]]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", CODE, *argv], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m and len(m.group(3)) <= 3:  # top-level imports and their direct children
            rows.append((int(m.group(2)), m.group(4)))
    return sorted(rows, reverse=True)[:top]


def instructions(code: str, argv: list[str], env: dict) -> int | None:
    """Instructions one fresh process executes (valgrind callgrind), or None without valgrind."""
    try:
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                               sys.executable, "-c", code, *argv], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        return None
    m = re.search(r"Collected : (\d+)", done.stderr)
    return int(m.group(1)) if m else None


def line(name: str, code: str, argv: list[str], env: dict, repeat: int) -> str:
    runs = [timed(code, argv, env) for _ in range(repeat)]
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    return (f"{name}: median {statistics.median(walls):.0f} ms, best {min(walls):.0f} ms "
            f"(CPU median {statistics.median(cpus):.0f} ms)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--datasets", type=Path, default=SHARED)
    ap.add_argument("--no-bytecode", action="store_true", help="compile every module on every start")
    ap.add_argument("--instructions", action="store_true", help="also count instructions (valgrind)")
    args = ap.parse_args()
    chinook = args.datasets / "chinook.sqlite"
    if not chinook.is_file():
        raise SystemExit(f"no chinook.sqlite in {args.datasets}")
    with tempfile.TemporaryDirectory(prefix="vouch-bench-startup-") as tmp:
        env = {**os.environ, "VOUCH_CACHE_DIR": str(Path(tmp) / "cache")}
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        commands = {
            "vouch --help": ["--help"],
            "vouch check (Chinook)": ["check", "--db", str(chinook), "-q", "How many tracks are there?",
                                      "--sql", "SELECT COUNT(*) FROM Track", "--json"],
        }
        timed(CODE, commands["vouch check (Chinook)"], env)  # profiles Chinook once, into the cache
        for code in FLOOR.values():  # and writes the bytecode of everything measured
            timed(code, [], env)
        print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs; "
              f"Python {sys.version.split()[0]}; {args.repeat} runs each; "
              f"bytecode {'off (compiled every start)' if args.no_bytecode else 'cached'}")
        for name, argv in commands.items():
            print("\n" + line(name, CODE, argv, env, args.repeat))
            for us, module in imports(argv, env):
                print(f"  {us / 1000:7.1f} ms  {module}")
        print("\n" + line("vouch check via main() (collector on)", MAIN, commands["vouch check (Chinook)"], env,
                          args.repeat))
        print("\nfloor (the same machine, the same moment):")
        for name, code in FLOOR.items():
            print("  " + line(name, code, [], env, args.repeat))
        if args.instructions:
            print("\ninstructions (valgrind callgrind, one run each; independent of load):")
            runs = [(name, CODE, argv) for name, argv in commands.items()]
            runs += [("vouch check via main()", MAIN, commands["vouch check (Chinook)"])]
            runs += [(name, code, []) for name, code in FLOOR.items()]
            counts = {name: instructions(code, argv, env) for name, code, argv in runs}
            unit = counts["python -c pass"]
            for name, n in counts.items():
                print(f"  {name}: " + ("valgrind not found" if n is None else
                                       f"{n / 1e6:,.0f} M" + (f" ({n / unit:.1f}x python -c pass)" if unit else "")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
