"""The profile's figures equal what plain SQL computes independently, sampling estimates
stay close to the truth, stand-in codes are found where they exist and only there, and the
on-disk cache is reused until the database changes."""

from __future__ import annotations

import json
import os
import random
import sqlite3
from pathlib import Path

import pytest

import vouchsql
from vouchsql.db.base import jsonable
from vouchsql.db.profile import TableProfile, cache_file


def ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def rho(conn: sqlite3.Connection, lt: str, lc: str, rt: str, rc: str) -> float:
    a = {r[0] for r in conn.execute(f"SELECT DISTINCT {q(lc)} FROM {q(lt)} WHERE {q(lc)} IS NOT NULL")}
    b = {r[0] for r in conn.execute(f"SELECT DISTINCT {q(rc)} FROM {q(rt)} WHERE {q(rc)} IS NOT NULL")}
    both = len(a & b)
    return max(both / len(a), both / len(b))


@pytest.fixture(scope="module")
def chinook(chinook_path, tmp_path_factory):
    with vouchsql.connect(chinook_path, cache_dir=str(tmp_path_factory.mktemp("cache"))) as db:
        profile = db.profile()
    conn = ro(chinook_path)
    yield profile, conn
    conn.close()


# -- chinook: every figure checked against sqlite3 -----------------------------------------

def test_chinook_row_counts_of_every_table(chinook):
    profile, conn = chinook
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")]
    assert sorted(t.name for t in profile.tables) == sorted(tables)
    assert len(tables) == 11
    for name in tables:
        expected = conn.execute(f"SELECT COUNT(*) FROM {q(name)}").fetchone()[0]
        assert profile.table(name).row_count == expected, name
        assert profile.table(name).sampled is False and profile.table(name).error is None


def test_chinook_column_figures(chinook):
    profile, conn = chinook
    checked = 0
    for table in profile.tables:
        for col in table.columns:
            c = q(col.name)
            nulls, distinct, lo, hi = conn.execute(
                f"SELECT SUM({c} IS NULL), COUNT(DISTINCT {c}), MIN({c}), MAX({c}) FROM {q(table.name)}").fetchone()
            assert col.null_count == (nulls or 0), (table.name, col.name)
            assert col.distinct_count == distinct, (table.name, col.name)
            assert col.distinct_estimated is False
            assert col.min == jsonable(lo) and col.max == jsonable(hi), (table.name, col.name)
            checked += 1
    assert checked > 60


def test_chinook_known_values(chinook):
    profile, conn = chinook
    company = profile.column("Customer", "Company")
    assert company.null_count == 49
    assert company.distinct_count == 10
    assert profile.table("Customer").row_count == 59
    track = profile.table("Track")
    assert track.row_count == 3503
    assert profile.column("Track", "Milliseconds").min == conn.execute("SELECT MIN(Milliseconds) FROM Track").fetchone()[0]
    # Top values are counted over the whole column, most frequent first.
    genre = profile.column("Track", "GenreId")
    expected = conn.execute("SELECT GenreId, COUNT(*) FROM Track GROUP BY GenreId ORDER BY 2 DESC, 1 LIMIT 5").fetchall()
    assert [tuple(v) for v in genre.top_values] == expected


def test_chinook_declared_foreign_keys(chinook):
    profile, conn = chinook
    for table in profile.tables:
        expected = sorted((r[3], r[2], r[4]) for r in conn.execute(f"PRAGMA foreign_key_list({q(table.name)})"))
        got = sorted((fk.columns[0], fk.ref_table, fk.ref_columns[0]) for fk in table.foreign_keys)
        assert got == expected, table.name
    track_fks = {(tuple(f.columns), f.ref_table) for f in profile.table("Track").foreign_keys}
    assert track_fks == {(("AlbumId",), "Album"), (("GenreId",), "Genre"), (("MediaTypeId",), "MediaType")}
    assert profile.table("Track").primary_key == ["TrackId"]
    assert profile.table("PlaylistTrack").primary_key == ["PlaylistId", "TrackId"]


def test_chinook_key_overlap(chinook):
    profile, conn = chinook
    pair = profile.join_pair("Track", "AlbumId", "Album", "AlbumId")
    assert pair is not None and pair.source == "declared"
    assert pair.rho == 1.0
    assert pair.estimated is False
    # Every declared pair's ρ matches an independent computation.
    declared = [p for p in profile.join_pairs if p.source == "declared"]
    assert len(declared) >= 10
    for p in declared:
        assert p.rho == pytest.approx(rho(conn, p.left_table, p.left_column, p.right_table, p.right_column),
                                      abs=1e-6), p


# -- stand-in codes ---------------------------------------------------------------------------

def test_sakila_has_no_stand_ins(sakila_path, tmp_path):
    with vouchsql.connect(sakila_path, cache_dir=str(tmp_path)) as db:
        profile = db.profile()
    assert len(profile.tables) >= 16
    found = [(t.name, c.name, s.value) for t in profile.tables for c in t.columns for s in c.stand_ins]
    assert found == []
    with ro(sakila_path) as conn:
        assert profile.table("rental").row_count == conn.execute("SELECT COUNT(*) FROM rental").fetchone()[0]
        assert profile.table("payment").row_count == conn.execute("SELECT COUNT(*) FROM payment").fetchone()[0]


def test_demo_stand_in_and_weak_key(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path)) as db:
        profile = db.profile()
    conn = ro(demo_db)
    total, unknown = conn.execute("SELECT COUNT(*), SUM(age = -1) FROM customers").fetchone()
    age = profile.column("customers", "age")
    assert [s.value for s in age.stand_ins] == [-1]
    code = age.stand_ins[0]
    assert code.count == unknown
    assert code.share == pytest.approx(unknown / total)
    assert code.share == pytest.approx(0.04, abs=0.005)
    # A real age is never a stand-in.
    assert age.min == -1 and age.max > 0
    pair = profile.join_pair("loyalty_accounts", "customer_id", "customers", "customer_id")
    assert pair is not None
    assert pair.rho < 0.1
    assert pair.rho == pytest.approx(rho(conn, "loyalty_accounts", "customer_id", "customers", "customer_id"),
                                     abs=1e-6)
    # The declared keys, by contrast, overlap fully.
    orders = profile.join_pair("orders", "customer_id", "customers", "customer_id")
    assert orders.source == "declared" and orders.rho == 1.0
    conn.close()


def test_northwind_common_zero_is_not_a_stand_in(northwind_path, tmp_path):
    with vouchsql.connect(northwind_path, cache_dir=str(tmp_path)) as db:
        profile = db.profile()
    with ro(northwind_path) as conn:
        total, zeros = conn.execute('SELECT COUNT(*), SUM("UnitsOnOrder" = 0) FROM "Products"').fetchone()
    assert zeros / total > 0.5  # zero is the column's ordinary value
    col = profile.column("Products", "UnitsOnOrder")
    assert col.min == 0
    assert [s.value for s in col.stand_ins] == []


# -- cache -------------------------------------------------------------------------------------

def _small_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i % 3}") for i in range(1, 11)])
    conn.commit()
    conn.close()
    return path


def _entries(cache: Path, kind: str = "t") -> list[Path]:
    return sorted((cache / "profiles").glob(f"*/{kind}-*.json"))


def test_profile_cache_is_read_per_table_then_rebuilt_when_the_file_changes(tmp_path):
    path = _small_db(tmp_path / "small.sqlite")
    cache = tmp_path / "cache"
    with vouchsql.connect(path, cache_dir=str(cache)) as db:
        first = db.profile()
        file1 = cache_file(db, "t")
    assert file1.is_relative_to(cache / "profiles") and file1.is_file()
    assert TableProfile.model_validate_json(file1.read_text()).row_count == 10
    # Mark the cached copy so a read from it is visible.
    data = json.loads(file1.read_text())
    data["row_count"] = 12345
    file1.write_text(json.dumps(data))
    with vouchsql.connect(path, cache_dir=str(cache)) as db:
        assert db.identity() == first.identity
        assert db.profile().table("t").row_count == 12345  # came from the cache file
        assert db.profile_for(["t"]).table("t").row_count == 12345
        assert db.profile(refresh=True).table("t").row_count == 10  # refresh measures again
    assert TableProfile.model_validate_json(file1.read_text()).row_count == 10  # and rewrites the entry
    file1.write_text(json.dumps(data))
    with vouchsql.connect(path, cache_dir=str(cache), no_cache=True) as db:
        assert db.profile().table("t").row_count == 10

    # Only the mtime changes: a new identity, a new cache entry, a measured table.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    with vouchsql.connect(path, cache_dir=str(cache)) as db:
        assert db.identity() != first.identity
        file2 = cache_file(db, "t")
        rebuilt = db.profile()
    assert file2 != file1 and file2.is_file()
    assert rebuilt.table("t").row_count == 10

    # Content and size change: the measured table sees the new rows.
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 500) for i in range(11, 200)])
    conn.commit()
    conn.close()
    assert path.stat().st_size != st.st_size
    with vouchsql.connect(path, cache_dir=str(cache)) as db:
        assert cache_file(db, "t") not in (file1, file2)
        assert db.profile().table("t").row_count == 199
    assert len(_entries(cache)) == 3


def test_unreadable_cache_entry_is_rebuilt(tmp_path):
    path = _small_db(tmp_path / "small.sqlite")
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache")) as db:
        db.profile()
        entry = cache_file(db, "t")
    entry.write_text("{ not json")
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache")) as db:
        assert db.profile().table("t").row_count == 10
    assert TableProfile.model_validate_json(entry.read_text()).row_count == 10


def test_cache_key_includes_sampling_settings(tmp_path):
    path = _small_db(tmp_path / "small.sqlite")
    with vouchsql.connect(path, cache_dir=str(tmp_path)) as a, \
            vouchsql.connect(path, cache_dir=str(tmp_path), sample_threshold=5) as b:
        assert cache_file(a, "t") != cache_file(b, "t")
        assert a.profile().table("t").sampled is False
        assert b.profile().table("t").sampled is True


# -- sampling ------------------------------------------------------------------------------

N_BIG = 300_000


@pytest.fixture(scope="module")
def big_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.sqlite"
    rng = random.Random(11)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, code TEXT, grp INTEGER, score REAL, label TEXT)")
    conn.executemany(
        "INSERT INTO big VALUES (?, ?, ?, ?, ?)",
        ((i, f"K{i:07d}", rng.randrange(40), None if i % 9 == 0 else rng.random(),
          None if i % 3 == 0 else f"L{rng.randrange(300)}") for i in range(1, N_BIG + 1)))
    conn.commit()
    conn.close()
    return path


def test_sampling_estimates_and_exact_counts(big_db, tmp_path):
    with vouchsql.connect(big_db, cache_dir=str(tmp_path), sample_threshold=100_000, sample_rows=20_000) as db:
        profile = db.profile()
    table = profile.table("big")
    assert table.row_count == N_BIG
    assert table.sampled is True
    assert table.sample_size == pytest.approx(20_000, rel=0.01)
    with ro(big_db) as conn:
        for col in table.columns:
            c = q(col.name)
            nulls, distinct, lo, hi = conn.execute(
                f"SELECT SUM({c} IS NULL), COUNT(DISTINCT {c}), MIN({c}), MAX({c}) FROM big").fetchone()
            # Exact: row, null, min and max figures come from the full pass.
            assert col.null_count == nulls, col.name
            assert (col.min, col.max) == (lo, hi), col.name
            # Estimated: distinct counts, marked as such; the INTEGER PRIMARY KEY's is its row
            # count, exact.
            assert col.distinct_estimated is (col.name != "id"), col.name
            if col.name in ("id", "code", "grp", "label"):
                assert abs(col.distinct_count - distinct) <= 0.3 * distinct, (col.name, col.distinct_count, distinct)
    assert profile.column("big", "id").distinct_count == pytest.approx(N_BIG, rel=0.3)
    assert profile.column("big", "grp").distinct_count == pytest.approx(40, rel=0.3)
    assert profile.column("big", "score").null_count == N_BIG // 9
    assert profile.column("big", "label").null_count == N_BIG // 3


def test_below_threshold_is_exact(big_db, tmp_path):
    with vouchsql.connect(big_db, cache_dir=str(tmp_path), sample_threshold=N_BIG) as db:
        table = db.profile().table("big")
    assert table.sampled is False and table.sample_size is None
    assert table.column("grp").distinct_count == 40 and table.column("grp").distinct_estimated is False
    assert table.column("id").distinct_count == N_BIG


def test_profile_survives_a_broken_view(tmp_path):
    path = tmp_path / "views.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE a (x INTEGER)")
    conn.execute("INSERT INTO a VALUES (1), (2), (NULL)")
    conn.execute("CREATE VIEW good AS SELECT x FROM a WHERE x > 1")
    conn.execute("CREATE TABLE gone (y INTEGER)")
    conn.execute("CREATE VIEW broken AS SELECT y FROM gone")
    conn.execute("DROP TABLE gone")
    conn.commit()
    conn.close()
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache")) as db:
        profile = db.profile()
    assert profile.table("a").row_count == 3 and profile.column("a", "x").null_count == 1
    assert profile.table("good").is_view and profile.table("good").row_count == 1
    assert profile.table("broken").error


@pytest.mark.parametrize("name, values, is_code", [
    ("population", [0] * 3 + list(range(50, 250)), False),  # an uninhabited place: 0 is data
    ("price", [0] * 3 + list(range(10, 210)), False),  # free
    ("region_code", [0] * 3 + list(range(10, 210)), True),
    ("CustomerId", [0] * 3 + list(range(10, 210)), True),  # customer id
    ("founded", [0] * 3 + [1990 + i % 30 for i in range(200)], True),  # no year 0
])
def test_a_zero_is_a_stand_in_only_where_the_column_cannot_mean_zero(tmp_path, name, values, is_code):
    """Issue 26: stand-in codes judged against what the column means."""
    import sqlite3

    import vouchsql

    path = tmp_path / "z.sqlite"
    con = sqlite3.connect(path)
    con.execute(f'CREATE TABLE t (k INTEGER PRIMARY KEY, "{name}" INTEGER)')
    con.executemany("INSERT INTO t VALUES (?, ?)", list(enumerate(values)))
    con.commit()
    con.close()
    with vouchsql.connect(path, no_cache=True) as db:
        col = db.profile().table("t").column(name)
    assert [s.value for s in col.stand_ins] == ([0] if is_code else [])
