"""The ``vouch`` command in-process: the JSON and CSV contracts, and bad input that ends in
exit code 2 with one line on stderr naming the problem, never a traceback."""

from __future__ import annotations

import csv
import io
import json
import sqlite3

import pytest

from vouchsql.cli import main

RESULT_KEYS = {"columns", "rows", "row_count", "truncated", "truncated_reason", "elapsed_ms", "error"}


@pytest.fixture(autouse=True)
def isolated(clean_env, tmp_path, monkeypatch):
    """No user cache, no stray vouch.toml, no VOUCH_* from the caller's shell."""
    monkeypatch.setenv("VOUCH_CACHE_DIR", str(tmp_path / "cache"))


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- vouch sql ---------------------------------------------------------------------------------

def test_sql_json_contract(capsys, demo_db):
    code, out, err = run(capsys, "sql", "--db", demo_db, "--json",
                         "SELECT region, COUNT(*) AS n FROM customers GROUP BY region ORDER BY region")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == RESULT_KEYS
    expected = sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True).execute(
        "SELECT region, COUNT(*) FROM customers GROUP BY region ORDER BY region").fetchall()
    assert data["columns"] == ["region", "n"]
    assert data["rows"] == [list(r) for r in expected]
    assert data["rows"][0][0] is None  # NULL region stays JSON null
    assert data["row_count"] == len(expected)
    assert data["truncated"] is False
    assert isinstance(data["elapsed_ms"], (int, float)) and data["elapsed_ms"] >= 0
    assert data["error"] is None


def test_sql_json_truncated(capsys, demo_db):
    code, out, _ = run(capsys, "sql", "--db", demo_db, "--json", "--max-rows", "5",
                       "SELECT customer_id FROM customers ORDER BY customer_id")
    data = json.loads(out)
    assert code == 0
    assert data["truncated"] is True and data["row_count"] == 5
    assert data["rows"] == [[1], [2], [3], [4], [5]]


def test_sql_json_error_contract(capsys, demo_db):
    code, out, err = run(capsys, "sql", "--db", demo_db, "--json", "DELETE FROM customers")
    assert code == 2
    data = json.loads(out)
    assert set(data) == RESULT_KEYS
    assert data["rows"] == [] and data["row_count"] == 0
    assert set(data["error"]) == {"kind", "message"}
    assert data["error"]["kind"] == "not_select" and "DELETE" in data["error"]["message"]


def test_sql_json_execution_error_exit_1(capsys, demo_db):
    code, out, _ = run(capsys, "sql", "--db", demo_db, "--json", "SELECT no_such_column FROM customers")
    assert code == 1
    data = json.loads(out)
    assert data["error"]["kind"] == "execution" and "no_such_column" in data["error"]["message"]


def test_sql_csv(capsys, demo_db):
    code, out, err = run(capsys, "sql", "--db", demo_db, "--csv",
                         "SELECT 1 AS a, NULL AS b, 'x, \"y\"' AS c, 2.5 AS d")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows == [["a", "b", "c", "d"], ["1", "", 'x, "y"', "2.5"]]


def test_sql_csv_many_rows(capsys, demo_db):
    code, out, _ = run(capsys, "sql", "--db", demo_db, "--csv", "SELECT tag_id, name FROM tags ORDER BY tag_id")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    expected = sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True).execute(
        "SELECT tag_id, name FROM tags ORDER BY tag_id").fetchall()
    assert rows[0] == ["tag_id", "name"]
    assert rows[1:] == [[str(a), b] for a, b in expected]


def test_sql_table_output(capsys, demo_db):
    code, out, _ = run(capsys, "sql", "--db", demo_db, "SELECT COUNT(*) AS n_customers FROM customers")
    assert code == 0
    assert "n_customers" in out and "1200" in out


# -- vouch profile -----------------------------------------------------------------------------

def test_profile_json(capsys, demo_db):
    code, out, err = run(capsys, "profile", "--db", demo_db, "--json")
    assert code == 0, err
    data = json.loads(out)
    names = {t["name"] for t in data["tables"]}
    assert {"customers", "orders", "products", "loyalty_accounts"} <= names
    customers = next(t for t in data["tables"] if t["name"] == "customers")
    assert customers["row_count"] == 1200
    assert data["engine"] == "sqlite"
    assert isinstance(data["join_pairs"], list) and data["join_pairs"]


def test_profile_text(capsys, demo_db):
    code, out, _ = run(capsys, "profile", "--db", demo_db)
    assert code == 0
    assert "customers" in out


# -- bad input: exit 2, one line, no traceback -------------------------------------------------

def _bad(tmp_path, kind):
    if kind == "missing":
        return tmp_path / "missing.sqlite", "no such file"
    if kind == "text":
        p = tmp_path / "notes.txt"
        p.write_text("this is not a database\n")
        return p, "not a SQLite database"
    if kind == "empty":
        p = tmp_path / "empty.sqlite"
        p.write_bytes(b"")
        return p, "empty file"
    if kind == "folder":
        p = tmp_path / "nothing here"
        p.mkdir()
        (p / "readme.md").write_text("hi")
        return p, "no .csv"
    if kind == "scheme":
        return "foo://bar", "foo"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["missing", "text", "empty", "folder", "scheme"])
@pytest.mark.parametrize("command", ["sql", "profile"])
def test_bad_database_exit_2(capsys, tmp_path, kind, command):
    target, problem = _bad(tmp_path, kind)
    argv = [command, "--db", target] + (["SELECT 1"] if command == "sql" else [])
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert problem in lines[0]
    assert lines[0].startswith("error:")


@pytest.mark.parametrize("query,problem", [
    ("", "empty"),
    ("   \n  ", "empty"),
    ("-- only a comment", "empty"),
    ("DELETE FROM customers", "DELETE"),
    ("DROP TABLE customers", "DROP"),
    ("SELECT 1; SELECT 2", "2 statements"),
    ("SELEC 1", "parse"),
])
def test_bad_query_exit_2(capsys, demo_db, query, problem):
    code, out, err = run(capsys, "sql", "--db", demo_db, query)
    assert code == 2
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert problem in lines[0]


def test_bad_setting_exit_2(capsys, demo_db):
    code, out, err = run(capsys, "sql", "--db", demo_db, "--timeout", "-3", "SELECT 1")
    assert code == 2
    assert "Traceback" not in out + err
    assert "timeout" in err and len(err.strip().splitlines()) == 1


def test_timeout_exit_1(capsys, demo_db):
    code, _, err = run(capsys, "sql", "--db", demo_db, "--timeout", "0.5",
                       "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT COUNT(*) FROM r")
    assert code == 1
    assert "0.5 s" in err and "Traceback" not in err


def test_missing_subcommand_arguments(capsys):
    assert main([]) == 2
    code = main(["sql"])  # argparse: --db and the query are required
    assert code == 2
    assert "Traceback" not in capsys.readouterr().err


# -- vouch demo --------------------------------------------------------------------------------

def test_demo_builds_the_file(capsys, tmp_path):
    out_path = tmp_path / "built" / "demo.sqlite"
    code, out, err = run(capsys, "demo", "--out", out_path, "--no-examples")
    assert code == 0, err
    assert out_path.is_file()
    assert out_path.read_bytes()[:16] == b"SQLite format 3\x00"
    with sqlite3.connect(f"file:{out_path}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM customers").fetchone()[0] == 1200
    assert "Demo database ready" in out
    # --no-examples: no example queries printed.
    assert "Tie at the top price" not in out
    # And the file works with the other commands.
    code, out, _ = run(capsys, "sql", "--db", out_path, "--json", "SELECT COUNT(*) FROM stores")
    assert code == 0 and json.loads(out)["error"] is None


def test_config_markdown(capsys):
    from vouchsql.settings import settings_markdown

    code, out, _ = run(capsys, "config", "--markdown")
    assert code == 0
    assert out.strip() == settings_markdown().strip()


def test_a_closed_pipe_ends_quietly(tmp_path, chinook_path):
    """`vouch sql --json … | head -c 1`: the reader leaves early; no traceback, exit 141."""
    import os
    import subprocess
    import sys

    code = ("import sys; from vouchsql.cli import main; "
            "sys.exit(main(['sql', '--db', sys.argv[1], '--json', 'SELECT * FROM Track']))")
    env = {**os.environ, "VOUCH_CACHE_DIR": str(tmp_path / "cache")}
    with subprocess.Popen([sys.executable, "-c", code, str(chinook_path)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env) as proc:
        assert proc.stdout.read(1) == b"{"
        proc.stdout.close()  # 3,503 rows of JSON: far more than a pipe's 64 KiB buffer
        err = proc.stderr.read().decode()
        assert proc.wait(120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err, err
