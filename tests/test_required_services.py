"""``VOUCH_REQUIRE_SERVICES``: a test skipped because a required service is missing fails
(tests/conftest.py), so CI (``.ci/run`` sets it) cannot pass without the server tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import conftest
from conftest import SERVICE_SKIPS, required_services

pytest_plugins = ["pytester"]

INNER = '''
import pytest

def test_pg():
    pytest.skip("PostgreSQL is not reachable at x: refused")

def test_spark():
    pytest.skip("Spark: no Java runtime (java) on PATH")

def test_other():
    pytest.skip("sample database chinook.sqlite is absent")
'''


def test_the_names_and_all():
    assert required_services("") == set()
    assert required_services("postgresql, java") == {"postgresql", "java"}
    assert required_services("all") == set(SERVICE_SKIPS)
    with pytest.raises(pytest.UsageError, match="oracle"):
        required_services("oracle")


@pytest.mark.parametrize("value, failed, skipped", [(None, 0, 3), ("postgresql", 1, 2), ("all", 2, 1)])
def test_a_required_service_skip_fails(pytester, monkeypatch, value, failed, skipped):
    if value is None:
        monkeypatch.delenv("VOUCH_REQUIRE_SERVICES", raising=False)
    else:
        monkeypatch.setenv("VOUCH_REQUIRE_SERVICES", value)
    # The real hook and its tables, alone (the suite's conftest imports the suite's fixtures).
    src = Path(conftest.__file__).read_text(encoding="utf-8")
    start = src.index("# What a skip's reason says")
    end = src.index("# Markers, given by what a test needs")
    pytester.makeconftest("import os\nimport re\n\nimport pytest\n\n" + src[start:end])
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=failed, skipped=skipped)
    if failed:
        result.stdout.fnmatch_lines(["*is required here (VOUCH_REQUIRE_SERVICES)*"])


def test_markers_follow_what_a_test_needs():
    from conftest import markers_for

    assert markers_for("test_checks", ("tests",), ("tmp_path",)) == {"core"}
    assert markers_for("test_bounds", ("tests",), ()) == {"core"}
    assert markers_for("test_bounds", ("tests",), (), "pg") == {"engines"}
    assert markers_for("test_x", ("tests",), ("pg", "tmp_path")) == {"engines"}
    assert markers_for("test_golden_engines", ("tests",), (), "spark: nothing_fires: x") == {"spark", "engines"}
    assert markers_for("test_web", ("tests", "e2e"), ("browser",)) == {"browser"}
    assert markers_for("test_mcp", ("tests",), ()) == {"server"}
    assert markers_for("test_boundaries", ("tests",), ()) == {"slow"}
