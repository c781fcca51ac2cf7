"""tests/exit_guard.py: a test process whose exit blocks (an exit handler that never returns,
as a library's can) ends anyway, with pytest's own status and the stacks of what blocked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

BLOCKING = '''
import atexit
import threading


def wait_forever():
    threading.Event().wait()


atexit.register(wait_forever)


def test_inner():
    assert {outcome}
'''


def _run(tmp_path: Path, outcome: str, block: bool) -> subprocess.CompletedProcess:
    source = BLOCKING if block else "def test_inner():\n    assert {outcome}\n"
    (tmp_path / "test_inner.py").write_text(source.format(outcome=outcome), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "VOUCH_TEST_EXIT_GRACE_S": "2"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "exit_guard",
                           "test_inner.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("outcome", "status"), [("True", 0), ("False", 1)])
def test_a_blocked_exit_ends_with_pytests_status_and_the_stacks(tmp_path, outcome, status):
    done = _run(tmp_path, outcome, block=True)
    assert done.returncode == status, done.stderr[-2000:]
    assert f"pytest finished with status {status}, but the process had not exited 2 s later" in done.stderr
    assert "wait_forever" in done.stderr  # the stack names what blocked


def test_an_exit_that_does_not_block_says_nothing(tmp_path):
    done = _run(tmp_path, "True", block=False)
    assert done.returncode == 0
    assert "had not exited" not in done.stderr
