"""asked_columns: a column returned only because it sorts or ranks, or * where some columns are
asked for. A signal by default (the numbers are right; the shape is not what was asked), a cap
with the exact_columns setting, where the columns are the answer's contract."""

from __future__ import annotations

import pytest

import vouchsql
from test_boundaries import make_db


@pytest.fixture(scope="module")
def school(tmp_path_factory):
    d = tmp_path_factory.mktemp("school")
    return make_db(d / "school.sqlite", {
        "teacher": ("id INTEGER PRIMARY KEY, name TEXT, age INTEGER, hometown TEXT",
                    [(i, f"t{i}", 30 + i, ["Oslo", "Rome", "Lima"][i % 3]) for i in range(1, 13)]),
        "pupil": ("id INTEGER PRIMARY KEY, grade INTEGER, name TEXT", [(i, 9 + i % 4, f"p{i}") for i in range(1, 30)]),
    })


def _check(path, question, sql, **settings):
    answer = vouchsql.check(path, question, [sql] * 5, cache_dir=str(path.parent / "cache"), **settings)
    return answer, {c.name: c for c in answer.checks}["asked_columns"]


@pytest.mark.parametrize("question, sql, kind, column", [
    ("Sort the teacher names by their age.", "SELECT name, age FROM teacher ORDER BY age", "sort_key", "age"),
    ("List the teacher names in ascending order of age.", "SELECT name, age FROM teacher ORDER BY 2", "sort_key", "age"),
    ("Which grade has the most pupils?",
     "SELECT grade, COUNT(*) AS n FROM pupil GROUP BY grade ORDER BY n DESC LIMIT 1", "sort_key", "COUNT(*) AS n"),
    ("What is the most common hometown of teachers?",
     "SELECT hometown, COUNT(*) FROM teacher GROUP BY hometown ORDER BY COUNT(*) DESC LIMIT 1", "sort_key", "COUNT(*)"),
    ("Show the teachers from Oslo.", "SELECT * FROM teacher WHERE hometown = 'Oslo'", "star", "*"),
])
def test_fires_with_the_column_named(school, question, sql, kind, column):
    answer, got = _check(school, question, sql)
    assert got.fired and [(f["kind"], f["column"]) for f in got.evidence["findings"]] == [(kind, column)], got.detail
    # a signal by default: the answer still passes; a cap with exact_columns
    assert got.kind == "signal" and answer.verdict.gate == "pass"
    answer, got = _check(school, question, sql, exact_columns=True)
    assert got.kind == "cap" and answer.verdict.gate == "flag" and "asked_columns" in answer.verdict.reasons


@pytest.mark.parametrize("question, sql", [
    ("List the teacher names and ages, sorted by age.", "SELECT name, age FROM teacher ORDER BY age"),
    ("Which grade has the most pupils? Give the grade and the number of pupils.",
     "SELECT grade, COUNT(*) FROM pupil GROUP BY grade ORDER BY COUNT(*) DESC LIMIT 1"),
    ("Sort the teacher names by their age.", "SELECT name FROM teacher ORDER BY age"),
    ("Show all the information about teachers from Oslo.", "SELECT * FROM teacher WHERE hometown = 'Oslo'"),
    # a column the question names nowhere is not judged (another word may name it)
    ("Sort the teachers by seniority.", "SELECT name, age FROM teacher ORDER BY age DESC"),
    # one returned column that sorts is the answer itself
    ("List the hometowns in alphabetical order.", "SELECT DISTINCT hometown FROM teacher ORDER BY hometown"),
])
def test_silent(school, question, sql):
    _, got = _check(school, question, sql, exact_columns=True)
    assert not got.fired and got.evidence["findings"] == [], got.detail
