"""``vouch sets generate``: request sets from seeds by Vouch's detectors — valid on seeds the
shipped files do not hold (both references run and differ), clauses settle the choice in the
right direction, the shipped generated sets stay valid, and the CLI's errors are clear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vouchsql import cli
from vouchsql.db import connect
from vouchsql.evals.choices_eval import finish, load_choice_file, run_choices
from vouchsql.evals.generate_sets import _clauses, generate_sets
from vouchsql.evals.reference_match import match_reference, tie_context
from vouchsql.settings import load_config

GENERATED = Path(__file__).resolve().parents[1] / "src" / "vouchsql" / "data" / "request_sets_generated.jsonl"
SEEDS = [
    {"id": "top-product", "question": "Which product costs the most?",
     "sql": "SELECT name, price FROM products ORDER BY price DESC LIMIT 1"},
    {"id": "cutoff", "question": "With 50 as the threshold, how many orders count as large?",
     "sql": "SELECT COUNT(*) FROM orders WHERE total > 50"},
    {"id": "nothing-open", "question": "How many stores are there?", "sql": "SELECT COUNT(*) FROM stores"},
    {"id": "broken", "question": "How many widgets?", "sql": "SELECT COUNT(*) FROM widgets"},
]


@pytest.fixture
def config(tmp_path):
    return load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _valid(sets: list[dict], resolve) -> None:
    """Both references run and their results differ under the harness's matching."""
    for s in sets:
        with connect(resolve(s["db"])) as db:
            a, b = db.execute(s["sql_a"]), db.execute(s["sql_b"])
            assert a.ok and b.ok, s["id"]
            assert match_reference(a, b, tie_context(db, s["sql_b"], b)) is None, s["id"]
            assert (a.row_count, b.row_count) == (s["rows_a"], s["rows_b"]), s["id"]


def test_generated_sets_on_new_seeds_are_valid_and_settle_the_choice(tmp_path, demo_db, config):
    seeds = _write(tmp_path / "seeds.jsonl", SEEDS)
    sets, notes = generate_sets(seeds, config, db=str(demo_db))
    by_id = {s["id"]: s for s in sets}
    assert set(by_id) == {"top-product-ties", "cutoff-strict_cutoff"}
    ties = by_id["top-product-ties"]
    assert (ties["rows_a"], ties["rows_b"]) == (1, 5)  # five products tie at the top price
    assert ties["open"] == SEEDS[0]["question"]
    assert ties["specific_a"] == SEEDS[0]["question"] + " " + ties["clause_a"]
    assert ties["clause_a"].startswith("Return exactly 1 row") and "every row tied" in ties["clause_b"]
    cut = by_id["cutoff-strict_cutoff"]
    assert "strictly" in cut["clause_a"] and "inclusive" in cut["clause_b"] and ">=" in cut["sql_b"]
    assert cut["provenance"]["seed"] == "cutoff" and cut["provenance"]["generator"] == "vouch sets generate"
    assert {n["seed"]: n["note"] for n in notes} == {
        "nothing-open": "no open choice whose other reading changes the answer",
        "broken": notes[-1]["note"]}
    assert notes[-1]["note"].startswith("the seed SQL does not run")
    _valid(sets, lambda name: name)

    # The file is what `vouch eval choices` reads; the detectors find B and, on the specific
    # requests (open request + clause), the clause's words settle the choice: no false alarm.
    out = _write(tmp_path / "sets.jsonl", sets)
    loaded, _ = load_choice_file(out)
    assert [s.id for s in loaded] == [s["id"] for s in sets]
    records, manifest = run_choices(out, config, tmp_path / "run")
    metrics = finish(tmp_path / "run", records, manifest)
    assert (metrics["overall"]["found"]["k"], metrics["overall"]["found"]["n"]) == (2, 2)
    assert metrics["overall"]["false_alarms"]["k"] == 0


@pytest.mark.parametrize("choice_type, sql_a, sql_b, description, a_has, b_has", [
    ("strict_cutoff", "SELECT 1 WHERE x >= 3", "SELECT 1 WHERE x > 3", "", "inclusive", "strictly"),
    ("counting_unit", "SELECT COUNT(DISTINCT a) FROM t", "SELECT COUNT(*) FROM t", "", "distinct", "rows"),
    ("population_scope", "SELECT 1 FROM a LEFT JOIN b", "SELECT 1 FROM a JOIN b", "", "no matching", "at least one"),
    ("missing_values", "", "", "AVG(w) skips the 3 rows with no w; the alternative counts them as 0 (2 vs 1)",
     "Leave out", "as zero"),
    ("negation", "", "", "x <> 1 keeps every film with at least one row that does not match; the alternative keeps "
     "each film with no matching row", "at least one", "no matching"),
    ("quantifier", "", "", '"than any" can mean than every value or than at least one; x > (SELECT MAX(y)) reads it '
     "as every value, the alternative as at least one", "every one", "at least one"),
    ("aggregation_level", "SELECT SUM(a) / SUM(b) FROM t", "SELECT AVG(a / b) FROM t", "", "ratio of the totals",
     "average of the ratios"),
])
def test_clause_direction_follows_the_two_queries(choice_type, sql_a, sql_b, description, a_has, b_has):
    a, b = _clauses(choice_type, sql_a, sql_b, 1, 2, description)
    assert a_has in a and b_has in b


def test_shipped_generated_sets_are_valid(datasets_dir, demo_db):
    sets = [json.loads(line) for line in GENERATED.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(sets) >= 15 and len({s["id"] for s in sets}) == len(sets)
    assert {s["db"] for s in sets} == {"demo", "chinook", "sakila", "northwind"}
    load_choice_file(GENERATED)
    usable = [s for s in sets if s["db"] == "demo" or (datasets_dir / f"{s['db']}.sqlite").is_file()]
    _valid(usable, lambda name: demo_db if name == "demo" else datasets_dir / f"{name}.sqlite")


def test_cli_writes_the_sets_and_refuses_bad_seeds(tmp_path, demo_db, capsys):
    seeds = _write(tmp_path / "seeds.jsonl", SEEDS[:2])
    out = tmp_path / "out" / "sets.jsonl"
    code = cli.main(["sets", "generate", "--db", str(demo_db), "--seeds", str(seeds), "--out", str(out),
                     "--cache-dir", str(tmp_path / "cache")])
    assert code == 0 and len(out.read_text().splitlines()) == 2
    assert "Wrote 2 request sets" in capsys.readouterr().out
    bad = _write(tmp_path / "bad.jsonl", [{"id": "x", "question": "How many?"}])
    code = cli.main(["sets", "generate", "--db", str(demo_db), "--seeds", str(bad), "--out", str(out),
                     "--cache-dir", str(tmp_path / "cache")])
    assert code == 2 and "needs both 'question' and 'sql'" in capsys.readouterr().err
    nodb = _write(tmp_path / "nodb.jsonl", SEEDS[:1])
    code = cli.main(["sets", "generate", "--seeds", str(nodb), "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert code == 2 and "names no database" in capsys.readouterr().err


def test_a_model_paraphrase_is_kept_only_where_the_choice_stays_settled(tmp_path, demo_db, config):
    from vouchsql.llm import FakeModel

    def reply(request):
        assert request.messages[0][1].startswith("# Task: paraphrase")
        user = request.messages[1][1]
        if "Include every row tied" in user:  # B: keeps "every … tied"
            return json.dumps({"request": "Which products are tied for the highest cost? List every one."})
        return json.dumps({"request": "Which product costs the most?"})  # A: the deciding words are gone

    model = FakeModel(reply)
    seeds = _write(tmp_path / "seeds.jsonl", SEEDS[:1])
    sets, notes = generate_sets(seeds, config, db=str(demo_db), model=model)
    (s,) = sets
    assert len(model.requests) == 2
    assert s["specific_b"] == "Which products are tied for the highest cost? List every one."
    assert s["provenance"]["template_b"] == SEEDS[0]["question"] + " " + s["clause_b"]
    assert s["specific_a"] == SEEDS[0]["question"] + " " + s["clause_a"]  # the template stays
    assert s["provenance"]["paraphrase"] == {"a": "the paraphrase lost the words that settle the choice",
                                             "b": "kept"}
    assert notes == [{"seed": "top-product", "note": "top-product-ties specific_a: the paraphrase lost the words "
                                                     "that settle the choice; the template is kept"}]


def test_new_seeds_over_the_shared_databases_give_valid_sets(tmp_path, datasets_dir, config):
    seeds = [
        {"id": "c1", "db": "chinook", "question": "Which track is the most expensive?",
         "sql": "SELECT Name, UnitPrice FROM Track ORDER BY UnitPrice DESC LIMIT 1"},
        {"id": "s1", "db": "sakila", "question": "How many customers rented a Comedy film?",
         "sql": "SELECT COUNT(*) FROM customer c JOIN rental r ON r.customer_id = c.customer_id "
                "JOIN inventory i ON i.inventory_id = r.inventory_id JOIN film_category fc ON fc.film_id = i.film_id "
                "JOIN category ca ON ca.category_id = fc.category_id WHERE ca.name = 'Comedy'"},
        {"id": "n1", "db": "northwind", "question": "How many customers are there in each region?",
         "sql": "SELECT Region, COUNT(*) FROM Customers GROUP BY Region"},
    ]
    path = _write(tmp_path / "seeds.jsonl", seeds)
    sets, notes = generate_sets(path, config, datasets=datasets_dir)
    assert {s["provenance"]["seed"] for s in sets} == {"c1", "s1", "n1"}, notes
    assert {s["type"] for s in sets} >= {"ties", "counting_unit", "missing_values"}
    _valid(sets, lambda name: datasets_dir / f"{name}.sqlite")
