"""Code the database already holds, read from the server's catalogue: the trust boundary.

A ``SELECT`` runs more than its own text. On PostgreSQL a cast, a domain's CHECK, a row-level
security policy, an operator, an aggregate's support functions, a function's default
arguments, a view or a foreign table can each run code the database holds, as the reader or
(SECURITY DEFINER) as its owner; on MariaDB/MySQL a stored function, the procedures it calls
and a definer's view do. Following function names through the statement (:mod:`.policy`)
cannot be complete: the engine calls user code in more places than any list. So when a
server database is opened, this module inventories every such object **the connecting role
can reach** and that is not proven free of side effects, and Vouch refuses the database
unless each one is fenced off by the role (``vouch doctor`` prints the statements that make
such a role) or named as reviewed in the ``trusted_objects`` setting. The statement policy
stays as a second layer.

"Proven free of side effects" is narrow on purpose: a PostgreSQL function in ``LANGUAGE sql``
that is not SECURITY DEFINER, is declared STABLE or IMMUTABLE, and whose body uses no
function, view or relation the statement policy refuses and no unproven user function.
Everything else — PL/pgSQL, C, any MariaDB stored function — is code a person must review.
Functions of reviewed contrib extensions (``SAFE_PG_EXTENSIONS``) compute values only.

"Reachable" follows the engine's own permission checks: PostgreSQL checks ``EXECUTE`` on every
function a query runs (casts, domain checks, policies and operators included), ``SELECT`` on
views and foreign tables; it does **not** check anything for the support functions of types,
operator classes and ranges, nor for the built-in functions a domain's CHECK calls, so those
are reachable by anyone who can name the type. MariaDB checks ``EXECUTE`` on a stored
function called directly, but a view runs its definer's functions for anyone who may read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, cast

from pydantic import BaseModel, Field

from .policy import PG_SECRET_RELATIONS, words

if TYPE_CHECKING:  # sqlalchemy is imported only for a server database
    from sqlalchemy.engine import Connection

DOCS = "docs/security.md#code-the-database-holds"

# Contrib extensions whose functions compute values from their arguments only: reviewed.
# Those that reach other servers, files or storage, or run SQL given as text (dblink,
# postgres_fdw, file_fdw, adminpack, lo, tablefunc, xml2, pageinspect …) are not here.
SAFE_PG_EXTENSIONS = frozenset({
    "plpgsql", "btree_gin", "btree_gist", "citext", "cube", "dict_int", "dict_xsyn", "earthdistance",
    "fuzzystrmatch", "hstore", "intagg", "intarray", "isn", "ltree", "pg_trgm", "pgcrypto", "seg",
    "tsm_system_rows", "tsm_system_time", "unaccent", "uuid-ossp", "bloom", "sslinfo",
    # trigger functions only: they run on writes, which Vouch never makes
    "autoinc", "insert_username", "moddatetime", "refint", "tcn",
})

# What each extension that is not reviewed does, where it is known.
_PG_EXTENSION_WHY = {
    "tablefunc": "crosstab() and connectby() run SQL given as text",
    "xml2": "xpath_table() runs SQL given as text",
    "dblink": "it opens sessions to other servers, which are not read-only",
    "postgres_fdw": "it reaches other servers",
    "file_fdw": "a foreign table can read server files or run a program",
    "adminpack": "it writes server files",
    "lo": "it reads and writes large objects",
}

_PG_SYSTEM = "('pg_catalog', 'information_schema', 'pg_toast')"
_PG_UNCALLABLE = ("internal", "trigger", "event_trigger", "language_handler", "fdw_handler",
                  "index_am_handler", "tsm_handler", "table_am_handler")

# Functions outside the system schemas (procedures cannot be reached from a SELECT; trigger
# and handler functions run only on writes or inside the engine), with what decides whether
# they are proven: language, SECURITY DEFINER, volatility, the body as the engine runs it
# (BEGIN ATOMIC bodies from pg_get_function_sqlbody; default-argument expressions; an
# aggregate's support functions) and who may EXECUTE them.
PG_FUNCTIONS_SQL = f"""
SELECT p.oid, quote_ident(n.nspname) || '.' || quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid) || ')',
       n.nspname, lower(p.proname), l.lanname, p.prosecdef, p.provolatile, p.prokind,
       e.extname,
       has_function_privilege(%(role)s, p.oid, 'EXECUTE'),
       EXISTS (SELECT 1 FROM aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
               WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'),
       CASE WHEN p.prokind = 'a' THEN
              (SELECT concat_ws(' ', a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggserialfn,
                                a.aggdeserialfn, a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn)
               FROM pg_catalog.pg_aggregate a WHERE a.aggfnoid = p.oid)
            ELSE concat_ws(' ', {{body}}, pg_catalog.pg_get_expr(p.proargdefaults, 0)) END
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
JOIN pg_catalog.pg_language l ON l.oid = p.prolang
LEFT JOIN pg_catalog.pg_depend d
  ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
LEFT JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
WHERE n.nspname NOT IN {_PG_SYSTEM} AND p.prokind <> 'p'
  AND p.prorettype::regtype::text NOT IN ({", ".join(f"'{t}'" for t in _PG_UNCALLABLE)})
ORDER BY 1
"""
# PostgreSQL 14 keeps a BEGIN ATOMIC body as a parse tree with an empty prosrc.
_PG_BODY_14 = ("CASE WHEN p.prosqlbody IS NOT NULL THEN pg_catalog.pg_get_function_sqlbody(p.oid) "
               "ELSE p.prosrc END")

# Where a function runs without being named: casts, operators (and their planner estimators),
# domain checks, policies, the support functions of types, ranges and operator classes.
PG_USES_SQL = f"""
SELECT 'cast ' || format_type(c.castsource, NULL) || ' -> ' || format_type(c.casttarget, NULL), c.castfunc, true
  FROM pg_catalog.pg_cast c WHERE c.castfunc <> 0 AND c.oid >= 16384
UNION ALL
SELECT 'operator ' || n.nspname || '.' || o.oprname, f.fn, f.checked
  FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace,
  LATERAL (VALUES (o.oprcode::oid, true), (o.oprrest::oid, false), (o.oprjoin::oid, false)) AS f(fn, checked)
  WHERE n.nspname NOT IN {_PG_SYSTEM} AND f.fn <> 0
UNION ALL
SELECT 'type ' || n.nspname || '.' || t.typname, f.fn, false
  FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace,
  LATERAL (VALUES (t.typinput::oid), (t.typoutput::oid), (t.typreceive::oid), (t.typsend::oid),
                  (t.typmodin::oid), (t.typmodout::oid), (t.typanalyze::oid)) AS f(fn)
  WHERE n.nspname NOT IN {_PG_SYSTEM} AND f.fn <> 0
UNION ALL
SELECT 'range type ' || n.nspname || '.' || t.typname, f.fn, false
  FROM pg_catalog.pg_range r JOIN pg_catalog.pg_type t ON t.oid = r.rngtypid
  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace,
  LATERAL (VALUES (r.rngcanonical::oid), (r.rngsubdiff::oid)) AS f(fn)
  WHERE n.nspname NOT IN {_PG_SYSTEM} AND f.fn <> 0
UNION ALL
SELECT 'operator class ' || n.nspname || '.' || f.opfname, a.amproc, false
  FROM pg_catalog.pg_amproc a JOIN pg_catalog.pg_opfamily f ON f.oid = a.amprocfamily
  JOIN pg_catalog.pg_namespace n ON n.oid = f.opfnamespace
  WHERE n.nspname NOT IN {_PG_SYSTEM}
"""

# Expressions that run implicitly and may call built-in functions no role can be denied:
# domain CHECKs (run on every cast to the domain) and row-level security policies (run on
# every read of the table, when the role may read it).
PG_EXPRESSIONS_SQL = f"""
SELECT 'domain', n.nspname || '.' || t.typname, pg_catalog.pg_get_constraintdef(c.oid), true, NULL::text
  FROM pg_catalog.pg_constraint c JOIN pg_catalog.pg_type t ON t.oid = c.contypid
  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
  WHERE c.contypid <> 0 AND n.nspname NOT IN {_PG_SYSTEM}
UNION ALL
SELECT 'policy', n.nspname || '.' || c.relname || ' (' || p.polname || ')',
       concat_ws(' ', pg_catalog.pg_get_expr(p.polqual, p.polrelid), pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid)),
       has_table_privilege(%(role)s, c.oid, 'SELECT'),
       quote_ident(n.nspname) || '.' || quote_ident(c.relname)
  FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class c ON c.oid = p.polrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relrowsecurity
"""

# Views (they run their functions each time they are read) and foreign tables (reading one
# reaches another server, a file or a program), with whether the role may read them.
PG_RELATIONS_SQL = f"""
SELECT c.relkind::text, n.nspname || '.' || c.relname, quote_ident(n.nspname) || '.' || quote_ident(c.relname),
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid)
            ELSE (SELECT w.fdwname || ' ' || array_to_string(COALESCE(ft.ftoptions, '{{}}'), ' ')
                  FROM pg_catalog.pg_foreign_table ft JOIN pg_catalog.pg_foreign_server s ON s.oid = ft.ftserver
                  JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw WHERE ft.ftrelid = c.oid) END,
       has_table_privilege(%(role)s, c.oid, 'SELECT')
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('v', 'f') AND n.nspname NOT IN {_PG_SYSTEM}
"""


class HeldCode(BaseModel):
    """One object the database holds that runs code when a query reaches it."""

    kind: str = Field(description="function, aggregate, extension, view, foreign table, domain, policy, "
                                  "stored function, loadable function")
    name: str = Field(description="schema-qualified name; the name to list in trusted_objects")
    why: str = Field(description="why it is not proven free of side effects")
    used_by: list[str] = Field(default_factory=list, description="where it runs without being named")
    fence: list[str] = Field(default_factory=list,
                             description="statements (run as an administrator) that keep the reader role from it; "
                                         "empty where no role can be kept from it")

    def line(self) -> str:
        used = f"; runs in {', '.join(self.used_by[:3])}" + (
            f" and {len(self.used_by) - 3} more" if len(self.used_by) > 3 else "") if self.used_by else ""
        return f"{self.kind} {self.name}: {self.why}{used}"


class TrustReport(BaseModel):
    """What the connecting role can reach that runs code the database holds."""

    engine: str
    role: str = Field(description="the role the queries run as")
    found: list[HeldCode] = Field(default_factory=list, description="reachable and not proven free of side effects")
    trusted: list[str] = Field(default_factory=list, description="found objects named in trusted_objects")

    @property
    def untrusted(self) -> list[HeldCode]:
        return [h for h in self.found if not _is_trusted(h, self.trusted)]

    def refusal(self, target: str) -> str:
        """The one message a refused database gets."""
        held = self.untrusted
        shown = "; ".join(h.line() for h in held[:4]) + (f"; and {len(held) - 4} more" if len(held) > 4 else "")
        return (f"{target} holds code that a query can run as {self.role} and that Vouch cannot prove free of "
                f"side effects ({len(held)} object{'s' if len(held) != 1 else ''}: {shown}). Either connect as a "
                f"role that cannot reach it (`vouch doctor --db URL` prints the statements that make one), or, "
                f"once a person has reviewed each object, name it in the trusted_objects setting "
                f"(--trusted-objects / VOUCH_TRUSTED_OBJECTS); see {DOCS}")


def _is_trusted(held: HeldCode, trusted: list[str]) -> bool:
    return held.name in trusted


def match_trusted(found: list[HeldCode], names: Iterable[str] | None) -> list[str]:
    """The names of ``found`` that ``names`` (the trusted_objects setting) covers: ``*``
    covers all; a name matches case-insensitively, ``extension:NAME`` an extension."""
    wanted = {n.strip().lower() for n in (names or ()) if n.strip()}
    if "*" in wanted:
        return [h.name for h in found]
    return [h.name for h in found if h.name.lower() in wanted]


# -- PostgreSQL ---------------------------------------------------------------------------------

@dataclass
class _Fn:
    oid: int
    signature: str
    schema: str
    name: str
    language: str
    definer: bool
    volatility: str
    kind: str
    extension: str | None
    can_execute: bool
    via_public: bool
    body: str
    used_by: list[str] = field(default_factory=list)
    unchecked: bool = False  # reached where the engine checks no EXECUTE


def postgresql_report(conn: Connection, role: str, refused: set[str], refused_views: set[str]) -> TrustReport:
    """The trust report for ``role`` (the role queries run as) on a PostgreSQL connection.
    ``refused`` and ``refused_views``: the names the statement policy refuses (built-in
    functions and views), whose use by implicit code is not proven free of side effects."""
    version = int(cast(str, conn.exec_driver_sql("SHOW server_version_num").scalar()))  # SHOW: text
    body = _PG_BODY_14 if version >= 140000 else "p.prosrc"
    params = {"role": role}
    fns = [_Fn(*row) for row in conn.exec_driver_sql(PG_FUNCTIONS_SQL.format(body=body), params).fetchall()]
    by_oid = {f.oid: f for f in fns}
    for where, oid, checked in conn.exec_driver_sql(PG_USES_SQL).fetchall():
        fn = by_oid.get(int(oid))
        if fn is not None:
            fn.used_by.append(where)
            fn.unchecked = fn.unchecked or not checked
    unproven = _pg_unproven(fns, refused | refused_views | PG_SECRET_RELATIONS)
    # What implicit code may not use: a refused built-in or secret relation (no role can be
    # kept from those), or an unproven user function the role can reach (one it cannot
    # EXECUTE fails with "permission denied" instead of running).
    user = {f.name for f in fns if not f.extension}
    builtin_bad = (refused - user) | refused_views | PG_SECRET_RELATIONS
    reachable_bad = {f.name: f for f in fns if (f.can_execute or f.unchecked) and (
        f.signature in unproven or (f.extension and f.extension not in SAFE_PG_EXTENSIONS))}
    bad_words = builtin_bad | reachable_bad.keys()
    expressions = conn.exec_driver_sql(PG_EXPRESSIONS_SQL, params).fetchall()
    for kind, name, expression, reachable, _table in expressions:
        for word in words(expression or "") & reachable_bad.keys() if reachable else ():
            reachable_bad[word].used_by.append(f"{kind} {name}")
    found: list[HeldCode] = []
    extensions: dict[str, list[_Fn]] = {}
    for fn in fns:
        if fn.extension:
            if fn.extension not in SAFE_PG_EXTENSIONS and (fn.can_execute or fn.unchecked):
                extensions.setdefault(fn.extension, []).append(fn)
            continue
        if fn.signature not in unproven or not (fn.can_execute or fn.unchecked):
            continue
        fence = [] if fn.unchecked else _pg_revoke_execute(fn)
        found.append(HeldCode(kind="aggregate" if fn.kind == "a" else "function", name=f"{fn.schema}.{fn.name}",
                              why=unproven[fn.signature], used_by=fn.used_by, fence=fence))
    for ext, members in sorted(extensions.items()):
        why = _PG_EXTENSION_WHY.get(ext, "its functions are not on Vouch's list of reviewed extensions")
        fence = [] if any(f.unchecked for f in members) else [s for f in members for s in _pg_revoke_execute(f)]
        found.append(HeldCode(kind="extension", name=f"extension:{ext}", why=why,
                              used_by=sorted({u for f in members for u in f.used_by}), fence=fence))
    for kind, name, expression, reachable, table in expressions:
        # A user function here is fenced by EXECUTE and listed above; a built-in is not.
        hit = sorted(words(expression or "") & builtin_bad)
        if not hit or not reachable:
            continue
        if kind == "domain":
            found.append(HeldCode(kind="domain", name=name, why=f"its CHECK calls {hit[0]}, which runs on every cast "
                                                                f"to the domain, whatever the role", fence=[]))
        else:
            found.append(HeldCode(kind="policy", name=name, why=f"the row-level security policy calls {hit[0]}, "
                                                                f"which runs on every read of the table",
                                  fence=[f"REVOKE SELECT ON {table} FROM {{reader}};"]))
    for relkind, name, quoted, definition, readable in conn.exec_driver_sql(PG_RELATIONS_SQL, params).fetchall():
        if not readable:
            continue
        if relkind == "f":
            found.append(HeldCode(kind="foreign table", name=name,
                                  why=f"reading it reaches outside the database ({(definition or '').split(' ')[0]})",
                                  fence=[f"REVOKE SELECT ON {quoted} FROM {{reader}};"]))
            continue
        hit = sorted(words(definition or "") & bad_words)
        if hit:
            found.append(HeldCode(kind="view", name=name, why=f"reading it runs {hit[0]}",
                                  fence=[f"REVOKE SELECT ON {quoted} FROM {{reader}};"]))
    return TrustReport(engine="postgresql", role=role, found=found)


def _pg_unproven(fns: list[_Fn], bad: set[str]) -> dict[str, str]:
    """signature → why, for each user function not proven free of side effects (the
    greatest set of SQL functions that use only proven functions is proven)."""
    why: dict[str, str] = {}
    for fn in fns:
        if fn.extension:
            continue
        if fn.kind == "a":
            continue  # decided by its support functions below
        if fn.definer:
            why[fn.signature] = f"SECURITY DEFINER (LANGUAGE {fn.language}): it runs with its owner's powers"
        elif fn.language != "sql":
            why[fn.signature] = f"LANGUAGE {fn.language}: Vouch does not prove what such a body does"
        elif fn.volatility == "v":
            why[fn.signature] = "declared VOLATILE: it may change state"
    changed = True
    while changed:
        changed = False
        names = {f.name for f in fns if f.signature in why}
        for fn in fns:
            if fn.extension or fn.signature in why:
                continue
            hit = sorted(words(fn.body or "") & (bad | names))
            if hit:
                what = "support function" if fn.kind == "a" else "body"
                why[fn.signature] = f"its {what} uses {hit[0]}"
                changed = True
    for fn in fns:  # refused by the statement policy for a reason of its own
        if not fn.extension and fn.signature not in why and fn.name in bad:
            why[fn.signature] = "the statement policy refuses it"
    return why


def _pg_revoke_execute(fn: _Fn) -> list[str]:
    """Keep the reader from ``fn``. EXECUTE is granted to every role (PUBLIC) by default and
    no role can be left out of PUBLIC, so it is revoked from PUBLIC (to be granted back to
    the roles that use it); a grant to the reader itself is revoked from the reader."""
    return [f"REVOKE EXECUTE ON FUNCTION {fn.signature} FROM {'PUBLIC' if fn.via_public else '{reader}'};"]


# -- MariaDB / MySQL ------------------------------------------------------------------------------

MY_ROUTINES_SQL = (
    "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, SECURITY_TYPE, SQL_DATA_ACCESS FROM information_schema.ROUTINES "
    "WHERE ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_SCHEMA NOT IN ('mysql', 'sys', 'information_schema', "
    "'performance_schema') ORDER BY 1, 2")
MY_VIEWS_SQL = (
    "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION, SECURITY_TYPE, DEFINER FROM information_schema.VIEWS "
    "WHERE TABLE_SCHEMA NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema') ORDER BY 1, 2")


def mysql_report(conn: Connection, refused: set[str], engine: str = "mariadb") -> TrustReport:
    """The trust report for the connecting account on MariaDB/MySQL. Every stored function
    the account can see is code to review (a body may ``SET`` a global or ``CALL`` a
    procedure in forms no scan follows; definer functions run with their definer's powers);
    a view is reached when it calls a stored function or a refused built-in, or when the
    account cannot read its definition (no ``SHOW VIEW``), since then nothing about it is known."""
    account = str(conn.exec_driver_sql("SELECT CURRENT_USER()").scalar())
    found: list[HeldCode] = []
    functions: set[str] = set()
    for schema, name, security, access in conn.exec_driver_sql(MY_ROUTINES_SQL).fetchall():
        functions.add(str(name).lower())
        why = (f"a stored function ({access}, SQL SECURITY {security}): Vouch does not prove what its body does"
               + ("; it runs with its definer's powers" if security == "DEFINER" else ""))
        found.append(HeldCode(kind="stored function", name=f"{schema}.{name}", why=why,
                              fence=["-- no EXECUTE is granted to the reader"]))
    bad = refused | functions
    views = conn.exec_driver_sql(MY_VIEWS_SQL).fetchall()
    held: dict[str, str] = {}
    changed = True
    while changed:  # a view over a view over a function …
        changed = False
        for schema, name, definition, security, definer in views:
            if f"{schema}.{name}" in held:
                continue
            if not definition:
                why = "the account cannot read its definition (no SHOW VIEW), so what it runs is unknown"
            else:
                hit = sorted(words(definition) & (bad | {n.rsplit(".", 1)[-1].lower() for n in held}))
                if not hit:
                    continue
                why = f"reading it runs {hit[0]}" + (f" as its definer {definer}" if security == "DEFINER" else "")
            held[f"{schema}.{name}"] = why
            changed = True
    for qualified, why in held.items():
        found.append(HeldCode(kind="view", name=qualified, why=why, fence=["-- left out of the reader's grants"]))
    return TrustReport(engine=engine, role=account, found=found)


