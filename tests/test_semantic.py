"""Semantic layers as definitions (issue 30, items 1 and 2): Cortex Analyst semantic models,
dbt semantic models and metrics, WrenAI MDL, each loaded into Vouch's terms on real-shaped
files (tests/fixtures/semantic/), malformed files named by file, line and field, what is not
mapped named; verified queries withholding an answer that disagrees and agreeing with one that
does not; `vouch definitions check` finding a model that drifted."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

import vouchsql
from vouchsql.cli import main
from vouchsql.db import connect
from vouchsql.definitions import load_definitions
from vouchsql.definitions_audit import audit
from vouchsql.errors import UserInputError

pytest.importorskip("yaml", reason="semantic models are YAML")
pytestmark = pytest.mark.core

FIX = Path(__file__).parent / "fixtures" / "semantic"
SHARED = Path(__file__).resolve().parents[2] / "shared"
SPIDER = SHARED / "datasets" / "spider"
CORTEX = sorted((FIX / "cortex").glob("*.yaml"))


def _verdict(answer, name="verified_query"):
    return next(c for c in answer.checks if c.name == name)


# -- loading ----------------------------------------------------------------------------------

@pytest.mark.parametrize("model", CORTEX, ids=lambda p: p.stem)
def test_each_cortex_model_loads_and_every_query_metric_and_filter_runs(model):
    defs = load_definitions(model)
    assert defs.format == "cortex" and defs.verified and defs.logical_tables
    assert all(v.logical and v.source.startswith(str(model)) for v in defs.verified)
    assert any("metric" in meaning for meaning in defs.definitions.values())
    assert any("filter" in meaning for meaning in defs.definitions.values())
    assert defs.synonyms and defs.values
    with connect(SPIDER / f"{model.stem}.sqlite") as db:
        entries = audit(defs, db)
    assert [e for e in entries if not e.ok] == []
    assert sum(e.kind == "verified query" for e in entries) == len(defs.verified)


def test_the_cortex_models_hold_twenty_verified_queries():
    assert sum(len(load_definitions(m).verified) for m in CORTEX) == 20


def test_a_dbt_project_folder_loads_its_semantic_models_and_metrics():
    defs = load_definitions(FIX / "dbt_chinook")
    assert defs.format == "dbt"
    kinds = {r.kind for r in defs.runnables}
    assert {"measure", "metric"} <= kinds
    terms = " ".join(defs.definitions.values())
    assert "SUM(" in terms and "(metric " in terms
    # a cumulative window and a derived metric are named as not run, with the reason
    assert any("cumulative" in u for u in defs.unmapped)
    assert any("derived" in u for u in defs.unmapped)
    # the filtered metric's {{ Dimension('…') }} resolved to the column
    filtered = [r for r in defs.runnables if r.sql and "CASE WHEN" in r.sql]
    assert filtered and all("{{" not in r.sql for r in filtered)
    with connect(SHARED / "datasets" / "chinook.sqlite") as db:
        entries = audit(defs, db)
    ran = [e for e in entries if e.status != "not run"]
    assert ran and [e for e in ran if not e.ok] == []


def test_a_wren_manifest_loads_and_its_metrics_and_views_run():
    defs = load_definitions(FIX / "wren_sakila.json")
    assert defs.format == "wren"
    assert any("calculated column" in m for m in defs.definitions.values())
    assert any(n.startswith("Join on ") for n in defs.notes)
    with connect(SHARED / "datasets" / "sakila.sqlite") as db:
        entries = audit(defs, db)
    assert entries and [e for e in entries if not e.ok] == []


def test_fields_a_reader_does_not_map_are_named(tmp_path):
    text = (CORTEX[0]).read_text(encoding="utf-8")
    path = tmp_path / "model.yaml"
    path.write_text(text.replace("tables:", "module_custom_instructions: {sql_generation: be brief}\ntables:", 1),
                    encoding="utf-8")
    assert "module_custom_instructions" in load_definitions(path).unmapped


@pytest.mark.parametrize("edit, where", [
    (lambda t: t.replace("expr:", "expr: [1, 2]\n        old_expr:", 1), "dimensions[0].expr: expected text, got a list"),
    (lambda t: t.replace("base_table:", "base_tables:", 1), "tables[0].base_table: missing"),
    (lambda t: t.replace("tables:", "tables: [oops", 1), "not valid YAML"),
])
def test_a_malformed_model_is_one_line_naming_file_line_and_field(tmp_path, edit, where):
    path = tmp_path / "broken.yaml"
    path.write_text(edit(CORTEX[0].read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(UserInputError) as err:
        load_definitions(path)
    message = err.value.message
    assert "\n" not in message and where in message
    head = message.split(": ")[0]
    assert head.startswith(str(path) + ":") and head.rsplit(":", 1)[1].isdigit()


def test_a_dbt_measure_without_a_ref_names_its_line(tmp_path):
    project = tmp_path / "dbt"
    shutil.copytree(FIX / "dbt_chinook", project)
    yml = next(project.rglob("semantic.yml"))
    text = yml.read_text(encoding="utf-8")
    yml.write_text(text.replace("model: ref(", "model: source(", 1), encoding="utf-8")
    with pytest.raises(UserInputError) as err:
        load_definitions(project)
    assert f"{yml}:" in err.value.message and ".model: expected ref('<model>')" in err.value.message


# -- verified queries as evidence -------------------------------------------------------------

def _pairs():
    lines = (Path(__file__).resolve().parents[1] / "bench/cases/verified_pairs.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines if x.strip()]


def _gold():
    lines = (SHARED / "cases" / "spider_dev_part.jsonl").read_text().splitlines()
    return {c["id"]: c["reference_sql"] for c in map(json.loads, lines)}


def _wrong():
    out = {}
    for line in (SHARED / "cases" / "spider_predictions_dev.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out[rec["id"]] = sorted({s for n, s in rec["predictions"].items() if rec["correct"].get(n) is False and s})
    return out


def test_a_paraphrase_matches_its_verified_query_the_gold_agrees_and_a_wrong_answer_is_withheld():
    pairs = [p for p in _pairs() if p["expect"] == "match"]
    gold, wrong = _gold(), _wrong()
    tried = matched = 0
    for pair in pairs:
        db = SPIDER / f"{pair['db']}.sqlite"
        settings = {"definitions": str(FIX / "cortex" / f"{pair['db']}.yaml")}
        right = _verdict(vouchsql.check(str(db), pair["question"], gold[pair["id"]], **settings))
        if right.evidence.get("name") != pair["verified"]:
            assert right.evidence.get("name") is None  # not read alike: no match, never another query
            continue
        matched += 1
        assert right.evidence["agrees"] is True and not right.fired
        for sql in wrong[pair["id"]]:
            answer = vouchsql.check(str(db), pair["question"], sql, **settings)
            vq = _verdict(answer)
            if vq.evidence.get("agrees"):
                continue  # Spider calls it wrong for its columns; its rows are the verified ones
            assert vq.fired and vq.evidence["name"] == pair["verified"] and answer.verdict.gate != "pass"
            assert pair["verified"] in vq.detail and vq.evidence["rows"]
            tried += 1
    assert matched >= 17 and tried >= 3  # 17 of 20 on 2026-12-06 (bench/verified_queries.py)


def test_questions_that_share_words_but_ask_otherwise_match_no_verified_query():
    gold = _gold()
    for pair in (p for p in _pairs() if p["expect"] == "no_match"):
        db = SPIDER / f"{pair['db']}.sqlite"
        vq = _verdict(vouchsql.check(str(db), pair["question"], gold[pair["id"]],
                                     definitions=str(FIX / "cortex" / f"{pair['db']}.yaml")))
        assert not vq.fired, (pair["id"], vq.detail)


def test_verified_queries_in_vouchs_own_file_and_a_value_that_differs(tmp_path):
    db = SPIDER / "singer.sqlite"
    path = tmp_path / "defs.toml"
    path.write_text('[[verified_queries]]\nname = "singers_from_france"\n'
                    'question = "How many singers are from France?"\n'
                    'sql = "SELECT count(*) FROM singer WHERE Citizenship = \'France\'"\n', encoding="utf-8")
    same = vouchsql.check(str(db), "What is the number of singers from France?",
                          "SELECT count(*) FROM singer WHERE Citizenship = 'French'", definitions=str(path))
    vq = _verdict(same)
    assert vq.fired and vq.evidence["name"] == "singers_from_france" and vq.evidence["rows"]
    other = _verdict(vouchsql.check(str(db), "How many singers are from the United States?",
                                    "SELECT count(*) FROM singer WHERE Citizenship = 'United States'",
                                    definitions=str(path)))
    assert not other.fired and other.evidence.get("name") is None


def test_a_verified_query_that_no_longer_runs_is_reported_not_guessed(tmp_path):
    db = tmp_path / "singer.sqlite"
    shutil.copy(SPIDER / "singer.sqlite", db)
    model = CORTEX[[m.stem for m in CORTEX].index("singer")] if "singer" in [m.stem for m in CORTEX] else None
    if model is None:
        pytest.skip("no singer model among the fixtures")
    defs = load_definitions(model)
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE singer RENAME TO artist")
    con.commit()
    con.close()
    with connect(db) as conn:
        entries = audit(defs, conn)
    assert any(e.kind == "table" and e.status == "error" for e in entries)
    assert any(e.kind == "verified query" and e.status == "error" for e in entries)
    assert main(["definitions", "check", str(model), "--db", str(db)]) == 1
    v = defs.verified[0]
    vq = _verdict(vouchsql.check(str(db), v.question, "SELECT 1", definitions=str(model)))
    assert not vq.fired


def test_definitions_check_cli_passes_a_current_model(capsys):
    model = CORTEX[0]
    assert main(["definitions", "check", str(model), "--db", str(SPIDER / f"{model.stem}.sqlite"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "cortex" and all(e["status"] == "ok" for e in report["entries"])
