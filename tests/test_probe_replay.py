"""Every check case (tests/fixtures/checks) run live with a recording probe, then again from
what the probe recorded with no database (issue 28, item 1: checks as passes over facts that
can be tested without an engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

import vouchsql
from vouchsql.answer import Candidate
from vouchsql.checks.base import CheckContext
from vouchsql.sql.inspect import inspect_sql


def _check_cases():
    import json

    fixtures = Path(__file__).parent / "fixtures" / "checks"
    for path in sorted(fixtures.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")):
            if case.get("judged_parts") is None and case.get("judged_claims") is None:
                yield pytest.param(case, id=f"{path.stem}: {case['title']}")


@pytest.mark.parametrize("case", list(_check_cases()))
def test_every_check_gives_the_same_result_from_its_recorded_facts(request, case, tmp_path_factory):
    """Each check case (tests/fixtures/checks) run live with a recording probe, then again
    with no database from what the probe recorded: every check reports the same. A check that
    reached the engine any other way would find nothing to read the second time."""
    from vouchsql.checks import CHECKS
    from vouchsql.errors import SQLRejected
    from vouchsql.sql.inspect import referenced_tables

    path = request.getfixturevalue("demo_db" if case["db"] == "demo" else f"{case['db']}_path")
    cache = str(tmp_path_factory.getbasetemp() / "probe-replay-cache")
    with vouchsql.connect(path, cache_dir=cache, **case.get("settings", {})) as db:
        sqls = case["sql"]
        try:
            tree = db.as_engine_reads(db.parse(sqls[0]), sqls[0])
            reads = referenced_tables(tree, db.default_schema)[0]
        except SQLRejected:
            tree, reads = None, []
        profile = db.profile_for(reads)
        candidates = [Candidate(sql=s, result=db.execute(s), cluster=0) for s in sqls]
        inspection = inspect_sql(tree, profile, db.dialect) if tree is not None else None

        def context(**how) -> CheckContext:
            return CheckContext(question=case["question"], profile=profile, shown=candidates[0],
                                candidates=candidates, tree=tree, inspection=inspection,
                                answer_text=case.get("answer_text"), hint=case.get("hint"), **how)

        live = context(db=db, record=True)
        got = [check.run(live) for check in CHECKS]
    again = [check.run(context(db=None, facts=live.probe.recorded)) for check in CHECKS]
    assert [r.model_dump() for r in again] == [r.model_dump() for r in got]
