"""DuckDB (optional extra ``[duckdb]``): a database file opened ``read_only``, or a folder
of CSV/Parquet files exposed as views of an in-memory database.

For a folder, the views are created first and then external access is switched off and the
configuration locked, so a query can read the folder's files through the views but cannot
open any other file, write one, install or load an extension, or undo those settings.

Memory is bounded as well: DuckDB's ``memory_limit`` is set from ``max_result_bytes`` (an
aggregate such as ``list(range)`` over 100M rows took 1.7 GB before), with spilling to a
private temporary folder (never beside the user's database), made only when a query spills
and removed on close. A few scalar functions build one value in a single step that neither
the memory limit nor the time limit reaches (``repeat('x', (SELECT 400000000))``: 865 MB and
2.6 s past a 1 s limit; ``range((SELECT 400000000))``: 15 GB and 46 s), and DuckDB holds the
values of 2,048 computed rows at once on each thread (``repeat('x', 1000000)`` over 1,000 rows: 2 GB):
``repeat``, ``lpad``, ``rpad``, ``list_resize``, ``array_resize`` and ``range`` /
``generate_series`` without a step are shadowed by temporary macros that refuse a value
larger than ``max_result_bytes`` / 8,192 before it is built, and calling the built-ins by a
qualified name (``system.main.repeat``) or as a method (``'x'.repeat(n)``) is refused.
``range`` / ``generate_series`` with a step are not guarded.

No rule read from the SQL bounds what a row of lists, lambdas and several such values holds,
so the guarantee comes from the kernel: the connection lives in a worker process of its own
(``db/duckdb_worker.py``) whose data segment may grow by ``memory_limit`` plus half a cap
and 64 MiB (``worker_bytes``); past that DuckDB stops the query with an out-of-memory error.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import ExecutionError, QueryTimeout, ReadOnlyViolation, SQLRejected, UserInputError
from ..settings import Config
from .base import ColumnInfo, Database, Fetch, ForeignKeyInfo, TableInfo, fetch_bounded
from .duckdb_worker import WORKER_ENDED, WorkerConnection

DATA_SUFFIXES = {".csv": "read_csv_auto", ".tsv": "read_csv_auto", ".parquet": "read_parquet"}


def _import_duckdb() -> ModuleType:
    try:
        import duckdb
    except ImportError:
        raise UserInputError("DuckDB support needs the duckdb extra: pip install 'vouchsql[duckdb]'") from None
    return duckdb


# Scalar functions that build one value of a size their arguments decide, and the temporary
# macro that shadows each: the size is checked before the built-in runs (every element or
# character is at least a byte). DuckDB computes 2,048 rows at a time on each thread and
# holds their values outside its memory_limit (repeat('x', 1000000) over 1,000 rows took
# 2 GB), and with a chunk queued, one being handed over and one being built per thread,
# several chunks are held at once: one value may hold at most max_result_bytes / 8,192
# (4 KiB at the default), so a chunk of one such column holds a quarter of the cap. Rows
# are better generated with FROM range(…). ``CAST(s AS VARCHAR)`` gives a length for text,
# blobs and lists alike. range/generate_series with a step are passed through unchecked:
# their size needs the types of the arguments, which a macro does not know. Whatever these
# miss, the worker's kernel limit stops (see worker_bytes).
_CHUNK_ROWS = 2048
_VALUE_SHARE = 4 * _CHUNK_ROWS
# DuckDB's threads in a worker: each holds a chunk of rows outside memory_limit, so the
# worker's bound grows with them.
_THREADS = min(4, os.cpu_count() or 1)
_TOO_BIG = ("error('{name}() would build a value over {cap_text} bytes: DuckDB computes 2,048 rows at once "
            "on each thread, so one value may hold at most max_result_bytes / 8,192; select less, generate "
            "rows with FROM range(...), or raise --max-result-bytes')")
_GUARDED_BUILDERS = {
    "repeat": "(s, n) AS system.main.repeat(s, CASE WHEN n > 0 AND n * length(CAST(s AS VARCHAR)) > {cap} "
              "THEN {too_big} ELSE n END)",
    "lpad": "(s, n, f) AS system.main.lpad(s, CASE WHEN n > {cap} THEN {too_big} ELSE n END, f)",
    "rpad": "(s, n, f) AS system.main.rpad(s, CASE WHEN n > {cap} THEN {too_big} ELSE n END, f)",
    "list_resize": "(l, n) AS system.main.list_resize(l, CASE WHEN n > {cap} THEN {too_big} ELSE n END), "
                   "(l, n, v) AS system.main.list_resize(l, CASE WHEN n > {cap} THEN {too_big} ELSE n END, v)",
    "array_resize": "(l, n) AS system.main.array_resize(l, CASE WHEN n > {cap} THEN {too_big} ELSE n END), "
                    "(l, n, v) AS system.main.array_resize(l, CASE WHEN n > {cap} THEN {too_big} ELSE n END, v)",
    "range": "(b) AS system.main.range(CASE WHEN b > {cap} THEN {too_big} ELSE b END), "
             "(a, b) AS system.main.range(a, CASE WHEN b - a > {cap} THEN {too_big} ELSE b END), "
             "(a, b, c) AS system.main.range(a, b, c)",
    "generate_series": "(b) AS system.main.generate_series(CASE WHEN b > {cap} THEN {too_big} ELSE b END), "
                       "(a, b) AS system.main.generate_series(a, CASE WHEN b - a > {cap} THEN {too_big} ELSE b END), "
                       "(a, b, c) AS system.main.generate_series(a, b, c)",
}
_QUALIFIED_BUILDER = re.compile(r"\.\s*\"?\s*(" + "|".join(_GUARDED_BUILDERS) + r")\s*\"?\s*\(", re.IGNORECASE)
_MiB = 1024 * 1024
# Errors after which the worker is replaced: its allocator keeps the address space it
# reached, or it is gone (db/duckdb_worker.py words the second).
_RESTART = ("DuckDB error: Out of Memory Error", f"DuckDB error: {WORKER_ENDED}")


def memory_limit(max_result_bytes: int, widest_table: int = 0) -> int:
    """DuckDB's memory_limit (what its buffer manager may hold: hash tables, sorts, buffered
    results) for a given byte cap: one cap and 128 MiB for the engine's own work; beyond it,
    DuckDB spills to disk or stops the query with an out-of-memory error. A scan holds
    buffers for every column of a table (a 10,000-column CSV needs about 640 MiB of DuckDB's
    accounting while its resident memory stays under 400 MB), so a wide table raises the
    limit to 96 KiB per column of the widest table."""
    return max(max_result_bytes + 128 * _MiB, widest_table * 96 * 1024)


def worker_bytes(max_result_bytes: int, limit: int) -> int:
    """How far the worker's data segment may grow once the database is open: DuckDB's
    ``memory_limit``; a cap for the chunks of rows DuckDB computes outside that limit (a
    chunk of a value at the builders' guard holds a quarter of the cap) and for the batch of
    rows on its way to Vouch's process (``fetch_bounded`` asks for at most a quarter of the
    cap at a time, and pickling copies it); and 64 MiB and 16 MiB per thread for the
    engine's own work and its allocator's arenas."""
    return limit + max_result_bytes + 64 * _MiB + 16 * _MiB * _THREADS


def data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in DATA_SUFFIXES)


def _view_name(path: Path, taken: set[str]) -> str:
    base = re.sub(r"\W+", "_", path.stem).strip("_") or "table"
    name, i = base, 2
    while name.lower() in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name.lower())
    return name


class DuckDBDatabase(Database):
    engine = "duckdb"
    default_schema = "main"
    dialect = "duckdb"

    def __init__(self, path: str | Path, config: Config) -> None:
        duckdb = _import_duckdb()
        self.path = Path(path).expanduser().resolve()
        super().__init__(str(self.path), config)
        self._duck_error = duckdb.Error
        self.files: list[Path] = []
        if self.path.is_dir():
            self.files = data_files(self.path)
            if not self.files:
                raise UserInputError(f"{self.path} is a folder with no .csv, .tsv or .parquet files")
        elif not self.path.exists():
            raise UserInputError(f"{self.path}: no such file")
        try:
            self._start()
        except duckdb.Error as exc:
            self._close_worker()
            self._remove_spill()
            raise UserInputError(f"{self.path}: cannot open with DuckDB ({str(exc).splitlines()[0]})") from None
        self._schema: list[TableInfo] | None = None

    _spill: str | None = None

    def _start(self) -> None:
        """A worker process with the database open in it, bounded and locked down."""
        if self.files:
            self._conn = WorkerConnection(":memory:", read_only=False)
            literals = [str(f).replace("'", "''") for f in self.files]
            # The views read their files at query time, so exactly these files stay
            # readable once external access is off (DuckDB >= 1.3). Older DuckDB has no
            # allowed_paths: the files are then loaded into in-memory tables instead.
            try:
                self._conn.execute("SET allowed_paths = [" + ", ".join(f"'{x}'" for x in literals) + "]")
                kind = "VIEW"
            except self._duck_error:
                kind = "TABLE"
            taken: set[str] = set()
            for f, literal in zip(self.files, literals):
                reader = DATA_SUFFIXES[f.suffix.lower()]
                self._conn.execute(
                    f'CREATE {kind} "{_view_name(f, taken)}" AS SELECT * FROM {reader}(\'{literal}\')')
        else:
            # read_only protects the database file; _lock_down stops COPY … TO, EXPORT and
            # read_csv('/any/file') from reaching the rest of the file system.
            self._conn = WorkerConnection(str(self.path), read_only=True)
        self._lock_down()

    def _catalogue(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Vouch's own catalogue query, with the same recovery as a user's: a worker that
        ended is replaced once, and a DuckDB error becomes a Vouch error."""
        for attempt in (1, 2):
            try:
                return self._conn.execute(sql, params).fetchall()
            except self._duck_error as exc:
                text = str(exc).splitlines()[0]
                if attempt == 1 and text.startswith(WORKER_ENDED):
                    self._restart()
                    continue
                raise ExecutionError(f"DuckDB error: {text}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _restart(self) -> None:
        """A fresh worker after one ran out of memory or ended. DuckDB's allocator keeps the
        address space it reached, so the next query in a worker that ran out of memory would
        start nearer the limit than in a new one, and its outcome would depend on what ran
        before."""
        self._close_worker()
        self._remove_spill()
        try:
            self._start()
        except self._duck_error as exc:
            raise ExecutionError(f"DuckDB error: cannot open {self.path} again after its worker process "
                                 f"stopped ({str(exc).splitlines()[0]})") from None

    def _lock_down(self) -> None:
        """Bound memory, guard the value builders, then shut external access and lock the
        configuration so that no query can undo any of it. Each connection has a worker
        process and a DuckDB instance of its own (db/duckdb_worker.py), so nothing here is
        shared with another connection."""
        max_bytes = self.config.max_result_bytes
        cap = max(1024, max_bytes // _VALUE_SHARE)  # bytes one built value may hold
        # DuckDB makes the folder only when a query first spills.
        self._spill = os.path.join(tempfile.gettempdir(), f"vouch-duckdb-spill-{uuid.uuid4().hex}")
        spill = self._spill.replace("'", "''")
        widest = self._conn.execute(
            "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM information_schema.columns "
            "GROUP BY table_catalog, table_schema, table_name)").fetchone()[0]
        limit = memory_limit(max_bytes, widest)
        statements = [f"SET memory_limit = '{limit // 1024}KiB'",
                      f"SET temp_directory = '{spill}'",
                      f"SET threads = {_THREADS}",
                      "SET enable_progress_bar = false",
                      # An extension a query needs is not fetched from the network.
                      "SET autoinstall_known_extensions = false"]
        # Temporary macros belong to the connection.
        for name, overloads in _GUARDED_BUILDERS.items():
            too_big = _TOO_BIG.format(name=name, cap_text=f"{cap:,}")
            statements.append(f"CREATE OR REPLACE TEMP MACRO {name}" + overloads.format(cap=int(cap), too_big=too_big))
        statements += ["SET enable_external_access = false", "SET lock_configuration = true"]
        # One message to the worker: DuckDB runs the statements in order and stops at the first
        # that fails.
        self._conn.execute(";\n".join(statements))
        # What DuckDB holds outside memory_limit (the chunks of rows being computed) and the
        # batch of rows on its way to this process share what is left of the worker's bound.
        self._worker_limit = worker_bytes(max_bytes, limit)
        self._conn.limit_memory(self._worker_limit)
        self._ran = 0  # user queries this worker has run

    def _remove_spill(self) -> None:
        if self._spill:
            shutil.rmtree(self._spill, ignore_errors=True)
            self._spill = None

    def close(self) -> None:
        try:
            self._close_worker()
        finally:
            self._remove_spill()

    def _close_worker(self) -> None:
        conn: WorkerConnection | None = getattr(self, "_conn", None)  # (None when opening failed)
        if conn is not None:
            conn.close()

    def _interrupt(self) -> None:
        self._conn.interrupt()

    def identity(self) -> str:
        paths = self.files or [self.path]
        parts = [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in paths]
        return "duckdb:" + "|".join(parts)

    def _check_select(self, sql: str) -> None:
        """DuckDB's own parser must see exactly one SELECT: allowed_paths lets a query read
        the folder's files but would also let COPY … TO overwrite them."""
        builtin = _QUALIFIED_BUILDER.search(sql)
        if builtin:
            raise SQLRejected(f"{builtin.group(1)}() called by a qualified name or as a method is not allowed: "
                              f"Vouch bounds the size of the value it builds only when it is called by its "
                              f"plain name",
                              kind="forbidden")
        extract = getattr(self._conn, "extract_statements", None)
        if extract is None:  # pragma: no cover - very old DuckDB
            return
        try:
            statements = extract(sql)
        except self._duck_error as exc:
            raise ExecutionError(f"DuckDB error: {str(exc).splitlines()[0]}") from None
        kinds = [str(st.type).rsplit(".", 1)[-1] for st in statements]
        if kinds != ["SELECT"]:
            raise ReadOnlyViolation(f"DuckDB refused: {', '.join(kinds) or 'empty'} statement "
                                    f"(Vouch runs exactly one SELECT, read-only)")

    def _run(self, sql: str, max_rows: int, timeout: float, max_bytes: int | None = None) -> Fetch:
        max_bytes = self.config.max_result_bytes if max_bytes is None else max_bytes
        start = time.monotonic()
        fresh = self._ran == 0
        try:
            return self._fetch(sql, max_rows, timeout, max_bytes)
        except ExecutionError as exc:
            if not exc.message.startswith(_RESTART):
                raise
            self._restart()  # the next query starts in a fresh worker
            left = timeout - (time.monotonic() - start)
            if (fresh and not exc.message.startswith(_RESTART[1])) or left <= 0:
                # Out of memory in a worker that had run nothing before: a fresh one would
                # fail the same way. Or no time is left for a second try.
                raise
        # Out of memory in a worker that ran other queries before (DuckDB's allocator keeps
        # the address space it reached), or the worker gone: the same query once more in the
        # fresh worker, within the time left, so that whether it fits depends on the query
        # alone, never on what ran before.
        try:
            return self._fetch(sql, max_rows, left, max_bytes)
        except ExecutionError as exc:
            if exc.message.startswith(_RESTART):
                self._restart()
            raise

    def _fetch(self, sql: str, max_rows: int, timeout: float, max_bytes: int) -> Fetch:
        self._check_select(sql)
        self._ran += 1
        query = self._conn.reserve()
        timer = threading.Timer(timeout, self._conn.interrupt, args=(query,))
        timer.start()
        start = time.monotonic()
        try:
            cur = self._conn.execute(sql, query=query)
            columns = [d[0] for d in cur.description or []]
            rows, truncated = fetch_bounded(cur.fetchmany, max_rows, max_bytes, start + timeout)
        except (self._duck_error, QueryTimeout) as exc:
            text = str(exc).splitlines()[0]
            if isinstance(exc, QueryTimeout) or "INTERRUPT" in text.upper() or time.monotonic() - start >= timeout:
                raise self._stopped(timeout) from None
            if "read-only" in text.lower() or "external access" in text.lower():
                raise ReadOnlyViolation(f"DuckDB refused: {text}") from None
            if text.startswith("Out of Memory Error"):
                raise ExecutionError(
                    f"DuckDB error: {text}: the query needs more memory than Vouch lets a DuckDB query use "
                    f"(about {self._worker_limit // _MiB:,} MiB, set by "
                    f"max_result_bytes); select fewer or narrower columns, or raise --max-result-bytes") from None
            raise ExecutionError(f"DuckDB error: {text}") from None
        finally:
            timer.cancel()
        return Fetch(columns, rows, truncated)

    def sample_method(self, table: str, total: int, schema: str | None = None) -> str:
        # DuckDB's seeded samples repeat only single-threaded (its documentation says so, and
        # SYSTEM gave two different samples in six runs on 2 threads here); a hash of the
        # rowid keeps the same rows on any number of threads. Views (a folder's files) have
        # no rowid: BERNOULLI with a seed, which gave one sample in 15 runs on 2 threads.
        info = next((t for t in self.schema() if t.name == table and t.schema == schema), None)
        return "rowid hash" if info is not None and not info.is_view else "BERNOULLI (seeded)"

    def sample_source(self, table: str, n: int, total: int, schema: str | None = None) -> str:
        ref = self.table_sql(table, schema)
        rate = min(1.0, n / total) if total > 0 else 1.0
        if self.sample_method(table, total, schema) == "rowid hash":
            return f"(SELECT * FROM {ref} WHERE hash(rowid) % 1000000 < {max(1, round(rate * 1_000_000))})"
        return f"(SELECT * FROM {ref} USING SAMPLE {100 * rate:.6f} PERCENT (bernoulli, 7))"

    def schema(self) -> list[TableInfo]:
        """Tables and views of the schemas the ``schemas`` setting names (default: ``main``),
        with their comments; a table outside ``main`` is keyed ``schema.name``."""
        if self._schema is not None:
            return self._schema
        read = self._catalogue
        here = read("SELECT current_database()")[0][0]
        known = [r[0] for r in read(
            "SELECT DISTINCT schema_name FROM duckdb_columns() WHERE NOT internal AND database_name = ? "
            "AND schema_name NOT IN ('information_schema', 'pg_catalog') ORDER BY 1", [here])]
        wanted = self.config.schemas
        if not wanted:
            chosen = ["main"]
        elif wanted == ("*",):
            chosen = sorted(known, key=lambda x: (x != "main", x))
        else:
            by_lower = {k.lower(): k for k in known}
            missing = [w for w in wanted if w.lower() not in by_lower and w.lower() != "main"]
            if missing:
                raise UserInputError(f"schema {', '.join(map(repr, missing))} not found in {self.target}; "
                                     f"it has: {', '.join(known) or 'none'}")
            chosen = [by_lower.get(w.lower(), "main") for w in wanted]
        place = ", ".join("?" for _ in chosen)

        def key(schema: str, name: str) -> tuple[str | None, str]:
            return (None if schema == "main" else schema, name)

        comments = {key(sch, t): c for sch, t, c in read(
            f"SELECT schema_name, table_name, comment FROM duckdb_tables() WHERE database_name = ? "
            f"AND schema_name IN ({place}) UNION ALL SELECT schema_name, view_name, comment FROM duckdb_views() "
            f"WHERE NOT internal AND database_name = ? AND schema_name IN ({place})",
            [here, *chosen, here, *chosen])}
        views = {key(sch, v) for sch, v in read(
            f"SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal AND database_name = ? "
            f"AND schema_name IN ({place})", [here, *chosen])}
        tables: dict[tuple[str | None, str], TableInfo] = {}
        for sch, tname, cname, ctype, nullable, comment in read(
                f"SELECT schema_name, table_name, column_name, data_type, is_nullable, comment FROM duckdb_columns() "
                f"WHERE NOT internal AND database_name = ? AND schema_name IN ({place}) "
                f"ORDER BY schema_name, table_name, column_index", [here, *chosen]):
            k = key(sch, tname)
            info = tables.get(k)
            if info is None:
                info = tables[k] = TableInfo(tname, [], is_view=k in views, schema=k[0], comment=comments.get(k))
            info.columns.append(ColumnInfo(cname, str(ctype), bool(nullable), comment))
        for sch, tname, ctype, cols, ref_table, ref_cols in read(
                f"SELECT schema_name, table_name, constraint_type, constraint_column_names, referenced_table, "
                f"referenced_column_names FROM duckdb_constraints() WHERE database_name = ? "
                f"AND schema_name IN ({place}) AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')",
                [here, *chosen]):
            info = tables.get(key(sch, tname))
            if info is None:
                continue
            if ctype == "PRIMARY KEY":
                info.primary_key = list(cols)
            else:  # DuckDB keeps a foreign key within its schema
                ref = ref_table if sch == "main" else f"{sch}.{ref_table}"
                info.foreign_keys.append(ForeignKeyInfo(list(cols), ref, list(ref_cols)))
        self._schema = [tables[k] for k in sorted(tables, key=lambda k: (k[0] is not None, k[0] or "", k[1]))]
        return self._schema
