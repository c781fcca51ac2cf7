"""DuckDB's worker process (src/vouchsql/db/duckdb_worker.py): what a reviewer broke in it,
each case on a real DuckDB file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import vouchsql

duckdb = pytest.importorskip("duckdb")

LONG = "SELECT count(*) FROM range(100000000) a, range(100000) b WHERE a.range + b.range = -1"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "t.duckdb"
    con = duckdb.connect(str(p))
    con.execute("CREATE TABLE t AS SELECT range AS id, 'name ' || range AS name FROM range(40000)")
    con.close()
    return p


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in state  # a zombie has ended; only its parent has not read it


def test_an_exception_between_question_and_answer_lets_the_worker_go(path, tmp_path):
    """A signal handler that raises while a query runs (as Ctrl-C does): the answer of that
    query must not reach the next call."""
    class Stop(Exception):
        pass

    def stop(*_):
        raise Stop

    with vouchsql.connect(path, cache_dir=str(tmp_path / "c"), timeout=20) as db:
        old = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        try:
            with pytest.raises(Stop):
                db.execute(LONG)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        started = time.monotonic()
        r = db.execute("SELECT 42 AS answer")
        assert (r.error, r.columns, r.rows) == (None, ["answer"], [[42]])
        assert time.monotonic() - started < 5
        assert db.execute("SELECT count(*) FROM t").rows == [[40000]]


def test_two_threads_on_one_connection_never_get_each_others_rows(path, tmp_path):
    with vouchsql.connect(path, cache_dir=str(tmp_path / "c"), timeout=20) as db:
        wrong: list[tuple[int, object]] = []
        answered = [0]

        def run(base: int) -> None:
            for i in range(60):
                n = base + i
                r = db.execute(f"SELECT {n} AS v FROM range(3)")
                if r.error is None:
                    answered[0] += 1
                    if r.columns != ["v"] or r.rows != [[n]] * 3:
                        wrong.append((n, r.rows))

        threads = [threading.Thread(target=run, args=(k * 1000,)) for k in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert wrong == []
        assert answered[0] > 0


def test_a_dead_worker_is_replaced_for_the_catalogue_too(path, tmp_path):
    with vouchsql.connect(path, cache_dir=str(tmp_path / "c"), timeout=20) as db:
        os.kill(db._conn.pid, signal.SIGKILL)
        time.sleep(0.2)
        assert [t.name for t in db.schema()] == ["t"]
        assert db.execute("SELECT count(*) FROM t").rows == [[40000]]


def test_out_of_memory_in_a_fresh_worker_is_not_run_twice(path, tmp_path):
    """A fresh worker that runs out of memory would fail the same way again: one try, within
    the time limit."""
    columns = ", ".join(f"repeat(name || '{i}', 350) AS c{i}" for i in range(20))
    with vouchsql.connect(path, cache_dir=str(tmp_path / "c"), timeout=3, max_result_bytes=32 * 2**20) as db:
        started = time.monotonic()
        r = db.execute(f"SELECT {columns} FROM t")
        assert r.error is not None and "Out of Memory" in r.error.message
        assert time.monotonic() - started < 3 + 1
        # After it, a worker that had run other queries: the same query gets one more try in a
        # fresh worker and fails the same way, so the answer does not depend on the history.
        assert db.execute("SELECT count(*) FROM t").rows == [[40000]]
        again = db.execute(f"SELECT {columns} FROM t")
        assert again.error is not None and again.error.message == r.error.message


def test_an_interrupt_meant_for_an_earlier_query_stops_nothing(path, tmp_path):
    with vouchsql.connect(path, cache_dir=str(tmp_path / "c"), timeout=20) as db:
        db.execute("SELECT 1")
        earlier = db._conn.query
        db._conn.interrupt(earlier)  # late: that query has finished
        time.sleep(0.2)
        r = db.execute("SELECT count(*) FROM t a, t b WHERE a.id = b.id")
        assert (r.error, r.rows) == (None, [[40000]])
        # The interrupt that names the running query stops it.
        timer = threading.Timer(0.3, lambda: db._conn.interrupt())
        timer.start()
        r = db.execute(LONG)
        assert r.error is not None and r.error.kind == "timeout", r.error


def test_workers_end_when_vouchs_process_is_killed(path, tmp_path):
    """A worker whose owner was killed mid-query stops the query and ends, rather than run on."""
    script = tmp_path / "owner.py"
    script.write_text(
        "import sys, threading, time, vouchsql\n"
        f"db = vouchsql.connect({str(path)!r}, cache_dir={str(tmp_path / 'c')!r}, timeout=600)\n"
        "print(db._conn.pid, flush=True)\n"
        f"threading.Thread(target=db.execute, args=({LONG!r},), daemon=True).start()\n"
        "time.sleep(600)\n")
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(owner.stdout.readline())
        time.sleep(0.5)
        assert not _gone(pid)
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pid)


def test_a_zygote_that_ended_is_started_again_and_closing_prints_nothing(path, tmp_path):
    """Kill the zygote between two opens; open and close many times in a fresh process:
    every open works and nothing (no thread's traceback) reaches stderr."""
    script = tmp_path / "cycles.py"
    script.write_text(
        "import os, signal, vouchsql\n"
        "from vouchsql.db import duckdb_worker\n"
        f"path, cache = {str(path)!r}, {str(tmp_path / 'c')!r}\n"
        "for i in range(30):\n"
        "    with vouchsql.connect(path, cache_dir=cache) as db:\n"
        "        assert db.execute('SELECT count(*) FROM t').rows == [[40000]]\n"
        "    if i == 10:\n"
        "        zygote = duckdb_worker._ZYGOTE['process']\n"
        "        os.kill(zygote.pid, signal.SIGKILL)\n"
        "        zygote.wait()\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout.strip(), out.stderr) == (0, "ok", "")
