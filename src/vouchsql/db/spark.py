"""Spark SQL (optional extra ``[spark]``): Spark Connect (``sc://host:port``, which also
reaches managed Spark services) or an in-process local session (``spark-local://``).

Targets:

- ``sc://host:port[/;param=value;…]`` — a Spark Connect server. Spark's own parameters
  (``token``, ``user_id``, ``use_ssl``, ``session_id``, headers such as
  ``x-databricks-cluster-id``) pass through to pyspark; Vouch's own, ``database=NAME``, picks
  the database (schema) unqualified names resolve to and is not sent.
- ``spark-local://[?database=NAME]`` — the process's local Spark session (the one already
  running, as in a notebook or the tests, or a new ``local[*]`` one), in a session of its
  own (``SparkSession.newSession``: its own configuration and temporary views, the catalog
  and the cluster shared).
- ``spark-local:///abs/folder`` — a folder of Parquet data: each ``*.parquet`` file, and each
  sub-folder holding Parquet files (what Spark writes for a table, partitions included),
  becomes an external table of a private database in the session's in-memory catalog,
  named after the file or folder.

Read-only comes from Spark itself, in four layers; nothing the caller wrote reaches
``spark.sql()`` as a statement of its own:

1. The sqlglot gate (one SELECT), then a word scan of the text for functions that act
   outside the query (``reflect``, ``java_method``, ``try_reflect``; managed services'
   ``read_files``, ``secret``, ``http_request``, ``ai_query`` …; every function of the
   catalogue that is not built in, since Vouch cannot read what its code does), refused
   before Spark sees the text.
2. The text is wrapped as ``SELECT * FROM (\\n<sql>\\n) AS vouch_q LIMIT n``, so Spark's own
   parser can only read a query: a command (``CREATE``, ``INSERT``, ``SET``, ``ADD JAR``,
   ``CACHE``, ``EXECUTE IMMEDIATE`` …) is a syntax error there. This matters:
   ``EXPLAIN EXTENDED EXECUTE IMMEDIATE 'CREATE TABLE …'`` *created the table* on Spark
   4.3 while it was being analysed, so a plan is never asked for unwrapped text.
3. ``EXPLAIN EXTENDED`` of the wrapped text (analysis, no execution) gives Spark's analyzed
   logical plan, with every view expanded: each operator must be on a reviewed list of
   query operators (``ScriptTransformation`` — ``SELECT TRANSFORM … USING 'sh …'`` — and
   any operator Spark adds later are refused), every file relation must be a catalogue
   table (``parquet.`/path``` is refused), and the functions of layer 1 must not appear in it
   (a view that calls ``reflect`` is refused too).
4. The session runs with ``spark.sql.runSQLOnFiles=false``, so ``parquet.`/path``` does not
   even resolve to files.

The time limit cancels the job: the query's jobs carry a tag (``SparkContext.addJobTag`` in
a local session, ``SparkSession.addTag`` over Spark Connect) that a timer cancels
(``cancelJobsWithTag`` / ``interruptTag``). Rows and bytes: the wrapper's ``LIMIT`` stops
Spark at ``max_rows + 1``, text and binary cells are cut to their share of
``max_result_bytes`` by Spark (``substring``) before they are sent, and the rows stream
(``toLocalIterator``) through :func:`fetch_bounded`.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import OrderedDict
import re
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, cast

from ..errors import ExecutionError, QueryTimeout, ReadOnlyViolation, SQLRejected, UserInputError, VouchError
from ..settings import Config
from .base import ColumnInfo, Database, Fetch, ForeignKeyInfo, TableInfo, fetch_bounded
from .policy import forbidden, words

if TYPE_CHECKING:
    from .stats import TableStatistics

LOCAL_SCHEME = "spark-local"
CONNECT_SCHEME = "sc"

# Functions that act outside the query: a static Java method of the caller's choosing
# (System.exit, System.setProperty …), and, on managed services, files, secrets, HTTP and
# model endpoints. Refused by name in the text and in the analyzed plan.
REFUSED_FUNCTIONS: dict[str, str] = {
    "reflect": "it calls any static Java method on the driver or the executors",
    "java_method": "it calls any static Java method on the driver or the executors",
    "try_reflect": "it calls any static Java method on the driver or the executors",
    "read_files": "it reads files by path, outside the catalogue's tables",
    "read_kafka": "it reads a stream from outside the catalogue",
    "read_kinesis": "it reads a stream from outside the catalogue",
    "read_pubsub": "it reads a stream from outside the catalogue",
    "read_pulsar": "it reads a stream from outside the catalogue",
    "read_statestore": "it reads a streaming query's state files",
    "read_state_metadata": "it reads a streaming query's state files",
    "cloud_files_state": "it reads a stream's checkpoint files",
    "secret": "it returns a secret of the workspace",
    "try_secret": "it returns a secret of the workspace",
    "list_secrets": "it lists the secrets of the workspace",
    "http_request": "it sends an HTTP request",
    "ai_query": "it calls a model endpoint, outside the query",
    "vector_search": "it calls a search endpoint, outside the query",
}

# Operators of an analyzed logical plan that only read (Spark 4.x). Anything else — a
# command, ScriptTransformation, a Python/pandas UDF operator, a streaming relation, an
# operator a later Spark adds — is refused, naming it.
QUERY_OPERATORS = frozenset({
    "Project", "Filter", "Aggregate", "Join", "LateralJoin", "SubqueryAlias", "View", "Relation",
    "HiveTableRelation", "RelationV2", "LocalRelation", "OneRowRelation", "Range", "Sort", "GlobalLimit",
    "LocalLimit", "Offset", "Tail", "Union", "Intersect", "Except", "Distinct", "Deduplicate", "Window",
    "WindowGroupLimit", "Generate", "Expand", "Sample", "WithCTE", "CTERelationDef", "CTERelationRef",
    "UnionLoop", "UnionLoopRef", "ResolvedHint", "Repartition", "RepartitionByExpression",
    "RebalancePartitions", "InMemoryRelation", "LogicalRDD", "Pivot", "Unpivot", "Subquery",
})

# Class names that mark code Vouch cannot read, wherever they appear in a plan.
_OPAQUE_CODE = re.compile(r"\b(PythonUDF|PythonUDTF|ScalaUDF|ScalaUDAF|HiveSimpleUDF|HiveGenericUDF|"
                          r"HiveGenericUDTF|HiveUDAFFunction|JavaUDF|UserDefinedPythonFunction)\b")
# A child line of a tree string: indentation, ':' and '|' bars, then '+- ' or ':- ', the name.
_CHILD_LINE = re.compile(r"^[ :|]*[+:]- ([A-Za-z][\w]*)")
_MiB = 1024 * 1024
# Samples kept cached at once (sample_source): ~100,000 rows each, in the cluster's memory.
CACHED_SAMPLES = 4
_ANALYZED = "== Analyzed Logical Plan =="


def _import_pyspark() -> Any:  # pyspark's SparkSession class (typed Any: pyspark is optional)
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import SparkSession
    except ImportError:
        raise UserInputError("Spark support needs the spark extra: pip install 'vouchsql[spark]' "
                             "(and Java 17 or later for a local session)") from None
    return SparkSession


def parse_target(target: str) -> dict[str, Any]:
    """``{"kind": "connect"|"local", "url": …, "folder": …, "database": …}`` from a target."""
    scheme, _, rest = target.partition("://")
    scheme = scheme.lower()
    if scheme == CONNECT_SCHEME:
        # sc://host:port/;a=b;c=d — Spark Connect's own form. Vouch takes database= out.
        head, _, params = rest.partition("/;")
        kept, database = [], None
        for part in filter(None, params.split(";")):
            key, _, value = part.partition("=")
            if key.strip().lower() == "database":
                database = urllib.parse.unquote(value.strip()) or None
            else:
                kept.append(part)
        url = f"sc://{head.rstrip('/')}" + ("/;" + ";".join(kept) if kept else "")
        return {"kind": "connect", "url": url, "folder": None, "database": database}
    if scheme == LOCAL_SCHEME:
        parsed = urllib.parse.urlsplit("x://" + rest)
        query: Mapping[str, Sequence[str | None]] = urllib.parse.parse_qs(parsed.query)
        unknown = set(query) - {"database"}
        if unknown:
            raise UserInputError(f"{target}: unknown parameter {sorted(unknown)[0]!r}; "
                                 f"spark-local:// takes ?database=NAME")
        path = urllib.parse.unquote(parsed.netloc + parsed.path)
        return {"kind": "local", "url": None, "folder": Path(path).expanduser() if path.strip("/") else None,
                "database": (query.get("database") or [None])[0]}
    raise UserInputError(f"{target}: not a Spark target (sc://host:port or spark-local://)")


def is_spark_target(text: str) -> bool:
    return text.split("://", 1)[0].lower() in (CONNECT_SCHEME, LOCAL_SCHEME) and "://" in text


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "desc", None) or exc).strip()
    if text.startswith("An error occurred while calling"):
        # py4j's wrapper of a Java exception pyspark does not convert: the cause follows.
        rest = [line.strip().lstrip(":").strip() for line in text.splitlines()[1:] if line.strip()]
        text = rest[0] if rest else text
    # Spark's messages start with the error class in brackets and end with the SQL and its
    # position; the first line says what is wrong.
    line = (text.splitlines() or [type(exc).__name__])[0].strip()
    return re.sub(r"^(org\.apache\.spark\.\S+|pyspark\.\S+):\s*", "", line)


def _quote_part(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class SparkDatabase(Database):
    engine = "spark"
    dialect = "spark"
    _running: tuple[str, threading.Event] | None = None  # the tag of the query running now

    def __init__(self, target: str, config: Config, *, session: Any = None) -> None:
        SparkSession = _import_pyspark()
        spec = parse_target(target)
        shown = spec["url"] or target
        # A token in the URL is never shown (errors, the profile's target, the web page).
        shown = re.sub(r"(token=)[^;]*", r"\1***", shown, flags=re.IGNORECASE)
        super().__init__(shown, config)
        self._remote = spec["kind"] == "connect"
        self._folder: Path | None = None
        try:
            if session is not None:
                self._spark = session
            elif self._remote:
                # Spark Connect's own class, create(): a session of Vouch's own on the server,
                # never a caller's. (pyspark's SparkSession.builder.remote() would also switch
                # the whole process into Connect mode, SPARK_CONNECT_MODE_ENABLED, and with it
                # every local session's API.)
                from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

                self._spark = RemoteSparkSession.builder.remote(spec["url"]).create()
            else:
                self._spark = _local_session(SparkSession).newSession()
        except VouchError:
            raise
        except Exception as exc:  # noqa: BLE001 - py4j, gRPC and Java start-up errors alike
            raise UserInputError(f"cannot open Spark at {shown}: {_first_line(exc)}") from None
        self._owns_session = session is None
        self._errors = _spark_errors()
        try:
            self._conf_set("spark.sql.runSQLOnFiles", "false")
            if spec["folder"] is not None:
                self._register_folder(spec["folder"])
            elif spec["database"]:
                if not self._spark.catalog.databaseExists(spec["database"]):
                    raise UserInputError(f"{shown}: no database {spec['database']!r}; it has: "
                                         f"{', '.join(self._database_names()) or 'none'}")
                self._spark.catalog.setCurrentDatabase(spec["database"])
            self.default_schema = self._spark.catalog.currentDatabase()
        except VouchError:
            self.close()
            raise
        except self._errors as exc:
            self.close()
            raise UserInputError(f"cannot open Spark at {shown}: {_first_line(exc)}") from None
        self._schema: list[TableInfo] | None = None
        self._user_functions: dict[str, str] | None = None
        # Cached sample views of this session (sample_source), oldest first.
        self._samples: OrderedDict[str, None] = OrderedDict()

    # -- set-up ------------------------------------------------------------------------
    def _conf_set(self, key: str, value: str) -> None:
        try:
            self._spark.conf.set(key, value)
        except self._errors:
            # A server that does not let a session change it keeps layer 3 as the guarantee.
            pass

    def _database_names(self) -> list[str]:
        return sorted(d.name for d in self._spark.catalog.listDatabases())

    def _register_folder(self, folder: Path) -> None:
        folder = folder.resolve()
        if not folder.is_dir():
            raise UserInputError(f"{folder}: no such folder (spark-local:///folder names a folder of Parquet data)")
        entries = [p for p in sorted(folder.iterdir())
                   if (p.is_file() and p.suffix.lower() == ".parquet")
                   or (p.is_dir() and not p.name.startswith((".", "_")) and any(p.rglob("*.parquet")))]
        if not entries:
            raise UserInputError(f"{folder} holds no .parquet files or folders of Parquet files")
        impl = self._spark.conf.get("spark.sql.catalogImplementation", "in-memory")
        if impl != "in-memory":
            # The tables are registered in the catalogue: only where it lives in this process.
            raise UserInputError(f"{folder}: a folder target needs a Spark session with the in-memory "
                                 f"catalogue, and this one keeps a {impl} metastore")
        self._folder = folder
        database = "vouch_files_" + hashlib.sha256(str(folder).encode()).hexdigest()[:12]
        self._spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quote_part(database)}")
        self._spark.catalog.setCurrentDatabase(database)
        taken = {r[1].lower() for r in self._spark.sql(f"SHOW TABLES IN {_quote_part(database)}").collect()}
        for path in entries:
            name = re.sub(r"\W+", "_", path.stem if path.is_file() else path.name).strip("_").lower() or "table"
            if name in taken:
                continue
            taken.add(name)
            self._spark.catalog.createTable(f"{_quote_part(database)}.{_quote_part(name)}", path=str(path),
                                            source="parquet")

    def close(self) -> None:
        spark = getattr(self, "_spark", None)
        if spark is None:
            return
        for view in list(getattr(self, "_samples", ())):
            self._drop_sample(view)
        self._spark = None
        if self._remote and getattr(self, "_owns_session", False):
            try:
                spark.stop()  # ends Vouch's own session on the server, not the server
            except Exception:  # noqa: BLE001 - a server that is gone has nothing to end
                pass

    # -- identity ----------------------------------------------------------------------
    def identity(self) -> str:
        parts = [self.table_identity(t) for t in self.schema()]
        return f"spark:{self.target}:{self.default_schema}#" + hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    def table_identity(self, info: TableInfo) -> str:
        """The table's shape, its statistics line and the names of the files it reads: Spark
        writes new files (their names carry a fresh id) whenever a table's data change."""
        shape = ",".join(f"{c.name} {c.type}" for c in info.columns)
        ref = self.table_sql(info.name, info.schema)
        try:
            files = sorted(self._spark.table(self._catalog_name(info)).inputFiles())
        except self._errors:
            files = []
        stats = self._describe(info).get("Statistics", "")
        digest = hashlib.sha256("\n".join([shape, stats, *files]).encode()).hexdigest()[:16]
        return f"{ref}:{digest}"

    def _catalog_name(self, info: TableInfo) -> str:
        return ".".join(_quote_part(p) for p in ([info.schema] if info.schema else []) + [info.name])

    # -- the read-only layers ----------------------------------------------------------
    def user_functions(self) -> dict[str, str]:
        """Functions of the catalogue that are not built into Spark (temporary or persistent
        UDFs, SQL functions): lower-case name → qualified name. Read once, with ``SHOW USER
        FUNCTIONS`` (``Catalog.listFunctions`` decodes all ~600 built-ins: 4 s)."""
        if self._user_functions is None:
            found: dict[str, str] = {}
            try:
                rows = self._spark.sql("SHOW USER FUNCTIONS").collect()
            except self._errors:
                rows = []
            for (qualified,) in rows:
                found[qualified.rsplit(".", 1)[-1].strip("`").lower()] = qualified
            self._user_functions = found
        return self._user_functions

    def _check_text(self, sql: str) -> None:
        found = words(sql)
        for name in sorted(found & REFUSED_FUNCTIONS.keys()):
            raise forbidden(f"{name}()", REFUSED_FUNCTIONS[name])
        for name in sorted(found & self.user_functions().keys()):
            raise forbidden(f"the function {self.user_functions()[name]}()",
                            "it is not built into Spark, so Vouch cannot read what its code does")

    def _analyzed_plan(self, wrapped: str) -> str:
        """Spark's analyzed logical plan of the wrapped query, as text (no job runs)."""
        text: str = self._spark.sql("EXPLAIN EXTENDED " + wrapped).collect()[0][0]
        start = text.find(_ANALYZED)
        if start < 0:
            raise ExecutionError(f"Spark error: {_first_line(Exception(text))}")
        end = text.find("\n== ", start + len(_ANALYZED))
        section = text[start + len(_ANALYZED):end if end >= 0 else len(text)].strip("\n")
        head = section.lstrip().splitlines()[0] if section.strip() else ""
        if "Exception" in head.split(":", 1)[0] or head.startswith("org.apache.spark"):
            # Analysis failed (a missing table or column): EXPLAIN says so instead of raising.
            message = re.sub(r"^[\w.$]+(Exception|Error):\s*", "", head)
            raise ExecutionError(f"Spark error: {message}")
        return section

    def check_plan(self, plan: str) -> None:
        """Refuse an analyzed plan that is not a pure query over the catalogue's tables."""
        lines = plan.splitlines()
        for line in lines:
            m = _CHILD_LINE.match(line)
            if not m:
                # The schema line, the root (Vouch's own GlobalLimit) and the rest of a value
                # that holds a line break; every operator under the root has the prefix.
                continue
            op = m.group(1)
            if op not in QUERY_OPERATORS:
                raise ReadOnlyViolation(f"Spark's plan holds the operator {op}, which is not a read of the "
                                        f"catalogue's tables (Vouch runs only query plans)")
            rest = line[m.end():]
            if op == "Relation" and rest.lstrip().startswith("["):
                raise ReadOnlyViolation("Spark's plan reads files by path, not a table of the catalogue "
                                        "(Vouch reads only the catalogue's tables)")
        opaque = _OPAQUE_CODE.search(plan)
        if opaque:
            raise forbidden(f"a function implemented as {opaque.group(1)}",
                            "it runs code Vouch cannot read")
        low = plan.lower()
        for name, why in REFUSED_FUNCTIONS.items():
            if re.search(rf"\b{name}\(", low):
                raise forbidden(f"{name}() (reached through a view or a function)", why)
        for name, qualified in self.user_functions().items():
            if re.search(rf"\b{re.escape(name)}\(", low):
                raise forbidden(f"the function {qualified}() (reached through a view)",
                                "it is not built into Spark, so Vouch cannot read what its code does")
        if not any(line.startswith("GlobalLimit ") for line in lines):
            raise ReadOnlyViolation("Spark's plan is not the query Vouch wrapped")

    @staticmethod
    def wrap(sql: str, limit: int) -> str:
        """The statement Spark parses: only a query fits in the parentheses. The line breaks
        keep a trailing ``--`` comment from swallowing the closing parenthesis."""
        body = sql.strip()
        while body.endswith(";"):
            body = body[:-1].rstrip()
        return f"SELECT * FROM (\n{body}\n) AS vouch_q LIMIT {int(limit)}"

    # -- running -----------------------------------------------------------------------
    def _run(self, sql: str, max_rows: int, timeout: float, max_bytes: int | None = None) -> Fetch:
        max_bytes = self.config.max_result_bytes if max_bytes is None else max_bytes
        if self._spark is None:
            raise ExecutionError("the Spark session is closed")
        self._check_text(sql)
        wrapped = self.wrap(sql, max_rows + 1)
        start = time.monotonic()
        tag = f"vouch-{uuid.uuid4().hex}"
        cancelled = threading.Event()
        timer = threading.Timer(timeout, self._cancel, args=(tag, cancelled))
        timer.daemon = True
        tagged = False
        try:
            self._add_tag(tag)
            tagged = True
            self._running = (tag, cancelled)  # what cancel() stops, from another thread
            timer.start()
            df = self._checked_frame(wrapped)
            columns = list(df.columns)
            rows, truncated = self._fetch(df, max_rows, max_bytes, start + timeout)
        except QueryTimeout:
            raise self._stopped(timeout) from None
        except VouchError:
            raise
        except self._errors as exc:
            if cancelled.is_set() or time.monotonic() - start >= timeout:
                raise self._stopped(timeout) from None
            raise self._translate(exc) from None
        finally:
            self._running = None
            timer.cancel()
            if tagged:
                self._remove_tag(tag)
        if cancelled.is_set():
            raise self._stopped(timeout)
        return Fetch(columns, rows, truncated)

    def _interrupt(self) -> None:
        # cancel(): the running query's jobs are cancelled by their tag, as its own time limit does
        if self._running is not None:
            self._cancel(*self._running)

    def _stopped(self, timeout: float) -> QueryTimeout:
        # Spark's own time limit says the job was cancelled; cancel() says what base.py says
        if getattr(self, "_cancelled", False):
            return super()._stopped(timeout)
        return QueryTimeout(_timeout_message(timeout))

    def _checked_frame(self, wrapped: str) -> Any:  # a DataFrame, local or Spark Connect's
        """The wrapped query as a DataFrame whose analyzed plan passed :meth:`check_plan`.

        A local session analyses ``spark.sql()`` of a query at once (it runs nothing) and
        hands over the analyzed plan from the JVM; over Spark Connect the plan comes from
        ``EXPLAIN EXTENDED`` first, then the DataFrame is made."""
        if self._remote:
            self.check_plan(self._analyzed_plan(wrapped))
            return self._spark.sql(wrapped)
        df = self._spark.sql(wrapped)
        self.check_plan(df._jdf.queryExecution().analyzed().toString())
        return df

    def _fetch(self, df: Any, max_rows: int, max_bytes: int, deadline: float) -> tuple[list[tuple[Any, ...]], str | None]:
        """At most ``max_rows`` rows of ``df`` (the wrapper's LIMIT already stops Spark one
        row past them) holding at most about ``max_bytes`` bytes.

        First all of them at once, each text or binary cell cut by Spark to a small share
        (``max_bytes`` over rows × such columns, at least 1 KiB), so that what arrives is
        bounded whatever the data; a cell that was cut there means long values, and the
        query is read again as a stream (``toLocalIterator``) with each cell cut to its
        share of ``max_bytes`` only, through :func:`fetch_bounded`. Collecting is several
        times faster than the stream's job per partition for the small results most
        queries have."""
        fields = df.schema.fields
        variable = [i for i, f in enumerate(fields) if type(f.dataType).__name__ in ("StringType", "BinaryType",
                                                                                      "VarcharType", "CharType")]
        if not variable:
            got = [tuple(r) for r in df.collect()]
            return fetch_bounded(_pager(got), max_rows, max_bytes, deadline)
        small = max(1024, max_bytes // ((max_rows + 1) * len(variable)))
        got = [tuple(r) for r in self._cut(df, fields, variable, small).collect()]
        if not any(r[j] is not None and len(r[j]) > small for r in got for j in variable):
            return fetch_bounded(_pager(got), max_rows, max_bytes, deadline)
        del got
        share = max(1024, max_bytes // len(variable))
        rows_iter = iter(self._cut(df, fields, variable, share).toLocalIterator())
        cut = False

        def fetchmany(n: int) -> list[tuple[Any, ...]]:
            nonlocal cut
            batch = [tuple(r) for r in itertools.islice(rows_iter, n)]
            for i, row in enumerate(batch):
                if any(row[j] is not None and len(row[j]) > share for j in variable):
                    cut = True
                    batch[i] = tuple(v[:share] if j in variable and v is not None else v for j, v in enumerate(row))
            return batch

        try:
            rows, truncated = fetch_bounded(fetchmany, max_rows, max_bytes, deadline)
        finally:
            close = getattr(rows_iter, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:  # noqa: BLE001 - the stream of a cancelled job
                    pass
        return rows, truncated or ("cell" if cut else None)

    @staticmethod
    def _cut(df: Any, fields: Any, variable: list[int], share: int) -> Any:
        """``df`` with each text and binary column cut by Spark to ``share`` characters or
        bytes plus one (so that a cut shows). SQL expressions (``selectExpr``), not
        ``pyspark.sql.functions``, so that the same code serves a local and a Spark Connect
        DataFrame; the columns are renamed by position first, since a result may hold two
        columns of one name."""
        names = [f"vouch_c{i}" for i in range(len(fields))]
        exprs = [(f"substring({names[i]}, 1, {share + 1})" if i in variable else names[i])
                 + " AS " + _quote_part(f.name) for i, f in enumerate(fields)]
        return df.toDF(*names).selectExpr(*exprs)

    def _add_tag(self, tag: str) -> None:
        if self._remote:
            self._spark.addTag(tag)
        else:
            sc = self._spark.sparkContext
            sc.setInterruptOnCancel(True)
            sc.addJobTag(tag)

    def _remove_tag(self, tag: str) -> None:
        try:
            if self._remote:
                self._spark.removeTag(tag)
            else:
                self._spark.sparkContext.removeJobTag(tag)
        except Exception:  # noqa: BLE001 - a session gone with the cancelled job
            pass

    def _cancel(self, tag: str, cancelled: threading.Event) -> None:
        cancelled.set()
        try:
            if self._remote:
                self._spark.interruptTag(tag)
            else:
                self._spark.sparkContext.cancelJobsWithTag(tag)
        except Exception:  # noqa: BLE001 - nothing left to cancel
            pass

    def _translate(self, exc: BaseException) -> VouchError:
        text = _first_line(exc)
        low = text.lower()
        if "parse_syntax_error" in low or "parseexception" in low:
            return SQLRejected(f"Spark could not read the SQL as one query ({text}); give one SELECT statement",
                               kind="parse")
        if "cancel" in low or "interrupt" in low:
            return QueryTimeout(f"Spark stopped the query: {text}")
        return ExecutionError(f"Spark error: {text}")

    # -- the catalogue -----------------------------------------------------------------
    def sample_source(self, table: str, n: int, total: int, schema: str | None = None) -> str:
        """About ``n`` of the ``total`` rows of ``table``: Spark's ``TABLESAMPLE (p PERCENT)
        REPEATABLE (7)``, a Bernoulli sample (each row kept with probability p), the same
        rows for the same data (``TABLESAMPLE (n ROWS)`` would be the first n rows).

        Drawing it reads the whole table, and the profile reads its sample once per batch of
        columns and again for key overlaps, so the sample is a temporary view of Vouch's own
        session, cached lazily (``CACHE LAZY TABLE``): the first statement that reads it —
        time-limited and cancellable like any — scans the table once, the others read the
        cached rows. Both go when the database is closed."""
        ref = self.table_sql(table, schema)
        if total <= 0 or n >= total:
            return f"(SELECT * FROM {ref})"
        pct = max(100.0 * n / total, 1e-6)
        sampled = f"SELECT * FROM {ref} TABLESAMPLE ({pct:.6f} PERCENT) REPEATABLE (7)"
        if self._spark is None:
            return f"({sampled})"
        view = "vouch_sample_" + hashlib.sha256(f"{ref}|{n}|{total}".encode()).hexdigest()[:16]
        if view in self._samples:
            self._samples.move_to_end(view)
        else:
            try:
                self._spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} AS {sampled}")
                self._spark.sql(f"CACHE LAZY TABLE {view}")
            except self._errors:
                return f"({sampled})"
            self._samples[view] = None
            while len(self._samples) > CACHED_SAMPLES:
                # The profile reads one table at a time (and its join neighbours' samples for
                # key overlaps): older samples are let go, and drawn again if asked for.
                self._drop_sample(next(iter(self._samples)))
        return f"(SELECT * FROM {view})"

    def _drop_sample(self, view: str) -> None:
        self._samples.pop(view, None)
        try:
            self._spark.sql(f"UNCACHE TABLE IF EXISTS {view}")
            self._spark.sql(f"DROP VIEW IF EXISTS {view}")
        except Exception:  # noqa: BLE001 - a session already gone holds nothing
            pass

    def sample_method(self, table: str, total: int, schema: str | None = None) -> str:
        return "TABLESAMPLE PERCENT (Bernoulli)"

    def value_sql(self, expr: str, type_name: str) -> str:
        # Maps and variants can be neither grouped nor ordered in Spark: their text can.
        low = (type_name or "").lower()
        if low.startswith(("map", "variant")) or "map<" in low:
            return f"CAST({expr} AS STRING)"
        return expr

    def _describe(self, info: TableInfo) -> dict[str, str]:
        """``DESCRIBE TABLE EXTENDED``'s detail rows (Vouch's own command, run on its own
        session): Type, Provider, Statistics, Location …"""
        if info.is_view:
            return {}
        try:
            rows = self._spark.sql(f"DESCRIBE TABLE EXTENDED {self._catalog_name(info)}").collect()
        except self._errors:
            return {}
        out, detail = {}, False
        for r in rows:
            name = (r[0] or "").strip()
            if name.startswith("# Detailed Table Information"):
                detail = True
                continue
            if detail and name:
                out[name] = (r[1] or "").strip()
        return out

    def table_statistics(self, info: TableInfo) -> TableStatistics | None:
        """The row count of ``ANALYZE TABLE … COMPUTE STATISTICS`` where it was run (the
        ``Statistics`` line of ``DESCRIBE TABLE EXTENDED``): an estimate, since Spark keeps
        no count of the rows written since. Its column statistics (``FOR COLUMNS``: min, max,
        NULLs, distinct count) hold no common values, so the profile samples the columns."""
        from .stats import TableStatistics

        line = self._describe(info).get("Statistics", "")
        m = re.search(r"([\d,]+) rows", line)
        if not m:
            return None
        rows = int(m.group(1).replace(",", ""))
        return TableStatistics(source="Spark table statistics", row_source="Spark table statistics (ANALYZE TABLE)",
                               rows=rows, fresh=True,
                               note=f"Spark's statistics ({line}) from ANALYZE TABLE; Spark keeps no count of "
                                    f"rows written since, so the row count is an estimate")

    def column_statistics(self, info: TableInfo, column: str) -> dict[str, str]:
        """``ANALYZE TABLE … FOR COLUMNS``' figures of one column (min, max, num_nulls,
        distinct_count …), empty where none were computed."""
        try:
            rows = self._spark.sql(f"DESCRIBE TABLE EXTENDED {self._catalog_name(info)} "
                                   f"{_quote_part(column)}").collect()
        except self._errors:
            return {}
        return {r[0]: r[1] for r in rows if r[1] not in (None, "NULL") and r[0] not in ("col_name", "data_type")}

    def _chosen_databases(self) -> list[str]:
        wanted = self.config.schemas
        here = self.default_schema
        if not wanted:
            return [cast(str, here)]  # (the session's current database, read when opened)
        known = self._database_names()
        if wanted == ("*",):
            return sorted(known, key=lambda d: (d != here, d))
        by_lower = {k.lower(): k for k in known}
        missing = [w for w in wanted if w.lower() not in by_lower]
        if missing:
            raise UserInputError(f"database {', '.join(map(repr, missing))} not found in {self.target}; "
                                 f"it has: {', '.join(known) or 'none'}")
        return [by_lower[w.lower()] for w in wanted]

    def schema(self) -> list[TableInfo]:
        """Tables and views of the chosen databases (the ``schemas`` setting; default: the
        current one) with their comments. Spark's own tables declare no keys; Vouch reads
        them from the table properties ``vouch.primary_key`` (``a,b``) and
        ``vouch.foreign_keys`` (``a->other(b);c,d->t2(e,f)``) where an owner has set them.

        One ``SHOW TABLE EXTENDED IN db LIKE '*'`` per database (Vouch's own command on its
        own session) gives every table's type, comment, properties and columns: the
        Catalog API costs a call per table (``listColumns``: 0.8 s each on a busy 2-core
        machine), and its ``listTables`` failed to decode its rows (EXPRESSION_DECODING_FAILED)
        in a session with ``spark.sql.codegen.factoryMode=NO_CODEGEN``."""
        if self._schema is not None:
            return self._schema
        tables: list[TableInfo] = []
        try:
            for database in self._chosen_databases():
                schema = None if database == self.default_schema else database
                rows = self._spark.sql(f"SHOW TABLE EXTENDED IN {_quote_part(database)} LIKE '*'").collect()
                for row in sorted(rows, key=lambda r: r[1]):
                    if row[2]:  # a temporary view of some session: not the database's
                        continue
                    tables.append(_table_info(row[1], row[3] or "", schema))
        except self._errors as exc:
            raise ExecutionError(f"cannot read the catalogue of {self.target}: {_first_line(exc)}") from None
        self._schema = tables
        return tables


# Spark's tree-string names of the types (StructType.treeString) → their SQL names.
_TREE_TYPES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}
_SCHEMA_LINE = re.compile(r"^ \|-- (.*): (.+?) \(nullable = (true|false)\)$")


def _table_info(name: str, information: str, schema: str | None) -> TableInfo:
    """A table from ``SHOW TABLE EXTENDED``'s ``information`` text: ``Key: value`` lines,
    then ``Schema: root`` and the columns as `` |-- name: type (nullable = true)``."""
    detail: dict[str, str] = {}
    columns: list[ColumnInfo] = []
    in_schema = False
    for line in information.splitlines():
        if in_schema:
            m = _SCHEMA_LINE.match(line)
            if m:  # a top-level column; nested fields are indented further
                kind = m.group(2).strip()
                columns.append(ColumnInfo(m.group(1), _TREE_TYPES.get(kind, kind), m.group(3) == "true"))
            continue
        if line.startswith("Schema:"):
            in_schema = True
            continue
        key, sep, value = line.partition(": ")
        if sep:
            detail[key.strip()] = value.strip()
    info = TableInfo(name, columns, is_view=detail.get("Type", "").upper() == "VIEW", schema=schema,
                     comment=detail.get("Comment") or None)
    props = _properties(detail.get("Table Properties", ""))
    _apply_keys(info, props)
    return info


def _properties(text: str) -> dict[str, str]:
    """``[a=1, b=x,y]`` → {"a": "1", "b": "x,y"} (Spark joins the pairs with ", ")."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    out = {}
    for part in body.split(", "):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _apply_keys(info: TableInfo, props: dict[str, str]) -> None:
    names = {c.name.lower(): c.name for c in info.columns}
    pk = [names.get(c.strip().lower()) for c in (props.get("vouch.primary_key") or "").split(",") if c.strip()]
    if pk and all(pk):
        info.primary_key = cast("list[str]", pk)  # (all() found no None)
    for part in filter(None, (props.get("vouch.foreign_keys") or "").split(";")):
        m = re.fullmatch(r"\s*([^>]+?)\s*->\s*([^()]+?)\s*\(([^)]*)\)\s*", part)
        if not m:
            continue
        cols = [names.get(c.strip().lower()) for c in m.group(1).split(",")]
        ref = m.group(2).strip().lower()  # Spark's catalogue folds table names to lower case
        ref_cols = [c.strip() for c in m.group(3).split(",") if c.strip()]
        if not all(cols) or len(cols) != len(ref_cols):
            continue
        if "." not in ref and info.schema:
            ref = f"{info.schema}.{ref}"  # a key within the table's own database
        info.foreign_keys.append(ForeignKeyInfo(cast("list[str]", cols), ref, ref_cols))  # (all() above)


def _pager(rows: list[tuple[Any, ...]]) -> Callable[[int], list[tuple[Any, ...]]]:
    """``fetchmany`` over rows already in hand."""
    it = iter(rows)

    def fetchmany(n: int) -> list[tuple[Any, ...]]:
        return list(itertools.islice(it, n))

    return fetchmany


def _timeout_message(timeout: float) -> str:
    return (f"the query ran past the {timeout:g} s time limit and its Spark job was cancelled "
            f"(raise it with --timeout or VOUCH_TIMEOUT)")


def _spark_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a Spark call raises for a query's or a connection's fault."""
    found: list[type[BaseException]] = []
    try:
        from pyspark.errors import PySparkException

        found.append(PySparkException)
    except ImportError:  # pragma: no cover - pyspark < 3.4
        pass
    try:
        from py4j.protocol import Py4JError

        found.append(Py4JError)
    except ImportError:  # pragma: no cover - a Connect-only client
        pass
    return tuple(found) or (Exception,)


_LOCAL_LOCK = threading.Lock()


def _local_session(SparkSession: Any) -> Any:
    """The process's local Spark session: the active one, or a new ``local[*]`` one without
    the web UI (``vouch`` must not open ports of its own) and with small shuffles."""
    with _LOCAL_LOCK:
        # The active session of this thread, else the process's default one (a web server's
        # worker threads have no active session of their own).
        active = SparkSession.getActiveSession() or getattr(SparkSession, "_instantiatedSession", None)
        if active is not None:
            return active
        return (SparkSession.builder.master("local[*]").appName("vouch")
                .config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "4")
                .getOrCreate())


__all__ = ["SparkDatabase", "parse_target", "is_spark_target", "REFUSED_FUNCTIONS", "QUERY_OPERATORS"]
