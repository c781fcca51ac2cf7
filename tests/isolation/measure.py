"""Run resource cases in a process of their own and measure each one: wall time and peak
resident memory (RSS).

Used by the tests and by ``bench/isolation.py`` as a child process:
``python tests/isolation/measure.py < job.json``, where the job is
``{"target": …, "settings": {"timeout": …, "max_result_bytes": …, "cache_dir": …},
"cases": [{"id": …, "sql": …}, …]}``. One JSON line per case is printed:
``{"id", "wall_s", "peak_rss_bytes", "baseline_rss_bytes", "error_kind", "error",
"truncated_reason", "row_count", "raised"}``.

Peak RSS is the kernel's high-water mark (``VmHWM``), reset before each case by writing 5 to
``/proc/self/clear_refs`` (Linux); memory the allocator kept from an earlier case is given
back first (``malloc_trim``), so each case is measured from the process's resting size. The
database is opened before the first case, so imports and the connection count in the
resting size, as they do in any process that runs a query. Without ``/proc`` (not Linux),
``ru_maxrss`` is reported, a peak over the whole process.

DuckDB runs in a worker process per connection (``vouchsql/db/duckdb_worker.py``): its
high-water mark is reset and read the same way through ``/proc/<pid>``, and added to this
process's, as is its resting size (an upper bound: the two peaks need not coincide). A
worker replaced during the case (after running out of memory) reported its peak above its
start when it closed.
"""

from __future__ import annotations

import ctypes
import gc
import json
import re
import resource
import sys
import time
import traceback
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR = Path("/proc/self/clear_refs")


def _kb(field: str, status: Path = _STATUS) -> int | None:
    try:
        match = re.search(rf"^{field}:\s+(\d+) kB", status.read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _trim() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak(clear: Path = _CLEAR) -> bool:
    try:
        clear.write_text("5")
        return True
    except OSError:
        return False


def _worker(db) -> Path | None:
    """/proc of the DuckDB worker process serving ``db``, if it has one."""
    pid = getattr(getattr(db, "_conn", None), "pid", None)
    return Path(f"/proc/{pid}") if pid else None


def peak_bytes(resettable: bool) -> int:
    if resettable:
        kb = _kb("VmHWM")
        if kb is not None:
            return kb * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> int:
    job = json.loads(sys.stdin.read())
    import vouchsql

    from vouchsql.db.duckdb_worker import closed_peaks

    db = vouchsql.connect(job["target"], **job.get("settings", {}))
    try:
        db.execute("SELECT 1")  # the connection (and, on a server, the policy) is ready
        for case in job["cases"]:
            _trim()
            resettable = _reset_peak()
            baseline = (_kb("VmRSS") or 0) * 1024
            worker = _worker(db)
            worker_base = 0
            if worker is not None:
                resettable = _reset_peak(worker / "clear_refs") and resettable
                worker_base = (_kb("VmRSS", worker / "status") or 0) * 1024
            closed_peaks.clear()
            out = {"id": case["id"], "raised": None}
            started = time.monotonic()
            try:
                result = db.execute(case["sql"])
                out["wall_s"] = round(time.monotonic() - started, 3)
                out["error_kind"] = result.error.kind if result.error else None
                out["error"] = result.error.message[:300] if result.error else None
                out["truncated_reason"] = result.truncated_reason
                out["row_count"] = result.row_count
                del result
            except BaseException as exc:  # noqa: BLE001 - execute() must never raise; report it
                out["wall_s"] = round(time.monotonic() - started, 3)
                out["raised"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:500]
            out["peak_rss_bytes"] = peak_bytes(resettable)
            out["baseline_rss_bytes"] = baseline
            if worker is not None:
                now = _worker(db)
                here = (_kb("VmHWM", now / "status") or 0) * 1024 if now is not None else 0
                peak = max([here, *(worker_base + p for p in closed_peaks)])
                out["worker_peak_rss_bytes"] = peak
                out["peak_rss_bytes"] += peak
                out["baseline_rss_bytes"] += worker_base
            out["peak_is_per_case"] = resettable
            print(json.dumps(out), flush=True)
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
