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
  that hold secrets (``pg_authid`` …) are refused as well. What a query reaches without
  naming it is followed too: a user function whose body (SQL or PL/pgSQL) uses a refused
  name, or runs SQL built as text (``EXECUTE``), or is written in a language whose body
  cannot be read; a view whose definition uses a refused name (a view runs its functions as
  the reader); an operator or aggregate whose function is refused. A function that declares
  itself ``IMMUTABLE`` but takes an advisory lock is refused for what it calls, not trusted
  for what it says.
- **MariaDB/MySQL**: executable and versioned comments (``/*!``, ``/*!NNNNN``, ``/*M!``),
  ``INTO OUTFILE/DUMPFILE``, user-variable assignment (``:=``), ``LOAD_FILE``, the lock
  functions and sequence advancers are refused, and so are the server's loadable functions
  (``mysql.func``), stored functions declared ``MODIFIES SQL DATA`` or ``CONTAINS SQL``
  or whose body uses a refused name or sets a variable, views whose definition does (a view
  runs with its definer's powers), the tables that hold password hashes or other sessions'
  SQL (``mysql.user``, ``mysql.global_priv``, the process list, the ``sys`` schema),
  ``LAST_INSERT_ID(expr)`` and the ``SET_VAR`` optimizer hint.

Function names are looked for in the code of the statement: string literals and comments
are blanked first (:func:`code_text`), read as the server reads them, so ``WHERE note =
'lo_export'`` and ``-- not nextval`` run. Where the server's reading could differ from
Vouch's (a backslash, ``standard_conforming_strings``, ``NO_BACKSLASH_ESCAPES``, dollar
quotes), the whole text is scanned instead, strings and comments included: a false block
there, never a missed call. On PostgreSQL relations (secret catalogues, refused views) are
looked for in the whole text always, since a string literal becomes a relation's name
wherever a function takes a ``regclass``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..errors import SQLRejected

if TYPE_CHECKING:  # sqlglot is imported where a statement is checked
    from sqlglot import exp

# Rows of a catalogue query, as the driver returns them.
CatalogueRows = Iterable[Sequence[Any]]

# The patterns of this module are compiled on first use: most are for PostgreSQL or
# MariaDB/MySQL only, and compiling them at import cost ≈ 7 M instructions of every
# ``vouch check`` start-up on SQLite (``bench/startup.py --instructions``).
@lru_cache(maxsize=None)
def _word() -> re.Pattern[str]:
    return re.compile(r"[^\W\d][\w$]*")


def words(sql: str) -> set[str]:
    """Every identifier-like word of ``sql``, lower-cased, wherever it stands."""
    return {w.lower() for w in _word().findall(sql)}


def code_text(sql: str, nested_comments: bool) -> str:
    """``sql`` with its single-quoted string literals emptied and its comments blanked, read
    the way PostgreSQL (``nested_comments``) and MariaDB/MySQL read them, so that a refused
    name inside a literal or a comment (``WHERE note = 'lo_export'``, ``-- not nextval``) is
    not taken for a call. Where the server's reading could differ from this one — a backslash
    (escape strings, ``standard_conforming_strings``, MariaDB's escapes), a ``$`` (dollar
    quotes), an unterminated literal or comment — the text is returned whole, as the raw scan
    reads it. Optimizer hints (``/*+ … */``) and executable comments keep their text, since the
    server acts on them; so do quoted identifiers: ``"lo_export"()`` is a call. Nested comments
    only ever end later than a plain reading says, so a comment blanked here is one on the server."""
    if "\\" in sql or "$" in sql:
        return sql
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch == "'":
            j = i + 1
            while True:
                j = sql.find("'", j)
                if j < 0:
                    return sql
                if sql.startswith("''", j):
                    j += 2
                    continue
                break
            out.append("''")
            i = j + 1
        elif ch in '"`':
            j = sql.find(ch, i + 1)
            while j >= 0 and sql.startswith(ch * 2, j):
                j = sql.find(ch, j + 2)
            if j < 0:
                return sql
            out.append(sql[i:j + 1])
            i = j + 1
        elif sql.startswith("--", i) and (nested_comments or i + 2 >= n or sql[i + 2] in " \t\r\n\f\v"):
            j = sql.find("\n", i)
            out.append(" ")
            i = n if j < 0 else j
        elif sql.startswith("/*", i):
            depth, j = 1, i + 2
            while depth and j < n:
                if nested_comments and sql.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif sql.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            if depth:
                return sql
            # An optimizer hint (/*+ SET_VAR(…) */) or an executable comment acts: keep it.
            out.append(sql[i:j] if sql.startswith(("/*+", "/*!"), i) else " ")
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


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
# Compiled by the first PostgreSQL connection (_pg_categories), not by every start.
_PG_CATEGORY_PATTERNS: tuple[tuple[str, str], ...] = (
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
    (r"^(txid_current|pg_current_xact_id)$", "it assigns a transaction id, which no rollback gives back"),
    (r"^pg_(cancel_backend|terminate_backend|reload_conf|rotate_logfile|"
     r"log_backend_memory_contexts|signal_backend|notify)$", "it signals server processes"),
    (r"^(query_to_xml\w*|cursor_to_xml\w*|ts_stat|ts_rewrite|dblink\w*|crosstab\d*|connectby|xpath_table)$",
     "it runs SQL given as text, out of the reach of these checks"),
    (r"^(schema|database)_to_xml\w*$",
     "it reads every table and view of a schema or database by a name found at run time, views that run code "
     "among them"),
)


@lru_cache(maxsize=None)
def _pg_categories() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(p), r) for p, r in _PG_CATEGORY_PATTERNS)

# Catalogue relations that hold password hashes, user-mapping secrets, raw statistics of
# columns the role may not read, other sessions' SQL, or the server's own configuration files.
PG_SECRET_RELATIONS = frozenset({
    "pg_authid", "pg_shadow", "pg_user_mapping", "pg_user_mappings", "pg_largeobject",
    "pg_statistic", "pg_statistic_ext_data", "pg_file_settings", "pg_hba_file_rules",
    "pg_ident_file_mappings", "pg_stat_activity", "pg_stat_get_activity", "pg_subscription",
})

# PostgreSQL truncates identifiers to NAMEDATALEN - 1 bytes: a longer word names the same
# object as its first 63 bytes.
PG_NAME_BYTES = 63


def pg_name(word: str) -> str:
    raw = word.encode("utf-8")
    return word if len(raw) <= PG_NAME_BYTES else raw[:PG_NAME_BYTES].decode("utf-8", "ignore")


# Object-identifier types that turn text (or a number) into a relation, function or schema
# at run time: ``('pg_au' || 'thid')::regclass`` names what no word of the statement names.
_PG_REG_TYPES = ("regclass", "regproc", "regprocedure", "regoper", "regoperator", "regnamespace",
                 "to_regclass", "to_regproc", "to_regprocedure", "to_regoper", "to_regoperator",
                 "to_regnamespace")
_PG_STRING = r"(?:E|U&)?'(?:[^']|'')*'"
# The forms whose name is a constant the scan reads like any other word.
@lru_cache(maxsize=None)
def _pg_constant_name() -> re.Pattern[str]:
    return re.compile(
        rf"{_PG_STRING}\s*::\s*(?:pg_catalog\s*\.\s*)?reg\w+"
        rf"|\bcast\s*\(\s*{_PG_STRING}\s+as\s+(?:pg_catalog\s*\.\s*)?reg\w+\s*\)"
        rf"|\bto_reg\w+\s*\(\s*{_PG_STRING}\s*\)", re.IGNORECASE)

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


# User-defined functions (outside the system schemas and extensions) with what they run: the
# body of a SQL or PL/pgSQL function (a BEGIN ATOMIC body, whose prosrc is empty, as the
# engine keeps it; default-argument expressions too), the support functions of an aggregate.
def pg_bodies_sql(server_version: int) -> str:
    body = ("CASE WHEN p.prosqlbody IS NOT NULL THEN pg_catalog.pg_get_function_sqlbody(p.oid) ELSE p.prosrc END"
            if server_version >= 140000 else "p.prosrc")
    return f"""
SELECT lower(p.proname), n.nspname, l.lanname,
       CASE WHEN p.prokind = 'a' THEN (SELECT concat_ws(' ', a.aggtransfn, a.aggfinalfn, a.aggcombinefn,
                                                        a.aggserialfn, a.aggdeserialfn, a.aggmtransfn,
                                                        a.aggminvtransfn, a.aggmfinalfn)
                                       FROM pg_catalog.pg_aggregate a WHERE a.aggfnoid = p.oid)
            ELSE concat_ws(' ', {body}, pg_catalog.pg_get_expr(p.proargdefaults, 0)) END,
       p.prokind
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND p.prokind <> 'p'
  AND p.prorettype::regtype::text NOT IN ({", ".join(f"'{t}'" for t in _PG_UNCALLABLE)})
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_catalog.pg_proc'::regclass
                  AND d.objid = p.oid AND d.deptype = 'e')
"""


# Views run their functions as the reader, each time they are read.
# Foreign tables are read through their wrapper's handler (file_fdw's runs a program), and a
# domain's CHECK runs on every cast to it: each is refused, like a view, for what it uses.
PG_VIEWS_SQL = """
SELECT lower(c.relname), n.nspname, pg_catalog.pg_get_viewdef(c.oid), 'view'
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('v', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
UNION ALL
SELECT lower(c.relname), n.nspname, concat_ws(' ', w.fdwhandler::regproc::text, w.fdwvalidator::regproc::text),
       'foreign table'
FROM pg_catalog.pg_foreign_table ft JOIN pg_catalog.pg_class c ON c.oid = ft.ftrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_foreign_server s ON s.oid = ft.ftserver
JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw
UNION ALL
SELECT lower(t.typname), n.nspname, pg_catalog.pg_get_constraintdef(k.oid), 'domain'
FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_type t ON t.oid = k.contypid
JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE k.contypid <> 0 AND n.nspname NOT IN ('pg_catalog', 'information_schema')
"""

# Operators defined outside the system schemas: a symbol that calls a function unnamed.
PG_OPERATORS_SQL = """
SELECT o.oprname, lower(p.proname), n.nspname
FROM pg_catalog.pg_operator o
JOIN pg_catalog.pg_proc p ON p.oid = o.oprcode
JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
"""

# Languages whose bodies the word scan can read.
_PG_READABLE_LANGUAGES = {"sql", "plpgsql"}


def pg_reason(name: str, schema: str, volatility: str, extension: str | None) -> str | None:
    """Why a function named ``name`` may not run, or None when it may."""
    if extension in PG_DENIED_EXTENSIONS:
        return f"it belongs to the {extension} extension, which reaches outside the database"
    for pattern, reason in _pg_categories():
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
    views: dict[str, tuple[str, str]] = field(default_factory=dict)
    operators: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: CatalogueRows, bodies: CatalogueRows = (), views: CatalogueRows = (),
                  operators: CatalogueRows = ()) -> "PostgresPolicy":
        """``rows`` from PG_CATALOGUE_SQL; ``bodies``, ``views`` and ``operators`` from
        PG_BODIES_SQL, PG_VIEWS_SQL and PG_OPERATORS_SQL."""
        policy = cls()
        for name, schema, volatility, extension in rows:
            policy.known.add(name)
            reason = pg_reason(name, schema, volatility, extension)
            if reason and name not in policy.refused:
                policy.refused[name] = (f"{schema}.{name}", reason)
        policy._follow(bodies, views, operators)
        return policy

    def _follow(self, bodies: CatalogueRows, views: CatalogueRows, operators: CatalogueRows) -> None:
        """Refuse user functions, aggregates and views for what they run, until nothing
        more is refused (a view over a function over a function …), then operators."""
        pending: list[tuple[dict[str, tuple[str, str]], str, str, set[str]]] = []
        for name, schema, language, source, *kind in bodies:
            if name in self.refused:
                continue
            aggregate = bool(kind) and kind[0] == "a"
            if not aggregate and language not in _PG_READABLE_LANGUAGES:
                self.refused[name] = (f"{schema}.{name}", f"it is written in {language}, so Vouch cannot "
                                                          f"read what it does")
                continue
            if language == "plpgsql" and re.search(r"\bexecute\b", source or "", re.IGNORECASE):
                self.refused[name] = (f"{schema}.{name}", "it runs SQL built as text (EXECUTE), out of "
                                                          "the reach of these checks")
                continue
            pending.append((self.refused, name, schema, words(source or "")))
        for name, schema, definition, *kind in views:
            pending.append((self.views, name, f"{kind[0] if kind else 'view'} {schema}", words(definition or "")))
        changed = True
        while changed:
            changed = False
            for verdicts, name, schema, used in pending:
                if name in verdicts:
                    continue
                hit = sorted(used & (self.refused.keys() | self.views.keys() | PG_SECRET_RELATIONS))
                if hit:
                    verdicts[name] = (f"{schema}.{name}", f"it uses {hit[0]}, which {self._why(hit[0])}")
                    changed = True
        for symbol, function, schema in operators:
            if function in self.refused:
                self.operators[symbol] = (f"{schema}.{symbol}", f"it calls {self.refused[function][0]}(), which "
                                                                f"{self._why(function)}")

    def _why(self, word: str) -> str:
        if word in PG_SECRET_RELATIONS:
            return "holds secrets or other sessions' data"
        reason = (self.refused.get(word) or self.views[word])[1]
        return "is refused: " + reason.removeprefix("it ")

    def unknown_calls(self, sql: str) -> set[str]:
        """Words written as calls (``name(``) that the loaded catalogue does not hold: a
        function created since it was read. A name given a column list where it is defined
        (``WITH digits(d) AS (``, ``AS v(x)``) is no call there: the profile's own sampling
        SQL defines such names, and each would otherwise read the catalogue again. A name
        written with ``(`` more often than it is so defined is still a call."""
        calls: dict[str, int] = {}
        for m in re.findall(r"([^\W\d][\w$]*)\s*\(", sql):
            calls[m.lower()] = calls.get(m.lower(), 0) + 1
        unknown = calls.keys() - self.known - _SQL_CALL_KEYWORDS
        if unknown:
            for m in _column_lists().findall(sql):
                name = (m[0] or m[1]).lower()
                calls[name] = calls.get(name, 0) - 1
            unknown = {n for n in unknown if calls[n] > 0}
        return unknown

    def check(self, sql: str) -> None:
        if re.search(r"u&\s*\"", sql, re.IGNORECASE):
            # A Unicode-escaped identifier can spell any function name in escapes.
            raise forbidden("a Unicode-escaped identifier (U&\"…\")", "it can hide the name of a function")
        # Relations are looked for in the whole text: a string literal becomes a relation's
        # name wherever a function takes a regclass (table_to_xml('pg_authid', …)). Functions
        # only in the code: a string or a comment calls nothing.
        # The user's own tables named like a catalogue relation or a built-in function; a
        # user object refused for itself (a view over a trap) is still looked for.
        own = {(schema, name) for schema, name in pg_user_schema_tables(sql)
               if name.lower() not in self.views and (name.lower() in PG_SECRET_RELATIONS or
                                                      self.refused.get(name.lower(), ("",))[0].startswith("pg_catalog."))}
        found = {pg_name(w) for w in words(_blank(sql, own))}
        calls = {pg_name(w) for w in words(_blank(code_text(sql, nested_comments=True), own))}
        if calls & set(_PG_REG_TYPES) and words(_pg_constant_name().sub(" ", sql)) & set(_PG_REG_TYPES):
            raise forbidden("a relation, function or schema named at run time (a reg* cast of an expression)",
                            "what it names cannot be checked before it runs; write the name as a constant")
        for word in sorted(found & PG_SECRET_RELATIONS):
            raise forbidden(f"reading {word}", "it holds secrets or other sessions' data, not the database's data")
        for word in sorted(calls & self.refused.keys()):
            qualified, reason = self.refused[word]
            raise forbidden(f"the function {qualified}()", reason)
        for word in sorted(found & self.views.keys()):
            qualified, reason = self.views[word]
            raise forbidden(f"the {qualified}", reason)
        for symbol in sorted(self.operators):
            if symbol in sql:
                qualified, reason = self.operators[symbol]
                raise forbidden(f"the operator {qualified}", reason)


@lru_cache(maxsize=None)
def _pg_system_schema() -> re.Pattern[str]:
    return re.compile(r"pg_catalog|information_schema|pg_toast\w*|pg_temp\w*", re.IGNORECASE)


def pg_user_schema_tables(sql: str) -> set[tuple[str, str]]:
    """The ``(schema, table)`` references of ``sql`` qualified by a schema of the user's: a
    table ``fb.pg_authid`` or ``fb.lo_import`` is that schema's own, which PostgreSQL never
    resolves to the catalogue's relation or function of the same name (a qualified name is
    looked up in that schema alone). Read from sqlglot's parse; a qualifier that is also an
    alias or a CTE name of the statement is left out (``a.x`` may be attribute notation,
    which calls ``x(a)``), and so is anything that does not parse."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except (sqlglot.errors.SqlglotError, RecursionError):
        return set()
    if tree is None:
        return set()
    aliases = {a.name.lower() for a in tree.find_all(exp.TableAlias)} | \
        {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    out = set()
    for t in tree.find_all(exp.Table):
        if not t.db or t.catalog or not isinstance(t.this, exp.Identifier):
            continue
        if _pg_system_schema().fullmatch(t.db) or t.db.lower() in aliases:
            continue
        out.add((t.db, t.name))
    return out


def _blank(text: str, tables: set[tuple[str, str]]) -> str:
    """``text`` with each ``schema.table`` of ``tables`` blanked where it is written as a
    relation: not followed by ``(`` (a call) or ``.`` (a longer name)."""
    for schema, name in tables:
        text = re.sub(rf'(?<![\w$."])"?{re.escape(schema)}"?\s*\.\s*"?{re.escape(name)}"?(?![\w$"]|\s*[.(])',
                      " ", text, flags=re.IGNORECASE)
    return text


# A name defined with a column list: a CTE (``digits(d) AS (``) or an alias (``AS v(x)``).
@lru_cache(maxsize=None)
def _column_lists() -> re.Pattern[str]:
    return re.compile(r"([^\W\d][\w$]*)\s*\([^()]*\)\s*AS\s+(?:NOT\s+)?(?:MATERIALIZED\s+)?\("
                      r"|\bAS\s+([^\W\d][\w$]*)\s*\(", re.IGNORECASE)

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
    "set_var": "the SET_VAR optimizer hint changes a server variable (the time limit among them)",
    "sys_exec": "it runs an operating-system command",
    "sys_eval": "it runs an operating-system command",
}

# Stored functions with their declared data access and body (NULL where the role may not
# see it), and views outside the server's own schemas with their definitions.
MYSQL_CATALOGUE_SQL = (
    "SELECT LOWER(ROUTINE_NAME), ROUTINE_SCHEMA, SQL_DATA_ACCESS, ROUTINE_DEFINITION "
    "FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION'")
MYSQL_VIEWS_SQL = (
    "SELECT LOWER(TABLE_NAME), TABLE_SCHEMA, VIEW_DEFINITION FROM information_schema.VIEWS "
    "WHERE TABLE_SCHEMA NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema')")
MYSQL_UDF_SQL = "SELECT LOWER(name) FROM mysql.func"

# Words naming what holds password hashes or other sessions' SQL.
MYSQL_SECRET_WORDS = {
    "global_priv": "it holds the server's accounts and their password hashes",
    "authentication_string": "it holds password hashes",
    "processlist": "it shows other sessions' SQL",
    "processlist_info": "it shows other sessions' SQL",
}
_SEP = r"(?:\s|`|\"|/\*.*?\*/)*"
# The same, qualified by the server's own schemas; and the sys schema, whose views show
# other sessions' SQL and whose functions set session variables. (This and the next are
# compiled on first use: only a MariaDB/MySQL connection needs them.)
@lru_cache(maxsize=None)
def _mysql_secret_tables() -> re.Pattern[str]:
    return re.compile(
        rf"\b(?:mysql{_SEP}\.{_SEP}(?:user|global_priv|servers|general_log|slow_log|password_reuse_check_history)(?![\w$])"
        rf"|performance_schema{_SEP}\.{_SEP}(?:threads|events_statements_\w+|session_\w+|user_variables_\w+)(?![\w$])"
        rf"|sys{_SEP}\.)", re.IGNORECASE | re.DOTALL)


# A stored function body that sets a session or global variable changes state whatever
# data access it declares (the declaration is not enforced): any SET whose list names a
# variable (@x, @@global.x, SET v = 1, @@x = 2) or a scope, read with comments blanked, since
# MariaDB runs SET/**/GLOBAL; and a CALL, whose procedure's body is not read here.
@lru_cache(maxsize=None)
def _mysql_body_state() -> re.Pattern[str]:
    return re.compile(r"\bset\b[^;]*?(?:@|\b(?:global|session|local|persist|persist_only)\b)|:=|\binto\s*@"
                      r"|\bcall\b", re.IGNORECASE)


def mysql_body_changes_state(body: str) -> bool:
    return bool(_mysql_body_state().search(" ".join(code_text(body, nested_comments=False).split())))


# String literals and quoted names, backslash escapes and doubled quotes included: what
# "--" inside them means is not a comment either way.
@lru_cache(maxsize=None)
def _mysql_quoted() -> re.Pattern[str]:
    return re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"|`(?:[^`]|``)*`", re.DOTALL)


@dataclass
class MySQLPolicy:
    refused: dict[str, str] = field(default_factory=lambda: dict(MYSQL_DENIED_FUNCTIONS))

    def add_stored(self, rows: CatalogueRows, views: CatalogueRows = ()) -> None:
        """Stored functions (MYSQL_CATALOGUE_SQL rows) and views (MYSQL_VIEWS_SQL rows):
        refused for what they declare, then for what their bodies use, until nothing more is
        refused (a view over a function over a view …)."""
        pending: list[tuple[str, str, str, set[str]]] = []
        for row in rows:
            name, schema = row[0], row[1]
            access = row[2] if len(row) > 2 else "MODIFIES SQL DATA"
            body = row[3] if len(row) > 3 else None
            if access in ("MODIFIES SQL DATA", "CONTAINS SQL"):
                self.refused.setdefault(name, f"the stored function {schema}.{name} is declared to "
                                              f"modify data or run SQL statements")
            elif body and mysql_body_changes_state(body):
                self.refused.setdefault(name, f"the stored function {schema}.{name} sets a variable or calls a "
                                              f"procedure, which changes session or server state")
            else:
                pending.append(("stored function", name, schema, words(body or "")))
        for name, schema, definition in views:
            pending.append(("view", name, schema, words(definition or "")))
        changed = True
        while changed:
            changed = False
            for what, name, schema, used in pending:
                if name in self.refused:
                    continue
                hit = sorted(used & (self.refused.keys() | MYSQL_SECRET_WORDS.keys()))
                if hit:
                    why = self.refused.get(hit[0]) or MYSQL_SECRET_WORDS[hit[0]]
                    self.refused[name] = f"the {what} {schema}.{name} uses {hit[0].upper()} ({why})"
                    changed = True

    def add_udfs(self, rows: CatalogueRows) -> None:
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
        if re.search(r"--(?=\S)", _mysql_quoted().sub(" ", sql)):
            # MariaDB/MySQL start a comment at "-- " only: "1--1" is 1 - (-1) = 2 there, while
            # sqlglot, and so every check, reads "--1" as a comment.
            raise SQLRejected("'--' followed by a character other than a space is read two ways: MariaDB and MySQL "
                              "read two minus signs, other readers a comment; write '- -1' for the numbers or "
                              "'-- ' for a comment", kind="parse")
        if re.search(r"\bnext\s+value\s+for\b", sql, re.IGNORECASE):
            raise forbidden("NEXT VALUE FOR", "it advances a sequence, which no rollback undoes")
        if re.search(r"\binto\s*(/\*[\s\S]*?\*/\s*|#[^\n]*\n\s*|--[^\n]*\n\s*)*@", sql, re.IGNORECASE):
            raise forbidden("SELECT … INTO @variable", "it changes session state")
        if re.search(r"\blast_insert_id\s*\(\s*[^)\s]", sql, re.IGNORECASE):
            raise forbidden("LAST_INSERT_ID(expr)", "it sets the session's last insert id")
        code = code_text(sql, nested_comments=False)  # literals and comments name nothing here
        secret = _mysql_secret_tables().search(code)
        if secret:
            shown = re.sub(r"/\*.*?\*/|[`\"\s]", "", secret.group(0), flags=re.DOTALL)
            shown = "the sys schema" if shown.lower() == "sys." else shown
            raise forbidden(f"reading {shown}", "it holds password hashes, other sessions' SQL or the server's "
                                                "own diagnostics, not the database's data")
        for word in sorted(words(code) & MYSQL_SECRET_WORDS.keys()):
            raise forbidden(f"reading {word}", MYSQL_SECRET_WORDS[word])
        for word in sorted(words(code) & self.refused.keys()):
            raise forbidden(word.upper(), self.refused[word])


# -- values built larger than the byte cap ----------------------------------------------------

# Functions that build a value far larger than their arguments. DuckDB and PostgreSQL build
# such a value in one step that no interrupt reaches (DuckDB's repeat('x', 400000000) ran
# 1.5 s past a 3 s limit and took 1.6 GB); SQLite is bounded by its length limit and MariaDB
# by max_allowed_packet, but the same clear refusal is given on every engine.
_BLOB_BUILDERS = {"zeroblob", "randomblob", "space", "array_fill", "list_repeat"}
_FORMATTERS = {"printf", "format"}


def _constant(node: exp.Expr | None) -> float | None:
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


def built_size(node: exp.Expr) -> float:
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


# Compiled by the first printf/format call checked (re's cache), not by every start.
_PRINTF_SPEC = r"%(%|[-+ #0]*(\*|\d+)?(?:\.(\*|\d*))?(?:hh|h|ll|l|L|q|j|z|t)?([a-zA-Z]))"
# fmt-style (DuckDB's format): a replacement field whose spec holds another field, {:>{}}.
_FMT_NESTED = r"\{[^{}]*:[^{}]*\{[^{}]*\}[^{}]*\}"


def width_from_data(node: exp.Expr) -> bool:
    """Whether a printf/format call takes a width or precision from an argument that is not
    a constant (``printf('%.*c', n, 'x')``): it can build a value of any size, and SQLite and
    DuckDB build it in one step that neither the time limit nor the byte cap reaches
    (SQLite's ``%.*c`` loops once per character: 3.6 s for 400,000,000)."""
    from sqlglot import exp

    name = (node.name if isinstance(node, exp.Anonymous) else getattr(node, "key", "")).lower()
    if not (isinstance(node, exp.Format) or name in _FORMATTERS):
        return False
    args = list(node.iter_expressions())
    if not args or not (isinstance(args[0], exp.Literal) and args[0].is_string):
        return False
    fmt, rest = args[0].this, args[1:]
    if re.search(_FMT_NESTED, fmt):
        return any(_constant(a) is None for a in rest if not (isinstance(a, exp.Literal) and a.is_string))
    i = 0
    for spec in re.finditer(_PRINTF_SPEC, fmt):
        if spec.group(1) == "%":
            continue
        for star in (spec.group(2), spec.group(3)):
            if star == "*":
                if i < len(rest) and _constant(rest[i]) is None:
                    return True
                i += 1
        i += 1  # the value converted
    return False


def check_built_sizes(tree: exp.Expr, max_bytes: int) -> None:
    """Refuse a statement with an expression that certainly builds more than ``max_bytes``,
    or whose size only the data decides in a step no limit reaches (see width_from_data)."""
    from sqlglot import exp

    node: exp.Expr  # (the loops below find different kinds)
    for node in tree.find_all(exp.Format, exp.Anonymous):
        if width_from_data(node):
            shown = node.sql()
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise SQLRejected(
                f"{shown} takes a width or precision from the data ('*'), so it can build a value of any "
                f"size in one step that no limit interrupts; give the width as a number", kind="too_large")
    for node in tree.find_all(exp.Repeat, exp.Pad, exp.Space, exp.Format, exp.Anonymous, exp.DPipe):
        size = built_size(node)
        if size > max_bytes:
            shown = node.sql()
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise SQLRejected(
                f"{shown} builds a value of about {size:,.0f} bytes, more than max_result_bytes "
                f"({max_bytes:,}); select less, or raise --max-result-bytes / VOUCH_MAX_RESULT_BYTES",
                kind="too_large")
