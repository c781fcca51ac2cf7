"""``vouch eval confidence`` end to end: candidates files over the demo database and the shared
public databases, labels by relaxed execution match, the metrics against independent
computations from the records, the reports, resuming, and ``--replay`` reproducing every number
with no SQL run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vouchsql.cli import main
from vouchsql.errors import UserInputError
from vouchsql.evals import confidence as C
from vouchsql.evals import metrics as M
from vouchsql.settings import load_config

scipy_stats = pytest.importorskip("scipy.stats")

OVER_100 = "SELECT COUNT(*) FROM orders WHERE total > 100"
AT_LEAST_100 = "SELECT COUNT(*) FROM orders WHERE total >= 100"
AGE_ALL = "SELECT ROUND(AVG(age), 1) FROM customers"
AGE_KNOWN = "SELECT ROUND(AVG(age), 1) FROM customers WHERE age >= 0"
TAGGED_DISTINCT = ("SELECT COUNT(DISTINCT p.product_id) FROM products p JOIN product_tags pt ON pt.product_id = p.product_id "
                   "JOIN tags t ON t.tag_id = pt.tag_id WHERE t.name IN ('bestseller', 'gift-idea')")
TAGGED_ROWS = TAGGED_DISTINCT.replace("COUNT(DISTINCT p.product_id)", "COUNT(*)")
TOP_PRICE_ONE = "SELECT name, price FROM products ORDER BY price DESC LIMIT 1"
TOP_PRICE_ALL = "SELECT name, price FROM products WHERE price = (SELECT MAX(price) FROM products)"
TOTAL_2024 = "SELECT ROUND(SUM(total), 2) FROM orders WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01'"
TOTAL_2024_JOIN = ("SELECT ROUND(SUM(o.total), 2) FROM orders o JOIN order_items oi ON oi.order_id = o.order_id "
                   "WHERE o.order_date >= '2024-01-01' AND o.order_date < '2025-01-01'")
STORES = "SELECT COUNT(*) FROM stores"
STORES_TYPO = "SELECT COUNT(*) FROM storez"
PER_STORE = ("SELECT s.name, COUNT(*) AS n FROM stores s JOIN orders o ON o.store_id = s.store_id "
             "GROUP BY s.store_id, s.name")
PER_STORE_IDS = ("SELECT s.store_id, s.name, COUNT(*) AS n FROM stores s JOIN orders o ON o.store_id = s.store_id "
                 "GROUP BY s.store_id, s.name")


def demo_items(db: str) -> list[dict]:
    """(item, expected label): the labels a relaxed execution match must give."""
    return [
        ({"id": "cut-right", "question": "How many orders were over $100?", "candidates": [OVER_100] * 5,
          "gold_sql": OVER_100}, True),
        ({"id": "cut-wrong", "question": "How many orders were over $100?",
          "candidates": [AT_LEAST_100, OVER_100, OVER_100, AT_LEAST_100, OVER_100], "gold_sql": OVER_100}, False),
        ({"id": "age-consistent-wrong", "question": "What is the average age of our customers?",
          "candidates": [AGE_ALL] * 5, "gold_sql": AGE_KNOWN}, False),
        ({"id": "tags-right-split", "question": "How many products are tagged 'bestseller' or 'gift-idea'?",
          "candidates": [TAGGED_DISTINCT, TAGGED_DISTINCT, TAGGED_ROWS, TAGGED_DISTINCT, TAGGED_ROWS],
          "gold_sql": TAGGED_DISTINCT}, True),
        ({"id": "ties-wrong", "question": "Which product has the highest price?", "candidates": [TOP_PRICE_ONE] * 5,
          "gold_sql": TOP_PRICE_ALL}, False),
        ({"id": "fanout-wrong", "question": "What was the total value of orders placed in 2024?",
          "candidates": [TOTAL_2024_JOIN, TOTAL_2024_JOIN, TOTAL_2024, TOTAL_2024, TOTAL_2024], "gold_sql": TOTAL_2024,
          "answer_text": "Orders in 2024 were worth a lot."}, False),
        ({"id": "fanout-right", "question": "What was the total value of orders placed in 2024?",
          "candidates": [TOTAL_2024] * 4 + [TOTAL_2024_JOIN], "gold_sql": TOTAL_2024}, True),
        ({"id": "error-shown", "question": "How many stores are there?", "candidates": [STORES_TYPO] + [STORES] * 4,
          "gold_sql": STORES}, False),
        ({"id": "given-label", "question": "How many stores are there?", "candidates": [STORES] * 5, "label": True}, True),
        # Extra id column: right under the relaxed match (projection), wrong under strict equality.
        ({"id": "extra-column", "question": "How many orders has each store taken?",
          "candidates": [PER_STORE_IDS, PER_STORE, PER_STORE_IDS], "gold_sql": PER_STORE}, True),
        # Given label overrides the execution match (kept beside it for κ).
        ({"id": "given-vs-exec", "question": "How many orders were over $100?", "candidates": [OVER_100] * 3,
          "gold_sql": OVER_100, "label": False}, False),
        ({"id": "no-db", "db": "missing.sqlite", "question": "Anything?", "candidates": ["SELECT 1"], "label": True}, None),
    ]


SHARED_ITEMS = [
    ({"id": "chinook-tracks", "db": "chinook", "question": "How many tracks are there?",
      "candidates": ["SELECT COUNT(*) FROM Track"] * 5, "gold_sql": "SELECT COUNT(*) FROM Track"}, True),
    ({"id": "chinook-brazil", "db": "chinook", "question": "How many customers are from Brazil?",
      "candidates": ["SELECT COUNT(*) FROM Customer WHERE Country = 'Brazil'",
                     "SELECT COUNT(*) FROM Customer WHERE Country = 'Brazil'",
                     "SELECT COUNT(*) FROM Customer WHERE Country LIKE 'Braz%'"],
      "gold_sql": "SELECT COUNT(*) FROM Customer WHERE Country = 'Brazil'"}, True),
    ({"id": "chinook-top-artist", "db": "chinook", "question": "Which artist has the most albums?",
      "candidates": ["SELECT ar.Name FROM Album al JOIN Artist ar ON ar.ArtistId = al.ArtistId GROUP BY ar.ArtistId "
                     "ORDER BY COUNT(*) ASC LIMIT 1"] * 2 +
                    ["SELECT ar.Name FROM Album al JOIN Artist ar ON ar.ArtistId = al.ArtistId GROUP BY ar.ArtistId "
                     "ORDER BY COUNT(*) DESC LIMIT 1"] * 3,
      "gold_sql": "SELECT ar.Name FROM Album al JOIN Artist ar ON ar.ArtistId = al.ArtistId GROUP BY ar.ArtistId "
                  "ORDER BY COUNT(*) DESC LIMIT 1"}, False),
    ({"id": "sakila-action", "db": "sakila", "question": "How many films are in the Action category?",
      "candidates": ["SELECT COUNT(*) FROM film f JOIN film_category fc ON fc.film_id = f.film_id "
                     "JOIN category c ON c.category_id = fc.category_id WHERE c.name = 'Action'"] * 4 +
                    ["SELECT COUNT(*) FROM film"],
      "gold_sql": "SELECT COUNT(*) FROM film_category fc JOIN category c ON c.category_id = fc.category_id "
                  "WHERE c.name = 'Action'"}, True),
    ({"id": "sakila-films", "db": "sakila", "question": "How many films feature actor 1?",
      "candidates": ["SELECT COUNT(*) FROM film"] * 5,
      "gold_sql": "SELECT COUNT(*) FROM film_actor WHERE actor_id = 1"}, False),
    ({"id": "northwind-france", "db": "northwind", "question": "How many orders were shipped to France?",
      "candidates": ["SELECT COUNT(*) FROM Orders WHERE ShipCountry = 'France'"] * 5,
      "gold_sql": "SELECT COUNT(*) FROM Orders WHERE ShipCountry = 'France'"}, True),
    ({"id": "northwind-discontinued", "db": "northwind", "question": "How many products are discontinued?",
      "candidates": ["SELECT COUNT(*) FROM Products WHERE Discontinued = 0"] * 3 +
                    ["SELECT COUNT(*) FROM Products WHERE Discontinued = 1"] * 2,
      "gold_sql": "SELECT COUNT(*) FROM Products WHERE Discontinued = 1"}, False),
]


def write_items(path: Path, pairs, db: str | None = None) -> Path:
    lines = []
    for item, _ in pairs:
        row = dict(item)
        row.setdefault("db", db)
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _config(tmp: Path):
    return load_config(env={}, cwd=tmp, cache_dir=str(tmp / "cache"))


@pytest.fixture(scope="module")
def demo_run(demo_db, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("confidence")
    pairs = demo_items(str(demo_db))
    input_path = write_items(tmp / "answers.jsonl", pairs, db=str(demo_db))
    out = tmp / "run"
    params = {"rules": list(C.DEFAULT_RULES), "bootstrap": 400, "seed": 7}
    records, manifest = C.run_confidence(input_path, _config(tmp), out, command="test", parameters=params)
    metrics, _ = C.finish(out, records, manifest, list(C.DEFAULT_RULES), replicates=400, seed=7)
    return pairs, records, metrics, out, input_path


def _kept(records):
    return [r for r in records if not r.get("skipped")]


# ---------------------------------------------------------------------------------------
# Labels and records
# ---------------------------------------------------------------------------------------
def test_labels_by_relaxed_execution_match(demo_run):
    pairs, records, metrics, _, _ = demo_run
    by_id = {r["id"]: r for r in records}
    for item, expected in pairs:
        rec = by_id[item["id"]]
        if expected is None:
            assert "not found" in rec["skipped"]
            continue
        assert rec["label"] is expected, (item["id"], rec.get("exec_label"), rec.get("candidates"))
        assert rec["label_source"] == ("given" if "label" in item else "execution")
    assert by_id["given-vs-exec"]["exec_label"] is True, "the execution label is kept beside a given one"
    assert metrics["n"] == len(pairs) - 1 and metrics["skipped"] == 1


def test_records_hold_the_evidence_and_rescore_without_sql(demo_run, monkeypatch):
    _, records, _, _, _ = demo_run
    from vouchsql.db.base import Database

    def no_sql(*a, **k):
        raise AssertionError("rescoring from a record must not run SQL")

    monkeypatch.setattr(Database, "execute", no_sql)
    for rec in _kept(records):
        for rule in C.DEFAULT_RULES:
            assert C.score_from_record(rec, rule).model_dump(mode="json") == rec["verdicts"][rule], (rec["id"], rule)


def test_gates_behave_as_the_rules_say(demo_run):
    _, records, _, _, _ = demo_run
    v = {r["id"]: r["verdicts"]["agreement_first"] for r in _kept(records)}
    assert v["cut-right"]["gate"] == "pass" and v["cut-right"]["score"] == 1.0
    assert v["cut-wrong"]["gate"] == "abstain"  # 3 of 5 disagree with the shown answer
    # All five samples agree and are wrong: agreement cannot help, the stand-in check (-1 ages) can.
    assert v["age-consistent-wrong"]["gate"] == "abstain"
    assert "stand_in_value" in v["age-consistent-wrong"]["reasons"]
    # A confident misreading nothing catches: it passes, with the open tie choice named.
    assert v["ties-wrong"]["gate"] == "pass" and "open_choice:ties" in v["ties-wrong"]["reasons"]
    assert v["tags-right-split"]["gate"] == "flag"
    assert v["error-shown"]["score"] == 0.0


# ---------------------------------------------------------------------------------------
# Metrics against independent computations from the records
# ---------------------------------------------------------------------------------------
def test_metrics_match_independent_computations(demo_run):
    _, records, metrics, _, _ = demo_run
    kept = _kept(records)
    y = np.array([r["label"] for r in kept])
    assert metrics["accuracy"] == pytest.approx(y.mean())
    for rule in C.DEFAULT_RULES:
        s = np.array([r["verdicts"][rule]["score"] for r in kept])
        gates = [r["verdicts"][rule]["gate"] for r in kept]
        m = metrics["rules"][rule]
        u = scipy_stats.mannwhitneyu(s[y], s[~y]).statistic
        assert m["auroc"] == pytest.approx(u / (y.sum() * (~y).sum()))
        lo, hi = m["auroc_ci"]
        assert lo <= m["auroc"] + 1e-9 and m["auroc"] - 1e-9 <= hi
        assert m["brier"] == pytest.approx(np.mean((s - y) ** 2))
        bins = np.clip(np.floor(s * 10 + 1e-9).astype(int), 0, 9)
        ece = sum(abs(y[bins == b].sum() - s[bins == b].sum()) for b in range(10)) / len(s)
        assert m["ece"] == pytest.approx(ece)
        table = {g: [sum(1 for gg, yy in zip(gates, y) if gg == g and yy), sum(1 for gg, yy in zip(gates, y) if gg == g and not yy)]
                 for g in ("pass", "flag", "abstain")}
        assert m["gate"] == table
        assert sum(map(sum, table.values())) == metrics["n"]
        passed = [yy for gg, yy in zip(gates, y) if gg == "pass"]
        assert m["pass_share"] == pytest.approx(len(passed) / len(y))
        if passed:
            assert m["pass_accuracy"] == pytest.approx(np.mean(passed))
        assert m["correct_withheld"] == pytest.approx(table["abstain"][0] / y.sum())
        assert m["wrong_withheld"] == pytest.approx(table["abstain"][1] / (~y).sum())
    pairs = metrics["paired"]
    rules = list(C.DEFAULT_RULES)
    assert set(pairs) == {f"{b}-{a}" for i, a in enumerate(rules) for b in rules[i + 1:]}
    assert {"agreement_first-designed", "v3-agreement_first", "agreement_first-agreement_alone"} <= set(pairs)
    af = pairs["agreement_first-designed"]
    assert af["diff"] == pytest.approx(metrics["rules"]["agreement_first"]["auroc"] - metrics["rules"]["designed"]["auroc"])
    assert af["ci"][0] <= af["ci"][1]


def test_label_agreement_is_reported(demo_run):
    _, _, metrics, _, _ = demo_run
    g = metrics["labels"]["given_vs_execution"]
    assert g["n"] == 1 and g["agreement"] == 0.0
    assert metrics["labels"]["given"] == 2 and metrics["labels"]["execution"] == 9


def test_metrics_json_has_the_documented_shape(demo_run):
    _, _, _, out, _ = demo_run
    data = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert {"n", "accuracy", "rules", "paired"} <= set(data)
    for rule in C.DEFAULT_RULES:
        assert {"auroc", "auroc_ci", "ece", "brier", "pass_accuracy", "pass_share", "correct_withheld",
                "wrong_withheld", "gate"} <= set(data["rules"][rule])
        assert set(data["rules"][rule]["gate"]) == {"pass", "flag", "abstain"}
    for p in data["paired"].values():
        assert set(p) == {"diff", "ci"} and len(p["ci"]) == 2
    curves = json.loads((out / "curves.json").read_text(encoding="utf-8"))
    assert set(curves["risk_coverage"]) == set(C.DEFAULT_RULES)
    assert all(len(b) == 10 for b in curves["reliability"].values())


def test_manifest_records_versions_hashes_and_parameters(demo_run):
    from vouchsql import __version__
    from vouchsql.evals.runs import sha256_file

    _, _, _, out, input_path = demo_run
    man = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert man["harness"] == "confidence" and man["vouchsql_version"] == __version__
    assert man["datasets"]["input"]["sha256"] == sha256_file(input_path)
    assert all(len(d["sha256"]) == 64 for d in man["databases"].values())
    assert man["parameters"]["rules"] == list(C.DEFAULT_RULES) and man["seed"] == 7
    assert man["parameters"]["bootstrap"] == 400
    assert "commit" in man["git"]


# ---------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------
def test_reports_exist_and_hold_the_numbers(demo_run):
    _, _, metrics, out, _ = demo_run
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    for rule in C.DEFAULT_RULES:
        m = metrics["rules"][rule]
        cell = f"{m['auroc']:.3f} ({m['auroc_ci'][0]:.3f} to {m['auroc_ci'][1]:.3f})"
        assert cell in md and cell in html, cell
        assert f"{m['brier']:.3f}" in md
    assert f"{metrics['n']} labelled answers" in md
    for name in ["risk_coverage", *[f"reliability_{r}" for r in C.DEFAULT_RULES]]:
        png = out / "figures" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"figures/{name}.png" in md
    assert html.count("data:image/png;base64,") == 1 + len(C.DEFAULT_RULES)
    assert "<script" not in html and "http://" not in html and "https://" not in html, "self-contained, no CDN"


# ---------------------------------------------------------------------------------------
# Replay and resume
# ---------------------------------------------------------------------------------------
def test_replay_recomputes_identical_numbers_without_sql(demo_run, tmp_path, capsys, monkeypatch, clean_env):
    _, _, metrics, out, _ = demo_run
    from vouchsql.db.base import Database

    def no_sql(*a, **k):
        raise AssertionError("replay ran SQL")

    monkeypatch.setattr(Database, "execute", no_sql)
    monkeypatch.setattr(Database, "profile", no_sql)
    replay_dir = tmp_path / "replayed"
    code = main(["eval", "confidence", "--replay", str(out), "--out", str(replay_dir)])
    text, err = capsys.readouterr()
    assert code == 0, err
    again = json.loads((replay_dir / "metrics.json").read_text(encoding="utf-8"))
    assert again == json.loads((out / "metrics.json").read_text(encoding="utf-8")) == metrics
    assert json.loads((replay_dir / "replay.json").read_text(encoding="utf-8"))["identical"] is True
    assert "identical" in text
    assert (replay_dir / "report.html").is_file()


def test_replay_with_other_rules_or_seed_rescores_from_the_records(demo_run, tmp_path):
    _, records, metrics, out, _ = demo_run
    _, m2 = C.replay(out, tmp_path / "r2", rules=["agreement_first"], seed=7, replicates=400)
    assert set(m2["rules"]) == {"agreement_first"}
    assert m2["rules"]["agreement_first"] == metrics["rules"]["agreement_first"]
    _, m3 = C.replay(out, tmp_path / "r3", seed=8)
    assert m3["rules"]["designed"]["auroc"] == metrics["rules"]["designed"]["auroc"]


def test_cli_resumes_and_refuses_other_inputs(demo_db, tmp_path, capsys, monkeypatch, clean_env):
    pairs = demo_items("demo")[:4]
    input_path = write_items(tmp_path / "answers.jsonl", pairs, db="demo")  # "demo" by name: built in the cache
    out = tmp_path / "run"
    argv = ["eval", "confidence", "--input", str(input_path), "--out", str(out), "--cache-dir", str(tmp_path / "cache"),
            "--bootstrap", "200", "--seed", "3"]
    assert main(argv) == 0, capsys.readouterr().err
    first = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    lines = (out / "confidence.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4

    # Drop the last record (as if the run were killed): a rerun does only that item.
    (out / "confidence.jsonl").write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    calls = []
    real = C.evaluate_item
    monkeypatch.setattr(C, "evaluate_item", lambda db, item, i, *rest: calls.append(item["id"]) or real(db, item, i, *rest))
    assert main(argv) == 0
    assert calls == [pairs[3][0]["id"]]
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8")) == first
    assert len((out / "confidence.jsonl").read_text(encoding="utf-8").splitlines()) == 4
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert len(manifest["resumed"]) == 1

    calls.clear()
    assert main(argv) == 0 and calls == [], "a finished run does nothing but report"

    other = write_items(tmp_path / "other.jsonl", pairs[:2], db="demo")
    capsys.readouterr()
    code = main(["eval", "confidence", "--input", str(other), "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert code == 2 and "other inputs" in capsys.readouterr().err


@pytest.mark.parametrize("args, needle", [
    (["--input", "nowhere.jsonl"], "nowhere.jsonl"),
    (["--rules", "typo"], "typo"),
    (["--bootstrap", "0"], "--bootstrap"),
    ([], "--input"),
    (["--replay", "nowhere"], "manifest.json"),
])
def test_cli_bad_input_is_exit_2(tmp_path, capsys, clean_env, args, needle):
    code = main(["eval", "confidence", "--cache-dir", str(tmp_path / "cache")] + args)
    assert code == 2
    assert needle in capsys.readouterr().err


def test_items_need_candidates_and_labels(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "db": "demo", "question": "q", "candidates": []}) + "\n", encoding="utf-8")
    with pytest.raises(UserInputError, match="candidates"):
        C.load_items(bad)
    bad.write_text(json.dumps({"id": "x", "db": "demo", "question": "q", "candidates": ["SELECT 1"],
                               "label": "maybe"}) + "\n", encoding="utf-8")
    with pytest.raises(UserInputError, match="label"):
        C.load_items(bad)
    assert C.parse_label("wrong") is False and C.parse_label(1) is True and C.parse_label(None) is None


def test_model_path_answers_with_vouch_ask(demo_db, tmp_path):
    """--model: each question is answered by ``vouch ask`` (a function-backed fake model here),
    and its K candidates are scored like a candidates file."""
    from vouchsql.llm import FakeModel

    def reply(request):
        system = request.messages[0][1]
        user = [c for r, c in request.messages if r == "user"][0]
        if "Task: assess" in system:
            return json.dumps({"is_valid": "Flawed" not in user, "flaw_code": None if "Flawed" not in user else "E3.3",
                               "reason": "r", "clarification": None, "interpretations": []})
        if "Task: generate" in system:
            sql = OVER_100 if request.sample < 3 else AT_LEAST_100
            return json.dumps({"sql": sql, "interpretation": "orders over 100", "assumptions": []})
        return "There were some orders."

    items = [{"id": "q1", "db": str(demo_db), "question": "How many orders were over $100?", "gold_sql": OVER_100},
             {"id": "q2", "db": str(demo_db), "question": "Flawed: how happy were orders?", "label": False}]
    input_path = tmp_path / "q.jsonl"
    input_path.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    fake = FakeModel(reply)
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), no_model_cache=True)
    records, manifest = C.run_confidence(input_path, config, tmp_path / "run", model=fake, k=5,
                                         parameters={"rules": ["agreement_first"], "bootstrap": 100, "seed": 0})
    by_id = {r["id"]: r for r in records}
    q1 = by_id["q1"]
    assert q1["k"] == 5 and q1["candidates"][0]["sql"] == OVER_100, "the shown answer comes first"
    assert q1["label"] is True and q1["agreement"] == pytest.approx(0.6)
    assert "flawed" in by_id["q2"]["skipped"]
    assert manifest["model"] == "fake:fake" and manifest["parameters"]["k"] == 5


# ---------------------------------------------------------------------------------------
# The shared public databases
# ---------------------------------------------------------------------------------------
def test_end_to_end_over_the_shared_databases(datasets_dir, demo_db, tmp_path, capsys, clean_env):
    for name in ("chinook", "sakila", "northwind"):
        if not (datasets_dir / f"{name}.sqlite").is_file():
            pytest.skip(f"{name}.sqlite absent from {datasets_dir}")
    pairs = SHARED_ITEMS + [(dict(item, db="demo"), label) for item, label in demo_items("demo")[:6]]
    input_path = write_items(tmp_path / "shared.jsonl", pairs)
    out = tmp_path / "run"
    code = main(["eval", "confidence", "--input", str(input_path), "--out", str(out), "--datasets", str(datasets_dir),
                 "--cache-dir", str(tmp_path / "cache"), "--bootstrap", "500"])
    text, err = capsys.readouterr()
    assert code == 0, err
    records = [json.loads(line) for line in (out / "confidence.jsonl").read_text(encoding="utf-8").splitlines()]
    by_id = {r["id"]: r for r in records}
    for item, expected in pairs:
        assert by_id[item["id"]]["label"] is expected, item["id"]
        assert by_id[item["id"]]["label_source"] == "execution"
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["n"] == len(pairs) and metrics["skipped"] == 0
    y = np.array([r["label"] for r in records])
    s = np.array([r["verdicts"]["agreement_first"]["score"] for r in records])
    assert metrics["rules"]["agreement_first"]["auroc"] == pytest.approx(M.auroc(s, y))
    man = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert set(man["databases"]) == {"chinook", "sakila", "northwind", "demo"}
    assert "AUROC" in text and "Wrote" in text
