"""The corpora as data: ``corpus/hostile_<engine>.toml`` and ``corpus/legit_<engine>.toml``.

Every entry is a ``[[case]]`` table with an ``id`` (unique in its file), a ``technique`` (a
short tag: what the statement tries) and the ``sql``. Hostile entries may add ``secret`` (the
name of a secret whose text must never come back: ``passwd``, ``marker``, ``authid``…) and
``nasty = true`` (also sent through the CLI and ``POST /api/check``). A hostile file may
also hold ``[[resource]]`` entries: statements that must end within the time limit + 1 s and
whose memory is measured in a child process (they need not be refused: a cut result is fine).

Placeholders, filled per world (see ``worlds``): ``{{OUT}}`` a file path, unique to the case,
that the statement would write (it must not exist afterwards), ``{{DIR}}`` the folder of a
file database, ``{{DSN}}`` a libpq connection string back to the PostgreSQL test database,
``{{DB}}`` the database name, ``{{TOKEN}}`` this session's token (names of objects a statement
would create), ``{{SECRET_DIR}}`` a folder holding secret files, ``{{VICTIM}}`` a file that
must survive, ``{{LOCK}}`` a lock name, ``{{TRAP}}`` the MariaDB database holding trap views.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
ENGINES = ("sqlite", "duckdb", "csv", "postgresql", "mariadb")
_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")


@dataclass(frozen=True)
class Case:
    engine: str
    kind: str  # "hostile", "legit" or "resource"
    id: str
    technique: str
    sql: str
    secret: tuple[str, ...] = ()
    nasty: bool = False
    extra: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.engine}:{self.id}"

    def render(self, values: dict[str, str]) -> str:
        def fill(match: re.Match) -> str:
            name = match.group(1)
            if name == "OUT":
                return values["OUT_FOR"](self.id)
            if name not in values:
                raise KeyError(f"{self.key}: no value for placeholder {{{{{name}}}}}")
            return values[name]
        return _PLACEHOLDER.sub(fill, self.sql)

    @property
    def writes_file(self) -> bool:
        return "{{OUT}}" in self.sql


def _load(path: Path, engine: str, kind: str, table: str) -> list[Case]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    cases, seen = [], set()
    for entry in data.get(table, []):
        unknown = set(entry) - {"id", "technique", "sql", "secret", "nasty", "max_rows"}
        if unknown:
            raise ValueError(f"{path.name}: {entry.get('id')}: unknown keys {sorted(unknown)}")
        cid = entry["id"]
        if cid in seen:
            raise ValueError(f"{path.name}: duplicate id {cid!r}")
        seen.add(cid)
        secret = entry.get("secret", ())
        secret = (secret,) if isinstance(secret, str) else tuple(secret)
        cases.append(Case(engine, kind, cid, entry["technique"], entry["sql"].strip(), secret,
                          bool(entry.get("nasty", False)),
                          {k: entry[k] for k in ("max_rows",) if k in entry}))
    return cases


def hostile(engine: str) -> list[Case]:
    return _load(CORPUS_DIR / f"hostile_{engine}.toml", engine, "hostile", "case")


def resources(engine: str) -> list[Case]:
    return _load(CORPUS_DIR / f"hostile_{engine}.toml", engine, "resource", "resource")


def legit(engine: str) -> list[Case]:
    return _load(CORPUS_DIR / f"legit_{engine}.toml", engine, "legit", "case") + named_in_text(engine)


# Names the server engines' policies refuse as calls, and the worlds' own trap functions
# (servers.py), written where they call nothing: in string literals and comments. Issue 27,
# item 6: a refused word there is not a call, and these reads must run.
_REFUSED_NAMES = {
    "postgresql": ("lo_export", "lo_import", "lo_unlink", "pg_read_file", "pg_read_binary_file", "pg_ls_dir",
                   "pg_stat_file", "dblink", "dblink_exec", "dblink_connect", "pg_file_write", "set_config",
                   "nextval", "setval", "txid_current", "pg_advisory_lock", "pg_try_advisory_lock",
                   "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_notify", "query_to_xml",
                   "cursor_to_xml", "schema_to_xml", "database_to_xml", "crosstab", "connectby", "xpath_table",
                   "ts_stat", "pg_switch_wal", "pg_create_logical_replication_slot", "pg_stat_reset",
                   "pg_logical_emit_message", "pg_promote", "lowrite", "loread", "evil_volatile",
                   "immutable_liar", "evil_op", "read_passwd", "evil_slot", "pg_rotate_logfile",
                   "pg_export_snapshot", "pg_backup_start", "pg_sleep_until_never"),
    "mariadb": ("load_file", "get_lock", "release_lock", "release_all_locks", "is_free_lock", "is_used_lock",
                "master_pos_wait", "master_gtid_wait", "source_pos_wait", "wait_for_executed_gtid_set",
                "nextval", "setval", "outfile", "dumpfile", "set_var", "sys_exec", "sys_eval",
                "global_priv", "authentication_string", "processlist", "processlist_info", "evil_global",
                "evil_write", "evil_lock", "evil_next", "read_passwd", "sleep_forever", "benchmark_me",
                "into_outfile", "mysql_user", "load_data", "lo_export", "pg_read_file", "dblink", "set_config",
                "last_insert_id_expr", "next_value_for", "user_variables", "sys_schema", "performance_schema",
                "general_log", "slow_log", "plugin_load", "shutdown_server", "kill_query"),
}
_IN_TEXT = (
    ("literal", "SELECT COUNT(*) AS n FROM Artist WHERE Name = '{w}'"),
    ("literal-call", "SELECT Name FROM Genre WHERE Name <> '{w}()' ORDER BY GenreId LIMIT 3"),
    ("line-comment", "SELECT COUNT(*) AS n FROM Album -- not {w}()\n"),
    ("block-comment", "SELECT /* {w}(1) is not called */ COUNT(*) AS n FROM Track"),
    ("label", "SELECT 'see {w}(x)' AS note, COUNT(*) AS n FROM Genre"),
    ("like", "SELECT Title FROM Album WHERE Title LIKE '%{w}%' ORDER BY AlbumId LIMIT 2"),
)


def named_in_text(engine: str) -> list[Case]:
    return [Case(engine, "legit", f"in-text-{kind}-{word}", f"refused-name-{kind}", sql.format(w=word))
            for word in _REFUSED_NAMES.get(engine, ()) for kind, sql in _IN_TEXT]


def nasty(engine: str) -> list[Case]:
    return [c for c in hostile(engine) if c.nasty]
