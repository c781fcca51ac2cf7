"""AMBROSIA (Saparina & Lapata, 2024) for SpecBridge's methods table: load the questions with
their interpretations and gold SQL, answer each with the methods of
:mod:`vouchsql.evals.choice_methods`, and score as SpecBridge §3 scores AMBROSIA.

Input formats (AMBROSIA is not shipped: point ``--ambrosia`` at your copy):

- the distributed CSV (``data/ambrosia.csv``): columns ``question``, ``ambig_question``,
  ``gold_queries`` (SQL separated by a blank line), ``db_file`` (relative to the AMBROSIA
  folder, e.g. ``data/scope/…/x.sqlite``), ``is_ambiguous``, ``ambig_type``, ``split``. An
  ambiguous row's interpretations are the unambiguous rows whose ``ambig_question`` is its
  question (their ``question`` is the interpretation's text, their ``gold_queries`` its SQL);
  where none is found, each of its own gold queries is one interpretation with no text.
- JSONL, one question a line: ``{"id"?, "db", "question", "ambiguous", "type"?,
  "interpretations": [{"text"?, "sql"}]}`` (an unambiguous question has one).

Scores (SpecBridge §3): on an ambiguous question an interpretation is *found* when some
returned query gives its result; *recall* is the share found and *AllFound* whether every one
is; on an unambiguous question *precision* is the share of returned queries with its one
correct result (extra queries lower it). Matching is the harness's
(:func:`vouchsql.evals.reference_match.match_reference`).
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import UserInputError
from . import metrics as M
from .choice_methods import RUNNERS, Context, second_answer
from .progress import NoProgress, ProgressSink
from .reference_match import match_reference, tie_context
from .report import Item, Report, Section, Table, Text, fmt, manifest_section, pct_ci
from .runs import build_manifest, finish_run, load_records, read_manifest, run_items

if TYPE_CHECKING:
    from ..answer import Result
    from ..db import Database
    from ..llm import Model
    from ..settings import Config
    from .reference_match import TieContext

HARNESS = "choices_ambrosia"
ONE_TABLE = " Show them in one table."
RECORDS = "ambrosia.jsonl"


@dataclass
class AmbrosiaItem:
    id: str
    db: Path
    question: str
    ambiguous: bool
    interpretations: list[dict[str, Any]] = field(default_factory=list)  # {"text": str | None, "sql": str}
    ambig_type: str | None = None
    split: str | None = None


def _truth(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


def _resolve_db(name: str, root: Path) -> Path:
    path = Path(name)
    if path.is_absolute():
        return path
    for base in (root, root.parent):  # db_file is "data/…", the CSV sits in data/
        if (base / path).is_file():
            return (base / path).resolve()
    return (root / path).resolve()


def load_ambrosia(path: Path, *, split: str | None = "test", root: Path | None = None) -> list[AmbrosiaItem]:
    """AMBROSIA questions of ``split`` (None: every split), each with its interpretations."""
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"no AMBROSIA file at {path}")
    root = Path(root) if root else path.parent
    if path.suffix.lower() == ".csv":
        return _from_csv(path, split, root)
    items = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise UserInputError(f"{path}:{n}: not JSON ({exc})") from None
        interps = row.get("interpretations") or []
        if not row.get("question") or not row.get("db") or not interps or not all(i.get("sql") for i in interps):
            raise UserInputError(f"{path}:{n}: needs 'question', 'db' and 'interpretations' with 'sql'")
        if split is not None and row.get("split", split) != split:
            continue
        items.append(AmbrosiaItem(id=str(row.get("id") or f"q{n}"), db=_resolve_db(str(row["db"]), root),
                                  question=str(row["question"]), ambiguous=_truth(row.get("ambiguous")),
                                  interpretations=[{"text": i.get("text"), "sql": i["sql"]} for i in interps],
                                  ambig_type=row.get("type"), split=row.get("split")))
    return items


def _from_csv(path: Path, split: str | None, root: Path) -> list[AmbrosiaItem]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # db_dump cells are large
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    need = {"question", "gold_queries", "db_file", "is_ambiguous"}
    if rows and not need <= set(rows[0]):
        raise UserInputError(f"{path}: not an AMBROSIA CSV (needs columns {', '.join(sorted(need))})")
    for r in rows:
        if r.get("ambig_type") == "attachment":
            # AMBROSIA's own loader asks attachment questions for one result ("Give me dogs and
            # cats who are orange. Show them in one table."): its gold queries return one table.
            for key in ("question", "ambig_question"):
                if r.get(key) and not r[key].endswith(ONE_TABLE):
                    r[key] += ONE_TABLE
    unambiguous_of: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if not _truth(r["is_ambiguous"]) and r.get("ambig_question") and r["ambig_question"] != r["question"]:
            unambiguous_of.setdefault((r["ambig_question"], r["db_file"]), []).append(r)
    items = []
    for n, r in enumerate(rows, 1):
        if split is not None and r.get("split") != split:
            continue
        golds = [q.strip() for q in (r["gold_queries"] or "").split("\n\n") if q.strip()]
        ambiguous = _truth(r["is_ambiguous"])
        if ambiguous:
            parts = unambiguous_of.get((r["question"], r["db_file"]), [])
            interps = [{"text": p["question"], "sql": q.strip()} for p in parts
                       for q in (p["gold_queries"] or "").split("\n\n")[:1] if q.strip()]
            if len(interps) < 2:
                interps = [{"text": None, "sql": q} for q in golds]
        else:
            interps = [{"text": r["question"], "sql": golds[0]}] if golds else []
        if not interps:
            continue
        items.append(AmbrosiaItem(id=f"ambrosia-{n}", db=_resolve_db(r["db_file"], root), question=r["question"],
                                  ambiguous=ambiguous, interpretations=interps, ambig_type=r.get("ambig_type"),
                                  split=r.get("split")))
    return items


# ---------------------------------------------------------------------------------------
# Running and scoring
# ---------------------------------------------------------------------------------------
def evaluate_item(db: Database, item: AmbrosiaItem, index: int, *, model: str | Model, methods: list[str], k: int = 1,
                  simulated_user: bool = False) -> dict[str, Any]:
    base = {"key": item.id, "index": index, "id": item.id, "db": str(item.db), "question": item.question,
            "ambiguous": item.ambiguous, "type": item.ambig_type, "interpretations": item.interpretations}
    refs: list[tuple[Result, TieContext | None]] = []
    for i, interp in enumerate(item.interpretations):
        res = db.execute(interp["sql"])
        if not res.ok:
            assert res.error is not None  # not ok: it has an error
            return {**base, "invalid": f"gold query {i + 1} does not run ({res.error.message})"}
        refs.append((res, tie_context(db, interp["sql"], res)))
    ctx = Context(db=db, model=model, k=k, temperature=db.config.temperature)
    known: dict[str, Any] = {}

    def scored(returned: list[str]) -> list[dict[str, Any]]:
        out = []
        for sql in returned:
            if sql not in known:
                known[sql] = db.execute(sql)
            res = known[sql]
            out.append({"sql": sql, "ok": res.ok,
                        "matches": [res.ok and match_reference(res, ref, ties) is not None for ref, ties in refs]})
        return out

    out: dict[str, Any] = {**base, "methods": {}}
    for method in methods:
        resp = RUNNERS[method](ctx, item.question)
        rec = resp.to_dict()
        rec["scored"] = scored(resp.returned)
        out["methods"][method] = rec
    if simulated_user:
        # SpecBridge §7.2 on AMBROSIA: a user per interpretation (one on a clear question) who,
        # not shown it, states it; the model answers that interpretation's own question in one
        # generate call, the same second answer for every method.
        second: list[dict[str, Any] | None] = []
        for interp in item.interpretations:
            text = interp.get("text") or (item.question if not item.ambiguous else None)
            if text is None:
                second.append(None)  # an interpretation with no words: no user can state it
                continue
            resp = second_answer(ctx, text)
            second.append({**resp.to_dict(), "scored": scored(resp.returned)})
        out["second"] = second
    return out


def _two_turn(r: dict[str, Any], method: str) -> dict[str, Any] | None:
    """Per question: mean turns and calls over its users, and whether each ends right."""
    if "second" not in r:
        return None
    m = r["methods"][method]
    turns, finals, calls = [], [], []
    for i, s in enumerate(r["second"]):
        if s is None:
            continue
        shown = any(q["matches"][i] for q in m["scored"])
        again = bool(s["scored"]) and s["scored"][0]["matches"][i]
        turns.append(1 + (not shown))
        finals.append(shown or again)
        calls.append(m["calls"] + (0 if shown else s["calls"]))
    if not turns:
        return None
    return {"turns": statistics.fmean(turns), "calls": statistics.fmean(calls), "finals": finals}


def _values(r: dict[str, Any], method: str) -> dict[str, Any]:
    m = r["methods"][method]
    n = len(r["interpretations"])
    found = [any(q["matches"][i] for q in m["scored"]) for i in range(n)]
    right = sum(q["matches"][0] for q in m["scored"])
    calls = m["calls"]
    if r["ambiguous"]:
        return {"recall": sum(found) / n, "all_found": all(found), "calls": calls}
    return {"precision_k": right, "precision_n": len(m["scored"]), "main_right": bool(m["scored"]) and
            m["scored"][0]["matches"][0], "calls": calls}


def analyse(records: list[dict[str, Any]], manifest: dict[str, Any]) -> dict[str, Any]:
    methods = manifest.get("parameters", {}).get("methods") or []
    kept = [r for r in records if "methods" in r]
    amb = [r for r in kept if r["ambiguous"]]
    clear = [r for r in kept if not r["ambiguous"]]
    out: dict[str, Any]
    out = {"questions": len(kept), "ambiguous": len(amb), "unambiguous": len(clear),
           "invalid": sum(1 for r in records if r.get("invalid")), "methods": methods, "overall": {}}
    for m in methods:
        a = [_values(r, m) for r in amb]
        c = [_values(r, m) for r in clear]
        k, n = sum(v["precision_k"] for v in c), sum(v["precision_n"] for v in c)
        out["overall"][m] = {
            "all_found": M.proportion([v["all_found"] for v in a]),
            "recall": statistics.fmean(v["recall"] for v in a) if a else None,
            "precision": {"k": k, "n": n, "rate": k / n if n else None, "ci": M.wilson(k, n)},
            "calls_per_question": statistics.fmean(v["calls"] for v in a + c) if a + c else None}
        two = [v for v in (_two_turn(r, m) for r in kept) if v is not None]
        if two:
            out.setdefault("two_turn", {})[m] = {
                "questions": len(two), "users": sum(len(v["finals"]) for v in two),
                "turns_per_100": 100 * statistics.fmean(v["turns"] for v in two),
                "final_accuracy": M.proportion([f for v in two for f in v["finals"]]),
                "calls_per_question": statistics.fmean(v["calls"] for v in two)}
    return cast("dict[str, Any]", M.jsonable(out))


def build_report(metrics: dict[str, Any], manifest: dict[str, Any], *, replay_of: str | None = None) -> Report:
    rows = []
    for m in metrics["methods"]:
        o = metrics["overall"][m]
        af, p = o["all_found"], o["precision"]
        rows.append([m, f"{pct_ci(af['rate'], af['ci'])} ({af['k']}/{af['n']})", fmt(o["recall"], 3),
                     f"{pct_ci(p['rate'], p['ci'])} ({p['k']}/{p['n']})", fmt(o["calls_per_question"], 1)])
    intro: list[Item]
    intro = [Text(f"{metrics['ambiguous']} ambiguous and {metrics['unambiguous']} unambiguous AMBROSIA questions "
                  f"answered with `{manifest.get('model')}` ({metrics['invalid']} left out: a gold query did not run).")]
    if replay_of:
        intro.append(Text(f"Replayed from `{replay_of}` (no model call, no SQL run)."))
    sections = [Section("Methods on AMBROSIA (the paper's Table 5/6 layout)", [Table(
        ["method", "AllFound (ambiguous)", "recall (ambiguous)", "precision (unambiguous)", "calls / question"], rows,
        caption="AllFound: ambiguous questions with every interpretation's result among the returned queries. "
                "Precision: of the queries returned for unambiguous questions, those with its correct result.")]),
        manifest_section(manifest)]
    if metrics.get("two_turn"):
        trows = [[m, v["users"], fmt(v["turns_per_100"], 1),
                  f"{pct_ci(v['final_accuracy']['rate'], v['final_accuracy']['ci'])}", fmt(v["calls_per_question"], 2)]
                 for m, v in metrics["two_turn"].items()]
        sections.insert(1, Section("Two turns with a simulated user (SpecBridge §7.2)", [Table(
            ["method", "users", "user turns / 100 questions", "final accuracy", "calls / question"], trows,
            caption=f"A user per interpretation of an ambiguous question and one per clear question "
                    f"({metrics['ambiguous']} of {metrics['questions']} questions ambiguous here). A user not shown "
                    "their interpretation states it in a second turn, answered by one generate call on that "
                    "interpretation's question, the same for every method.")]))
    return Report(title="AMBROSIA answered by each method (SpecBridge §3, §7)", command=manifest.get("command"),
                  intro=intro, sections=sections, manifest=manifest)


def run_ambrosia(path: Path, config: Config, out_dir: Path, *, model: str | Model, methods: list[str], k: int = 1,
                 split: str | None = "test", root: Path | None = None, command: str = "",
                 progress: ProgressSink | None = None,
                 simulated_user: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from ..llm import get_model, spec_of

    items = load_ambrosia(path, split=split, root=root)
    if not items:
        raise UserInputError(f"{path}: no AMBROSIA questions in split {split!r}")
    bad = [m for m in methods if m not in RUNNERS]
    if bad:
        raise UserInputError(f"AMBROSIA runs the model methods only; not {', '.join(bad)}")
    spec = spec_of(get_model(model)) if not isinstance(model, str) else model
    manifest = build_manifest(HARNESS, command=command, datasets={"ambrosia": Path(path)}, model=spec,
                              parameters={"methods": methods, "k": k, "split": split,
                                          "simulated_user": simulated_user},
                              record_keys=("methods", "k", "split", "simulated_user"))
    records = run_items(out_dir, manifest, RECORDS, items, key=lambda it: it.id, path_of=lambda it: it.db,
                        evaluate=lambda db, index, it: evaluate_item(db, it, index, model=model, methods=methods,
                                                                     k=k, simulated_user=simulated_user),
                        missing=lambda index, it: {"key": it.id, "index": index, "id": it.id,
                                                   "skipped": f"database {it.db} not found"},
                        config=config, progress=progress or NoProgress())
    return records, manifest


def finish(out_dir: Path, records: list[dict[str, Any]], manifest: dict[str, Any], *,
           replay_of: str | None = None) -> dict[str, Any]:
    return finish_run(out_dir, records, manifest, analyse, build_report, replay_of=replay_of)


def replay(run_dir: Path, out_dir: Path) -> dict[str, Any]:
    manifest = read_manifest(run_dir, HARNESS)
    return finish(out_dir, load_records(run_dir, RECORDS), manifest, replay_of=str(run_dir))


__all__ = ["AmbrosiaItem", "load_ambrosia", "evaluate_item", "analyse", "run_ambrosia", "finish", "replay"]
