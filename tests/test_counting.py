"""The one counting-unit analysis (vouchsql.counting, issue 28): one reader of the counting
words, one measure of whether a join repeats the counted entity, read alike by the
question_shape check, the join_fanout signal and the counting_unit choice."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlglot import exp

import vouchsql
from vouchsql.answer import Candidate
from vouchsql.checks.base import CheckContext
from vouchsql.checks.join_fanout import JoinFanout
from vouchsql.checks.question_shape import QuestionShape
from vouchsql.counting import counted_table, count_phrases, repetition, rows_asked
from vouchsql.probe import Probe
from vouchsql.sql.edit import column
from vouchsql.sql.inspect import inspect_sql, referenced_tables

from test_boundaries import make_db


def test_count_phrases_read_the_cue_and_the_words_after_it():
    got = count_phrases("How many different albums, and the most tracks per artist?")
    assert [(p.cue, p.text, p.noun[:1], p.asks_number) for p in got] == [
        ("how many", "different albums and the", ("albums",), True),
        ("most", "tracks per artist", ("tracks",), False)]
    assert counted_table("How many invoice lines are there?", ["Invoice", "InvoiceLine"]) == "InvoiceLine"
    assert counted_table("How many albums and how many artists?", ["Album", "Artist"]) is None  # two: no one
    assert counted_table("Which genre has the fewest tracks?", ["Genre", "Track"]) == "Track"
    assert rows_asked("Count every order row") and rows_asked("including repeats") and not rows_asked("How many orders?")


@pytest.fixture
def school(tmp_path: Path) -> Path:
    # teacher 3 teaches nothing (a LEFT JOIN gives it one row with no course); teacher 1
    # teaches course 10 twice (two grades), so its rows repeat course 10.
    return make_db(tmp_path / "school.sqlite", {
        "teacher": ("teacher_id INTEGER PRIMARY KEY, name TEXT", [(1, "Ann"), (2, "Bo"), (3, "Cy")]),
        "course": ("course_id INTEGER PRIMARY KEY, title TEXT", [(10, "Maths"), (11, "Art")]),
        "course_arrange": ("course_id INTEGER REFERENCES course(course_id), "
                           "teacher_id INTEGER REFERENCES teacher(teacher_id), grade INTEGER, "
                           "PRIMARY KEY (course_id, teacher_id, grade)",
                           [(10, 1, 1), (10, 1, 2), (11, 2, 1)]),
    })


def _context(db, question: str, sql: str) -> CheckContext:
    tree = db.as_engine_reads(db.parse(sql), sql)
    profile = db.profile_for(referenced_tables(tree, db.default_schema)[0])
    shown = Candidate(sql=sql, result=db.execute(sql), cluster=0)
    return CheckContext(question=question, db=db, profile=profile, shown=shown, candidates=[shown], tree=tree,
                        inspection=inspect_sql(tree, profile, db.dialect))


def test_repetition_counts_rows_that_carry_a_key_not_null_rows(school, tmp_path):
    """A LEFT JOIN's row for a teacher with no course carries no course key: no repetition
    (the check's old COUNT(*) measure read it as one, and capped a right answer on Spider,
    spider-dev-0405); two rows of one course within a teacher's group are one."""
    with vouchsql.connect(school, cache_dir=str(tmp_path / "c")) as db:
        probe = Probe(db, db.profile())
        left = exp.maybe_parse("SELECT t.name, COUNT(a.course_id) FROM teacher t LEFT JOIN course_arrange a "
                               "ON a.teacher_id = t.teacher_id WHERE a.grade = 1 OR a.grade IS NULL GROUP BY t.teacher_id",
                               dialect="sqlite")
        rep = repetition(probe, left, column("a", "course_id", "sqlite"))
        assert rep is not None and (rep.rows, rep.entities, rep.repeats) == (2, 2, False)
        both = left.copy()
        both.set("where", None)
        rep = repetition(probe, both, column("a", "course_id", "sqlite"))
        assert rep is not None and (rep.rows, rep.entities, rep.repeats, rep.factor) == (3, 2, True, 1.5)


def test_the_check_and_the_signal_read_one_measure(school, tmp_path):
    """"How many courses" per teacher, counted over the link rows: question_shape's count_unit
    and join_fanout both fire from the same measured repetition, and the probe runs it once."""
    sql = ("SELECT t.name, COUNT(*) FROM teacher t JOIN course_arrange a ON a.teacher_id = t.teacher_id "
           "JOIN course c ON c.course_id = a.course_id GROUP BY t.teacher_id")
    with vouchsql.connect(school, cache_dir=str(tmp_path / "c")) as db:
        ctx = _context(db, "Show each teacher's name and how many courses they teach.", sql)
        shape = QuestionShape().run(ctx)
        assert shape.fired and [f["part"] for f in shape.evidence["findings"]] == ["count_unit"]
        after_shape = ctx.probe.queries
        fanout = JoinFanout().run(ctx)
        assert fanout.fired and [(f["rows"], f["entities"]) for f in fanout.evidence["fanouts"]] == [(3, 2)]
        assert ctx.probe.queries == after_shape  # the signal read the check's measurement

        # the same question over rows where no course repeats within a teacher: neither fires
        ctx = _context(db, "Show each teacher's name and how many courses they teach.",
                       sql.replace("GROUP BY", "WHERE a.grade = 1 GROUP BY"))
        assert not QuestionShape().run(ctx).fired and not JoinFanout().run(ctx).fired


def test_the_choice_offers_distinct_only_where_the_data_repeats(school, tmp_path):
    with vouchsql.connect(school, cache_dir=str(tmp_path / "c")) as db:
        sql = "SELECT COUNT(*) FROM course c JOIN course_arrange a ON a.course_id = c.course_id"
        answer = vouchsql.check(db, "How many courses are taught?", [sql])
        offered = [c for c in answer.choices if c.type == "counting_unit"]
        assert len(offered) == 1
        assert "(3 joined rows carry 2 distinct keys)" in offered[0].description
        one = vouchsql.check(db, "How many courses are taught?", [sql + " WHERE a.grade = 2"])
        assert [c for c in one.choices if c.type == "counting_unit"] == []
