"""Golden cases for every check, one fixture file per check (tests/fixtures/checks/<check>.json).

Each case is run through the public ``vouchsql.check`` on a real database and the named
check's result is compared with ``expect``: ``fired``, a partial match of ``evidence`` and a
substring of ``detail``. ``nothing_fires.json`` holds plain correct queries on which no check
may fire and the gate must pass.

Evidence matching is partial: a dict matches when every expected key matches; a list matches
element-wise with the same length; ``{"$gt": x}``, ``{"$ge": x}``, ``{"$lt": x}``, ``{"$le": x}``
compare numbers; floats compare to 1e-9.

A case's ``engines`` (how it differs on DuckDB, PostgreSQL, MariaDB or Spark) is read by
tests/test_golden_engines.py only; here, on SQLite, it is ignored.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import vouchsql
from vouchsql.checks import CHECKS

FIXTURES = Path(__file__).parent / "fixtures" / "checks"
NOTHING_FIRES = "nothing_fires"
CHECK_NAMES = [c.name for c in CHECKS]
DB_NAMES = {"demo", "chinook", "sakila", "northwind"}
# "engines": the case on other engines, read by tests/test_golden_engines.py only (ignored here).
CASE_KEYS = {"title", "db", "question", "sql", "answer_text", "hint", "judged_parts", "judged_claims", "settings",
             "expect", "engines"}


def _load(name: str) -> list[dict]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def _fixture_names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json"))


def _cases():
    for name in _fixture_names():
        for case in _load(name):
            yield pytest.param(name, case, id=f"{name}: {case['title']}")


def _db_path(request, name: str) -> Path:
    return request.getfixturevalue("demo_db" if name == "demo" else f"{name}_path")


def _run(request, case: dict, cache_dir: str):
    db = _db_path(request, case["db"])
    return vouchsql.check(db, case["question"], case["sql"], answer_text=case.get("answer_text"),
                          hint=case.get("hint"), judged_parts=case.get("judged_parts"),
                          judged_claims=case.get("judged_claims"), cache_dir=cache_dir,
                          **case.get("settings", {}))


_OPS = {"$gt": lambda a, b: a > b, "$ge": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b, "$le": lambda a, b: a <= b}


def matches(actual, expected, path: str = "evidence") -> list[str]:
    """Where ``actual`` fails the partial pattern ``expected`` (empty when it matches)."""
    if isinstance(expected, dict) and expected and set(expected) <= set(_OPS):
        if not isinstance(actual, (int, float)) or isinstance(actual, bool):
            return [f"{path}: expected a number, got {actual!r}"]
        return [f"{path}: {actual!r} is not {op} {bound!r}" for op, bound in expected.items()
                if not _OPS[op](actual, bound)]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        out = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing (keys: {sorted(actual)})")
            else:
                out.extend(matches(actual[key], value, f"{path}.{key}"))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {len(expected)} item(s), got {actual!r}"]
        return [m for i, (a, e) in enumerate(zip(actual, expected)) for m in matches(a, e, f"{path}[{i}]")]
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        return [] if math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-9) else [f"{path}: {actual!r} != {expected!r}"]
    if isinstance(expected, bool) or isinstance(actual, bool):  # True == 1 in Python; not here
        same = type(actual) is type(expected) and actual == expected
    else:
        same = actual == expected
    return [] if same else [f"{path}: {actual!r} != {expected!r}"]


@pytest.mark.parametrize("check_name, case", list(_cases()))
def test_golden_case(request, cache_dir, check_name, case):
    assert_golden(_run(request, case, cache_dir), check_name, case)


def assert_golden(answer, check_name: str, case: dict, where: str = "") -> None:
    """The golden expectations of ``case`` on ``answer`` (also run on other engines by
    test_golden_engines.py); ``where`` is added to the failure message."""
    by_name = {c.name: c for c in answer.checks}
    assert list(by_name) == CHECK_NAMES, "every registered check reports, in registry order"
    if check_name == NOTHING_FIRES:
        fired = [f"{c.name}: {c.detail}" for c in answer.checks if c.fired]
        assert fired == [], fired
        assert answer.verdict.gate == "pass", answer.verdict
        return
    result = by_name[check_name]
    expect = case["expect"]
    context = f"{result.detail!r} evidence={result.evidence!r}{where}"
    assert result.fired is expect["fired"], context
    if "evidence" in expect:
        problems = matches(result.evidence, expect["evidence"])
        assert not problems, f"{problems}; {context}"
    if "detail_contains" in expect:
        assert expect["detail_contains"] in result.detail, context


# ---------------------------------------------------------------------------------------
# The fixture files themselves
# ---------------------------------------------------------------------------------------
def test_every_registered_check_has_a_fixture_file_with_both_outcomes():
    names = set(_fixture_names())
    assert set(CHECK_NAMES) <= names, f"no golden file for {sorted(set(CHECK_NAMES) - names)}"
    assert names <= set(CHECK_NAMES) | {NOTHING_FIRES}, f"golden files for unknown checks: {sorted(names - set(CHECK_NAMES))}"
    for name in CHECK_NAMES:
        outcomes = {case["expect"]["fired"] for case in _load(name)}
        assert outcomes == {True, False}, f"{name}.json needs cases that fire and cases that do not"


def test_fixture_cases_are_well_formed():
    total = 0
    for name in _fixture_names():
        cases = _load(name)
        titles = [c["title"] for c in cases]
        assert len(titles) == len(set(titles)), f"{name}.json repeats a title"
        for case in cases:
            total += 1
            assert set(case) <= CASE_KEYS, f"{name}: {case['title']}: unknown keys {set(case) - CASE_KEYS}"
            assert case["db"] in DB_NAMES
            assert isinstance(case["sql"], list) and case["sql"] and all(isinstance(s, str) for s in case["sql"])
            assert case["question"].strip()
            if name == NOTHING_FIRES:
                assert "expect" not in case and len(case["sql"]) >= 2, "nothing_fires cases need K >= 2"
            else:
                assert set(case["expect"]) <= {"fired", "evidence", "detail_contains"}
                assert isinstance(case["expect"]["fired"], bool)
            for engine, entry in case.get("engines", {}).items():
                if "expect" in entry:
                    assert name != NOTHING_FIRES and set(entry["expect"]) <= {"fired", "evidence", "detail_contains"}, \
                        f"{name}: {case['title']}: {engine}"
                    assert isinstance(entry["expect"]["fired"], bool), f"{name}: {case['title']}: {engine}"
    assert total >= 45


def test_shared_database_cases_cover_every_shared_database():
    dbs = {case["db"] for name in _fixture_names() for case in _load(name)}
    assert dbs == DB_NAMES


@pytest.mark.parametrize("actual, expected, ok", [
    ({"a": 1, "b": 2}, {"a": 1}, True),
    ({"a": 1}, {"b": 1}, False),
    ({"x": [{"r": 0.5, "s": 1}]}, {"x": [{"r": {"$lt": 0.85}}]}, True),
    ({"x": [{"r": 0.9}]}, {"x": [{"r": {"$lt": 0.85}}]}, False),
    ({"x": [1, 2]}, {"x": [1]}, False),
    ({"f": 1.0000000001}, {"f": 1.0}, True),
    ({"f": True}, {"f": 1}, False),
    ({"f": 1}, {"f": True}, False),
    ({"t": []}, {"t": []}, True),
])
def test_partial_matcher(actual, expected, ok):
    assert (matches(actual, expected) == []) is ok
