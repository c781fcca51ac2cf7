"""How fast the ``vouch`` command starts (issue 11, part 7).

Runs ``vouch --help`` and ``vouch check`` on Chinook (cached profile) ``--repeat`` times each
in fresh processes and prints the median and best wall times, then the ten costliest imports
of each command (``python -X importtime``, cumulative microseconds). Targets on the
development machine: ``--help`` ≤ 100 ms, ``check`` ≤ 250 ms median. The machine may be
shared: the load average is printed; compare ratios within one run.

    python bench/startup.py [--repeat 11] [--datasets ../shared/datasets]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
CODE = "import sys; from vouchsql.cli import main; sys.exit(main(sys.argv[1:]))"


def timed(argv: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", CODE, *argv], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def imports(argv: list[str], env: dict, top: int = 10) -> list[tuple[int, str]]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", CODE, *argv], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m and len(m.group(3)) <= 3:  # top-level imports and their direct children
            rows.append((int(m.group(2)), m.group(4)))
    return sorted(rows, reverse=True)[:top]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--datasets", type=Path, default=SHARED)
    args = ap.parse_args()
    chinook = args.datasets / "chinook.sqlite"
    if not chinook.is_file():
        raise SystemExit(f"no chinook.sqlite in {args.datasets}")
    with tempfile.TemporaryDirectory(prefix="vouch-bench-startup-") as cache:
        env = {**os.environ, "VOUCH_CACHE_DIR": cache}
        commands = {
            "vouch --help": ["--help"],
            "vouch check (Chinook)": ["check", "--db", str(chinook), "-q", "How many tracks are there?",
                                      "--sql", "SELECT COUNT(*) FROM Track", "--json"],
        }
        timed(commands["vouch check (Chinook)"], env)  # profiles Chinook once, into the cache
        print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.repeat} runs each")
        for name, argv in commands.items():
            times = [timed(argv, env) for _ in range(args.repeat)]
            print(f"\n{name}: median {statistics.median(times):.0f} ms, best {min(times):.0f} ms")
            for us, module in imports(argv, env):
                print(f"  {us / 1000:7.1f} ms  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
