"""What a server engine may run, decided from the server's own catalogue.

A READ ONLY transaction stops writes to tables, but not functions that act outside it:
``dblink_exec`` opens a new, writable session; ``lo_export`` and adminpack's
``pg_file_write`` write server files; a replication slot, an advisory lock or a statistics
reset survive the rollback; MariaDB runs the text of ``/*! … */`` comments that every SQL
parser (sqlglot included) drops as comments. So before a statement reaches PostgreSQL or
MariaDB/MySQL, every word of its text is looked up here:

- **PostgreSQL**: each function the server could call by that name is read from ``pg_proc``
  (schema, volatility, owning extension). A name is refused when any function of that name
  is volatile and not on a short reviewed allow-list, belongs to an extension that reaches
  outside the database, or falls in a category that acts outside the transaction (large
  objects, server files, replication and WAL, locks, statistics resets, configuration
  setters, sequence advancers, backend signalling, SQL run from a string). Catalogue tables
  that hold secrets (``pg_authid`` …) are refused as well.
- **MariaDB/MySQL**: executable and versioned comments (``/*!``, ``/*!NNNNN``, ``/*M!``),
  ``INTO OUTFILE/DUMPFILE``, user-variable assignment (``:=``), ``LOAD_FILE``, the lock
  functions and sequence advancers are refused, and so are the server's loadable functions
  (``mysql.func``) and stored functions declared ``MODIFIES SQL DATA``.

The scan is over the raw text, strings and comments included, on purpose: it must not depend
on tokenising exactly as the server does (backslash escapes, ``standard_conforming_strings``,
``NO_BACKSLASH_ESCAPES`` and dollar quotes all change where a string ends). The price is that
a string literal holding such a name (``WHERE note = 'lo_export'``) is refused too; the
legitimate-SQL corpus in the tests measures that this does not happen in everyday reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import SQLRejected

_WORD = re.compile(r"[^\W\d][\w$]*")


def words(sql: str) -> set[str]:
    """Every identifier-like word of ``sql``, lower-cased, wherever it stands."""
    return {w.lower() for w in _WORD.findall(sql)}


def forbidden(what: str, reason: str) -> SQLRejected:
    return SQLRejected(f"{what} is not allowed: {reason}; Vouch runs only reads that stay inside "
                       f"the database's read-only transaction", kind="forbidden")


# -- PostgreSQL ----------------------------------------------------------------------------

# Volatile functions that only read or draw numbers: reviewed, and nothing else volatile runs.
PG_VOLATILE_ALLOWED = frozenset({
    "random", "random_normal", "clock_timestamp", "timeofday", "gen_random_uuid",
    "pg_relation_size", "pg_total_relation_size", "pg_table_size", "pg_indexes_size",
    "pg_database_size", "currval", "lastval",
    # Waiting is bounded by the time limit like any slow query.
    "pg_sleep", "pg_sleep_for", "pg_sleep_until",
})

# Extensions whose functions reach other servers, files or raw storage, whatever their
# declared volatility.
PG_DENIED_EXTENSIONS = frozenset({
    "dblink", "postgres_fdw", "file_fdw", "adminpack", "lo", "pageinspect", "pg_buffercache",
    "pg_prewarm", "pg_surgery", "pg_walinspect", "pgstattuple", "pg_visibility", "amcheck",
    "pgrowlocks", "pg_freespacemap", "old_snapshot", "pg_stat_statements",
})

# Categories refused by name whatever the catalogue says, each with the reason shown.
_PG_CATEGORIES: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p), r) for p, r in (
    (r"^(lo_\w+|loread|lowrite)$", "it reads or writes large objects and server files"),
    (r"^pg_(read_file|read_binary_file|stat_file|ls_\w+|file_\w+|logdir_\w+)$",
     "it reads or writes the server's files"),
    (r"^pg_(\w*replication\w*|\w*_slot\w*|logical_\w+|switch_wal|wal_\w+|backup_\w+|promote|"
     r"start_backup|stop_backup|create_restore_point|export_snapshot)$",
     "it acts on replication or the write-ahead log, which outlives the transaction"),
    (r"^pg_(try_)?advisory_\w+$", "it takes a lock that can outlive the query"),
    (r"^pg_stat_(reset\w*|statements_reset|clear_snapshot)$", "it resets server statistics"),
    (r"^set_config$", "it changes the server's configuration (the time limit among it)"),
    (r"^(nextval|setval)$", "it advances a sequence, which no rollback undoes"),
    (r"^pg_(cancel_backend|terminate_backend|reload_conf|rotate_logfile|"
     r"log_backend_memory_contexts|signal_backend|notify)$", "it signals server processes"),
    (r"^(query_to_xml\w*|cursor_to_xml\w*|ts_stat|ts_rewrite|dblink\w*)$",
     "it runs SQL given as text, out of the reach of these checks"),
))

# Catalogue relations that hold password hashes, user-mapping secrets, raw statistics of
# columns the role may not read, other sessions' SQL, or the server's own configuration files.
PG_SECRET_RELATIONS = frozenset({
    "pg_authid", "pg_shadow", "pg_user_mapping", "pg_user_mappings", "pg_largeobject",
    "pg_statistic", "pg_statistic_ext_data", "pg_file_settings", "pg_hba_file_rules",
    "pg_ident_file_mappings", "pg_stat_activity", "pg_stat_get_activity",
})

# Return types of functions SQL cannot call (handlers, triggers): never words to refuse.
_PG_UNCALLABLE = ("internal", "trigger", "event_trigger", "language_handler", "fdw_handler",
                  "index_am_handler", "tsm_handler", "table_am_handler")

PG_CATALOGUE_SQL = f"""
SELECT DISTINCT lower(p.proname), n.nspname, p.provolatile, e.extname
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
LEFT JOIN pg_catalog.pg_depend d
  ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
LEFT JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
WHERE p.prorettype::regtype::text NOT IN ({", ".join(f"'{t}'" for t in _PG_UNCALLABLE)})
  AND NOT ('internal'::regtype::oid = ANY (p.proargtypes::oid[]))
"""


def pg_reason(name: str, schema: str, volatility: str, extension: str | None) -> str | None:
    """Why a function named ``name`` may not run, or None when it may."""
    if extension in PG_DENIED_EXTENSIONS:
        return f"it belongs to the {extension} extension, which reaches outside the database"
    for pattern, reason in _PG_CATEGORIES:
        if pattern.match(name):
            return reason
    if volatility == "v" and not (schema == "pg_catalog" and name in PG_VOLATILE_ALLOWED):
        return ("it is volatile (it may change state outside the query) and not on Vouch's "
                "reviewed list of volatile functions")
    return None


@dataclass
class PostgresPolicy:
    """Function verdicts read from ``pg_proc``: name → (schema.name, why it is refused);
    a name absent from ``refused`` is allowed."""

    refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    known: set[str] = field(default_factory=set)

    @classmethod
    def from_rows(cls, rows) -> "PostgresPolicy":
        policy = cls()
        for name, schema, volatility, extension in rows:
            policy.known.add(name)
            reason = pg_reason(name, schema, volatility, extension)
            if reason and name not in policy.refused:
                policy.refused[name] = (f"{schema}.{name}", reason)
        return policy

    def unknown_calls(self, sql: str) -> set[str]:
        """Words written as calls (``name(``) that the loaded catalogue does not hold: a
        function created since it was read."""
        return {m.lower() for m in re.findall(r"([^\W\d][\w$]*)\s*\(", sql)} - self.known - _SQL_CALL_KEYWORDS

    def check(self, sql: str) -> None:
        if re.search(r"u&\s*\"", sql, re.IGNORECASE):
            # A Unicode-escaped identifier can spell any function name in escapes.
            raise forbidden("a Unicode-escaped identifier (U&\"…\")", "it can hide the name of a function")
        found = words(sql)
        for word in sorted(found & PG_SECRET_RELATIONS):
            raise forbidden(f"reading {word}", "it holds secrets or other sessions' data, not the database's data")
        for word in sorted(found & self.refused.keys()):
            qualified, reason = self.refused[word]
            raise forbidden(f"the function {qualified}()", reason)


# Keywords that are followed by "(" without being functions: not a sign of a new function.
_SQL_CALL_KEYWORDS = frozenset({
    "in", "exists", "values", "as", "over", "filter", "within", "any", "all", "some", "on",
    "using", "from", "select", "where", "and", "or", "not", "cast", "row", "array", "extract",
    "lateral", "join", "when", "then", "else", "is", "by", "with", "union", "except",
    "intersect", "tablesample", "repeatable", "partition", "group", "order", "having", "rows",
    "range", "between", "coalesce", "nullif", "greatest", "least", "overlay", "position",
    "substring", "trim", "treat", "collate", "interval", "timestamp", "date", "time",
    "numeric", "decimal", "varchar", "char", "character", "float", "like", "ilike", "similar",
    "case", "distinct", "limit", "offset", "fetch", "recursive", "materialized", "grouping",
    "sets", "cube", "rollup", "if", "returning", "window", "xmlelement", "xmlforest", "xmlagg",
    "jsonb", "json", "bit", "varbinary", "binary", "convert", "match", "against", "key", "for",
})


# -- MariaDB / MySQL --------------------------------------------------------------------------

# Built-in functions that act outside the transaction, each with the reason shown.
MYSQL_DENIED_FUNCTIONS = {
    "load_file": "it reads the server's files",
    "get_lock": "it takes a named lock that outlives the query",
    "release_lock": "it releases a named lock held by the session",
    "release_all_locks": "it releases named locks held by the session",
    "is_free_lock": "it probes named locks",
    "is_used_lock": "it probes named locks",
    "master_pos_wait": "it waits on replication",
    "master_gtid_wait": "it waits on replication",
    "source_pos_wait": "it waits on replication",
    "wait_for_executed_gtid_set": "it waits on replication",
    "nextval": "it advances a sequence, which no rollback undoes",
    "setval": "it moves a sequence, which no rollback undoes",
    "outfile": "SELECT … INTO OUTFILE writes a server file",
    "dumpfile": "SELECT … INTO DUMPFILE writes a server file",
}

MYSQL_CATALOGUE_SQL = (
    "SELECT LOWER(ROUTINE_NAME), ROUTINE_SCHEMA FROM information_schema.ROUTINES "
    "WHERE ROUTINE_TYPE = 'FUNCTION' AND SQL_DATA_ACCESS IN ('MODIFIES SQL DATA', 'CONTAINS SQL')")
MYSQL_UDF_SQL = "SELECT LOWER(name) FROM mysql.func"


@dataclass
class MySQLPolicy:
    refused: dict[str, str] = field(default_factory=lambda: dict(MYSQL_DENIED_FUNCTIONS))

    def add_stored(self, rows) -> None:
        for name, schema in rows:
            self.refused.setdefault(name, f"the stored function {schema}.{name} is declared to "
                                          f"modify data or run SQL statements")

    def add_udfs(self, rows) -> None:
        for (name,) in rows:
            self.refused.setdefault(name, "it is a loadable (UDF) function of the server, which "
                                          "runs native code outside the transaction")

    def check(self, sql: str) -> None:
        # Executable comments run their text on MariaDB and MySQL; anywhere in the statement,
        # since where a string or comment ends depends on the server's SQL mode.
        if re.search(r"/\*\s*m?!", sql, re.IGNORECASE):
            raise forbidden("an executable comment (/*! … */, /*!NNNNN … */ or /*M! … */)",
                            "MariaDB and MySQL run the text inside it as SQL")
        if ":=" in sql:
            raise forbidden("assignment to a user variable (:=)", "it changes session state")
        if re.search(r"\bnext\s+value\s+for\b", sql, re.IGNORECASE):
            raise forbidden("NEXT VALUE FOR", "it advances a sequence, which no rollback undoes")
        if re.search(r"\binto\s*(/\*[\s\S]*?\*/\s*|#[^\n]*\n\s*|--[^\n]*\n\s*)*@", sql, re.IGNORECASE):
            raise forbidden("SELECT … INTO @variable", "it changes session state")
        for word in sorted(words(sql) & self.refused.keys()):
            raise forbidden(word.upper(), self.refused[word])


# -- values built larger than the byte cap ----------------------------------------------------

# Functions that build a value far larger than their arguments. DuckDB and PostgreSQL build
# such a value in one step that no interrupt reaches (DuckDB's repeat('x', 400000000) ran
# 1.5 s past a 3 s limit and took 1.6 GB); SQLite is bounded by its length limit and MariaDB
# by max_allowed_packet, but the same clear refusal is given on every engine.
_BLOB_BUILDERS = {"zeroblob", "randomblob", "space", "array_fill", "list_repeat"}
_FORMATTERS = {"printf", "format"}


def _constant(node) -> float | None:
    """The value of a constant numeric expression (literals and + - * /, ^), else None."""
    from sqlglot import exp

    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return float(node.this)
        except ValueError:
            return None
    if isinstance(node, (exp.Paren, exp.Cast)):
        return _constant(node.this)
    if isinstance(node, exp.Neg):
        value = _constant(node.this)
        return None if value is None else -value
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Pow)):
        a, b = _constant(node.this), _constant(node.expression)
        if a is None or b is None:
            return None
        try:
            if isinstance(node, exp.Add):
                return a + b
            if isinstance(node, exp.Sub):
                return a - b
            if isinstance(node, exp.Mul):
                return a * b
            if isinstance(node, exp.Div):
                return a / b if b else None
            return float(a) ** float(b) if abs(b) < 64 else float("inf")
        except OverflowError:
            return float("inf")
    return None


def built_size(node) -> float:
    """A lower bound on the bytes ``node`` builds (0 when it cannot tell)."""
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        return len(node.this) if node.is_string else 8
    if isinstance(node, exp.Repeat):
        times = _constant(node.args.get("times"))
        return max(1.0, built_size(node.this)) * times if times and times > 0 else 0
    if isinstance(node, exp.Pad):
        length = _constant(node.expression)
        return length if length and length > 0 else 0
    if isinstance(node, (exp.DPipe, exp.Concat)):
        return sum(built_size(child) for child in node.iter_expressions())
    name = (node.name if isinstance(node, exp.Anonymous) else getattr(node, "key", "")).lower()
    if isinstance(node, exp.Space) or name in _BLOB_BUILDERS:
        sizes = [_constant(a) for a in node.iter_expressions()]
        counts = [s for s in sizes if s and s > 0]
        if name == "array_fill":  # array_fill(value, ARRAY[d1, d2 …]): the product of the dims
            dims = [_constant(e) for arr in node.iter_expressions() if isinstance(arr, exp.Array)
                    for e in arr.expressions]
            product = 1.0
            for d in dims:
                product *= d if d and d > 0 else 1
            return product * 8 if dims else 0
        return max(counts) if counts else 0
    if isinstance(node, exp.Format) or name in _FORMATTERS:
        # A width or precision in the format string, or given by '*' as an argument.
        formats = [a.this for a in node.iter_expressions() if isinstance(a, exp.Literal) and a.is_string]
        widths = [float(w) for f in formats for pair in re.findall(r"%[-+ #0]*(\d+)?(?:\.(\d+))?", f)
                  for w in pair if w]
        if any("*" in f for f in formats):  # only then is a number argument a width, not a value
            widths += [c for c in (_constant(a) for a in node.iter_expressions()) if c and c > 0]
        return max(widths) if widths else 0
    return 0


def check_built_sizes(tree, max_bytes: int) -> None:
    """Refuse a statement with an expression that certainly builds more than ``max_bytes``."""
    from sqlglot import exp

    for node in tree.find_all(exp.Repeat, exp.Pad, exp.Space, exp.Format, exp.Anonymous, exp.DPipe):
        size = built_size(node)
        if size > max_bytes:
            shown = node.sql()
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise SQLRejected(
                f"{shown} builds a value of about {size:,.0f} bytes, more than max_result_bytes "
                f"({max_bytes:,}); select less, or raise --max-result-bytes / VOUCH_MAX_RESULT_BYTES",
                kind="too_large")
