"""The tests' one local Spark session (a JVM per test process, started on first use), with
a Spark Connect server inside it, for tests/test_spark.py, the golden cases
(tests/test_golden_engines.py) and the isolation corpus (tests/isolation).

Spark starts once per process: ``session()`` returns the running session or raises
``Unavailable`` with the reason (pyspark or Java absent, the JVM would not start). The
session is tuned for tiny tables — one shuffle partition, no adaptive re-planning, no
whole-stage code generation (compiling it costs more than running these queries) — and
writes its warehouse into a temporary folder that is removed at exit. Its Spark Connect
server (``spark.plugins``) listens on a free loopback port: ``connect_url()``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import threading

_LOCK = threading.Lock()
_STATE: dict = {}


class Unavailable(Exception):
    """Spark cannot run here; the message says why."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _java_ok() -> str | None:
    java = shutil.which("java") or (os.path.join(os.environ["JAVA_HOME"], "bin", "java")
                                    if os.environ.get("JAVA_HOME") else None)
    if not java or not os.path.exists(java):
        return "no Java runtime (java) on PATH or in JAVA_HOME; Spark needs Java 17 or later"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"java -version failed: {exc}"
    if out.returncode != 0:
        return f"java -version failed: {out.stderr.strip()[:200]}"
    return None


def session():
    with _LOCK:
        if "error" in _STATE:
            raise Unavailable(_STATE["error"])
        if "spark" in _STATE:
            return _STATE["spark"]
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            _STATE["error"] = "pyspark is not installed (pip install 'vouchsql[spark]')"
            raise Unavailable(_STATE["error"]) from None
        problem = _java_ok()
        if problem:
            _STATE["error"] = problem
            raise Unavailable(problem)
        warehouse = tempfile.mkdtemp(prefix="vouch-spark-warehouse-")
        atexit.register(shutil.rmtree, warehouse, True)
        port = _free_port()
        builder = (SparkSession.builder.master("local[2]").appName("vouch-tests")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.warehouse.dir", warehouse)
                   .config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.sql.shuffle.partitions", "1")
                   .config("spark.default.parallelism", "2")
                   .config("spark.sql.adaptive.enabled", "false")
                   .config("spark.sql.codegen.wholeStage", "false")
                   .config("spark.driver.memory", "1g")
                   .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
                   .config("spark.connect.grpc.binding.address", "127.0.0.1")
                   .config("spark.connect.grpc.binding.port", str(port)))
        try:
            spark = builder.getOrCreate()
        except Exception as exc:  # noqa: BLE001 - whatever keeps the JVM from starting
            _STATE["error"] = f"the local Spark session would not start: {str(exc).splitlines()[0][:300]}"
            raise Unavailable(_STATE["error"]) from None
        # Spark logs every refused statement at ERROR, with its JVM stack: the tests say what failed.
        spark.sparkContext.setLogLevel("OFF")
        _STATE.update(spark=spark, port=port, warehouse=warehouse)
        return spark


def stop() -> None:
    """Stop the session if this process started one, and its JVM with it (the end of the test
    session: nothing of Spark's is left to block the interpreter's exit)."""
    with _LOCK:
        spark = _STATE.pop("spark", None)
        _STATE.pop("copies", None)
    if spark is not None:
        spark.stop()


def connect_url() -> str:
    session()
    return f"sc://127.0.0.1:{_STATE['port']}"


def warehouse() -> str:
    session()
    return _STATE["warehouse"]


def shared_copy(name: str, source) -> str:
    """The database holding ``source`` (an ``engine_copies.Source``) in the session, copied
    on first use and kept for the process (the golden cases and test_spark.py read the same
    copy; the warehouse folder goes at exit)."""
    from engine_copies import copy_to_spark

    spark = session()
    with _LOCK:
        copies = _STATE.setdefault("copies", {})
        if name not in copies:
            database = f"vouch_{name}_{os.getpid()}"
            spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
            copies[name] = (database, copy_to_spark(source, spark, database))
        return copies[name][0]


def notes(name: str) -> list[str]:
    return _STATE.get("copies", {}).get(name, ("", []))[1]
