"""``Answer.answer_text`` is the written answer (the field to read); ``text``, kept in the JSON
from the first release, is derived from it in one place, :meth:`Answer.reply`."""

from __future__ import annotations

import json

import vouchsql
from vouchsql.answer import Answer, Result, Shown, Verdict


def _answer(**fields) -> Answer:
    return Answer(question="q", shown=Shown(sql="SELECT 1", result=Result()),
                  verdict=Verdict(rule="agreement_first", score=1.0, gate="pass"), **fields)


def test_reply_derives_text_from_answer_text():
    a = _answer(answer_text="There are 8 stores.")
    assert a.text is None  # check's Answer: the written answer was given, nothing was replied
    assert a.reply() is a and a.text == a.answer_text == "There are 8 stores."


def test_reply_with_a_notice_when_nothing_was_answered():
    a = _answer().reply(notice="Not answered: no weather data.")
    assert (a.answer_text, a.text) == (None, "Not answered: no weather data.")
    assert _answer().reply().text is None  # a model error: no answer, no notice


def test_check_json_keeps_both_fields(demo_db, tmp_path):
    answer = vouchsql.check(demo_db, "How many stores are there?", "SELECT COUNT(*) FROM stores",
                            answer_text="There are 8 stores.", cache_dir=str(tmp_path))
    doc = json.loads(answer.model_dump_json())
    assert doc["answer_text"] == "There are 8 stores." and "text" in doc and doc["text"] is None
