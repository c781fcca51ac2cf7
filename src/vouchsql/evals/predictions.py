"""``vouch eval predictions``: the IES study on any system's published outputs.

A team that runs a text-to-SQL system already holds what the study needs: its predicted SQL,
a second or third system's (or K samples of its own), and gold SQL or judged labels. For each
question this harness

1. runs every prediction and the gold once, and labels each prediction by execution with
   Spider's test-suite rule (:func:`.execution.spider_equal`: the same columns in any order,
   rows as a multiset, as a list where the gold sorts; numbers to four decimals) — or takes
   the given label, keeping the execution label beside it; BIRD's strict set equality is
   recorded too;
2. vouches for each shown system's SQL with K candidates: its own K samples when it has
   them, else its prediction and the next K − 1 systems' in the order given (cyclic). A
   system with no SQL for a question is a candidate that returns nothing and agrees with
   nobody (the paper's definition: K does not shrink); shown with no SQL, the answer is
   withheld and wrong.

From the records alone (the live run and ``--replay`` alike) it reports, per scoring rule:
AUROC with a paired bootstrap difference against agreement alone (resampling *questions*: the
answers to one question move together), the gate's confusion and pass precision,
risk–coverage, ECE and Brier, the confident-error slice (answers whose K candidates all agree,
A = 1), and per alarm (a fired check, ``check:finding``, or ``choice:type``) its precision as
an error detector, overall and at A = 1, with Wilson intervals — the table the severity rule
(:mod:`vouchsql.checks.severity`) reads (``--write-measured``).

Inputs, in the formats people publish:

- questions: Spider/BIRD JSON (``dev.json``), or JSONL/CSV with ``id``, ``question``, ``db``
  (or ``db_id``) and optionally the gold (``gold_sql``/``query``/``SQL``), ``hint``/``evidence``,
  ``predictions`` (``{system: sql or [samples]}``) and ``correct``/``labels``
  (``{system: true/false}``);
- predictions, one file per system (``NAME=FILE``): Spider text (one SQL per line, aligned
  with the questions, optionally ``SQL<TAB>db_id``), BIRD JSON (``{"0": "SQL\\t----- bird
  -----\\tdb"}``), a JSON list or an object keyed by question id, JSONL (``{id, sql}`` or
  ``{id, samples: [...]}``) or CSV (an id column and a SQL column);
- gold: in the questions file, or ``--gold`` (Spider's ``dev_gold.sql``, or JSONL/CSV by id);
- labels: in the questions file, or ``--labels`` (JSONL/CSV ``{id, system, label}``);
- databases: ``--db-dir`` (``<db_id>/<db_id>.sqlite`` or ``<db_id>.sqlite``) and ``--db
  ID=URL`` for any engine Vouch connects to.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, AbstractSet, Any, cast

import numpy as np

from ..answer import CheckResult, Result
from ..errors import UserInputError, VouchError
from ..settings import Config
from . import metrics as M
from .cases import read_jsonl
from .confidence import parse_label, score_from_record
from .progress import NoProgress, ProgressSink
from .report import (Figure, Item, Report, Section, Table, Text, manifest_section, pct, pct_ci, reliability_png,
                     risk_coverage_png, with_ci)
from .runs import RecordLog, build_manifest, load_records, prepare_run_dir, read_manifest, replay_bootstrap, write_json

if TYPE_CHECKING:
    from ..db.base import Database

HARNESS = "predictions"
RECORDS = "predictions.jsonl"
DEFAULT_RULES = ("agreement_alone", "agreement_first", "v3")
BASELINE = "agreement_alone"
WITHHELD = ("flag", "abstain")
K = 5
RECORD_KEYS = ("k", "max_rows", "timeout", "exact_columns")

_GOLD_KEYS = ("gold_sql", "reference_sql", "query", "SQL", "gold")
_SQL_KEYS = ("sql", "SQL", "prediction", "predicted_sql", "pred", "query", "PREDICTED SQL", "predicted")
_ID_KEYS = ("id", "question_id", "qid", "index")
_DB_KEYS = ("db", "db_id", "database")


# ---------------------------------------------------------------------------------------
# Reading the inputs
# ---------------------------------------------------------------------------------------
@dataclass
class Question:
    """One question with everything said about it: each system's SQL (one, or K samples;
    ``None`` where it gave none), the gold, and the labels given."""

    id: str
    db: str
    question: str
    gold_sql: str | None = None
    hint: str | None = None
    systems: dict[str, list[str | None]] = field(default_factory=dict)
    labels: dict[str, bool] = field(default_factory=dict)


def _first(row: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((row[k] for k in keys if row.get(k) not in (None, "")), None)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None


def _rows(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON list, a JSONL or a CSV file, each with its line number as ``_line``."""
    if not path.is_file():
        raise UserInputError(f"{path}: no such file")
    if path.suffix.lower() == ".csv":
        # A quoted cell may hold a SQL statement over several lines: the reader, not
        # splitlines, decides where a row ends.
        reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline=""))
        return [{**row, "_line": reader.line_num} for row in reader]
    if path.suffix.lower() == ".json":
        data = _json(path)
        if not isinstance(data, list):
            raise UserInputError(f"{path}: expected a JSON list of objects")
        return [{**row, "_line": n} if isinstance(row, dict) else {"_bad": row, "_line": n}
                for n, row in enumerate(data, 1)]
    return read_jsonl(path, line_numbers=True)


def read_ids(path: Path) -> list[str]:
    """The question ids a JSON/JSONL/CSV file lists (``id``, ``question_id``…), e.g. ``--exclude``."""
    path = Path(path)
    out = set()
    for row in _rows(path):
        qid = _first(row, _ID_KEYS)
        if qid is None:
            raise UserInputError(f"{path}:{row['_line']}: no question id ({', '.join(_ID_KEYS)})")
        out.add(str(qid))
    return sorted(out)


def _sql_list(value: object, where: str) -> list[str | None]:
    """One system's SQL for one question: a string, or a list of K samples (blank: none)."""
    if value is None or isinstance(value, str):
        return [value if value and value.strip() else None]
    if isinstance(value, list) and value and all(v is None or isinstance(v, str) for v in value):
        return [v if v and v.strip() else None for v in value]
    raise UserInputError(f"{where}: a prediction is a SQL string or a list of SQL samples, got {value!r:.60}")


def read_questions(path: Path) -> list[Question]:
    """The questions, with any gold, hint, predictions and labels the file holds."""
    path = Path(path)
    rows = _rows(path)
    if path.suffix.lower() == ".json" and rows and any(k in rows[0] for k in ("query", "SQL")) \
            and not any(k in rows[0] for k in _ID_KEYS[:1]):
        # Spider/BIRD: ids are BIRD's question_id, else the position in the file.
        rows = [{**r, "id": r.get("question_id", i)} for i, r in enumerate(rows)]
    out, seen = [], set()
    for i, row in enumerate(rows):
        where = f"{path}:{row['_line']}"
        if "_bad" in row:
            raise UserInputError(f"{where}: not a JSON object")
        qid = _first(row, _ID_KEYS)
        qid = str(qid) if qid is not None else str(i)
        if qid in seen:
            raise UserInputError(f"{where}: id {qid!r} appears twice")
        seen.add(qid)
        db, question = _first(row, _DB_KEYS), row.get("question")
        if not db or not question:
            raise UserInputError(f"{where}: each question needs {'db (or db_id)' if not db else 'question'}")
        preds = row.get("predictions") or {}
        labels = row.get("correct") or row.get("labels") or {}
        if not isinstance(preds, dict) or not isinstance(labels, dict):
            raise UserInputError(f"{where}: predictions and correct/labels are objects keyed by system name")
        hint = _first(row, ("hint", "evidence"))
        out.append(Question(
            id=qid, db=str(db), question=str(question), gold_sql=_first(row, _GOLD_KEYS),
            hint=(str(hint).strip() or None) if hint else None,
            systems={str(s): _sql_list(v, f"{where}: {s}") for s, v in preds.items()},
            labels={str(s): _label(v, f"{where}: {s}") for s, v in labels.items() if v is not None}))
    if not out:
        raise UserInputError(f"{path}: no questions")
    return out


def _label(value: object, where: str) -> bool:
    try:
        return bool(parse_label(value))
    except UserInputError as exc:
        raise UserInputError(f"{where}: {exc.message}") from None


def _aligned_lines(path: Path, questions: list[Question], what: str) -> list[str | None]:
    """Spider's text format: one SQL a line, in the questions' order; an optional tab and
    db_id after it is checked against the question's database."""
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    while lines and not lines[-1].strip() and len(lines) > len(questions):
        lines.pop()
    if len(lines) != len(questions):
        raise UserInputError(f"{path}: {len(lines)} {what} lines for {len(questions)} questions (one a line, in "
                             "the questions' order; an empty line for a question with none)")
    out: list[str | None] = []
    for n, (line, q) in enumerate(zip(lines, questions), 1):
        sql, _, db = line.partition("\t")
        db = db.split("\t")[-1].strip()
        if db and db != Path(q.db).stem and db != "----- bird -----":
            raise UserInputError(f"{path}:{n}: this line names database {db!r}, question {q.id!r} is on {q.db!r}: "
                                 "the lines are not in the questions' order")
        out.append(sql.strip() or None)
    return out


def _by_id(path: Path, questions: list[Question], value_keys: tuple[str, ...], what: str) -> dict[str, Any]:
    """A JSONL/CSV/JSON file of ``{id, <value>}`` rows (or a JSON object keyed by id or by
    position), as values by question id."""
    ids = [q.id for q in questions]
    if path.suffix.lower() == ".json":
        data = _json(path)
        if isinstance(data, dict):
            if set(data) <= set(ids):
                return data
            if all(k.isdecimal() for k in data):  # BIRD: keyed by position
                if len(data) != len(ids):
                    raise UserInputError(f"{path}: {len(data)} {what} for {len(ids)} questions")
                return {ids[int(k)]: v for k, v in data.items() if int(k) < len(ids)}
            unknown = sorted(set(data) - set(ids))[:3]
            raise UserInputError(f"{path}: keys {', '.join(map(repr, unknown))} are not question ids")
        if isinstance(data, list) and not all(isinstance(v, dict) for v in data):
            if len(data) != len(ids):
                raise UserInputError(f"{path}: {len(data)} {what} for {len(ids)} questions")
            return dict(zip(ids, data))
    out: dict[str, Any] = {}
    known = set(ids)
    for row in _rows(path):
        qid = _first(row, _ID_KEYS)
        where = f"{path}:{row['_line']}"
        if qid is None:
            raise UserInputError(f"{where}: no question id ({', '.join(_ID_KEYS)})")
        if str(qid) not in known:
            raise UserInputError(f"{where}: question id {qid!r} is not in the questions file")
        value = _first(row, value_keys)
        out[str(qid)] = value
    return out


def read_predictions_file(path: Path, questions: list[Question]) -> dict[str, list[str | None]]:
    """One system's SQL per question id (a question the file does not mention: none)."""
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"{path}: no such predictions file")
    if path.suffix.lower() in (".json", ".jsonl", ".csv"):
        raw = _by_id(path, questions, ("samples", *_SQL_KEYS), "predictions")
        out = {}
        for qid, v in raw.items():
            if isinstance(v, str) and "\t----- bird -----\t" in v:
                v = v.split("\t----- bird -----\t")[0]
            out[qid] = _sql_list(v, f"{path}: question {qid}")
        return out
    return {q.id: [sql] for q, sql in zip(questions, _aligned_lines(path, questions, "prediction"))}


def load_inputs(questions_path: Path, predictions: list[tuple[str, Path]], *, gold: Path | None = None,
                labels: Path | None = None) -> list[Question]:
    """The questions with every system's SQL, the gold and the labels, from their files."""
    questions = read_questions(questions_path)
    for name, path in predictions:
        if not name or any(name in q.systems for q in questions[:1]):
            raise UserInputError(f"--predictions {name}={path}: "
                                 + ("name each system: NAME=FILE" if not name else f"system {name!r} given twice"))
        by_id = read_predictions_file(path, questions)
        for q in questions:
            q.systems[name] = by_id.get(q.id, [None])
    if gold is not None:
        gold = Path(gold)
        if gold.suffix.lower() in (".json", ".jsonl", ".csv"):
            got = _by_id(gold, questions, _GOLD_KEYS, "gold queries")
        else:
            got = dict(zip((q.id for q in questions), _aligned_lines(gold, questions, "gold")))
        for q in questions:
            q.gold_sql = got.get(q.id) or q.gold_sql
    if labels is not None:
        for row in _rows(Path(labels)):
            where = f"{labels}:{row['_line']}"
            qid, system = _first(row, _ID_KEYS), row.get("system")
            if qid is None or not system or row.get("label") in (None, ""):
                raise UserInputError(f"{where}: a label row needs id, system and label")
            match = [q for q in questions if q.id == str(qid)]
            if not match:
                raise UserInputError(f"{where}: question id {qid!r} is not in the questions file")
            match[0].labels[str(system)] = _label(row["label"], where)
    names = list(dict.fromkeys(s for q in questions for s in q.systems))
    if not names:
        raise UserInputError("no predictions: give --predictions NAME=FILE (one per system), or a questions file "
                             "whose lines hold \"predictions\"")
    for q in questions:  # every system on every question, in one order
        q.systems = {s: q.systems.get(s, [None]) for s in names}
    return questions


def resolve_databases(questions: list[Question], db_dir: Path | None, urls: dict[str, str]) -> dict[str, str | None]:
    """Where each question's database is: ``--db ID=URL``, else under ``--db-dir``."""
    out: dict[str, str | None] = {}
    for name in sorted({q.db for q in questions}):
        if name in urls:
            out[name] = urls[name]
            continue
        found = None
        for root in [db_dir] if db_dir else []:
            for cand in (root / name / f"{name}.sqlite", root / f"{name}.sqlite", root / name / f"{name}.db",
                         root / name):
                if cand.is_file():
                    found = str(cand.resolve())
                    break
        if found is None and Path(name).is_file():
            found = str(Path(name).resolve())
        out[name] = found
    return out


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------


def candidates_for(q: Question, shown: str, k: int) -> tuple[list[str | None], list[str]]:
    """The K candidates of ``shown``'s answer (its own first) and where each came from: its
    own samples when it has several, else the next systems' predictions in order, cyclic."""
    own = q.systems[shown]
    if len(own) > 1:
        cands = own[:k]
        return cands, [f"{shown}#{i}" for i in range(len(cands))]
    order = list(q.systems)
    j = order.index(shown)
    others = [order[(j + d) % len(order)] for d in range(1, min(k, len(order)))]
    return [own[0]] + [q.systems[o][0] for o in others], [shown] + others


def _refused(why: str) -> dict[str, Any]:
    """An answer with no verdict (no SQL shown, or refused before any check): withheld."""
    from ..score import RULES

    return {"refused": why[:300], "agreement": 0.0, "k": 0, "strict_clusters": [], "checks": [], "choices": [],
            "choice_descriptions": {}, "verdicts": {r: {"score": 0.0, "gate": "abstain"} for r in RULES}}


def evaluate_question(db: Database, q: Question, index: int, *, k: int, shown: list[str] | None,
                      show_gold: bool) -> dict[str, Any]:
    """One question's record: every system's label and, per shown system, Vouch's verdict."""
    from ..agreement import strict_clusters
    from ..choices import reported
    from ..pipeline import rescore
    from ..pipeline.checking import vouch
    from ..score import RULES
    from .execution import orders_rows, spider_equal, strict_equal

    base: dict[str, Any] = {"key": q.id, "index": index, "id": q.id, "db": q.db, "question": q.question,
                            "gold_sql": q.gold_sql}
    results: dict[str, Result] = {}

    def run(sql: str | None) -> Result:
        # No SQL is the empty query, which the engine answers with an error as `vouch ask`'s
        # empty samples are: it agrees with nobody and counts in K.
        sql = sql or ""
        if sql not in results:
            results[sql] = db.execute(sql)
        return results[sql]

    gold = run(q.gold_sql) if q.gold_sql else None
    if gold is not None and gold.error is not None and not q.labels:
        return {**base, "skipped": f"the gold SQL does not run ({gold.error.message})"}
    ordered = bool(q.gold_sql) and orders_rows(cast(str, q.gold_sql), db.dialect)
    labels: dict[str, dict[str, Any]] = {}
    for system, sqls in q.systems.items():
        pred = run(sqls[0])
        exe: bool | None
        strict: bool | None
        exe = strict = None
        if gold is not None and gold.error is None:
            exe, strict = spider_equal(pred, gold, ordered), strict_equal(pred, gold)
        given = q.labels.get(system)
        label = given
        if label is None and gold is not None and gold.error is None:
            # A result cut off at the row cap with the gold's row count is undetermined:
            # counted as matching, as everywhere in Vouch's execution labels.
            label = True if exe is None else exe
        labels[system] = {"label": label, "source": "given" if given is not None else "execution",
                          "exec_label": exe, "strict_label": strict, "no_sql": sqls[0] is None,
                          "error": pred.error.message[:200] if pred.error else None}

    def verdict(cands: list[str | None]) -> dict[str, Any]:
        if cands[0] is None:
            return _refused("the system gave no SQL")
        try:
            answer = vouch(db, q.question, [c or "" for c in cands], [run(c) for c in cands], hint=q.hint,
                           all_choices=False)
        except VouchError as exc:
            return _refused(f"{type(exc).__name__}: {exc.message}")
        strict = strict_clusters([c.result for c in answer.candidates])
        return {"refused": None, "agreement": answer.agreement or 0.0, "k": len(cands), "strict_clusters": strict,
                "checks": [c.model_dump(mode="json") for c in answer.checks],
                "choices": [c.type for c in answer.choices if reported(c)],
                "choice_descriptions": {c.type: c.description for c in reversed(answer.choices) if reported(c)},
                "verdicts": {r: rescore(answer, r, strict=strict).model_dump(mode="json") for r in RULES}}

    answers = []
    for system in (shown or list(q.systems)):
        if system not in q.systems:
            continue
        cands, sources = candidates_for(q, system, k)
        answers.append({"system": system, "candidates": sources, **labels[system], **verdict(cands)})
    record: dict[str, Any] = {**base, "labels": labels, "answers": answers}
    if show_gold and q.gold_sql and gold is not None and gold.error is None:
        record["gold_shown"] = verdict([q.gold_sql] * k)
    return record


# Worker processes (--jobs): each keeps its own connections, one per database.
_WORKER: dict[str, Any] = {}


def _worker_init(config: Config, options: dict[str, Any]) -> None:
    _WORKER.update(config=config, options=options, dbs={})


def _worker_run(task: tuple[int, dict[str, Any], str]) -> dict[str, Any]:
    from ..db import connect

    index, qd, where = task
    dbs = _WORKER["dbs"]
    db = dbs.get(where) or dbs.setdefault(where, connect(where, config=_WORKER["config"]))
    return evaluate_question(db, Question(**qd), index, **_WORKER["options"])


def run_predictions(questions: list[Question], config: Config, out_dir: Path, *, databases: dict[str, str | None],
                    k: int = K, shown: list[str] | None = None, show_gold: bool = False, jobs: int = 1,
                    command: str = "", parameters: dict[str, Any] | None = None, files: dict[str, Path] | None = None,
                    progress: ProgressSink | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Record every question not yet in ``out_dir`` (resumable); return all records and the manifest."""
    from ..db import connect

    progress = progress or NoProgress()
    if k < 1:
        raise UserInputError("--k must be at least 1")
    unknown = sorted(set(shown or []) - set(questions[0].systems))
    if unknown:
        raise UserInputError(f"--systems names {', '.join(unknown)}, not among the systems "
                             f"({', '.join(questions[0].systems)})")
    params = {"k": k, "max_rows": config.max_rows, "timeout": config.timeout, "exact_columns": config.exact_columns,
              "systems": list(questions[0].systems), "shown": shown, "show_gold": show_gold, **(parameters or {})}
    manifest = build_manifest(HARNESS, command=command, datasets=files or {},
                              databases={n: Path(p) for n, p in databases.items() if p and "://" not in p},
                              parameters=params, seed=params.get("seed"), record_keys=RECORD_KEYS)
    out_dir = Path(out_dir)
    prepare_run_dir(out_dir, manifest, RECORDS)
    log = RecordLog(out_dir / RECORDS)
    todo = [(i, q) for i, q in enumerate(questions) if not log.done(q.id)]
    progress.start(len(questions), len(questions) - len(todo))
    options: dict[str, Any] = {"k": k, "shown": shown, "show_gold": show_gold}
    ready = []
    for index, q in todo:
        where = databases.get(q.db)
        if where is None:
            log.append({"key": q.id, "index": index, "id": q.id, "db": q.db, "question": q.question,
                        "skipped": f"database {q.db!r} not found (give --db-dir or --db {q.db}=URL)"})
            progress.advance(q.id)
        else:
            ready.append((index, q, where))
    if jobs > 1 and len(ready) > 1:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init, initargs=(config, options)) as pool:
            # Records are keyed and sorted by input position, so finishing order changes nothing.
            for rec in pool.map(_worker_run, [(i, asdict(q), w) for i, q, w in ready], chunksize=4):
                log.append(rec)
                progress.advance(rec["id"])
    else:
        open_dbs: dict[str, Any] = {}
        try:
            for index, q, where in ready:
                db = open_dbs.get(where) or open_dbs.setdefault(where, connect(where, config=config))
                log.append(evaluate_question(db, q, index, **options))
                progress.advance(q.id)
        finally:
            for db in open_dbs.values():
                db.close()
    keep = {q.id for q in questions}
    return [r for r in log.records() if r["key"] in keep], manifest


# ---------------------------------------------------------------------------------------
# Analysis (the live run and --replay alike, from the records alone)
# ---------------------------------------------------------------------------------------
def _answers(records: list[dict[str, Any]], exclude: AbstractSet[str] = frozenset()) -> list[dict[str, Any]]:
    """Every labelled shown answer, with its question's id."""
    return [{**a, "id": r["id"], "db": r["db"]} for r in records if not r.get("skipped") and r["id"] not in exclude
            for a in r["answers"] if a.get("label") is not None]


COLUMNS_CHECK = "asked_columns"


def run_exact_columns(records: list[dict[str, Any]], manifest: dict[str, Any] | None = None) -> bool | None:
    """The ``exact_columns`` setting a run's records were made with: the manifest's, else (a run
    recorded before the manifest held it) read from the kind stored for ``asked_columns``, a cap
    with the setting and a signal without; None if neither says."""
    recorded = (manifest or {}).get("parameters", {}).get("exact_columns")
    if recorded is not None:
        return bool(recorded)
    for r in records:
        for a in r.get("answers") or []:
            for c in a.get("checks") or []:
                if c["name"] == COLUMNS_CHECK:
                    return bool(c["kind"] == "cap")
    return None


def _columns_as(checks: list[CheckResult], exact: bool) -> list[CheckResult]:
    """The checks as ``exact_columns`` = ``exact`` would have reported them: the setting changes
    only ``asked_columns``' kind (its finding is measured the same either way), so the other
    contract's verdicts follow from the same records."""
    from ..checks.severity import earned

    kind = "cap" if exact else "signal"
    # as a live run does: the written kind, then what its measured precision earns
    return [earned(c.model_copy(update={"kind": kind})) if c.name == COLUMNS_CHECK else c for c in checks]


def _verdicts(answers: list[dict[str, Any]], rules: list[str], *,
              exact_columns: bool | None = None) -> dict[str, list[Any]]:
    """Each rule's verdict per answer, recomputed from the stored evidence (no SQL); with
    ``exact_columns`` given, as that setting would have made them."""
    out: dict[str, list[Any]] = {r: [] for r in rules}
    reproduced = [0, 0]
    for a in answers:
        checks = [CheckResult.model_validate(c) for c in a["checks"]]
        if exact_columns is not None:
            checks = _columns_as(checks, exact_columns)
        for rule in rules:
            if a.get("refused"):
                out[rule].append((0.0, "abstain"))
                continue
            v = score_from_record(a, rule, checks)
            out[rule].append((float(v.score), v.gate))
            if rule in a["verdicts"] and exact_columns is None:
                reproduced[1] += 1
                reproduced[0] += a["verdicts"][rule] == v.model_dump(mode="json")
    out["_reproduced"] = reproduced
    return out


def alarm_keys(check: dict[str, Any]) -> list[str]:
    """The names a fired check counts under: its name, and ``name:finding`` per kind of finding."""
    from ..checks.severity import finding_keys

    return [check["name"]] + finding_keys(CheckResult.model_validate(check))


def per_alarm(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per alarm: firings on right and wrong answers, and its precision as an error detector
    (wrong among fired) overall and among A = 1 answers, with Wilson 95% intervals."""
    stats: dict[str, dict[str, Any]] = defaultdict(lambda: {"right": 0, "wrong": 0, "right_a1": 0, "wrong_a1": 0,
                                                            "kinds": set()})
    for a in answers:
        fired: dict[str, str] = {}
        for c in a["checks"]:
            if c["fired"]:
                for key in alarm_keys(c):
                    fired[key] = c["kind"]
        for t in a["choices"]:
            fired[f"choice:{t}"] = "choice"
        side = "right" if a["label"] else "wrong"
        for key, kind in fired.items():
            s = stats[key]
            s[side] += 1
            s[side + "_a1"] += a["agreement"] >= 1.0
            s["kinds"].add(kind)
    out = []
    for key, s in sorted(stats.items()):
        n, n1 = s["right"] + s["wrong"], s["right_a1"] + s["wrong_a1"]
        out.append({"alarm": key, "kinds": sorted(s["kinds"]), "fires": n, "on_right": s["right"],
                    "on_wrong": s["wrong"], "precision": s["wrong"] / n if n else None,
                    "precision_ci": M.wilson(s["wrong"], n) if n else None, "fires_a1": n1,
                    "on_right_a1": s["right_a1"], "on_wrong_a1": s["wrong_a1"],
                    "precision_a1": s["wrong_a1"] / n1 if n1 else None,
                    "precision_a1_ci": M.wilson(s["wrong_a1"], n1) if n1 else None})
    return out


def question_bootstrap(series: dict[str, np.ndarray], y: np.ndarray, groups: np.ndarray, *, replicates: int,
                       seed: int) -> M.Bootstrap:
    """AUROC of each series on resamples of whole questions (``groups``), all on the same ones."""
    members = [np.flatnonzero(groups == g) for g in range(int(groups.max()) + 1)] if groups.size else []
    rng = np.random.default_rng(seed)
    values = {name: np.full(replicates, np.nan) for name in series}
    nq = len(members)
    for rep in range(replicates):
        if not nq:
            break
        pick = np.concatenate([members[i] for i in rng.integers(0, nq, size=nq)])
        yy = y[pick]
        if yy.all() or not yy.any():
            continue
        for name, s in series.items():
            values[name][rep] = M.auroc(s[pick], yy)
    return M.Bootstrap(replicates, seed, values)


def _slice(gates: list[str], y: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    right, wrong = mask & y, mask & ~y
    g = np.array([x in WITHHELD for x in gates], dtype=bool)
    return {"answers": int(mask.sum()), "wrong": int(wrong.sum()),
            "right_withheld": [int((g & right).sum()), int(right.sum())],
            "wrong_withheld": [int((g & wrong).sum()), int(wrong.sum())]}


def analyse(records: list[dict[str, Any]], rules: list[str], *, replicates: int = M.DEFAULT_REPLICATES,
            seed: int = M.DEFAULT_SEED, exclude: AbstractSet[str] = frozenset(),
            manifest: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """metrics.json and the curves behind the figures, from the records (and the run's
    settings, where ``manifest`` is given)."""
    answers = _answers(records, exclude)
    y = np.array([bool(a["label"]) for a in answers], dtype=bool)
    ids = {q: i for i, q in enumerate(dict.fromkeys(a["id"] for a in answers))}
    groups = np.array([ids[a["id"]] for a in answers], dtype=int)
    verdicts = _verdicts(answers, rules)
    reproduced = verdicts.pop("_reproduced")
    scores = {r: np.array([s for s, _ in verdicts[r]], dtype=float) for r in rules}
    gates = {r: [g for _, g in verdicts[r]] for r in rules}
    agreement = np.array([a["agreement"] for a in answers], dtype=float)
    a1 = agreement >= 1.0
    # The other columns contract (exact_columns flipped), from the same records, so one run
    # reports both: the setting the labels call for and the analyst's default.
    exact = run_exact_columns(records, manifest)
    other: dict[str, list[Any]] = {}
    if exact is not None:
        other = _verdicts(answers, rules, exact_columns=not exact)
        other.pop("_reproduced")
    other_scores = {f"{r} (other columns contract)": np.array([s for s, _ in v], dtype=float)
                    for r, v in other.items()}
    boot = question_bootstrap({"agreement": agreement, **scores, **other_scores}, y, groups, replicates=replicates,
                              seed=seed)
    out_rules: dict[str, dict[str, Any]]
    curves: dict[str, dict[str, Any]]
    out_rules, curves = {}, {"risk_coverage": {}, "reliability": {}}
    for rule in rules:
        q = M.gate_quantities(gates[rule], y)
        n_pass = sum(q["gate"]["pass"])
        rc = M.risk_coverage(scores[rule], y)
        out_rules[rule] = {
            "auroc": M.auroc(scores[rule], y), "auroc_ci": boot.interval(rule),
            "minus_agreement": M.auroc(scores[rule], y) - M.auroc(agreement, y),
            "minus_agreement_ci": boot.paired(rule, "agreement"),
            "ece": M.ece(scores[rule], y), "brier": M.brier(scores[rule], y), "aurc": rc["aurc"],
            "pass_accuracy": q["pass_accuracy"], "pass_accuracy_ci": M.wilson(q["gate"]["pass"][0], n_pass),
            "pass_share": q["pass_share"], "gate": q["gate"],
            "all": _slice(gates[rule], y, np.ones_like(y)), "a1": _slice(gates[rule], y, a1)}
        curves["risk_coverage"][rule] = rc
        curves["reliability"][rule] = M.reliability(scores[rule], y)
    systems: dict[str, dict[str, Any]] = {}
    for a in answers:
        s = systems.setdefault(a["system"], {"answers": 0, "right": 0, "a1": 0, "a1_wrong": 0, "no_sql": 0})
        s["answers"] += 1
        s["right"] += bool(a["label"])
        s["a1"] += a["agreement"] >= 1.0
        s["a1_wrong"] += a["agreement"] >= 1.0 and not a["label"]
        s["no_sql"] += bool(a.get("no_sql"))
    both = [a for a in answers if a.get("source") == "given" and a.get("exec_label") is not None]
    labels: dict[str, Any] = {"given": sum(a.get("source") == "given" for a in answers),
                              "execution": sum(a.get("source") == "execution" for a in answers)}
    if both:
        g = [bool(a["label"]) for a in both]
        e = [bool(a["exec_label"]) for a in both]
        labels["given_vs_execution"] = {"n": len(both), "agreement": float(np.mean(np.equal(g, e))),
                                        "kappa": M.cohen_kappa(g, e),
                                        "differ": sorted({a["id"] for a, x, z in zip(both, g, e) if x != z})}
    strict = [a for a in answers if a.get("strict_label") is not None and a.get("exec_label") is not None]
    labels["strict_vs_spider"] = {"n": len(strict), "strict_right": sum(bool(a["strict_label"]) for a in strict),
                                  "spider_right": sum(bool(a["exec_label"]) for a in strict)}
    gold = [r["gold_shown"] for r in records if r.get("gold_shown") and r["id"] not in exclude]
    metrics: dict[str, Any] = {
        "n_answers": len(answers), "n_questions": len(ids), "right": int(y.sum()),
        "accuracy": float(y.mean()) if len(y) else float("nan"),
        "skipped_questions": sorted(r["id"] for r in records if r.get("skipped")),
        "excluded_questions": sorted(exclude & {r["id"] for r in records}),
        "agreement_auroc": M.auroc(agreement, y), "agreement_auroc_ci": boot.interval("agreement"),
        "a1": {"answers": int(a1.sum()), "wrong": int((a1 & ~y).sum())},
        "rules": out_rules, "systems": systems, "labels": labels, "alarms": per_alarm(answers),
        "bootstrap": {"replicates": replicates, "seed": seed, "unit": "question"},
        "stored_verdicts_reproduced": reproduced,
    }
    if gold:
        # Each gold SQL shown as all K candidates (A = 1): what a rule withholds is a false alarm
        # or a gold error; the ids say which answers to read.
        ids_shown = [r["id"] for r in records if r.get("gold_shown") and r["id"] not in exclude]
        got = _verdicts(gold, rules)
        got.pop("_reproduced")
        metrics["gold_shown"] = {"n": len(gold), "rules": {
            rule: {"withheld": sum(g in WITHHELD for _, g in v),
                   "ids": [i for i, (_, g) in zip(ids_shown, v) if g in WITHHELD]} for rule, v in got.items()}}
        # A right label says "returns the gold's rows". Where the rule withholds the gold too, a
        # right answer it withholds may share the gold's error (a join that matches nothing, a
        # value no row holds): counted apart, so a reader judges those before calling them false
        # alarms.
        qids = np.array([a["id"] for a in answers], dtype=object)
        for rule in rules:
            gold_out = np.isin(qids, metrics["gold_shown"]["rules"][rule]["ids"])
            held = np.array([g in WITHHELD for g in gates[rule]], dtype=bool)
            for part, mask in (("all", np.ones_like(y)), ("a1", a1)):
                out_rules[rule][part]["right_withheld_gold_withheld"] = int((held & y & mask & gold_out).sum())
    if exact is not None:
        flipped: dict[str, Any] = {}
        for rule, v in other.items():
            name = f"{rule} (other columns contract)"
            flipped[rule] = {"minus_agreement": M.auroc(other_scores[name], y) - M.auroc(agreement, y),
                             "minus_agreement_ci": boot.paired(name, "agreement"),
                             "all": _slice([g for _, g in v], y, np.ones_like(y)),
                             "a1": _slice([g for _, g in v], y, a1)}
        if gold:
            gold_other = _verdicts(gold, rules, exact_columns=not exact)
            gold_other.pop("_reproduced")
            for rule, v in gold_other.items():
                flipped[rule]["gold_withheld"] = sum(g in WITHHELD for _, g in v)
        metrics["columns_contract"] = {"exact_columns": exact, "other": {"exact_columns": not exact,
                                                                         "rules": flipped}}
    return M.jsonable(metrics), M.jsonable(curves)


def measured_table(metrics: dict[str, Any], command: str, data: str) -> dict[str, Any]:
    """The per-alarm figures the severity rule reads (``vouch-measured/1``)."""
    return {"schema": "vouch-measured/1", "command": command, "data": data, "answers": metrics["n_answers"],
            "a1_answers": metrics["a1"]["answers"], "a1_wrong": metrics["a1"]["wrong"],
            "alarms": {r["alarm"]: {"fires": r["fires"], "wrong": r["on_wrong"], "fires_a1": r["fires_a1"],
                                    "wrong_a1": r["on_wrong_a1"]} for r in metrics["alarms"]}}


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------
def _share(pair: Sequence[int]) -> str:
    k, n = pair
    return f"{pct(k / n) if n else '—'} ({k}/{n})"


def _columns_section(metrics: dict[str, Any]) -> list[Section]:
    """Both columns contracts side by side: the run's setting and the other, from the same records."""
    cc = metrics.get("columns_contract")
    if not cc:
        return []
    gs = metrics.get("gold_shown")
    rows = []
    for exact, figures in ((cc["exact_columns"], metrics["rules"]), (cc["other"]["exact_columns"],
                                                                     cc["other"]["rules"])):
        for rule, m in figures.items():
            gold = gs["rules"][rule]["withheld"] if exact == cc["exact_columns"] and gs else m.get("gold_withheld")
            this_run = " (this run)" if exact == cc["exact_columns"] else ""
            rows.append([rule, ("on" if exact else "off") + this_run,
                         with_ci(m["minus_agreement"], m["minus_agreement_ci"], signed=True),
                         _share(m["a1"]["right_withheld"]), _share(m["a1"]["wrong_withheld"]),
                         _share([gold, gs["n"]]) if gs and gold is not None else "—"])
    mode = "on" if cc["exact_columns"] else "off"
    return [Section("Columns as the contract", [
        Text(f"This run has `exact_columns` {mode}. With it on, a returned column the question did not ask for "
             "(`asked_columns`) caps the score: the answer's columns are its contract, as they are for labels that "
             "compare the returned columns (Spider's and BIRD's execution match). With it off (the default of "
             "`vouch check`, `ask` and `serve`) that finding is a signal. Both rows come from the same records: "
             "the setting changes only that check's kind."),
        Table(["rule", "exact_columns", "minus agreement (95% CI)", "right withheld (A = 1)",
               "wrong withheld (A = 1)", "gold withheld"], rows),
    ])]


def build_report(metrics: dict[str, Any], curves: dict[str, Any], records: list[dict[str, Any]],
                 manifest: dict[str, Any], *, replay_of: str | None = None) -> Report:
    rules = list(metrics["rules"])
    boot = metrics["bootstrap"]
    intro: list[Item]
    intro = [Text(f"{metrics['n_answers']} shown answers to {metrics['n_questions']} questions, "
                  f"{metrics['right']} right (accuracy {pct(metrics['accuracy'])}); K = "
                  f"{manifest.get('parameters', {}).get('k')} candidates each. AUROC intervals and paired "
                  f"differences are percentile intervals from {boot['replicates']:,} bootstrap resamples of whole "
                  f"questions (seed {boot['seed']}). The score is not a probability.")]
    if replay_of:
        intro.append(Text(f"Replayed from `{replay_of}`: every number recomputed from the stored records "
                          "(no SQL, no model call)."))
    if metrics["excluded_questions"]:
        intro.append(Text(f"{len(metrics['excluded_questions'])} questions left out (--exclude)."))
    auroc_rows = [["agreement (A)", with_ci(metrics["agreement_auroc"], metrics["agreement_auroc_ci"]), "—"]]
    gate_rows, a1_rows = [], []
    for rule in rules:
        m = metrics["rules"][rule]
        auroc_rows.append([rule, with_ci(m["auroc"], m["auroc_ci"]),
                           with_ci(m["minus_agreement"], m["minus_agreement_ci"], signed=True)])
        gate_rows.append([rule, pct_ci(m["pass_accuracy"], m["pass_accuracy_ci"]), pct(m["pass_share"])]
                         + [f"{m['gate'][g][0]} / {m['gate'][g][1]}" for g in ("pass", "flag", "abstain")]
                         + [f"{m['ece']:.3f}" if m["ece"] is not None else "—",
                            f"{m['brier']:.3f}" if m["brier"] is not None else "—",
                            f"{m['aurc']:.3f}" if m["aurc"] is not None else "—"])
        a1_rows.append([rule, _share(m["all"]["right_withheld"]), _share(m["all"]["wrong_withheld"]),
                        _share(m["a1"]["right_withheld"]), _share(m["a1"]["wrong_withheld"])]
                       + ([str(m["a1"]["right_withheld_gold_withheld"])] if "gold_shown" in metrics else []))
    alarm_rows = []
    for r in sorted(metrics["alarms"], key=lambda r: (-r["fires"], r["alarm"])):
        alarm_rows.append([r["alarm"], "/".join(r["kinds"]), f"{r['fires']} ({r['on_right']}/{r['on_wrong']})",
                           pct_ci(r["precision"], r["precision_ci"]),
                           f"{r['fires_a1']} ({r['on_right_a1']}/{r['on_wrong_a1']})",
                           pct_ci(r["precision_a1"], r["precision_a1_ci"]) if r["fires_a1"] else "—"])
    system_rows = [[name, s["answers"], pct(s["right"] / s["answers"]) if s["answers"] else "—", s["a1"],
                    s["a1_wrong"], s["no_sql"]] for name, s in metrics["systems"].items()]
    sections = [
        Section("Does the score separate right from wrong?", [
            Table(["score", "AUROC (95% CI)", "minus agreement (95% CI)"], auroc_rows),
            Text("An interval of the difference above 0 means the rule separates right from wrong answers better "
                 "than agreement alone on these questions."),
        ]),
        Section("The gate", [
            Table(["rule", "pass precision", "pass share", "pass (right / wrong)", "flag (right / wrong)",
                   "abstain (right / wrong)", "ECE", "Brier", "AURC"], gate_rows),
            Text("Pass precision = share right among passed answers (Wilson 95% interval). ECE over 10 "
                 "equal-width bins; AURC = area under the risk–coverage curve (lower is better)."),
        ]),
        Section("Confident errors (A = 1)", [
            Text(f"{metrics['a1']['answers']} answers have every candidate agree (A = 1); {metrics['a1']['wrong']} of "
                 "them wrong — errors agreement cannot see. Withheld = flagged or abstained."),
            Table(["rule", "right withheld (all)", "wrong withheld (all)", "right withheld (A = 1)",
                   "wrong withheld (A = 1)"] + (["of the right withheld (A = 1): gold withheld too"]
                                                if "gold_shown" in metrics else []), a1_rows),
            *([Text("The last column counts right answers withheld on questions whose gold SQL the same rule "
                    "withholds (see Labels): a right label means \"returns the gold's rows\", so where the gold "
                    "is wrong such an answer shares its error. Read these before counting them as false alarms.")]
              if "gold_shown" in metrics else []),
        ]),
        *_columns_section(metrics),
        Section("Each alarm as an error detector", [
            Table(["alarm", "kind", "fires (right/wrong)", "precision (95% CI)", "at A = 1 (right/wrong)",
                   "precision at A = 1 (95% CI)"], alarm_rows),
            Text("An alarm is a fired check, a finding of a check (`check:finding`), or a reported open choice "
                 "(`choice:type`). Precision = wrong among the answers it fired on. `--write-measured` writes this "
                 "table in the form Vouch's severity rule reads (a veto or cap under 60% precise is shown as a "
                 "signal)."),
        ]),
        Section("Systems", [Table(["system", "answers", "accuracy", "A = 1", "A = 1 wrong", "no SQL"], system_rows)]),
    ]
    figures: list[Item]
    figures = [Figure("risk_coverage", risk_coverage_png(curves["risk_coverage"]),
                      "Accuracy of the answers shown against the share shown, as the threshold is lowered.")]
    for rule in rules:
        figures.append(Figure(f"reliability_{rule}", reliability_png(curves["reliability"][rule],
                                                                     f"Reliability: {rule}"),
                              f"Reliability diagram, {rule}: share right per score bin (numbers: answers per bin)."))
    sections.append(Section("Risk–coverage and reliability", figures))
    labels = metrics["labels"]
    items: list[Item]
    items = [Text(f"Labels: {labels['given']} given, {labels['execution']} by execution (Spider's test-suite rule: "
                  "columns in any order, rows as a multiset or, where the gold sorts, as a list; numbers to four "
                  f"decimals). BIRD's strict rule (sets of rows, columns in place) calls "
                  f"{labels['strict_vs_spider']['strict_right']} of {labels['strict_vs_spider']['n']} right where "
                  f"Spider's calls {labels['strict_vs_spider']['spider_right']}.")]
    if "given_vs_execution" in labels:
        g = labels["given_vs_execution"]
        kappa = "—" if g["kappa"] is None else f"{g['kappa']:.3f}"
        items.append(Text(f"Where both exist ({g['n']} answers) the given labels and the execution labels agree on "
                          f"{pct(g['agreement'])} (Cohen's κ = {kappa}); questions where they differ: "
                          f"{', '.join(g['differ'][:20]) or 'none'}."))
    if "gold_shown" in metrics:
        gs = metrics["gold_shown"]
        items.append(Text(f"The gold SQL of {gs['n']} questions shown as all K candidates (the gold is mostly right: "
                          "each one withheld is a false alarm or a gold error):"))
        items.append(Table(["rule", "gold withheld", "questions"],
                           [[rule, _share([g["withheld"], gs["n"]]), ", ".join(g["ids"]) or "—"]
                            for rule, g in gs["rules"].items()]))
    sections.append(Section("Labels", items))
    if metrics["skipped_questions"]:
        why = {r["id"]: r["skipped"] for r in records if r.get("skipped")}
        sections.append(Section("Skipped", [Text("\n".join(f"- {i}: {why.get(i, '')}"
                                                           for i in metrics["skipped_questions"]))]))
    sections.append(manifest_section(manifest))
    return Report(title="Vouch on published predictions: does the gate know when an answer is right?",
                  command=manifest.get("command"), intro=intro, sections=sections, manifest=manifest)


def finish(out_dir: Path, records: list[dict[str, Any]], manifest: dict[str, Any], *, rules: list[str] | None = None,
           replicates: int | None = None, seed: int | None = None, replay_of: str | None = None,
           exclude: Iterable[str] | None = None) -> tuple[dict[str, Any], Report]:
    """metrics.json, curves.json and the reports; ``exclude`` (question ids) overrides the run's."""
    from .report import write_report

    params = manifest.get("parameters", {})
    rules = rules or params.get("rules") or list(DEFAULT_RULES)
    exclude = set(params.get("exclude") or [] if exclude is None else exclude)
    metrics, curves = analyse(records, rules, replicates=replicates or params.get("bootstrap") or M.DEFAULT_REPLICATES,
                              seed=params.get("seed", M.DEFAULT_SEED) if seed is None else seed, exclude=exclude,
                              manifest=manifest)
    write_json(Path(out_dir) / "metrics.json", metrics)
    write_json(Path(out_dir) / "curves.json", curves)
    report = build_report(metrics, curves, records, manifest, replay_of=replay_of)
    write_report(out_dir, report)
    return metrics, report


def replay(run_dir: Path, out_dir: Path, *, replicates: int | None = None, seed: int | None = None,
           rules: list[str] | None = None,
           exclude: list[str] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every number of a stored run again from its records (other rules or exclusions if asked)."""
    manifest = read_manifest(run_dir, HARNESS)
    replicates, seed = replay_bootstrap(manifest, replicates, seed)
    records = load_records(run_dir, RECORDS)
    metrics, _ = finish(out_dir, records, manifest, replicates=replicates, seed=seed, replay_of=str(run_dir),
                        rules=rules, exclude=exclude)
    return manifest, metrics
