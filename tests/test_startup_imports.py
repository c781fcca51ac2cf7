"""What each command imports at start (issue 11, part 7: bench/startup.py measures the time).
``vouch --help`` builds no command's arguments and so imports no heavy module; ``--json``
output never imports rich. A regression here costs every start tens of milliseconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CODE = """
import contextlib, io, json, sys
from vouchsql.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules), "out": out.getvalue()}))
"""


def _start(*argv: str, cache_dir: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOUCH_")}
    if cache_dir:
        env["VOUCH_CACHE_DIR"] = cache_dir
    done = subprocess.run([sys.executable, "-c", CODE, *argv], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _loaded(modules: list[str], *names: str) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


@pytest.mark.parametrize("argv", [["--help"], [], ["--version"]])
def test_help_imports_nothing_heavy(argv):
    got = _start(*argv)
    assert got["rc"] in (0, 2)
    assert _loaded(got["modules"], "rich", "sqlglot", "pydantic", "vouchsql.settings", "vouchsql.evals",
                   "vouchsql.answer", "vouchsql.db", "tomllib", "platformdirs") == []


def test_help_still_lists_every_command():
    out = _start("--help")["out"]
    for command in ("demo", "profile", "sql", "check", "eval", "serve", "ask", "prompts", "config"):
        assert f"    {command} " in out


def test_a_command_gets_its_arguments_and_the_settings_when_used():
    out = _start("check", "--help")["out"]
    assert "--answer-text" in out and "--max-rows" in out and "settings (also VOUCH_*" in out
    out = _start("eval", "--help")["out"]
    assert "HARNESS" in out and "planted" in out


def test_check_json_does_not_import_rich(demo_db, tmp_path):
    got = _start("check", "--db", str(demo_db), "-q", "How many stores are there?",
                 "--sql", "SELECT COUNT(*) FROM stores", "--json", cache_dir=str(tmp_path))
    assert got["rc"] == 0 and json.loads(got["out"])["verdict"]["gate"] in ("pass", "flag", "abstain")
    assert _loaded(got["modules"], "rich", "vouchsql.render", "vouchsql.evals") == []
