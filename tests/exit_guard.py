"""A bounded exit for the test process (a pytest plugin; tests/conftest.py loads it).

Once the tests have run, the interpreter still runs the exit handlers and joins the threads
of the libraries the tests drove (Spark's JVM gateway and Connect client, Jupyter's kernel
client, Chromium's driver, SQLAlchemy pools). One of them blocking would keep the process —
and CI — waiting after every test has reported (CI saw it once: all tests passed, then no
exit within 90 minutes). So the session stops Spark itself, and if the process is still
alive EXIT_GRACE_S seconds after pytest is done, it prints every thread's stack (what blocked)
and exits with pytest's own status. faulthandler's own watchdog is the backstop for a block
late in finalisation, where no Python thread runs any more: it dumps the stacks and exits 1.
``VOUCH_TEST_EXIT_GRACE_S`` sets the grace (tests/test_exit_guard.py uses 2 s).
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading

import pytest

EXIT_GRACE_S = float(os.environ.get("VOUCH_TEST_EXIT_GRACE_S", "60"))
_FINISHED: dict = {}


def pytest_sessionfinish(session, exitstatus):
    _FINISHED["session"] = session
    import spark_local

    try:
        spark_local.stop()
    except Exception as exc:  # noqa: BLE001 - a JVM already gone must not turn a finished run into an error
        sys.stderr.write(f"\n[tests] stopping the Spark session failed: {type(exc).__name__}: {exc}\n")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    session = _FINISHED.get("session")
    if session is None or session.config is not config:
        return  # not the outer session (pytester runs its own)

    def blocked() -> None:
        status = int(session.exitstatus)
        sys.stdout.flush()
        sys.stderr.write(f"\n[tests] pytest finished with status {status}, but the process had not exited "
                         f"{EXIT_GRACE_S:g} s later: an exit handler or a thread blocks it. The stacks:\n")
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.write(f"[tests] exiting with pytest's status {status}\n")
        sys.stderr.flush()
        os._exit(status)

    watchdog = threading.Timer(EXIT_GRACE_S, blocked)
    watchdog.daemon = True
    watchdog.start()
    faulthandler.dump_traceback_later(EXIT_GRACE_S + 60, exit=True)
