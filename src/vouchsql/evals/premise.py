"""``vouch eval premise``: premise critique under the three prompting settings of PremiseSQL
(§3.4, App. B.1) — Base, Implicit, Explicit — and Vouch's own assess step.

Measures (PremiseSQL §3.5, App. B.2), on flawed questions: SQL behaviour (0 generates complete
SQL, 1 partial abstention or invalid SQL, 2 complete abstention; reported normalised, /2),
DET (the flaw is detected) and TYPE (the flaw's type is identified); on originals: GEN (SQL is
generated), VAL (judged valid through ``is_valid``) and, where gold SQL is given, EX (relaxed
execution match; abstention counts as wrong) and EX | GEN (App. B.7). Each with a percentile
bootstrap interval over question pairs, per flaw code (resampled within the code), and paired
bootstrap differences between settings over the same resamples (App. B.8), with exact McNemar
tests on DET and GEN.

How SQL, DET and TYPE are read (``det_from``):

- ``judges`` (the paper's protocol, the default): two judge models score every non-malformed
  reply to a flawed question from the whole response (its reason and SQL) against the gold
  flaw type (:mod:`.premise_judges`); a response's score is the mean of the two judges' labels
  and Cohen's κ between them is reported per label. Base TYPE is measured like the others.
  GEN and VAL come from the structured output, as the paper's do (App. B.5). Vouch's assess
  step writes no SQL, so its SQL behaviour stays 2 when it stops the question and 0 when it
  passes it on; the judges read its verdict for DET and TYPE.
- ``structured`` (a named fallback, said so in the report): DET is ``is_valid = false``, Base
  DET is complete abstention; TYPE is not measured for the paper's settings, whose prompts ask
  for no flaw code (Vouch's assess step gives one, compared exactly); SQL behaviour is 2 when ``sql``
  is null, 1 when SQL is given with ``is_valid = false`` or fails the statement gate or the
  database, else 0.

E3.2 (Missing Schema Premise) items name a ``withhold`` list; the model is shown the schema
without those tables and columns (and without keys that mention them), as PremiseSQL builds
E3.2 from the supplied schema. Failure mechanisms M01–M04 (§4.4, App. C) are attributed by
two further judges in strict agreement, on the outputs App. C.2 makes eligible.

Other departures: the paper's prompt texts are lost from its appendix but for one line ("The
database schema is as follows: {schema}"), so the setting prompts follow §3.4's description
(``prompts/premise_*.md``); Vouch's assess step sees the schema as ``vouch ask`` shows it, with
the data profile; malformed replies are left out of every measure of their setting and
counted (the paper excluded its 145); only the assess step gets a repair request.

All prompts are hashed into the manifest. Records keep each raw reply, each judge's raw reply
and the assess step's parsed object, and ``--replay`` re-reads them: no model call.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from ..errors import ModelError, SQLRejected, UserInputError
from ..premise import assess, validate_assessment
from ..settings import Config
from . import metrics as M
from . import premise_judges as J
from .cases import DatabaseResolver
from .datasets import FLAW_CODES, PremiseItem, load_premise
from .premise_agreement import MECHANISM_SAMPLE, Measured, stratified_sample
from .premise_report import build_report
from .progress import NoProgress
from .runs import RecordLog, build_manifest, load_records, prepare_run_dir, read_manifest, replay_bootstrap, write_json

if TYPE_CHECKING:  # the database and model layers are imported where used, not with this module
    from ..db.base import Database
    from ..db.catalog import ForeignKeyInfo, TableInfo
    from ..db.figures import ForeignKey, TableProfile
    from ..llm import LLM, Model, Request
    from .progress import ProgressSink
    from .report import Report

    # what --model and --judges resolve to: a provider spec, a Model object, or a ready LLM
    ModelArg = str | Model | LLM

HARNESS = "premise"
RECORDS = "premise.jsonl"
SETTINGS = ("base", "implicit", "explicit", "vouch")
PAPER_SETTINGS = ("base", "implicit", "explicit")
DET_FROM = ("judges", "structured")
BUILTIN = Path(__file__).resolve().parents[1] / "data" / "premise_demo.jsonl"
MAX_TOKENS = 1024


def parse_settings(text: str | None) -> list[str]:
    settings = [s.strip().lower() for s in (text.split(",") if text else SETTINGS) if s.strip()]
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown or not settings:
        raise UserInputError(f"unknown setting(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(SETTINGS)}")
    return list(dict.fromkeys(settings))


def prompt_texts(settings: Sequence[str], *, judges: bool = False, mechanisms: bool = False) -> dict[str, str]:
    out = {s: J.load(J.SETTING_PROMPTS[s]).text for s in settings if s in J.SETTING_PROMPTS}
    if "vouch" in settings:
        try:
            from ..llm import load_prompt
            out["vouch(assess)"] = load_prompt("assess").text
        except (ImportError, KeyError):
            pass
    if judges:
        out["judge"] = J.load(J.JUDGE_PROMPT).text
    if mechanisms:
        out["mechanism"] = J.load(J.MECHANISM_PROMPT).text
    return out


# ---------------------------------------------------------------------------------------
# Schema text, with E3.2's withheld elements removed
# ---------------------------------------------------------------------------------------
def _withheld(tables: Sequence[TableInfo | TableProfile],
              withhold: Iterable[str] | None) -> tuple[set[str], dict[str, set[str]]]:
    """The tables and the columns (by table) to leave out, lower-cased; an element the database
    does not have is refused, since withholding it would silently show the full schema."""
    known = {t.name.lower(): {c.name.lower() for c in t.columns} for t in tables}
    drop_tables: set[str] = set()
    drop_cols: dict[str, set[str]] = {}
    for w in withhold or ():
        table, _, column = w.lower().partition(".")
        if table not in known or (column and column not in known[table]):
            raise UserInputError(f"withhold names {w!r}, which the database does not have "
                                 f"(give a table or table.column)")
        if column:
            drop_cols.setdefault(table, set()).add(column)
        else:
            drop_tables.add(table)
    return drop_tables, drop_cols


def _keep_fk(fk: ForeignKeyInfo | ForeignKey, table: str, drop_tables: set[str],
             drop_cols: dict[str, set[str]]) -> bool:
    ref = fk.ref_table.lower()
    return (ref not in drop_tables
            and not any(c.lower() in drop_cols.get(table, ()) for c in fk.columns)
            and not any(c.lower() in drop_cols.get(ref, ()) for c in fk.ref_columns))


def schema_text(db: Database, withhold: Iterable[str] = ()) -> str:
    """CREATE TABLE statements with keys, as PremiseSQL gives the schema, less ``withhold``."""
    tables = [t for t in db.schema() if not t.name.startswith("sqlite_")]
    drop_tables, drop_cols = _withheld(tables, withhold)
    parts = []
    for t in tables:
        name = t.name.lower()
        if name in drop_tables:
            continue
        gone = drop_cols.get(name, set())
        lines = [f"  {c.name} {c.type}".rstrip() + ("" if c.nullable else " NOT NULL")
                 for c in t.columns if c.name.lower() not in gone]
        pk = [c for c in t.primary_key if c.lower() not in gone]
        if pk:
            lines.append(f"  PRIMARY KEY ({', '.join(pk)})")
        for fk in t.foreign_keys:
            if _keep_fk(fk, name, drop_tables, drop_cols):
                lines.append(f"  FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {fk.ref_table}"
                             f"({', '.join(fk.ref_columns)})")
        parts.append(f"CREATE {'VIEW' if t.is_view else 'TABLE'} {t.name} (\n" + ",\n".join(lines) + "\n);")
    return "\n".join(parts)


def vouch_schema_text(db: Database, withhold: Iterable[str] = ()) -> str:
    """The schema as ``vouch ask`` shows it to its assess step: with the data profile (row
    counts, null shares, distinct counts, example values, stand-in codes), less ``withhold``."""
    from ..prompting.context import schema_text as ask_schema_text

    profile = db.profile()
    drop_tables, drop_cols = _withheld(profile.tables, withhold)
    if drop_tables or drop_cols:
        kept = []
        for t in profile.tables:
            name = t.name.lower()
            if name in drop_tables:
                continue
            gone = drop_cols.get(name, set())
            kept.append(t.model_copy(update={
                "columns": [c for c in t.columns if c.name.lower() not in gone],
                "primary_key": [c for c in t.primary_key if c.lower() not in gone],
                "foreign_keys": [fk for fk in t.foreign_keys if _keep_fk(fk, name, drop_tables, drop_cols)]}))
        profile = profile.model_copy(update={"tables": kept})
    return ask_schema_text(profile, db.dialect)


# ---------------------------------------------------------------------------------------
# Reading replies
# ---------------------------------------------------------------------------------------
def read_reply(setting: str, text: str | None) -> dict[str, Any]:
    """The structured fields of a paper-setting reply, or ``{"malformed": reason}``."""
    from ..llm import BadOutput, parse_json_object

    try:
        data = parse_json_object(text)
    except BadOutput as exc:
        return {"malformed": str(exc)}
    if "sql" not in data:
        return {"malformed": "no 'sql' field"}
    sql = data["sql"]
    if sql is not None and not isinstance(sql, str):
        return {"malformed": "'sql' is neither text nor null"}
    sql = sql.strip() if isinstance(sql, str) and sql.strip() and sql.strip().lower() not in ("null", "none") else None
    out: dict[str, Any] = {"sql": sql, "reason": str(data.get("reason") or "")}
    if setting != "base":
        valid = data.get("is_valid")
        if isinstance(valid, str) and valid.strip().lower() in ("true", "false"):
            valid = valid.strip().lower() == "true"
        if not isinstance(valid, bool):
            return {"malformed": "'is_valid' is not true or false"}
        out["is_valid"] = valid
    return out


def read_assessment(parsed: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
    """Vouch's verdict from the assess step's parsed object (through Vouch's own validation)."""
    if parsed is None:
        return {"malformed": error or "no reply"}
    from ..llm import BadOutput

    try:
        a = validate_assessment(parsed)
    except BadOutput as exc:
        return {"malformed": str(exc)}
    return {"sql": None, "is_valid": a.premise.is_valid, "flaw_code": a.premise.flaw_code,
            "reason": a.premise.reason, "interpretations": len(a.interpretations)}


def read_any(record: dict[str, Any]) -> dict[str, Any]:
    setting = record["setting"]
    return read_assessment(record.get("parsed"), record.get("error")) if setting == "vouch" \
        else read_reply(setting, record.get("raw"))


def response_text(record: dict[str, Any]) -> str:
    """What the judges read as the model's response: the reply as the model wrote it; for the
    assess step, the object it returned (it writes no SQL)."""
    if record["setting"] == "vouch":
        return json.dumps(record.get("parsed"), ensure_ascii=False)
    return record.get("raw") or ""


def judge_labels(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Each judge's parsed labels for the record, in judge order."""
    return [{**J.read_judgement(j.get("raw")), "judge": j.get("judge")} for j in record.get("judgements") or []]


def measure(record: dict[str, Any], det_from: str = "structured") -> dict[str, Any]:
    """The per-record measures (``None`` where a measure does not apply to the setting)."""
    setting = record["setting"]
    reply = read_any(record)
    if "malformed" in reply:
        return {"malformed": reply["malformed"]}
    valid = reply.get("is_valid")
    if setting == "vouch":
        generated = bool(valid)
        sql_ok = True
    else:
        generated = reply["sql"] is not None
        sql_ok = generated and record.get("sql_error") is None
    out: dict[str, Any] = {"malformed": None, "generated": generated, "is_valid": valid,
                           "flaw_code": reply.get("flaw_code"), "interpretations": reply.get("interpretations")}
    if record["label"] == "flawed":
        code = reply.get("flaw_code")
        out["as_interpretations"] = int(setting == "vouch" and valid is True and (reply.get("interpretations") or 0) >= 2)
        if det_from == "judges":
            labels = judge_labels(record)
            out["judges"] = labels
            if len(labels) != 2 or any("malformed" in j for j in labels):
                # The paper averages two valid judgements; one missing leaves the item out.
                out.update(judge_malformed=True, sql=None, det=None, type=None, type_category=None)
                return out
            sql = 2 if setting == "vouch" and not generated else 0 if setting == "vouch" else \
                (labels[0]["sql"] + labels[1]["sql"]) / 2
            out.update(judge_malformed=False, sql=sql, det=(labels[0]["det"] + labels[1]["det"]) / 2,
                       type=(labels[0]["type"] + labels[1]["type"]) / 2, type_category=None)
            return out
        if not generated:
            behaviour = 2
        elif valid is False or not sql_ok:
            behaviour = 1
        else:
            behaviour = 0
        det = (not generated) if setting == "base" else (valid is False)
        out.update(sql=behaviour, det=int(det))
        if setting != "vouch":
            # The paper's prompts ask for no flaw code, so without judges TYPE is not measured.
            out.update(type=None, type_category=None)
        else:
            out.update(type=int(det and code == record["flaw"]),
                       # det (is_valid false) comes with a flaw code (validate_assessment)
                       type_category=int(det and cast(str, code)[:2] == record["flaw"][:2]))
    else:
        out.update(gen=int(generated), val=None if setting == "base" else int(valid is True))
        if setting != "vouch" and record.get("gold_sql") and not record.get("gold_error"):
            out["ex"] = int(bool(generated and record.get("exec_match")))
        else:
            out["ex"] = None
    return out


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------
class _Capture:
    """Hands Vouch's assess step the LLM, keeping the last object it read from the model's
    reply (before Vouch's validation), so the verdict can be recomputed from the record."""

    def __init__(self, llm: LLM) -> None:
        self._llm = llm
        self.parsed: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def complete_json(self, request: Request, *, stage: str,
                      validate: Callable[[dict[str, Any]], Any] = lambda d: d) -> Any:
        def keep(data: dict[str, Any]) -> Any:
            self.parsed = data
            return validate(data)

        return self._llm.complete_json(request, stage=stage, validate=keep)


def _ask(llm: LLM, setting: str, item: PremiseItem, schema: str, dialect: str) -> dict[str, Any]:
    """One model call (two for the assess step's repair); the raw reply and any parsed object."""
    from ..llm import Request

    if setting == "vouch":
        cap = _Capture(llm)
        try:
            # _Capture stands in for the LLM (it forwards every other attribute to it)
            assess(cast("LLM", cap), item.question, schema=schema, dialect=dialect, definitions="(none)",
                   hint="(none)")
            error = None
        except ModelError as exc:
            error = exc.message
        return {"parsed": cap.parsed, "error": error}
    messages = J.load(J.SETTING_PROMPTS[setting]).messages(schema=schema, question=item.question)
    request = Request.of(messages, temperature=0.0, max_tokens=MAX_TOKENS)
    try:
        return {"raw": llm.complete(request, stage=f"premise_{setting}").text, "error": None}
    except ModelError as exc:
        return {"raw": None, "error": exc.message}


def _call(llm: LLM, name: str, messages: list[dict[str, str]], stage: str, max_tokens: int) -> dict[str, Any]:
    from ..llm import Request

    request = Request.of(messages, temperature=0.0, max_tokens=max_tokens)
    try:
        return {"judge": name, "raw": llm.complete(request, stage=stage).text, "error": None}
    except ModelError as exc:
        return {"judge": name, "raw": None, "error": exc.message}


def as_llm(model: ModelArg, config: Config) -> LLM:
    """A :class:`vouchsql.llm.LLM` around a model spec or Model object (response cache as configured)."""
    from ..llm import LLM, llm_from_config

    if isinstance(model, LLM):
        return model
    return llm_from_config(model, config)


def _pair(models: Iterable[ModelArg] | None, names: Iterable[str] | None, what: str) -> list[tuple[str, ModelArg]]:
    models = list(models or [])
    if models and len(models) != 2:
        raise UserInputError(f"{what} takes exactly two judge models (PremiseSQL uses two), got {len(models)}")
    names = list(names or [getattr(m, "name", None) or str(m) for m in models])
    if len(set(names)) != len(names):
        raise UserInputError(f"{what}: the two judges must be different models (both are {names[0]!r})")
    return list(zip(names, models))


def run_premise(input_path: Path, config: Config, out_dir: Path, *, model: ModelArg, model_name: str | None = None,
                settings: Iterable[str] = SETTINGS, datasets: Path | None = None, command: str = "",
                parameters: dict[str, Any] | None = None, progress: ProgressSink | None = None,
                workers: int | None = None, judges: Iterable[ModelArg] | None = None,
                judge_names: Iterable[str] | None = None, mechanism_judges: Iterable[ModelArg] | None = None,
                mechanism_judge_names: Iterable[str] | None = None, det_from: str | None = None,
                mechanism_sample: int | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Ask every (question, setting) not yet recorded in ``out_dir``, have the judges score each
    reply to a flawed question, then (with ``mechanism_judges``) attribute mechanisms to the
    eligible failures — a stratified sample of ``mechanism_sample`` of them (App. C.3: 250 per
    dataset–model combination; 0 attributes every one); return all records and the manifest."""
    progress = progress or NoProgress()
    input_path = Path(input_path)
    items = load_premise(input_path)
    settings = parse_settings(",".join(settings))
    judge_pair = _pair(judges, judge_names, "--judges")
    mech_pair = _pair(mechanism_judges, mechanism_judge_names, "--mechanism-judges")
    det_from = det_from or ("judges" if judge_pair else None)
    if det_from not in DET_FROM:
        raise UserInputError("DET and TYPE are judged from the response by two judge models (PremiseSQL §3.5, "
                             "App. B.2): give --judges PROVIDER:MODEL,PROVIDER:MODEL, or --det-from structured "
                             "for the structured-output reading")
    if det_from == "judges" and not judge_pair:
        raise UserInputError("--det-from judges needs --judges PROVIDER:MODEL,PROVIDER:MODEL")
    if mech_pair and not judge_pair:
        raise UserInputError("--mechanism-judges needs --judges: eligibility rests on the evaluators' labels "
                             "(PremiseSQL App. C.2)")
    llm = as_llm(model, config)
    judge_llms = [(n, as_llm(m, config)) for n, m in judge_pair]
    mech_llms = [(n, as_llm(m, config)) for n, m in mech_pair]
    resolver = DatabaseResolver(input_path, config, datasets)
    paths = {name: resolver.resolve(name) for name in sorted({i.db for i in items})}
    params = {"settings": list(settings), "max_tokens": MAX_TOKENS, "det_from": det_from,
              "judges": [n for n, _ in judge_pair], "mechanism_judges": [n for n, _ in mech_pair],
              "mechanism_sample": (MECHANISM_SAMPLE if mechanism_sample is None else mechanism_sample)
              if mech_pair else None, **(parameters or {})}
    manifest = build_manifest(HARNESS, command=command, datasets={"input": input_path},
                              databases={n: p for n, p in paths.items() if p is not None},
                              prompts=prompt_texts(settings, judges=bool(judge_pair), mechanisms=bool(mech_pair)),
                              model=model_name or getattr(llm, "spec", str(model)), parameters=params,
                              seed=(parameters or {}).get("seed"),
                              record_keys=("max_tokens", "judges", "mechanism_judges"))
    out_dir = Path(out_dir)
    prepare_run_dir(out_dir, manifest, RECORDS)
    log = RecordLog(out_dir / RECORDS)
    jobs = [(n, item, s) for n, (item, s) in enumerate(itertools.product(items, settings))
            if not log.done(f"{item.id}/{s}")]
    progress.start(len(items) * len(settings), len(items) * len(settings) - len(jobs))
    from ..db import connect

    dbs: dict[str, Database] = {}
    # (database, the assess step's view?, withheld elements) -> schema text
    schemas: dict[tuple[str, bool, tuple[str, ...]], str] = {}
    lock = threading.Lock()

    def shown(item: PremiseItem, setting: str, withhold: Iterable[str] | None = None) -> str:
        return schemas[(item.db, setting == "vouch", tuple(item.withhold if withhold is None else withhold))]

    by_id = {i.id: i for i in items}
    originals = {i.pair_id: i for i in items if not i.flawed}
    try:
        for name, path in paths.items():
            if path is not None and path.exists():
                dbs[name] = connect(path, config=config)
        # Every schema text is built here, on this thread, before any worker starts: a database
        # connection used from two threads at once can deadlock in SQLite's callbacks. This also
        # refuses a bad withhold before any model call.
        for item in items:
            if item.db not in dbs:
                continue
            for vouch in {s == "vouch" for s in settings} | {False}:
                for withhold in {(), tuple(item.withhold)}:
                    key = (item.db, vouch, withhold)
                    if key not in schemas:
                        schemas[key] = (vouch_schema_text if vouch else schema_text)(dbs[item.db], withhold)

        def work(job: tuple[int, PremiseItem, str]) -> tuple[tuple[int, PremiseItem, str], dict[str, Any] | None]:
            n, item, setting = job
            if item.db not in dbs:
                return job, None
            schema = shown(item, setting)
            reply = _ask(llm, setting, item, schema, dbs[item.db].dialect)
            if item.flawed and judge_llms:
                rec = {"setting": setting, **reply}
                if "malformed" not in read_any(rec):
                    assert item.flaw is not None  # a flawed question carries its code (load_premise)
                    messages = J.judge_messages(question=item.question, schema=schema, response=response_text(rec),
                                                flaw=item.flaw)
                    reply["judgements"] = [_call(j, name, messages, "premise_judge", J.JUDGE_MAX_TOKENS)
                                           for name, j in judge_llms]
            return job, reply

        workers = workers or getattr(config, "concurrency", 4)
        fut: Future[Any]  # the asking and the attributing below each have their own futures
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(work, job) for job in jobs]
            for fut in as_completed(futures):
                (n, item, setting), reply = fut.result()
                rec = _record(n, item, setting, reply, dbs.get(item.db))
                with lock:
                    log.append(rec)
                progress.advance(f"{item.id}/{setting}")
        if mech_llms:
            keys = {f"{i.id}/{s}" for i in items for s in settings}
            eligible = [r for r in log.records() if r["key"] in keys
                        and eligibility_stage(r, r["pair_id"] in originals) == "eligible"]
            # The sample is drawn over every eligible failure, attributed or not, so a resumed
            # run draws the same one and attributes only what it has not yet.
            sampled = stratified_sample(eligible, params["mechanism_sample"])
            pending = [r for r in sampled if "attributions" not in r]

            def attribute(rec: dict[str, Any]) -> dict[str, Any]:
                item = by_id[rec["id"]]
                reply = read_any(rec)
                labels = judge_labels(rec)[0]
                valid = originals[item.pair_id]
                assert item.flaw is not None  # eligible replies answer flawed questions, which carry a code
                shown_schema = shown(item, rec["setting"])
                messages = J.mechanism_messages(
                    question=item.question, flaw=item.flaw, labels=labels, reason=reply.get("reason") or "",
                    sql=reply.get("sql"), shown_schema=shown_schema,
                    reference_schema=shown(item, "base", ()), valid_question=valid.question,
                    valid_sql=valid.gold_sql)
                calls = [_call(m, name, messages, "premise_mechanism", J.MECHANISM_MAX_TOKENS) for name, m in mech_llms]
                return {**rec, "shown_schema": shown_schema, "attributions": calls}

            with ThreadPoolExecutor(max_workers=workers) as pool:
                for fut in as_completed([pool.submit(attribute, r) for r in pending]):
                    rec = fut.result()
                    with lock:
                        log.append(rec)
    finally:
        for db in dbs.values():
            db.close()
    keys = {f"{i.id}/{s}" for i in items for s in settings}
    return [r for r in log.records() if r["key"] in keys], manifest


def eligibility_stage(record: dict[str, Any], has_pair: bool) -> str | None:
    """App. C.2's stage for a judged reply to a flawed question in a paper setting (``None``
    where the pool does not apply: originals, the assess step, malformed or unjudged replies)."""
    if record.get("skipped") or record["label"] != "flawed" or record["setting"] not in PAPER_SETTINGS \
            or not record.get("judgements"):
        return None
    reply = read_any(record)
    if "malformed" in reply:
        return None
    return J.eligibility(judge_labels(record), reason=reply.get("reason") or "", sql=reply.get("sql"),
                         has_pair=has_pair)


def _record(index: int, item: PremiseItem, setting: str, reply: dict[str, Any] | None,
            db: Database | None) -> dict[str, Any]:
    base: dict[str, Any] = {"key": f"{item.id}/{setting}", "index": index, "id": item.id, "pair_id": item.pair_id,
                            "db": item.db, "setting": setting, "label": item.label, "flaw": item.flaw,
                            "question": item.question, "gold_sql": item.gold_sql, "withhold": list(item.withhold)}
    if reply is None:
        return {**base, "skipped": f"database {item.db!r} not found"}
    rec: dict[str, Any] = {**base, **reply, "sql_error": None, "exec_match": None, "gold_error": None}
    if setting != "vouch" and reply.get("raw") is not None:
        sql = read_reply(setting, reply["raw"]).get("sql")
        if sql:
            assert db is not None  # a reply is recorded only where the database was found
            try:
                db.parse(sql)
                result = db.execute(sql)
                rec["sql_error"] = result.error.message if result.error else None
            except SQLRejected as exc:
                result, rec["sql_error"] = None, exc.message
            if item.gold_sql:
                from ..agreement import results_match

                gold = db.execute(item.gold_sql)
                rec["gold_error"] = gold.error.message if gold.error else None
                if gold.error is None:
                    rec["exec_match"] = bool(result is not None and results_match(result, gold).matched)
    return rec


# ---------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------
_FLAWED = ("sql", "det", "type", "type_category")
_ORIGINAL = ("gen", "val", "ex")


def analyse(records: list[dict[str, Any]], settings: list[str], *, replicates: int = M.DEFAULT_REPLICATES,
            seed: int = M.DEFAULT_SEED, det_from: str = "structured") -> dict[str, Any]:
    kept = [r for r in records if not r.get("skipped")]
    first: dict[str, int] = {}
    for r in kept:
        first[r["pair_id"]] = min(first.get(r["pair_id"], r["index"]), r["index"])
    pairs = sorted(first, key=first.__getitem__)
    pair_at = {p: i for i, p in enumerate(pairs)}
    P = len(pairs)
    measured: Measured = {(r["id"], r["setting"]): (r, measure(r, det_from)) for r in kept}
    items: dict[str, dict[str, Any]] = {}
    for r in kept:
        items.setdefault(r["id"], r)
    flawed_ids = [i for i, r in items.items() if r["label"] == "flawed"]
    original_ids = [i for i, r in items.items() if r["label"] == "original"]

    def per_pair(setting: str, ids: list[str], name: str, transform: Callable[[Any], Any] = lambda v: v
                 ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Per-pair (sum, count) of one measure, leaving out malformed and unmeasured."""
        num, den = np.zeros(P), np.zeros(P)
        for i in ids:
            got = measured.get((i, setting))
            if got is None:
                continue
            r, m = got
            v = m.get(name)
            if m.get("malformed") or v is None:
                continue
            num[pair_at[r["pair_id"]]] += transform(v)
            den[pair_at[r["pair_id"]]] += 1
        return num, den

    stats: dict[str, M.BatchStat]
    arrays: dict[tuple[str, str], tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]
    stats, arrays = {}, {}
    for s in settings:
        for name in _FLAWED + _ORIGINAL:
            ids = flawed_ids if name in _FLAWED else original_ids
            num, den = per_pair(s, ids, name, (lambda v: v / 2) if name == "sql" else (lambda v: v))
            arrays[(s, name)] = (num, den)
            stats[f"{s}:{name}"] = M.ratio_stat(num, den)
    boot = M.bootstrap(stats, P, replicates=replicates, seed=seed)

    def point(s: str, name: str) -> float:
        num, den = arrays[(s, name)]
        return float(num.sum() / den.sum()) if den.sum() else float("nan")

    out_settings: dict[str, Any] = {}
    for s in settings:
        flawed = [measured[(i, s)][1] for i in flawed_ids if (i, s) in measured]
        originals = [measured[(i, s)][1] for i in original_ids if (i, s) in measured]
        ok_f = [m for m in flawed if not m.get("malformed")]
        ok_o = [m for m in originals if not m.get("malformed")]
        if det_from == "judges":
            # Each judge's own label, pooled over both judges (the averages are not levels).
            levels = [sum(j["sql"] == k for m in ok_f if not m.get("judge_malformed") for j in m["judges"])
                      for k in (0, 1, 2)]
        else:
            levels = [sum(m["sql"] == k for m in ok_f) for k in (0, 1, 2)]
        f: dict[str, Any] = {"n": len(flawed), "malformed": len(flawed) - len(ok_f), "sql_levels": levels,
                             "judge_malformed": sum(1 for m in ok_f if m.get("judge_malformed")),
                             "as_interpretations": sum(m.get("as_interpretations", 0) for m in ok_f)}
        for name in _FLAWED:
            f[name] = point(s, name)
            f[f"{name}_ci"] = boot.interval(f"{s}:{name}")
        o: dict[str, Any] = {"n": len(originals), "malformed": len(originals) - len(ok_o)}
        for name in _ORIGINAL:
            o[name] = point(s, name)
            o[f"{name}_ci"] = boot.interval(f"{s}:{name}")
        gen_ex = [m["ex"] for m in ok_o if m.get("gen") and m.get("ex") is not None]
        o["ex_given_gen"] = float(np.mean(gen_ex)) if gen_ex else float("nan")
        out_settings[s] = {"flawed": f, "original": o, "by_flaw": _by_flaw(measured, items, s, replicates, seed)}
    paired: dict[str, Any] = {}
    for a, b in itertools.combinations(settings, 2):
        entry: dict[str, Any] = {}
        for name in _FLAWED + _ORIGINAL:
            pa, pb = point(a, name), point(b, name)
            if np.isnan(pa) or np.isnan(pb):
                continue
            entry[name] = {"diff": pb - pa, "ci": boot.paired(f"{b}:{name}", f"{a}:{name}")}
        for name, ids in (("det", flawed_ids), ("gen", original_ids)):
            both: list[tuple[Any, Any]] = [(measured[(i, a)][1], measured[(i, b)][1]) for i in ids
                                           if (i, a) in measured and (i, b) in measured]
            # Judged DET is a two-judge mean; McNemar needs 0/1, so a split verdict (0.5) is left out.
            both = [(x[name], y[name]) for x, y in both if not x.get("malformed") and not y.get("malformed")
                    and x.get(name) in (0, 1) and y.get(name) in (0, 1)]
            if both:
                entry[f"mcnemar_{name}"] = M.mcnemar_exact([x for x, _ in both], [y for _, y in both])
        paired[f"{b}-{a}"] = entry
    out = {
        "n_pairs": P, "n_flawed": len(flawed_ids), "n_original": len(original_ids), "det_from": det_from,
        "settings": out_settings, "paired": paired, "bootstrap": {"replicates": replicates, "seed": seed},
        "model_errors": sum(1 for r in kept if r.get("error")),
    }
    if det_from == "judges":
        from .premise_agreement import judge_agreement, mechanisms

        out["judges"] = judge_agreement(measured, settings)
        out["mechanisms"] = mechanisms(kept, settings, {r["pair_id"] for r in kept if r["label"] == "original"},
                                       paper_settings=PAPER_SETTINGS, stage_of=eligibility_stage, read_reply=read_any)
    return cast("dict[str, Any]", M.jsonable(out))


def _by_flaw(measured: Measured, items: dict[str, dict[str, Any]], setting: str, replicates: int,
             seed: int) -> dict[str, Any]:
    out = {}
    for code in FLAW_CODES:
        ms = [measured[(i, setting)][1] for i, r in items.items()
              if r["label"] == "flawed" and r["flaw"] == code and (i, setting) in measured]
        ok = [m for m in ms if not m.get("malformed")]
        if not ms:
            continue
        entry: dict[str, Any] = {"n": len(ms), "malformed": len(ms) - len(ok)}
        values = {name: [m[name] / (2 if name == "sql" else 1) for m in ok if m.get(name) is not None]
                  for name in ("sql", "det", "type")}
        values = {k: v for k, v in values.items() if v}
        boot = M.bootstrap({k: M.mean_stat(v) for k, v in values.items()}, len(ok), replicates=replicates, seed=seed)
        for name in ("sql", "det", "type"):
            entry[name] = float(np.mean(values[name])) if name in values else float("nan")
            entry[f"{name}_ci"] = boot.interval(name) if name in values else [float("nan")] * 2
        out[code] = entry
    return out


def finish(out_dir: Path, records: list[dict[str, Any]], manifest: dict[str, Any], settings: list[str], *,
           replicates: int, seed: int, replay_of: str | None = None) -> tuple[dict[str, Any], Report]:
    from .report import write_report

    det_from = manifest.get("parameters", {}).get("det_from") or "structured"
    metrics = analyse(records, settings, replicates=replicates, seed=seed, det_from=det_from)
    write_json(Path(out_dir) / "metrics.json", metrics)
    report = build_report(metrics, records, manifest, replay_of=replay_of)
    write_report(out_dir, report)
    return metrics, report


def replay(run_dir: Path, out_dir: Path, *, settings: list[str] | None = None, replicates: int | None = None,
           seed: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    manifest = read_manifest(run_dir, HARNESS)
    settings = settings or manifest.get("parameters", {}).get("settings") or list(SETTINGS)
    replicates, seed = replay_bootstrap(manifest, replicates, seed)
    records = load_records(run_dir, RECORDS)
    metrics, _ = finish(out_dir, records, manifest, settings, replicates=replicates, seed=seed, replay_of=str(run_dir))
    return manifest, metrics


__all__ = ["SETTINGS", "PAPER_SETTINGS", "DET_FROM", "BUILTIN", "run_premise", "analyse", "finish", "replay", "read_reply", "measure",
           "schema_text"]
