"""Spark SQL (issue 16, part 5) on pyspark's local Spark: the tests' one session
(tests/spark_local.py, started once per process; skipped with the reason where pyspark or
Java is absent) and its Spark Connect server for the ``sc://`` path.

- Every hostile statement of corpus/hostile_spark.toml is refused, nothing is written at its
  ``{{OUT}}`` path, no secret comes back, and the warehouse (every file's sha256), the
  catalogue (databases, tables, properties) and the session's configuration are unchanged.
- Every legitimate read of corpus/legit_spark.toml (Chinook) runs.
- The time limit cancels a long job (and Spark has no job left running); the row and byte
  caps cut results; the profile finds a stand-in code, samples with TABLESAMPLE and takes a
  large table's row count from ANALYZE TABLE's statistics, marked as an estimate.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

import spark_local
import vouchsql
from isolation import corpus
from vouchsql.db.spark import SparkDatabase, parse_target

ACCOUNTS = [(1, "ann", 120.5, "2024-01-11"), (2, "bob", 80.0, "2024-02-12"), (3, "cy", -1.0, "2024-03-13"),
            (4, "dee", 999.99, "2024-04-14"), (5, "eve", 13.37, "2024-05-15")]


# -- what needs no Spark ---------------------------------------------------------------------

def test_targets_parse():
    assert parse_target("sc://h:15002") == {"kind": "connect", "url": "sc://h:15002", "folder": None,
                                             "database": None}
    got = parse_target("sc://h:443/;token=abc;database=sales;x-databricks-cluster-id=c1")
    assert got["url"] == "sc://h:443/;token=abc;x-databricks-cluster-id=c1" and got["database"] == "sales"
    assert parse_target("spark-local://")["folder"] is None
    assert parse_target("spark-local://?database=d1")["database"] == "d1"
    assert parse_target("spark-local:///tmp/data")["folder"] == Path("/tmp/data")


def test_wrapper_keeps_only_a_query():
    # The line breaks keep a trailing comment from swallowing the closing parenthesis.
    assert SparkDatabase.wrap("SELECT 1 -- note", 11) == "SELECT * FROM (\nSELECT 1 -- note\n) AS vouch_q LIMIT 11"
    assert SparkDatabase.wrap("SELECT 1;;", 2).endswith("SELECT 1\n) AS vouch_q LIMIT 2")


# -- the session and its data -----------------------------------------------------------------

@pytest.fixture(scope="module")
def spark():
    try:
        return spark_local.session()
    except spark_local.Unavailable as exc:
        pytest.skip(f"Spark: {exc}")


class World:
    """The hostile corpus's database and the folder of secrets beside it."""

    def __init__(self, spark, root: Path) -> None:
        self.spark = spark
        self.token = hashlib.sha256(str(root).encode()).hexdigest()[:8]
        self.database = f"vouch_hostile_{self.token}"
        self.marker = f"vouchsecret{self.token}"
        self.secret_dir = root / "secrets"
        self.out_dir = root / "out"
        self.secret_dir.mkdir(parents=True)
        self.out_dir.mkdir()
        (self.secret_dir / "secret.txt").write_text(self.marker + "\n")
        spark.createDataFrame([("api_key", self.marker)], "name STRING, value STRING").coalesce(1) \
            .write.parquet(str(self.secret_dir / "secret.parquet"))
        db = f"`{self.database}`"
        spark.sql(f"CREATE DATABASE {db}")
        spark.createDataFrame(ACCOUNTS, "id INT, owner STRING, balance DOUBLE, opened STRING").coalesce(1) \
            .write.saveAsTable(f"{db}.accounts")
        spark.createDataFrame([(i, f"note {i}") for i in range(1, 6)], "id INT, note STRING").coalesce(1) \
            .write.saveAsTable(f"{db}.audit_log")
        spark.sql(f"CREATE VIEW {db}.v_reflect AS SELECT id, reflect('java.lang.System', 'getProperty', "
                  f"'user.home') AS home FROM {db}.accounts")
        spark.sql(f"CREATE VIEW {db}.v_files AS SELECT * FROM parquet.`{self.secret_dir / 'secret.parquet'}`")
        try:  # SQL functions (Spark 4); a function Vouch did not write is refused by name
            spark.sql(f"CREATE FUNCTION {db}.vouch_plus_one(x INT) RETURNS INT RETURN x + 1")
            spark.sql(f"CREATE VIEW {db}.v_udf AS SELECT {db}.vouch_plus_one(id) AS n FROM {db}.accounts")
        except Exception:  # noqa: BLE001 - a Spark without SQL functions: udf-* are then refused as unknown
            pass
        self.target = f"spark-local://?database={self.database}"

    def values(self) -> dict:
        return {"TOKEN": self.token, "SECRET_DIR": self.secret_dir.as_posix(),
                "OUT_FOR": lambda cid: (self.out_dir / f"{cid}.out").as_posix()}

    def snapshot(self) -> dict:
        """The warehouse's files, the catalogue and the configuration a statement could change."""
        warehouse = Path(spark_local.warehouse())
        files = {str(p.relative_to(warehouse)): hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in sorted(warehouse.rglob("*")) if p.is_file()}
        s = self.spark
        catalogue = {
            "databases": sorted(r[0] for r in s.sql("SHOW DATABASES").collect()),
            "tables": sorted(tuple(r) for r in s.sql(f"SHOW TABLES IN `{self.database}`").collect()),
            "functions": sorted(r[0] for r in s.sql(f"SHOW USER FUNCTIONS IN `{self.database}`").collect()),
            "properties": sorted(tuple(r) for r in s.sql(f"SHOW TBLPROPERTIES `{self.database}`.accounts").collect()),
        }
        conf = {k: s.conf.get(k, None) for k in ("spark.sql.runSQLOnFiles", "spark.sql.ansi.enabled",
                                                 "spark.sql.session.timeZone")}
        props = s.sparkContext._jvm.java.lang.System.getProperty("vouch.evil")
        return {"files": files, "catalogue": catalogue, "conf": conf, "jvm_property": props,
                "outside": sorted(p.name for p in self.out_dir.iterdir())}


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    return World(spark, tmp_path_factory.mktemp("spark_world"))


@pytest.fixture(scope="module")
def hostile_outcomes(world):
    """Every hostile case through the library once, with the snapshot before and after."""
    cases = corpus._load(corpus.CORPUS_DIR / "hostile_spark.toml", "spark", "hostile", "case")
    before = world.snapshot()
    db = vouchsql.connect(world.target, timeout=20, cache_dir=str(world.out_dir.parent / "cache"))
    outcomes = {}
    try:
        for case in cases:
            sql = case.render(world.values())
            result = db.execute(sql)
            outcomes[case.id] = (case, sql, result)
    finally:
        db.close()
    return outcomes, before, world.snapshot()


HOSTILE = corpus._load(corpus.CORPUS_DIR / "hostile_spark.toml", "spark", "hostile", "case")
LEGIT = corpus._load(corpus.CORPUS_DIR / "legit_spark.toml", "spark", "legit", "case")


def test_the_corpora_are_sizeable():
    assert len(HOSTILE) >= 100 and len(LEGIT) >= 60
    assert len({c.sql for c in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize("case", HOSTILE, ids=[c.id for c in HOSTILE])
def test_hostile_statement_is_refused(hostile_outcomes, world, case):
    outcomes, _, _ = hostile_outcomes
    _, sql, result = outcomes[case.id]
    assert result.error is not None, f"{case.id} ran: {result.rows[:3]} ({sql!r})"
    text = result.model_dump_json()
    assert world.marker not in text and "root:x:0:0" not in text, (case.id, result.error)
    assert not (world.out_dir / f"{case.id}.out").exists()


def test_hostile_statements_change_nothing(hostile_outcomes):
    _, before, after = hostile_outcomes
    assert after == before


def test_refusals_name_what_spark_planned(hostile_outcomes):
    outcomes, _, _ = hostile_outcomes
    kinds = {cid: r.error.kind for cid, (_, _, r) in outcomes.items()}
    # Refused by Spark's analyzed plan, past the sqlglot gate and the word scan:
    assert "ScriptTransformation" in outcomes["transform-01"][2].error.message
    assert kinds["reflect-view-01"] == "forbidden" and "view" in outcomes["reflect-view-01"][2].error.message
    # A view over a file by path: with runSQLOnFiles off it does not resolve (execution);
    # were it to, its plan's path relation is refused (read_only). Either way nothing is read.
    assert kinds["path-view-01"] in ("read_only", "execution")


@pytest.fixture(scope="module")
def chinook(spark, datasets_dir):
    from engine_copies import read_source

    path = datasets_dir / "chinook.sqlite"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    database = spark_local.shared_copy("chinook", read_source(path))
    db = vouchsql.connect(f"spark-local://?database={database}", timeout=60)
    yield db
    db.close()


@pytest.fixture(scope="module")
def legit_outcomes(chinook):
    return {c.id: chinook.execute(c.sql) for c in LEGIT}


@pytest.mark.parametrize("case", LEGIT, ids=[c.id for c in LEGIT])
def test_legitimate_read_runs(legit_outcomes, case):
    result = legit_outcomes[case.id]
    assert result.error is None, f"false block: {case.id}: [{result.error.kind}] {result.error.message}"


# -- limits -----------------------------------------------------------------------------------

def _active_jobs(spark) -> list[int]:
    return list(spark.sparkContext.statusTracker().getActiveJobsIds())


def test_time_limit_cancels_the_job(spark, world):
    db = vouchsql.connect(world.target, timeout=2)
    try:
        started = time.monotonic()
        result = db.execute("SELECT COUNT(*) FROM range(0, 50000000000) WHERE hash(id) % 7 = 3")
        elapsed = time.monotonic() - started
    finally:
        db.close()
    assert result.error is not None and result.error.kind == "timeout", result
    assert elapsed < 2 + 5, elapsed
    deadline = time.monotonic() + 10
    while _active_jobs(spark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _active_jobs(spark) == []


def test_cancel_stops_the_running_job(spark, world):
    # Database.cancel() from another thread (vouch mcp, a call past its limit) cancels the job
    # by its tag; without it the job would run to its own 60 s limit and say so.
    from test_cancel import cancelled_while_running

    db = vouchsql.connect(world.target, timeout=60)
    try:
        result = cancelled_while_running(db, "SELECT COUNT(*) FROM range(0, 50000000000) WHERE hash(id) % 7 = 3", 3.0)
        assert result.elapsed_ms >= 1000  # stopped while running, not refused before it started
    finally:
        db.close()
    deadline = time.monotonic() + 10
    while _active_jobs(spark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _active_jobs(spark) == []


def test_row_and_byte_caps(world):
    db = vouchsql.connect(world.target)
    try:
        rows = db.execute("SELECT id FROM range(0, 1000)", max_rows=10)
        assert rows.row_count == 10 and rows.truncated_reason == "rows"
        whole = db.execute("SELECT * FROM accounts ORDER BY id")
        assert whole.row_count == 5 and not whole.truncated
    finally:
        db.close()
    small = vouchsql.connect(world.target, max_result_bytes=4096)
    try:
        many = small.execute("SELECT repeat('x', 1000) AS s FROM range(0, 100)")
        assert many.truncated_reason == "bytes" and 1 <= many.row_count < 10, many.row_count
        # A size only the data decides (a constant one is refused before it runs: too_large).
        wide = small.execute("SELECT repeat('y', CAST(id AS INT) + 100000) AS s FROM range(0, 1)")
        assert wide.truncated_reason == "cell" and len(wide.rows[0][0]) <= 4096
    finally:
        small.close()


# -- the profile --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pets(spark):
    database = f"vouch_pets_{int(time.time() * 1000) % 10**8}"
    spark.sql(f"CREATE DATABASE `{database}`")
    spark.sql(f"CREATE TABLE `{database}`.pets USING parquet AS SELECT CAST(id AS INT) AS id, "
              f"CAST(id % 50 AS INT) AS owner_id, CASE WHEN id % 10 = 0 THEN -1 ELSE CAST(id % 15 AS INT) END AS age, "
              f"CASE WHEN id % 4 = 0 THEN NULL ELSE concat('n', id) END AS nick FROM range(1, 5001)")
    spark.sql(f"ALTER TABLE `{database}`.pets SET TBLPROPERTIES ('vouch.primary_key' = 'id')")
    yield database
    spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")


def test_profile_finds_the_stand_in_and_keys(pets, tmp_path):
    db = vouchsql.connect(f"spark-local://?database={pets}", cache_dir=str(tmp_path))
    try:
        (info,) = db.schema()
        assert info.name == "pets" and info.primary_key == ["id"] and not info.is_view
        table = db.profile().table("pets")
        age = table.column("age")
        assert [s.value for s in age.stand_ins] == [-1] and age.min == -1 and age.max == 14
        assert table.row_count == 5000 and not table.sampled
        assert table.column("nick").null_count == 1250
    finally:
        db.close()


def test_profile_samples_and_reads_statistics(spark, pets, tmp_path):
    spark.sql(f"ANALYZE TABLE `{pets}`.pets COMPUTE STATISTICS")
    db = vouchsql.connect(f"spark-local://?database={pets}", cache_dir=str(tmp_path), sample_threshold=1000,
                          sample_rows=500, scan_threshold=2000)
    try:
        (info,) = db.schema()
        stats = db.table_statistics(info)
        assert stats is not None and stats.rows == 5000 and stats.fresh
        # The sample is drawn once (TABLESAMPLE), kept as a lazily cached view of Vouch's session.
        assert db.sample_source("pets", 500, 5000).startswith("(SELECT * FROM vouch_sample_")
        assert db.sample_source("pets", 5000, 5000) == "(SELECT * FROM `pets`)"
        table = db.profile().table("pets")
        assert table.row_count == 5000 and table.row_count_estimated and table.sampled
        assert table.sources.get("row_count") == "Spark table statistics (ANALYZE TABLE)"
        assert table.sample_method and "TABLESAMPLE" in table.sample_method
        assert -1 in [s.value for s in table.column("age").stand_ins]
    finally:
        db.close()


def test_a_folder_of_parquet_files(spark, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    spark.range(0, 30).selectExpr("id", "id % 3 AS k").coalesce(1).write.parquet(str(folder / "facts"))
    spark.createDataFrame([(0, "zero"), (1, "one"), (2, "two")], "k BIGINT, name STRING").coalesce(1) \
        .write.parquet(str(tmp_path / "dims_dir"))
    part = next((tmp_path / "dims_dir").glob("*.parquet"))
    part.rename(folder / "dims.parquet")
    db = vouchsql.connect(f"spark-local://{folder}")
    try:
        assert [t.name for t in db.schema()] == ["dims", "facts"]
        result = db.execute("SELECT d.name, COUNT(*) AS n FROM facts f JOIN dims d ON f.k = d.k GROUP BY d.name "
                            "ORDER BY d.name")
        assert result.rows == [["one", 10], ["two", 10], ["zero", 10]], result.error
        outside = db.execute(f"SELECT * FROM parquet.`{folder / 'dims.parquet'}`")
        assert outside.error is not None
    finally:
        db.close()


def test_check_end_to_end(pets, tmp_path):
    answer = vouchsql.check(f"spark-local://?database={pets}", "What is the average age of the pets?",
                            ["SELECT ROUND(AVG(age), 1) FROM pets"], cache_dir=str(tmp_path))
    assert answer.verdict.gate != "pass"
    assert any("stand_in" in r for r in answer.verdict.reasons), answer.verdict.reasons


# -- Spark Connect ------------------------------------------------------------------------------

def test_spark_connect_target(spark, world):
    url = spark_local.connect_url()
    before = world.snapshot()
    db = vouchsql.connect(f"{url}/;database={world.database}", timeout=60)
    try:
        assert db.target == url
        assert {t.name for t in db.schema()} >= {"accounts", "audit_log", "v_reflect"}
        ok = db.execute("SELECT owner FROM accounts WHERE balance > 50 ORDER BY owner")
        assert ok.rows == [["ann"], ["bob"], ["dee"]], ok.error
        for sql in ["DROP TABLE accounts", "SELECT * FROM v_reflect",
                    "SELECT TRANSFORM(id) USING 'cat' AS (a) FROM accounts",
                    f"EXECUTE IMMEDIATE 'CREATE TABLE vouch_evil_{world.token} AS SELECT 1 AS a'"]:
            refused = db.execute(sql)
            assert refused.error is not None, sql
        slow = db.execute("SELECT COUNT(*) FROM range(0, 50000000000) WHERE hash(id) % 7 = 3", timeout=3)
        assert slow.error is not None and slow.error.kind == "timeout"
        capped = db.execute("SELECT id FROM range(0, 1000)", max_rows=7)
        assert capped.row_count == 7 and capped.truncated_reason == "rows"
    finally:
        db.close()
    assert world.snapshot() == before
