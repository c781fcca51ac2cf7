"""one_row_groups: a count per group of a table's primary key, with no join, is 1 in every
group, so a HAVING on it is decided by the schema and an ORDER BY on it ranks nothing. Real
databases (Chinook, Sakila, a SQLite file with a composite key, PostgreSQL); verdicts and
details exactly."""

from __future__ import annotations

import pytest

import vouchsql
from test_boundaries import make_db, run_check

WHY = ": the count the question means is of rows of another table, joined to this one"


def _one_row(path, sql, question="What does the query return?"):
    return run_check(path, "one_row_groups", sql, question=question)


@pytest.mark.parametrize("sql, kind, condition, problem", [
    ("SELECT ArtistId FROM Artist GROUP BY ArtistId HAVING COUNT(*) > 1", "never", "COUNT(*) > 1",
     "GROUP BY ArtistId makes each group one row of Artist (its primary key), so HAVING COUNT(*) > 1 keeps no "
     "group, whatever the data"),
    # the number first, and a count of a column: 0 or 1, never 2
    ("SELECT a.Name FROM Artist a GROUP BY a.ArtistId HAVING 2 <= COUNT(a.Name)", "never", "2 <= COUNT(a.Name)",
     "GROUP BY ArtistId makes each group one row of Artist (its primary key), so HAVING 2 <= COUNT(a.Name) keeps "
     "no group, whatever the data"),
    # GROUP BY binds the table's column before an output alias of the same name
    ("SELECT substr(Name, 1, 1) AS GenreId FROM Genre GROUP BY GenreId HAVING COUNT(*) > 1", "never",
     "COUNT(*) > 1", "GROUP BY GenreId makes each group one row of Genre (its primary key), so HAVING "
     "COUNT(*) > 1 keeps no group, whatever the data"),
    ("SELECT Name, COUNT(*) AS n FROM Genre GROUP BY GenreId ORDER BY n DESC LIMIT 1", "order", "COUNT(*)",
     "GROUP BY GenreId makes each group one row of Genre (its primary key), so COUNT(*) is 1 in every group "
     "and the LIMIT keeps an arbitrary pick"),
])
def test_fires_on_chinook(chinook_path, sql, kind, condition, problem):
    check = _one_row(chinook_path, sql)
    assert (check.fired, check.kind) == (True, "cap")
    table = problem.split(" one row of ")[1].split(" ")[0]
    assert check.evidence["findings"] == [{"kind": kind, "table": table, "condition": condition, "problem": problem}]
    assert check.detail == problem + WHY


@pytest.mark.parametrize("sql", [
    # the count is over the joined rows: several per artist
    "SELECT ar.Name FROM Artist ar JOIN Album al ON al.ArtistId = ar.ArtistId GROUP BY ar.ArtistId "
    "HAVING COUNT(*) > 1",
    # grouped by a column that is not the key
    "SELECT Composer FROM Track GROUP BY Composer HAVING COUNT(*) > 1",
    # COUNT(x) = 0 keeps the groups whose x is NULL: decided by the data
    "SELECT TrackId FROM Track GROUP BY TrackId HAVING COUNT(Composer) = 0",
    # ORDER BY the count without a LIMIT keeps every row; a subquery's own table is another SELECT
    "SELECT GenreId, COUNT(*) FROM Genre GROUP BY GenreId ORDER BY COUNT(*) DESC",
    "SELECT Name FROM Genre WHERE GenreId IN (SELECT GenreId FROM Track GROUP BY GenreId HAVING COUNT(*) > 100)",
    # a CTE that shadows a table's name is not that table
    "WITH Artist AS (SELECT ArtistId FROM Album) SELECT ArtistId FROM Artist GROUP BY ArtistId HAVING COUNT(*) > 1",
    # a comparison every group meets filters nothing: the unfiltered answer, not judged
    "SELECT AlbumId FROM Album WHERE Title LIKE 'A%' GROUP BY AlbumId HAVING COUNT(*) >= 1",
    # a count after the first ORDER BY key breaks no tie
    "SELECT InvoiceId, Total FROM Invoice GROUP BY InvoiceId ORDER BY Total DESC, COUNT(*) DESC LIMIT 5",
])
def test_quiet_on_chinook(chinook_path, sql):
    check = _one_row(chinook_path, sql)
    assert (check.fired, check.detail) == (False, "no count over groups of one row")


def test_gates_a_confident_answer_on_sakila(sakila_path):
    """Five samples that agree on the one-table form of "actors in more than 20 films" are
    flagged, the join form passes; both count per actor_id."""
    wrong = "SELECT actor_id FROM actor GROUP BY actor_id HAVING COUNT(*) > 20"
    right = ("SELECT a.actor_id FROM actor a JOIN film_actor fa ON fa.actor_id = a.actor_id "
             "GROUP BY a.actor_id HAVING COUNT(*) > 20")
    question = "Which actors appeared in more than 20 films?"
    flagged = vouchsql.check(sakila_path, question, [wrong] * 5, cache_dir=str(sakila_path.parent / "x"))
    passed = vouchsql.check(sakila_path, question, [right] * 5)
    assert flagged.verdict.gate == "flag" and "one_row_groups" in flagged.verdict.reasons
    assert passed.verdict.gate == "pass"
    assert {c.name: c.fired for c in passed.checks}["one_row_groups"] is False


def test_composite_key_needs_every_column(tmp_path):
    path = make_db(tmp_path / "enrol.sqlite", {
        "enrolment": ("student INTEGER, course INTEGER, grade TEXT, PRIMARY KEY (student, course)",
                      [(s, c, "A") for s in range(1, 6) for c in range(1, 4)]),
    })
    fired = _one_row(path, "SELECT student, course FROM enrolment GROUP BY course, student HAVING COUNT(*) > 1")
    assert fired.fired and fired.evidence["findings"][0]["problem"].startswith(
        "GROUP BY student, course makes each group one row of enrolment (its primary key)")
    # one column of the key: several rows per group
    quiet = _one_row(path, "SELECT student FROM enrolment GROUP BY student HAVING COUNT(*) > 1")
    assert not quiet.fired


def test_postgres_reads_the_key_from_the_catalogue(pg):
    url, _raw, _schema = pg
    a = vouchsql.check(url, "Which owners have more than 3 pets?",
                       ["SELECT id FROM owners GROUP BY id HAVING COUNT(*) > 3"] * 5)
    fired = {c.name: c for c in a.checks}["one_row_groups"]
    assert (fired.fired, a.verdict.gate) == (True, "flag")
    assert fired.evidence["findings"][0]["kind"] == "never"
    b = vouchsql.check(url, "Which owners have more than 3 pets?",
                       ["SELECT owner_id FROM pets GROUP BY owner_id HAVING COUNT(*) > 3"] * 5)
    assert {c.name: c.fired for c in b.checks}["one_row_groups"] is False
