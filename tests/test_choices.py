"""Open calculation choices: golden cases per detector (tests/fixtures/choices/<type>.json),
the settling lexicon, the cost rules, robustness on odd SQL, and the integration in
``vouchsql.check``.

A golden case is ``{title, db, question, sql}`` with either ``expect`` (the choices of the
file's type the detector must find with ``all_choices``) or ``read: false`` (it finds none,
not even one whose result is the same) or ``expect_none: true`` (none is reported by
default). An expected choice may give ``differs`` (default true), ``settled_by`` (default
null), ``alt_row_count``, ``alt_result`` (the rows, in any order), ``alt_contains`` (rows the
alternative must hold), ``sql_contains`` and ``description_contains`` (substrings).
``max_queries`` bounds the queries the detector ran (0: the profile ruled the choice out).
``engines`` (how the case differs on DuckDB, PostgreSQL or MariaDB) is read by
tests/test_golden_engines.py only; here, on SQLite, it is ignored.

Every choice a detector returns is checked by running its alternative SQL again: it must run,
give the stored result, and ``differs`` must say whether that result matches the shown one.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

import vouchsql
from vouchsql.agreement import results_match
import vouchsql.choices
from vouchsql.choices import CHOICES, Budget, ChoiceContext, detect_choices, reported, run_detectors
from vouchsql.choices.lexicon import Lexicon, mentions

FIXTURES = Path(__file__).parent / "fixtures" / "choices"
TYPES = [d.type for d in CHOICES]
DETECTORS = {d.type: d for d in CHOICES}
# "engines": the case on other engines, read by tests/test_golden_engines.py only (ignored here).
CASE_KEYS = {"title", "db", "question", "sql", "expect", "expect_none", "read", "max_queries", "engines"}
EXPECT_KEYS = {"type", "differs", "settled_by", "alt_row_count", "alt_result", "alt_contains", "sql_contains",
               "description_contains"}


def _cases():
    for path in sorted(FIXTURES.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")):
            yield pytest.param(path.stem, case, id=f"{path.stem}: {case['title']}")


def _norm(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return round(float(value), 6)
    return value


def _rows(rows) -> Counter:
    return Counter(tuple(_norm(v) for v in row) for row in rows)


def _context(db, case, detector_types=None) -> ChoiceContext:
    result = db.execute(case["sql"])
    assert result.ok, result.error
    return ChoiceContext(question=case["question"], db=db, profile=db.profile(), sql=case["sql"], result=result,
                         tree=db.parse(case["sql"]), all_choices=True)


def _matches(choice, want: dict) -> bool:
    res = choice.result
    if choice.differs != want.get("differs", True) or choice.settled_by != want.get("settled_by"):
        return False
    if "alt_row_count" in want and res.row_count != want["alt_row_count"]:
        return False
    if "alt_result" in want and _rows(res.rows) != _rows(want["alt_result"]):
        return False
    if "alt_contains" in want and not all(_rows(res.rows)[k] for k in _rows(want["alt_contains"])):
        return False
    if not all(s in choice.sql for s in want.get("sql_contains", [])):
        return False
    return all(s in choice.description for s in want.get("description_contains", []))


def test_fixture_files_cover_every_detector():
    assert sorted(p.stem for p in FIXTURES.glob("*.json")) == sorted(TYPES)
    for path in FIXTURES.glob("*.json"):
        cases = json.loads(path.read_text(encoding="utf-8"))
        assert any(c.get("expect") and any(e.get("settled_by") is None and e.get("differs", True)
                                           for e in c["expect"]) for c in cases), f"{path.stem}: no positive case"
        assert any(c.get("read") is False or c.get("expect_none") for c in cases), f"{path.stem}: no negative case"
        assert any(any(e.get("settled_by") for e in c.get("expect", [])) for c in cases), f"{path.stem}: no settled case"
        for c in cases:
            assert set(c) <= CASE_KEYS, (path.stem, c["title"], set(c) - CASE_KEYS)
            assert c["db"] in {"demo", "chinook", "sakila", "northwind"}
            for e in c.get("expect", []):
                assert set(e) <= EXPECT_KEYS, (c["title"], set(e) - EXPECT_KEYS)
            for engine, entry in c.get("engines", {}).items():
                for e in entry.get("expect", []):
                    assert set(e) <= EXPECT_KEYS, (c["title"], engine, set(e) - EXPECT_KEYS)


@pytest.mark.parametrize("kind, case", list(_cases()))
def test_golden(kind, case, databases):
    db = databases(case["db"])
    detector = DETECTORS[kind]
    ctx = _context(db, case)
    found = [c for c in run_detectors(ctx, (detector,)) if c.type == kind]

    # Every alternative runs again to the stored result, and `differs` says whether it
    # matches the shown result.
    for choice in found:
        rerun = db.execute(choice.sql)
        assert rerun.ok, (choice.sql, rerun.error)
        assert results_match(rerun, choice.result).matched, choice.sql
        assert choice.differs == (not results_match(ctx.result, rerun).matched), choice
        assert choice.description and choice.type == kind

    if case.get("read") is False:
        assert found == [], [c.sql for c in found]
    unmatched = list(found)
    for want in case.get("expect", []):
        assert want.get("type", kind) == kind
        hit = next((c for c in unmatched if _matches(c, want)), None)
        assert hit is not None, (want, [(c.differs, c.settled_by, c.result.row_count, c.result.rows[:3], c.sql,
                                          c.description) for c in found])
        unmatched.remove(hit)
    if "max_queries" in case:
        assert ctx.queries <= case["max_queries"], ctx.queries

    # The default view reports exactly the differing, unsettled ones; a settled choice
    # costs nothing by default (its detector does not run).
    shown = db.execute(case["sql"])
    default = [c for c in detect_choices(case["question"], db, case["sql"], shown, detectors=(detector,)) if c.type == kind]
    assert sorted(c.sql for c in default) == sorted(c.sql for c in found if reported(c))
    if case.get("expect_none"):
        assert default == []


# -- the settling lexicon ----------------------------------------------------------------

@pytest.mark.parametrize("text, phrases, expected", [
    ("How many DISTINCT customers?", ("distinct",), "distinct"),
    ("Which is the tallest building?", ("all",), None),  # word boundary: not "t-all-est"
    ("List ALL the films", ("all",), "all"),
    ("the uniquely named films", ("unique",), None),
    ("at  least 5 orders", ("at least",), "at least"),
    ("ten or-more items", ("or more",), "or-more"),
    ("orders exceeding 100", ("exceed*",), "exceeding"),
    ("orders that exceed 100", ("exceed*",), "exceed"),
    ("a score ≥ 5", ("≥",), "≥"),
    ("nothing to settle here", ("distinct", "all"), None),
    ("", ("all",), None),
])
def test_lexicon_phrases(text, phrases, expected):
    assert Lexicon(phrases=phrases).match(text) == expected


def test_lexicon_patterns_and_exceptions():
    lex = Lexicon(patterns=(r"(?<!\w)\w+er\s+than(?!\w)",), unless=(r"(rather|other) than",))
    assert lex.match("customers older than 30") == "older than"
    assert lex.match("films longer than two hours") == "longer than"
    assert lex.match("use the mean rather than the median") is None
    assert lex.match("stores other than the first, bigger than 5") == "bigger than"


def test_lexicon_earliest_match_wins():
    assert Lexicon(phrases=("zero", "with no")).match("stores with no orders shown as zero") == "with no"


def test_type_lexicons_settle_their_choices():
    assert DETECTORS["strict_cutoff"].lexicon.match("orders of more than $100") == "more than"
    assert DETECTORS["strict_cutoff"].lexicon.match("orders of $100 or more") == "or more"
    assert DETECTORS["strict_cutoff"].lexicon.match("products costing less than 10") == "less than"
    assert DETECTORS["strict_cutoff"].lexicon.match("use 0.149 as the cutoff") is None
    # a year with its side stated: "or after" is inclusive, said as plainly as "or later"
    assert DETECTORS["strict_cutoff"].lexicon.match("concerts in year 2014 or after") == "or after"
    assert DETECTORS["strict_cutoff"].lexicon.match("films from 2006 onwards") == "onwards"
    assert DETECTORS["counting_unit"].lexicon.match("How many unique visitors?") == "unique"
    assert DETECTORS["counting_unit"].lexicon.match("How many customers?") is None
    assert DETECTORS["ties"].lexicon.match("every film tied for the longest") == "every"
    assert DETECTORS["ties"].lexicon.match("Which film is the longest?") is None
    assert DETECTORS["population_scope"].lexicon.match("each store, including those with none") == \
        "including those with none"
    assert DETECTORS["missing_values"].lexicon.match("excluding unknown regions") == "unknown"
    assert DETECTORS["missing_values"].lexicon.match("treat missing weights as zero") == "missing"


def test_lexicon_idioms_hold_no_settling_word():
    ties, cutoff = DETECTORS["ties"].lexicon, DETECTORS["strict_cutoff"].lexicon
    assert ties.match("the top 5 most purchased tracks over all") is None
    assert ties.match("the best-selling artist of all time") is None
    assert ties.match("total sales for each employee (all time)") is None
    assert ties.match("films with no rentals at all") is None
    assert ties.match("over all, list all films tied for first") == "all"  # the word on its own still settles
    assert cutoff.match("the top tracks over all") is None
    assert cutoff.match("orders over 100") == "over"
    # A lexicon phrase that is the whole idiom still matches.
    assert DETECTORS["negation"].lexicon.match("customers with no orders at all") == "at all"
    assert Lexicon(phrases=("all",), idioms=("all stars",)).match("the all stars team") is None


def test_mentions_on_word_boundaries():
    assert mentions("How many tracks are there?", "tracks")
    assert not mentions("How many soundtracks are there?", "tracks")


# -- cost and robustness ------------------------------------------------------------------

def test_budget_spent_runs_nothing(databases):
    db = databases("sakila")
    sql = "SELECT title, length FROM film ORDER BY length DESC LIMIT 1"
    result = db.execute(sql)
    for budget in (Budget(rows=0), Budget(queries=0)):
        ctx = ChoiceContext(question="Which film is the longest?", db=db, profile=db.profile(), sql=sql,
                            result=result, tree=db.parse(sql), budget=budget)
        assert run_detectors(ctx) == []
        assert ctx.queries == 0


def test_the_budget_is_counted_in_rows_read_by_the_profile(databases):
    from vouchsql.probe import BUDGET_FACTOR, MIN_BUDGET_ROWS, rows_read

    db = databases("chinook")
    profile = db.profile()
    tracks, albums = profile.table("Track").row_count, profile.table("Album").row_count
    tree = db.parse("SELECT COUNT(*) FROM Track t JOIN Album a ON a.AlbumId = t.AlbumId "
                    "WHERE t.AlbumId IN (SELECT AlbumId FROM Album)")
    assert rows_read(tree, profile) == tracks + 2 * albums
    # A CTE's name costs nothing itself; the table inside it is counted.
    assert rows_read(db.parse("WITH x AS (SELECT * FROM Track) SELECT COUNT(*) FROM x"), profile) == tracks
    sql = "SELECT COUNT(*) FROM Track"
    result = db.execute(sql)
    ctx = ChoiceContext(question="q", db=db, profile=profile, sql=sql, result=result, tree=db.parse(sql))
    assert ctx.budget_rows == max(BUDGET_FACTOR * tracks, MIN_BUDGET_ROWS)
    # The shown query's time plays no part: a slow machine gets the same budget.
    slow = result.model_copy(update={"elapsed_ms": 60_000.0})
    assert ChoiceContext(question="q", db=db, profile=profile, sql=sql, result=slow,
                         tree=db.parse(sql)).budget_rows == ctx.budget_rows


def test_a_query_the_budget_cannot_cover_is_not_started(databases):
    db = databases("sakila")
    sql = "SELECT title, length FROM film ORDER BY length DESC LIMIT 1"
    films = db.profile().table("film").row_count
    stats: dict = {}
    # Room for one read of film: the ties detector's alternative, nothing after it.
    choices = detect_choices("Which film is the longest?", db, sql, db.execute(sql), all_choices=True,
                             budget=Budget(rows=films), stats=stats)
    assert stats["choices_queries"] == 1 and stats["choices_rows"] == films
    assert [c.type for c in choices] == ["ties"]


def test_stats_report_the_detection_cost(databases):
    db = databases("sakila")
    sql = "SELECT title, length FROM film ORDER BY length DESC LIMIT 1"
    stats: dict = {}
    choices = detect_choices("Which film is the longest?", db, sql, db.execute(sql), stats=stats)
    assert [c.type for c in choices] == ["ties"]
    assert stats["choices_queries"] >= 1
    assert stats["choices_rows"] == stats["choices_queries"] * db.profile().table("film").row_count


ODD_SQL = [
    "SELECT 1",
    "SELECT 1 ORDER BY 1 LIMIT 1",
    "SELECT Name FROM Genre UNION SELECT Name FROM MediaType ORDER BY 1 LIMIT 3",
    "WITH t AS (SELECT CustomerId, COUNT(*) AS n FROM Invoice GROUP BY CustomerId) SELECT * FROM t ORDER BY n DESC LIMIT 1",
    "SELECT x.n FROM (SELECT COUNT(*) AS n FROM Track GROUP BY AlbumId) AS x ORDER BY x.n DESC LIMIT 2",
    "SELECT Name, RANK() OVER (ORDER BY Milliseconds DESC) AS r FROM Track ORDER BY r LIMIT 3",
    "SELECT * FROM Track t, Album a WHERE t.AlbumId = a.AlbumId AND t.Composer <> 'AC/DC' LIMIT 5",
    "SELECT COUNT(*) FROM Track NATURAL JOIN Album",
    "SELECT COUNT(*) FROM Track JOIN Album USING (AlbumId) GROUP BY Title HAVING COUNT(*) > 20",
    "SELECT CASE WHEN Total > 10 THEN 'big' END, COUNT(*) FROM Invoice GROUP BY 1",
    "SELECT AVG(Total / 0) FROM Invoice",
    "SELECT SUM(Total) / SUM(InvoiceId) FROM Invoice WHERE Total BETWEEN 1 AND 2",
    "SELECT * FROM sqlite_master LIMIT 1",
    "SELECT * FROM pragma_table_info('Track')",
    "SELECT e.FirstName FROM Employee e JOIN Employee m ON m.EmployeeId = e.ReportsTo ORDER BY m.BirthDate LIMIT 1",
    "SELECT Name FROM Track WHERE Milliseconds > ALL (SELECT Milliseconds FROM Track WHERE AlbumId = 1)",
]


@pytest.mark.parametrize("sql", ODD_SQL)
def test_odd_sql_never_raises(sql, databases):
    db = databases("chinook")
    result = db.execute(sql)
    question = "Which is not more than any of them, at least, for all and every distinct one?"
    for q in (question, "How many?"):
        choices = detect_choices(q, db, sql, result, all_choices=True)
        for c in choices:
            assert c.result is not None and c.result.ok


class Broken:
    type = "broken"
    lexicon = Lexicon()

    def __init__(self, error: Exception) -> None:
        self.error = error

    def detect(self, ctx):
        raise self.error


def test_a_failing_detector_is_contained_and_named(databases, monkeypatch, caplog):
    monkeypatch.setattr(vouchsql.choices, "STRICT", False)
    db = databases("sakila")
    sql = "SELECT title, length FROM film ORDER BY length DESC LIMIT 1"
    stats: dict = {}
    choices = detect_choices("Which film is the longest?", db, sql, db.execute(sql), stats=stats,
                             detectors=(Broken(RuntimeError("boom")), DETECTORS["ties"]))
    assert [c.type for c in choices] == ["ties"]
    assert stats["choices_failed"] == ["broken"]
    assert any(r.levelname == "WARNING" and "broken failed" in r.getMessage() for r in caplog.records)


def test_strict_mode_raises_a_detectors_bug_but_not_an_expected_error(databases):
    from sqlglot.errors import OptimizeError

    from vouchsql.errors import SQLRejected

    db = databases("sakila")
    sql = "SELECT title, length FROM film ORDER BY length DESC LIMIT 1"
    with pytest.raises(RuntimeError, match="boom"):
        detect_choices("Which film is the longest?", db, sql, db.execute(sql), detectors=(Broken(RuntimeError("boom")),))
    for expected in (SQLRejected("refused", kind="forbidden"), OptimizeError("cannot rewrite")):
        stats: dict = {}
        assert detect_choices("Which film is the longest?", db, sql, db.execute(sql), stats=stats,
                              detectors=(Broken(expected), DETECTORS["ties"]))[0].type == "ties"
        assert "choices_failed" not in stats


def test_failed_shown_query_has_no_choices(databases):
    db = databases("chinook")
    sql = "SELECT nope FROM Track"
    assert detect_choices("q", db, sql, db.execute(sql)) == []


# -- through vouchsql.check -----------------------------------------------------------------

LONGEST = "SELECT title, length FROM film ORDER BY length DESC LIMIT 1"


def test_check_reports_the_tie(sakila_path, tmp_path):
    answer = vouchsql.check(sakila_path, "Which film is the longest?", LONGEST, cache_dir=str(tmp_path))
    assert answer.choices, answer.verdict
    first = answer.choices[0]
    assert first.type == "ties" and first.differs and first.settled_by is None
    assert first.result.row_count == 10
    assert "open_choice:ties" in answer.verdict.reasons

    # A choice never moves the score: the wording that settles it gives the same score and
    # gate, without the reason; all_choices shows more, scores the same.
    settled = vouchsql.check(sakila_path, "Which film is the longest? List all of them.", LONGEST,
                             cache_dir=str(tmp_path))
    assert settled.verdict.score == answer.verdict.score and settled.verdict.gate == answer.verdict.gate
    assert "open_choice:ties" not in settled.verdict.reasons
    assert [c for c in settled.choices if c.type == "ties"] == []
    everything = vouchsql.check(sakila_path, "Which film is the longest? List all of them.", LONGEST,
                                cache_dir=str(tmp_path), all_choices=True)
    assert everything.verdict.score == answer.verdict.score
    ties = [c for c in everything.choices if c.type == "ties"]
    assert ties and ties[0].settled_by == "all" and ties[0].differs
    assert "open_choice:ties" not in everything.verdict.reasons


def test_check_on_plain_sql_reports_nothing(chinook_path, tmp_path):
    answer = vouchsql.check(chinook_path, "How many tracks are there?", "SELECT COUNT(*) FROM Track",
                            cache_dir=str(tmp_path))
    assert answer.choices == []
    assert not any(r.startswith("open_choice:") for r in answer.verdict.reasons)


def test_check_answer_json_carries_choices(demo_db, tmp_path):
    answer = vouchsql.check(demo_db, "How many orders has each store taken?",
                            "SELECT s.name, COUNT(*) AS n FROM stores s JOIN orders o ON o.store_id = s.store_id "
                            "GROUP BY s.store_id", cache_dir=str(tmp_path))
    data = answer.model_dump(mode="json")
    kinds = [c["type"] for c in data["choices"]]
    assert "population_scope" in kinds
    scope = data["choices"][kinds.index("population_scope")]
    assert scope["differs"] is True and scope["result"]["row_count"] == 8
    assert "open_choice:population_scope" in data["verdict"]["reasons"]
    assert math.isfinite(data["verdict"]["score"])


# -- another engine -------------------------------------------------------------------------

def test_duckdb_database(tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is not installed (pip install 'vouchsql[duckdb]')")
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE shops (shop_id INTEGER PRIMARY KEY, name TEXT, region TEXT)")
    con.execute("CREATE TABLE sales (sale_id INTEGER PRIMARY KEY, shop_id INTEGER REFERENCES shops(shop_id), "
                "amount DOUBLE)")
    con.execute("INSERT INTO shops VALUES (1, 'A', 'North'), (2, 'B', NULL), (3, 'C', 'South'), (4, 'D', 'North')")
    con.execute("INSERT INTO sales VALUES (1, 1, 50), (2, 1, 80), (3, 2, 80), (4, 3, 20), (5, 3, 100)")
    con.close()
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache")) as db:
        def found(question, sql):
            return {c.type: c for c in detect_choices(question, db, sql, db.execute(sql))}

        ties = found("Which sale is the biggest one below 100?",
                     "SELECT sale_id, amount FROM sales WHERE amount < 100 ORDER BY amount DESC LIMIT 1")["ties"]
        assert ties.result.row_count == 2
        scope = found("How many sales has each shop made?",
                      "SELECT s.name, COUNT(*) FROM shops s JOIN sales x ON x.shop_id = s.shop_id "
                      "GROUP BY s.shop_id, s.name")["population_scope"]
        assert _rows(scope.result.rows)[("D", 0)] == 1
        missing = found("How many shops per region?", "SELECT region, COUNT(*) FROM shops GROUP BY region")
        assert missing["missing_values"].result.row_count == 2
        cutoff = found("Using 80 as the cutoff, how many sales are large?",
                       "SELECT COUNT(*) FROM sales WHERE amount > 80")["strict_cutoff"]
        assert cutoff.result.rows == [[3]]
