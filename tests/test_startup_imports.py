"""What each command imports at start (issue 11, part 7: bench/startup.py measures the time).
``vouch --help`` builds no command's arguments and so imports no heavy module; ``--json``
output never imports rich; ``vouch check`` imports what only some checks need (rapidfuzz,
tomllib, platformdirs) when they need it, and compiles only the patterns its question can
match. A regression here costs every start milliseconds to tens of milliseconds."""

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
compiled = {}  # patterns compiled on first use, by the modules that keep them
if "vouchsql.db.policy" in sys.modules:
    compiled["policy"] = sys.modules["vouchsql.db.policy"]._pg_categories.cache_info().currsize
if "vouchsql.question.filters" in sys.modules:
    compiled["filters"] = sys.modules["vouchsql.question.filters"]._rx.cache_info().currsize
print(json.dumps({"rc": rc, "modules": sorted(sys.modules), "out": out.getvalue(), "compiled": compiled}))
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


# What `vouch check --json` never needs on a question without a value to look up: the model
# SDKs and HTTP clients (ask), rich, the evaluation harnesses, the server and MCP layers, the
# other engines and their drivers, and what one check needs only sometimes: rapidfuzz (a fuzzy
# value lookup, 25 ms), tomllib (a vouch.toml or definitions file, 9 ms), platformdirs (no
# cache_dir set, 5 ms). Each is milliseconds of every start (bench/startup.py).
NOT_FOR_CHECK = ("rich", "httpx", "openai", "anthropic", "yaml", "fastapi", "starlette", "uvicorn", "mcp",
                 "duckdb", "sqlalchemy", "pyspark", "psycopg", "pymysql", "rapidfuzz", "tomllib", "platformdirs",
                 "shlex", "vouchsql.llm", "vouchsql.pipeline.asking", "vouchsql.render", "vouchsql.evals",
                 "vouchsql.demo", "vouchsql.server.app", "vouchsql.mcp_server.server", "vouchsql.mcp_server.tools",
                 "vouchsql.db.duckdb", "vouchsql.db.sqlalchemy", "vouchsql.db.spark")


def test_check_imports_only_what_it_uses(demo_db, tmp_path):
    got = _start("check", "--db", str(demo_db), "-q", "How many stores are there?",
                 "--sql", "SELECT COUNT(*) FROM stores", "--json", cache_dir=str(tmp_path))
    assert got["rc"] == 0 and json.loads(got["out"])["checks"]
    assert _loaded(got["modules"], *NOT_FOR_CHECK) == []
    # No PostgreSQL name patterns on SQLite; no number patterns for a question without a number.
    assert got["compiled"] == {"policy": 0, "filters": 0}


def test_check_imports_tomllib_when_there_is_a_config_file(demo_db, tmp_path):
    (tmp_path / "vouch.toml").write_text("[vouch]\nmax_rows = 500\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOUCH_")}
    env["VOUCH_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-c", CODE, "check", "--db", str(demo_db), "-q", "How many stores are there?",
                           "--sql", "SELECT COUNT(*) FROM stores", "--json"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "tomllib" in json.loads(done.stdout.strip().splitlines()[-1])["modules"]


def test_a_question_compiles_only_the_patterns_it_can_match():
    from vouchsql.choices import lexicon
    from vouchsql.question import filters

    lexicon._COMPILED.clear()
    filters._rx.cache_clear()
    ties = lexicon.Lexicon(phrases=("all", "with ties", "exceed*"))
    assert ties.match("How many tracks are there?") is None and filters.read_filters("How many tracks are there?").rows is None
    assert lexicon._COMPILED == {} and filters._rx.cache_info().currsize == 0
    # The same reading as before where the words are there, in any case, spacing or hyphenation.
    assert ties.match("Show ALL albums that EXCEEDED it, with  ties") == "all"
    assert ties.match("tracks that exceeded, with-ties") == "exceeded"
    assert "all" in lexicon._COMPILED and filters.read_filters("the top 5 albums").rows.n == 5
    # A text beyond ASCII matches case-insensitively in ways lower() does not: every phrase is tried.
    assert lexicon.Lexicon(phrases=("distinct",)).match("DIſTINCT names") == "diſtinct"
    assert lexicon.mentions("Ünïcödé ALL", "all") and not lexicon.mentions("tall", "all")


PLUGINS = """
import contextlib, io, json, os, sys
from vouchsql.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(sys.argv[2:], process=sys.argv[1] == "process")
from pydantic.plugin import _loader
print(json.dumps({"rc": rc, "scanned": _loader._plugins is not None, "env": os.environ.get("PYDANTIC_DISABLE_PLUGINS")}))
"""


@pytest.mark.parametrize("mode, user, scanned, env", [
    ("process", None, False, "__all__"),  # the `vouch` executable: no entry-point scan
    ("process", "logfire", True, "logfire"),  # the user's own setting stands
    ("library", None, True, None),  # main() called by a program that goes on: its plugins stay on
])
def test_a_one_request_command_skips_the_pydantic_plugin_scan(demo_db, tmp_path, mode, user, scanned, env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("VOUCH_") and k != "PYDANTIC_DISABLE_PLUGINS"}
    environ["VOUCH_CACHE_DIR"] = str(tmp_path)
    if user:
        environ["PYDANTIC_DISABLE_PLUGINS"] = user
    done = subprocess.run([sys.executable, "-c", PLUGINS, mode, "check", "--db", str(demo_db), "-q",
                           "How many stores are there?", "--sql", "SELECT COUNT(*) FROM stores", "--json"],
                          capture_output=True, text=True, env=environ, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert (got["rc"], got["scanned"], got["env"]) == (0, scanned, env)
