"""The statement gate: exactly one SELECT (``WITH … SELECT`` and set operations allowed).

The gate is a first line that gives a clear message; the engines' own read-only
protections (read-only connections, authorizers, read-only transactions) are the guarantee.
"""

from __future__ import annotations

import re

import logging

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot import Token, TokenType  # re-exported by sqlglot itself (sqlglot.tokens imports them)

from ..errors import SQLRejected

# sqlglot logs a warning when it falls back to a generic Command; the gate reports it itself.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

# Node types that change state wherever they appear, including inside a CTE
# (PostgreSQL allows ``WITH d AS (DELETE … RETURNING *) SELECT …``).
_WRITES: tuple[type[exp.Expression], ...] = tuple(
    t
    for t in (
        exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
        exp.TruncateTable, exp.Command, exp.Pragma, exp.Attach, exp.Detach, exp.Copy,
        exp.Set, exp.Transaction, exp.Commit, exp.Rollback, exp.LoadData, exp.Use,
        getattr(exp, "Grant", None), getattr(exp, "Revoke", None), getattr(exp, "Analyze", None),
        getattr(exp, "Vacuum", None), getattr(exp, "Into", None), getattr(exp, "Lock", None),
    )
    if t is not None
)

_QUERY_ROOTS = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery)

# Nesting deeper than this is refused before parsing. sqlglot's parser recurses 20-27 Python
# frames per level of parentheses or CASE, so about 37 levels exhaust Python's default limit
# of 1,000 frames, less when the caller's stack is deep (a web server, a test runner); real
# analytical SQL nests 10-20 levels.
MAX_NESTING = 25
_OPEN = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE}
_CLOSE = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END}
TOO_DEEP = ("the SQL is nested too deeply for Vouch to read (Python's recursion limit); "
            "flatten it, e.g. with a CTE, or an IN list instead of a long chain of OR conditions")

SQLGLOT_DIALECTS = {"sqlite": "sqlite", "duckdb": "duckdb", "postgresql": "postgres",
                    "postgres": "postgres", "mysql": "mysql", "mariadb": "mysql",
                    "mssql": "tsql", "oracle": "oracle", "snowflake": "snowflake",
                    "bigquery": "bigquery"}


def statement_kind(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, (exp.Create, exp.Drop, exp.Alter)):
        what = node.args.get("kind") or ""
        return f"{node.key.upper()} {str(what).upper()}".strip()
    if isinstance(node, exp.Into):
        return "SELECT INTO"
    if type(node).__name__ == "Lock":
        # FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE: a SELECT that takes row locks
        return "SELECT … FOR UPDATE / FOR SHARE (a locking read)"
    # the node's class in words: TruncateTable -> TRUNCATE TABLE, LoadData -> LOAD DATA
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", type(node).__name__).upper()


def parse_one_select(sql: str, dialect: str | None = "sqlite") -> exp.Expression:
    """Return the parsed tree of ``sql`` if it is a single read-only query, else raise
    :class:`SQLRejected` naming what was found."""
    if sql is None or not str(sql).strip():
        raise SQLRejected("the query is empty; give one SELECT statement", kind="empty")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        # A shell passes bytes that are not UTF-8 as lone surrogates, which no driver can send.
        raise SQLRejected(f"the SQL is not valid UTF-8 text (character {exc.start + 1} is an undecodable byte); "
                          f"give the SQL as UTF-8", kind="parse") from None
    try:
        return _parse_one_select(sql, dialect)
    except RecursionError:
        # Shapes the nesting limit does not count (a long run of NOT, say) can still exhaust
        # the stack; the caller gets a rejection, never the error.
        raise SQLRejected(TOO_DEEP, kind="rejected") from None


def _parse_one_select(sql: str, dialect: str | None) -> exp.Expression:
    try:
        reader = Dialect.get_or_raise(dialect)
        tokens = reader.tokenize(sql)
        _check_nesting(tokens)
        statements = [s for s in reader.parser().parse(tokens, sql) if s is not None]
    except (ParseError, TokenError) as exc:
        refused = _unparsed_write(sql, dialect)
        if refused:
            # A statement this dialect's parser does not read (MySQL's HANDLER, a SELECT …
            # INTO OUTFILE) is refused for what it is, not as a typo.
            raise SQLRejected(f"{refused} statement is not allowed: Vouch only runs read-only SELECT queries",
                              kind="not_select") from None
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SQLRejected(f"could not parse the SQL ({first}); give one SELECT statement",
                          kind="parse") from None
    if not statements:
        raise SQLRejected("the query is empty (only comments?); give one SELECT statement", kind="empty")
    if len(statements) > 1:
        kinds = ", ".join(statement_kind(s) for s in statements)
        raise SQLRejected(
            f"{len(statements)} statements found ({kinds}); give exactly one SELECT statement",
            kind="multiple_statements")
    tree = statements[0]
    for node in tree.walk():
        if isinstance(node, _WRITES):
            raise SQLRejected(
                f"{statement_kind(node)} statement is not allowed: Vouch only runs read-only SELECT queries",
                kind="not_select")
    if not isinstance(tree, _QUERY_ROOTS):
        # sqlglot reads statements it does not know (REINDEX, SAVEPOINT, CHECKPOINT) as a
        # bare column or alias, so name the statement by its first keyword instead.
        raise SQLRejected(
            f"{_first_keyword(sql, dialect) or statement_kind(tree)} statement is not allowed: "
            f"Vouch only runs read-only SELECT queries",
            kind="not_select")
    return tree


def _check_nesting(tokens: list[Token]) -> None:
    depth = deepest = 0
    for token in tokens:
        if token.token_type in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif token.token_type in _CLOSE:
            depth = max(0, depth - 1)
    if deepest > MAX_NESTING:
        raise SQLRejected(f"the SQL nests {deepest} levels deep (parentheses and CASE); Vouch reads at most "
                          f"{MAX_NESTING}: flatten it, e.g. with a CTE", kind="rejected")


# Keywords a query may begin with: any other first word names a statement that is no query.
_QUERY_STARTS = {"SELECT", "WITH", "(", "VALUES", "TABLE", "FROM"}
# Statements the tokenizer reads as plain words (so a typo such as SELEC is not named one).
_STATEMENTS = {"HANDLER", "DO", "CALL", "FLUSH", "KILL", "RESET", "PURGE", "INSTALL", "UNINSTALL",
               "SHUTDOWN", "RENAME", "PREPARE", "DEALLOCATE", "LISTEN", "NOTIFY", "UNLISTEN", "DISCARD",
               "CLUSTER", "REINDEX", "CHECKPOINT", "IMPORT", "REFRESH", "BACKUP", "RESTORE", "BINLOG"}


def _unparsed_write(sql: str, dialect: str | None) -> str:
    """What SQL the parser refused is, where it is no query: its first keyword (HANDLER), or
    SELECT INTO OUTFILE / DUMPFILE; "" where it reads as a malformed query."""
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except (ParseError, TokenError):
        return ""
    words = [t.text.upper() for t in tokens]
    for i, word in enumerate(words[:-1]):
        if word == "INTO" and words[i + 1] in ("OUTFILE", "DUMPFILE"):
            return f"SELECT INTO {words[i + 1]}"
    if words and words[0] not in _QUERY_STARTS and (
            words[0] in _STATEMENTS or tokens[0].token_type not in (TokenType.VAR, TokenType.STRING)):
        return words[0]
    return ""


def _first_keyword(sql: str, dialect: str | None) -> str:
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except (ParseError, TokenError):
        return ""
    return tokens[0].text.upper() if tokens else ""
