"""Hostile and absurd input ends in one ``error: …`` line with the documented exit code (2 for
bad input and rejected SQL), or in a clean rejection from the library: never a traceback, a
RecursionError or a crash. Deep nesting and long chains, wide tables, unreadable paths and
files, absurd numbers, and a demo build that must not overwrite a user's database."""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

import vouchsql
from vouchsql.cli import main
from vouchsql.demo import is_demo_database
from vouchsql.errors import SQLRejected, UserInputError
from vouchsql.sql.gate import MAX_NESTING, parse_one_select


@pytest.fixture(autouse=True)
def isolated(clean_env, tmp_path, monkeypatch):
    """No user cache, no stray vouch.toml, no VOUCH_* from the caller's shell."""
    monkeypatch.setenv("VOUCH_CACHE_DIR", str(tmp_path / "cache"))


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def nested(depth: int) -> str:
    return "SELECT " + "(" * depth + "1" + ")" * depth


COUNT_JOIN = "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id WHERE "


# -- 1. deep nesting and long chains ---------------------------------------------------------------

def test_nesting_past_the_limit_is_rejected_before_parsing():
    with pytest.raises(SQLRejected) as info:
        parse_one_select(nested(60))
    assert info.value.kind == "rejected"
    assert "60 levels" in info.value.message and str(MAX_NESTING) in info.value.message
    # CASE … END counts as a level, like a parenthesis.
    with pytest.raises(SQLRejected, match="26 levels"):
        parse_one_select("SELECT " + "CASE WHEN 1 THEN " * 26 + "1" + " END" * 26)


def test_execute_never_raises_for_deep_nesting(demo_db):
    with vouchsql.connect(demo_db) as db:
        result = db.execute(nested(3000))
    assert result.error is not None and result.error.kind == "rejected"
    assert "3000 levels" in result.error.message


def test_recursion_the_limit_does_not_count_is_a_rejection_too():
    # A run of NOTs opens no parenthesis, but the parser recurses once per NOT.
    with pytest.raises(SQLRejected) as info:
        parse_one_select("SELECT " + "NOT " * 400 + "1")
    assert info.value.kind == "rejected" and "nested too deeply" in info.value.message


def test_deep_nesting_in_the_cli_is_exit_2(capsys, demo_db):
    code, out, err = run(capsys, "sql", "--db", demo_db, nested(60))
    assert code == 2 and out == ""
    assert "60 levels deep" in one_error_line(err)


def nested_selects(depth: int) -> str:
    return "SELECT " + "(SELECT " * (depth - 1) + "COUNT(*) FROM orders" + ")" * (depth - 1)


def test_nesting_at_the_limit_is_read_and_checked(demo_db):
    # The costliest shape for the parser (about 27 frames per level), at the limit: Vouch reads
    # and checks it; SQLite's own parser stops at 19 nested SELECTs, an execution error it names.
    answer = vouchsql.check(demo_db, "How many orders are there?", [nested_selects(MAX_NESTING)])
    error = answer.shown.result.error
    assert error is not None and error.kind == "execution" and "parser stack overflow" in error.message
    with vouchsql.connect(demo_db) as db:
        expected = db.execute("SELECT COUNT(*) FROM orders").rows
    answer = vouchsql.check(demo_db, "How many orders are there?",
                            [nested_selects(19), "SELECT COUNT(*) FROM orders"])
    assert answer.shown.result.error is None and answer.shown.result.rows == expected
    assert answer.agreement == 1.0


@pytest.mark.parametrize("name,sql", [
    ("5,000 additions", "SELECT " + "+".join(["1"] * 5000)),
    ("2,000 ORs", "SELECT COUNT(*) FROM orders WHERE " + " OR ".join(f"order_id = {i}" for i in range(2000))),
    ("300 UNION ALLs", " UNION ALL ".join(f"SELECT COUNT(*) FROM orders WHERE total > {i}" for i in range(300))),
])
def test_long_chains_are_checked_without_recursion_errors(demo_db, name, sql):
    answer = vouchsql.check(demo_db, "How many orders?", [sql, sql])
    result = answer.shown.result
    # SQLite refuses an expression tree over 1,000 deep itself: an execution error, reported.
    assert result.error is None or result.error.kind == "execution", result.error
    assert answer.verdict.gate in {"pass", "flag", "abstain"}


def test_a_chain_too_deep_for_the_checks_is_a_rejection(capsys, demo_db):
    # 2,000 ANDs parse (sqlglot builds the chain in a loop), but the checks walk the chain's
    # tree, 2,000 levels deep: the pipeline rejects the SQL instead of vouching unchecked.
    sql = COUNT_JOIN + " AND ".join(f"o.total > {i}" for i in range(-2000, 0))
    with pytest.raises(SQLRejected) as info:
        vouchsql.check(demo_db, "How many orders?", [sql])
    assert info.value.kind == "rejected" and "nested too deeply" in info.value.message
    # The CLI takes what every surface takes (contract.py): SQL under 20,000 characters.
    short = COUNT_JOIN + " AND ".join(["o.total>0"] * 1300)
    code, out, err = run(capsys, "check", "--db", demo_db, "-q", "How many orders?", "--sql", short)
    assert code == 2 and out == ""
    assert "nested too deeply" in one_error_line(err)
    code, out, err = run(capsys, "check", "--db", demo_db, "-q", "How many orders?", "--sql", sql)
    assert code == 2 and "longer than 20000 characters" in one_error_line(err)


def test_the_http_api_answers_deep_sql_without_a_500(demo_db, tmp_path):
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    pytest.importorskip("httpx", reason="httpx is needed by FastAPI's TestClient")
    from fastapi.testclient import TestClient

    from vouchsql.server.app import ServerOptions, create_app
    from vouchsql.settings import load_config

    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))
    client = TestClient(create_app(ServerOptions(databases={"demo": str(demo_db)}, examples={}), config))
    body = {"db": "demo", "question": "How many orders?", "candidates": [nested(60)]}
    response = client.post("/api/check", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["shown"]["result"]["error"]["kind"] == "rejected"
    chain = COUNT_JOIN + " AND ".join(["o.total>0"] * 1300)  # under the 20,000-character request limit
    response = client.post("/api/check", json={**body, "candidates": [chain]})
    assert response.status_code == 400, response.text  # as for any rejected SQL
    assert "nested too deeply" in response.json()["error"]["message"]


# -- 2. wide tables ----------------------------------------------------------------------------------

def wide_csv(folder: Path, columns: int, rows: int) -> Path:
    """Column i holds i % 7 + r (a few distinct values); every 500th column uses -1 for
    unknown in its first row, and column 1 is NULL in the last row."""
    folder.mkdir()
    with open(folder / "wide.csv", "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow([f"c{i}" for i in range(columns)])
        for r in range(rows):
            out.writerow(["" if (i == 1 and r == rows - 1) else -1 if (i % 500 == 0 and r == 0) else i % 7 + r
                          for i in range(columns)])
    return folder


def test_a_3000_column_csv_folder_profiles_through_the_cli(capsys, tmp_path):
    pytest.importorskip("duckdb", reason="the [duckdb] extra is not installed")
    folder = wide_csv(tmp_path / "wide", 3000, 40)
    code, out, err = run(capsys, "profile", "--db", folder, "--json")
    assert code == 0, err
    table = json.loads(out)["tables"][0]
    assert table["error"] is None and table["row_count"] == 40
    columns = table["columns"]
    assert [c["name"] for c in columns] == [f"c{i}" for i in range(3000)]
    c1, c2999 = columns[1], columns[2999]
    assert (c1["null_count"], c1["distinct_count"], c1["min"], c1["max"]) == (1, 39, 1, 39)
    assert (c2999["null_count"], c2999["distinct_count"], c2999["min"], c2999["max"]) == (0, 40, 3, 42)
    assert c2999["top_values"] == [[3, 1], [4, 1], [5, 1], [6, 1], [7, 1]]
    # The -1 stand-in in the first row of every 500th column: 1 row in 40 is 2.5% ≥ 0.5%.
    coded = [c["name"] for c in columns if c["stand_ins"]]
    assert coded == [f"c{i}" for i in range(0, 3000, 500)]
    assert columns[500]["stand_ins"][0]["value"] == -1 and columns[500]["stand_ins"][0]["count"] == 1


def test_a_10000_column_csv_folder_profiles(tmp_path):
    pytest.importorskip("duckdb", reason="the [duckdb] extra is not installed")
    folder = wide_csv(tmp_path / "wide", 10_000, 3)
    with vouchsql.connect(folder, cache_dir=str(tmp_path / "cache")) as db:
        table = db.profile().tables[0]
    assert table.error is None and len(table.columns) == 10_000
    last = table.column("c9999")
    assert (last.null_count, last.distinct_count, last.min, last.max) == (0, 3, 3, 5)  # 9999 % 7 == 3


def test_a_2000_column_sqlite_table_profiles_exactly_and_sampled(tmp_path):
    path = tmp_path / "wide.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE wide (" + ", ".join(f"c{i} INTEGER" for i in range(2000)) + ")")
        conn.executemany("INSERT INTO wide VALUES (" + ", ".join("?" * 2000) + ")",
                         [[None if (i == 1999 and r % 2) else (i + r) % 50 for i in range(2000)] for r in range(30)])
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache")) as db:
        table = db.profile().tables[0]
    assert table.error is None and len(table.columns) == 2000 and not table.sampled
    last = table.column("c1999")
    # (1999 + r) % 50 for even r: 49, 1, 3, …, 27.
    assert (last.null_count, last.distinct_count, last.min, last.max) == (15, 15, 1, 49)
    # Sampled: the NULL counts and min/max of the last batch of columns stay exact.
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache"), sample_threshold=10, sample_rows=5) as db:
        table = db.profile().tables[0]
    assert table.error is None and table.sampled
    last = table.column("c1999")
    assert (last.null_count, last.min, last.max, last.distinct_estimated) == (15, 1, 49, True)


# -- 3. the CLI's bad input -----------------------------------------------------------------------

@pytest.mark.parametrize("command", ["sql", "profile"])
def test_a_symlink_loop_as_the_database_is_exit_2(capsys, tmp_path, command):
    (tmp_path / "a.sqlite").symlink_to(tmp_path / "b.sqlite")
    (tmp_path / "b.sqlite").symlink_to(tmp_path / "a.sqlite")
    argv = [command, "--db", tmp_path / "a.sqlite"] + (["SELECT 1"] if command == "sql" else [])
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert "a.sqlite" in one_error_line(err)


@pytest.mark.parametrize("command", ["sql", "check"])
def test_sql_that_is_not_utf8_is_exit_2(capsys, demo_db, command):
    sql = os.fsdecode(b"SELECT '\xff'")  # how Python hands a shell's non-UTF-8 bytes to argv
    argv = ["sql", "--db", demo_db, sql] if command == "sql" else [
        "check", "--db", demo_db, "-q", "What is it?", "--sql", "SELECT 1", "--sql", sql, "--json"]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert "not valid UTF-8" in line and "character 9" in line
    assert ("--sql number 2" if command == "check" else "--query") in line


def test_the_library_rejects_sql_that_is_not_utf8(demo_db):
    answer = vouchsql.check(demo_db, "What is it?", [os.fsdecode(b"SELECT '\xff'")])
    error = answer.shown.result.error
    assert error.kind == "parse" and "not valid UTF-8" in error.message


@pytest.mark.parametrize("option,value,problem", [
    ("--max-rows", "1e20", "whole number"),
    ("--max-rows", str(2**63), "at most"),
    ("--max-result-bytes", "9" * 5000, "whole number"),
    ("--timeout", "1e300", "at most 86400 seconds"),
    ("--timeout", "nan", "> 0"),
    ("--profile-timeout", "1e300", "at most 86400 seconds"),
    ("--sample-rows", "-3", "> 0"),
])
def test_absurd_numbers_are_exit_2(capsys, demo_db, option, value, problem):
    code, out, err = run(capsys, "sql", "--db", demo_db, option, value, "SELECT 1")
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert option[2:].replace("-", "_") in line and problem in line
    assert len(line) < 200  # a 5,000-digit value is clipped, not echoed


def test_the_longest_time_limit_still_limits(capsys, demo_db):
    code, out, err = run(capsys, "sql", "--db", demo_db, "--timeout", "86400", "--json", "SELECT 1 AS one")
    assert code == 0, err
    assert json.loads(out)["rows"] == [[1]]


@pytest.mark.parametrize("sqls", [[""], ["SELECT 1", "   "]])
def test_an_empty_sql_in_check_is_exit_2(capsys, demo_db, sqls):
    argv = ["check", "--db", demo_db, "-q", "How many orders?"]
    for sql in sqls:
        argv += ["--sql", sql]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert f"--sql number {len(sqls)} is empty" in one_error_line(err)


def test_k_beyond_reason_is_exit_2(capsys, demo_db):
    code, out, err = run(capsys, "ask", "--db", demo_db, "--model", "replay:none.cassette", "--k", "1000000",
                         "How many orders?")
    assert code == 2 and out == ""
    assert "at most 100" in one_error_line(err)


def _definitions(tmp_path: Path, kind: str) -> tuple[Path, str]:
    if kind == "unparsable":
        path = tmp_path / "defs.toml"
        path.write_text("[[rules]]\nname = \n", encoding="utf-8")
        return path, "Invalid value"
    if kind == "not utf-8":
        path = tmp_path / "defs.toml"
        path.write_bytes(b"\xff\xfe[definitions]\n")
        return path, "not UTF-8 text"
    if kind == "folder":  # a folder is read as a dbt project: this one holds no semantic models
        path = tmp_path / "defs"
        path.mkdir()
        return path, "no semantic_models or metrics in any YAML file"
    if kind == "missing":
        return tmp_path / "nowhere.toml", "no definitions file"
    if kind == "bad rule":
        path = tmp_path / "defs.toml"
        path.write_text('[[rules]]\nname = "r"\nwhen = ["x"]\n', encoding="utf-8")
        return path, "names no table"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["unparsable", "not utf-8", "folder", "missing", "bad rule"])
def test_an_unusable_definitions_file_is_exit_2(capsys, demo_db, tmp_path, kind):
    path, reason = _definitions(tmp_path, kind)
    code, out, err = run(capsys, "check", "--db", demo_db, "-q", "How many orders?", "--sql",
                         "SELECT COUNT(*) FROM orders", "--definitions", path)
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert path.name in line and reason in line


def test_an_unusable_definitions_setting_fails_the_library_check_too(demo_db, tmp_path):
    path, _ = _definitions(tmp_path, "unparsable")
    with pytest.raises(UserInputError, match="cannot read definitions file"):
        vouchsql.check(demo_db, "How many orders?", ["SELECT COUNT(*) FROM orders"], definitions=str(path))


# -- demo --out --------------------------------------------------------------------------------------

def test_demo_out_a_folder_is_exit_2(capsys, tmp_path):
    before = sorted(os.listdir(tmp_path))
    code, out, err = run(capsys, "demo", "--out", tmp_path, "--no-examples")
    assert code == 2 and out == ""
    assert "is a folder" in one_error_line(err)
    assert sorted(os.listdir(tmp_path)) == before


def test_demo_out_below_a_file_is_exit_2(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    code, out, err = run(capsys, "demo", "--out", tmp_path / "notes.txt" / "sub" / "demo.sqlite", "--no-examples")
    assert code == 2 and out == ""
    assert "notes.txt is not a folder" in one_error_line(err)
    assert (tmp_path / "notes.txt").read_text() == "a file, not a folder"


def test_demo_out_in_a_folder_without_write_permission_is_exit_2(capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who may write anywhere (root)")
        code, out, err = run(capsys, "demo", "--out", locked / "demo.sqlite", "--no-examples")
        assert code == 2 and out == ""
        assert "cannot write the demo database" in one_error_line(err)
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o700)


def test_demo_never_overwrites_a_users_database_without_force(capsys, tmp_path, chinook_path, file_digest):
    mine = tmp_path / "mine.sqlite"
    mine.write_bytes(chinook_path.read_bytes())
    digest = file_digest(mine)
    code, out, err = run(capsys, "demo", "--out", mine, "--no-examples")
    assert code == 2 and out == ""
    assert "not a Vouch demo database" in one_error_line(err) and "--force" in err
    assert file_digest(mine) == digest
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == ["mine.sqlite"]  # no temp file left

    code, out, err = run(capsys, "demo", "--out", mine, "--no-examples", "--force")
    assert code == 0, err
    assert is_demo_database(mine) and file_digest(mine) != digest


def test_demo_rebuilds_its_own_database_in_place(capsys, tmp_path, file_digest):
    path = tmp_path / "demo.sqlite"
    assert run(capsys, "demo", "--out", path, "--no-examples")[0] == 0
    first = file_digest(path)
    assert is_demo_database(path)
    code, out, err = run(capsys, "demo", "--out", path, "--no-examples")
    assert code == 0, err
    assert file_digest(path) == first
    # The default path in the cache folder is always Vouch's own.
    code, out, err = run(capsys, "demo", "--no-examples")
    assert code == 0, err
    assert file_digest(tmp_path / "cache" / "demo" / "vouch_demo.sqlite") == first


@pytest.mark.parametrize("sql, dialect, kind, message", [
    ("TRUNCATE t", "postgres", "not_select", "TRUNCATE TABLE statement is not allowed"),
    ("SELECT * FROM t FOR UPDATE", "postgres", "not_select", "SELECT … FOR UPDATE / FOR SHARE (a locking read)"),
    ("SELECT * FROM t LOCK IN SHARE MODE", "mysql", "not_select", "SELECT … FOR UPDATE / FOR SHARE (a locking read)"),
    # statements the MySQL parser does not read are refused for what they are, not as typos
    ("SELECT * FROM genre INTO OUTFILE '/tmp/x.txt'", "mysql", "not_select", "SELECT INTO OUTFILE statement"),
    ("SELECT 'a' INTO DUMPFILE '/tmp/x'", "mysql", "not_select", "SELECT INTO DUMPFILE statement"),
    ("HANDLER genre OPEN", "mysql", "not_select", "HANDLER statement is not allowed"),
    ("DO SLEEP(5)", "mysql", "not_select", "DO statement is not allowed"),
    # a malformed query is still a parse error
    ("SELEC 1", "sqlite", "parse", "could not parse the SQL"),
    ("SELECT FROM WHERE", "mysql", "parse", "could not parse the SQL"),
])
def test_refusals_name_the_statement(sql, dialect, kind, message):
    with pytest.raises(SQLRejected) as caught:
        parse_one_select(sql, dialect)
    assert caught.value.kind == kind and message in str(caught.value), str(caught.value)


# Issue 27, item 7: server URLs that once ended in a traceback are one-line errors, through the
# CLI (exit 2) and as a VouchError through the library.
@pytest.mark.parametrize("url, says", [
    ("mysql+pymysql://root@127.0.0.1:3306/test?charset=nonsense", "cannot connect to mysql+pymysql://root@"),
    ("postgresql+psycopg://[::1:5432/test", "is not a database URL"),
    ("postgresql+psycopg://" + "h" * 10_000 + "/x", "10,000 characters long"),
])
def test_a_broken_server_url_is_one_line(capsys, url, says):
    pytest.importorskip("pymysql" if url.startswith("mysql") else "psycopg")
    code, out, err = run(capsys, "check", "--db", url, "-q", "How many?", "--sql", "SELECT 1")
    assert code == 2 and says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    with pytest.raises(UserInputError, match=re.escape(says)):
        vouchsql.connect(url)
