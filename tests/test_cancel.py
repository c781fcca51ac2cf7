"""``Database.cancel()`` from another thread stops the statement running now (``vouch mcp``
cancels the query of a call that ran past the call's limit, so the engine is not held).

The query here would run far past its own 60 s limit; the test asserts that it ends with the
cancel's message, which only an interrupt of the running statement gives: had the interrupt
not reached the engine, the query would end at its own limit with that limit's message.
(Until this test, DuckDB's interrupt was shadowed by an attribute and did nothing.)
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from vouchsql.db import connect
from vouchsql.db.base import CANCELLED

LONG = {
    "sqlite": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
    "duckdb": "SELECT count(*) FROM range(100000000000) AS r(i) WHERE i % 7 = 3",
}
LONG["postgresql"] = LONG["sqlite"]  # an endless recursion
# MariaDB stops a recursion at 1,000 rounds: 10^12 rows from its sequence engine instead
LONG["mariadb"] = "SELECT count(*) FROM seq_1_to_1000000 AS a, seq_1_to_1000000 AS b"


def _database(engine: str, request, tmp_path):
    if engine in ("postgresql", "mariadb"):
        url = request.getfixturevalue("pg" if engine == "postgresql" else "mariadb")[0]
        return connect(url)
    if engine == "sqlite":
        path = tmp_path / "one.sqlite"
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE t (a INTEGER)")
        return connect(path)
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "one.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE t (a INTEGER)")
    conn.close()
    return connect(path)


def cancelled_while_running(db, sql: str, wait: float):
    """``sql`` run in a thread with a 60 s limit and cancelled from here after ``wait`` seconds
    (it is running by then, and cannot end on its own before 60 s): its result, which must say
    it was cancelled."""
    results = []
    worker = threading.Thread(target=lambda: results.append(db.execute(sql, timeout=60)))
    worker.start()
    time.sleep(wait)
    db.cancel()
    worker.join(120)
    assert not worker.is_alive()
    (result,) = results
    assert result.error is not None
    assert (result.error.kind, result.error.message) == ("timeout", CANCELLED)
    return result


@pytest.mark.parametrize("engine", [pytest.param(e, marks=pytest.mark.engines) if e in ("postgresql", "mariadb")
                                    else e for e in sorted(LONG)])
def test_cancel_stops_the_running_statement(engine, request, tmp_path):
    db = _database(engine, request, tmp_path)
    try:
        result = cancelled_while_running(db, LONG[engine], 2.0)
        # it was stopped while running, not refused before it started
        assert result.elapsed_ms >= 500
        # and every later statement on the connection is refused with the same message
        later = db.execute("SELECT 1")
        assert later.error is not None and later.error.message == CANCELLED
    finally:
        db.close()
