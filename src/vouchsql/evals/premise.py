"""``vouch eval premise``: premise critique under the three prompting settings of PremiseSQL
(§3.4, App. B.1) — Base, Implicit, Explicit — and Vouch's own assess step.

Measures (PremiseSQL §3.5, App. B.2), on flawed questions: SQL behaviour (0 generates complete
SQL, 1 partial abstention or invalid SQL, 2 complete abstention; reported normalised, /2),
DET (the flaw is detected) and TYPE (the flaw's type is named); on originals: GEN (SQL is
generated), VAL (judged valid through ``is_valid``) and, where gold SQL is given, EX (relaxed
execution match; abstention counts as wrong) and EX | GEN (App. B.7). Each with a percentile
bootstrap interval over question pairs, per flaw code (resampled within the code), and paired
bootstrap differences between settings over the same resamples (App. B.8), with exact McNemar
tests on DET and GEN.

Where this departs from the paper, which scores SQL behaviour, DET and TYPE with two model
judges reading the free-text reason:

- DET comes from the structured output: ``is_valid = false``. Base has no ``is_valid``, so
  Base DET is complete abstention (``sql`` null); a Base reply that names a flaw in its reason
  but still answers counts as not detected (a judge might count it).
- TYPE comes from a structured ``flaw_code`` field, compared with the gold code exactly (the
  subcategory; the category, E1–E4, is reported beside it). To make that field answerable the
  Implicit and Explicit prompts list the nine codes, which the paper's prompts may not; Base
  asks for no code, so Base TYPE is not measured.
- SQL behaviour comes from the output and the database: 2 when ``sql`` is null or empty; 1
  when SQL is given but the reply itself marks the question invalid (a hedged answer), or the
  SQL fails the read-only statement gate or does not run on the database; else 0.
- The paper's settings see the schema as CREATE TABLE statements; Vouch's assess step sees it
  as ``vouch ask`` shows it, with the data profile, and no recorded definitions or hint.
- Vouch's assess step writes no SQL: it stops a flawed question and passes a valid one on to
  generation. Its SQL behaviour is therefore 2 when it judges the question invalid and 0
  otherwise, GEN equals VAL, and EX is not measured. An ambiguous (E1.1) question that it
  answers as two or more interpretations is valid by Vouch's design (DESIGN §3) and counts as
  not detected; the report counts those answers separately.
- Malformed replies (no JSON object, or a required field missing) are left out of every
  measure of their setting and counted, as the paper excluded its 145 malformed responses. No
  repair request is sent for the paper's settings; the assess step keeps Vouch's one repair.

All prompts are hashed into the manifest. Records keep each raw reply (and for the assess step
its parsed object), and ``--replay`` re-reads them: no model call.
"""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from ..errors import ModelError, SQLRejected, UserInputError
from ..premise import assess, normalise_code, validate_assessment
from ..settings import Config
from . import metrics as M
from .cases import DatabaseResolver
from .datasets import FLAW_CODES, PremiseItem, load_premise
from .premise_report import build_report
from .progress import NoProgress
from .runs import RecordLog, build_manifest, load_records, prepare_run_dir, read_manifest, replay_bootstrap, write_json

HARNESS = "premise"
RECORDS = "premise.jsonl"
SETTINGS = ("base", "implicit", "explicit", "vouch")
BUILTIN = Path(__file__).resolve().parents[1] / "data" / "premise_demo.jsonl"
MAX_TOKENS = 1024

_TAXONOMY_DETAIL = """- E1.1 Ambiguity: references, scopes or targets admit several SQL interpretations.
- E1.2 Unclear intent: the operation itself is underspecified, so the SQL structure is indeterminate.
- E2.1 Internal contradiction: the question's conditions cannot hold together.
- E2.2 Question–schema contradiction: required schema elements or relations are absent or incompatible.
- E3.1 Missing constraint: an essential filter or target is omitted.
- E3.2 Missing schema premise: a required table, column or relation is not in the schema.
- E3.3 Semantic gap: a concept in the question cannot be mapped to schema elements.
- E4.1 Inexpressible in SQL: the intent cannot be represented in standard SQL (e.g. forecasting).
- E4.2 External knowledge required: answering needs knowledge absent from the database."""

# PremiseSQL App. B.1 keeps one line of each template ("The database schema is as follows:
# {schema}"); the rest follows §3.4's description of each setting.
PROMPTS = {
    "base": (
        "You are an expert in Text-to-SQL. Given a database schema and a question, write one SQLite "
        "query that answers the question.\n\n"
        "Reply with only a JSON object, no other text:\n"
        '{"sql": "the SQL query, or null if you do not generate SQL", '
        '"reason": "a brief explanation of your generation behaviour"}',
        "The database schema is as follows:\n{schema}\n\nQuestion: {question}",
    ),
    "implicit": (
        "You are an expert in Text-to-SQL. Given a database schema and a question, write one SQLite "
        "query that answers the question. The input question may contain errors. Before answering, "
        "assess whether the question is logically valid and answerable with the given schema.\n\n"
        "If it is not, name the flaw with one of these codes:\n" + _TAXONOMY_DETAIL + "\n\n"
        "Reply with only a JSON object, no other text:\n"
        '{"sql": "the SQL query, or null if you do not generate SQL", "is_valid": true or false, '
        '"flaw_code": "one code above when is_valid is false, else null", '
        '"reason": "a brief explanation of your judgement and generation behaviour"}',
        "The database schema is as follows:\n{schema}\n\nQuestion: {question}",
    ),
    "explicit": (
        "You are an expert in Text-to-SQL. Given a database schema and a question, write one SQLite "
        "query that answers the question. The question contains logically flawed or incorrect premises. "
        "Critically examine its assumptions before responding.\n\n"
        "Name the flaw with one of these codes:\n" + _TAXONOMY_DETAIL + "\n\n"
        "Reply with only a JSON object, no other text:\n"
        '{"sql": "the SQL query, or null if you do not generate SQL", "is_valid": true or false, '
        '"flaw_code": "one code above when is_valid is false, else null", '
        '"reason": "a brief explanation of your judgement and generation behaviour"}',
        "The database schema is as follows:\n{schema}\n\nQuestion: {question}",
    ),
}


def parse_settings(text: str | None) -> list[str]:
    settings = [s.strip().lower() for s in (text.split(",") if text else SETTINGS) if s.strip()]
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown or not settings:
        raise UserInputError(f"unknown setting(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(SETTINGS)}")
    return list(dict.fromkeys(settings))


def prompt_texts(settings) -> dict[str, str]:
    out = {s: PROMPTS[s][0] + "\n<!-- user -->\n" + PROMPTS[s][1] for s in settings if s in PROMPTS}
    if "vouch" in settings:
        try:
            from ..llm import load_prompt
            out["vouch(assess)"] = load_prompt("assess").text
        except (ImportError, KeyError):
            pass
    return out


# ---------------------------------------------------------------------------------------
# Schema text
# ---------------------------------------------------------------------------------------
def schema_text(db) -> str:
    """CREATE TABLE statements with keys, as PremiseSQL gives the schema."""
    parts = []
    for t in db.schema():
        if t.name.startswith("sqlite_"):
            continue
        lines = [f"  {c.name} {c.type}".rstrip() + ("" if c.nullable else " NOT NULL") for c in t.columns]
        if t.primary_key:
            lines.append(f"  PRIMARY KEY ({', '.join(t.primary_key)})")
        for fk in t.foreign_keys:
            lines.append(f"  FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {fk.ref_table}({', '.join(fk.ref_columns)})")
        parts.append(f"CREATE {'VIEW' if t.is_view else 'TABLE'} {t.name} (\n" + ",\n".join(lines) + "\n);")
    return "\n".join(parts)


def vouch_schema_text(db) -> str:
    """The schema as ``vouch ask`` shows it to its assess step: with the data profile (row
    counts, null shares, distinct counts, example values, stand-in codes)."""
    from ..llm.context import schema_text as ask_schema_text

    return ask_schema_text(db.profile(), db.dialect)


# ---------------------------------------------------------------------------------------
# Reading replies
# ---------------------------------------------------------------------------------------
def read_reply(setting: str, text: str | None) -> dict:
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
    out = {"sql": sql, "reason": str(data.get("reason") or "")}
    if setting != "base":
        valid = data.get("is_valid")
        if isinstance(valid, str) and valid.strip().lower() in ("true", "false"):
            valid = valid.strip().lower() == "true"
        if not isinstance(valid, bool):
            return {"malformed": "'is_valid' is not true or false"}
        out["is_valid"] = valid
        out["flaw_code"] = normalise_code(data.get("flaw_code", data.get("flaw")))
    return out


def read_assessment(parsed: dict | None, error: str | None) -> dict:
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


def measure(record: dict) -> dict:
    """The per-record measures (``None`` where a measure does not apply to the setting)."""
    setting = record["setting"]
    reply = read_assessment(record.get("parsed"), record.get("error")) if setting == "vouch" \
        else read_reply(setting, record.get("raw"))
    if "malformed" in reply:
        return {"malformed": reply["malformed"]}
    valid = reply.get("is_valid")
    if setting == "vouch":
        generated = bool(valid)
        sql_ok = True
    else:
        generated = reply["sql"] is not None
        sql_ok = generated and record.get("sql_error") is None
    out: dict = {"malformed": None, "generated": generated, "is_valid": valid, "flaw_code": reply.get("flaw_code"),
                 "interpretations": reply.get("interpretations")}
    if record["label"] == "flawed":
        if not generated:
            behaviour = 2
        elif valid is False or not sql_ok:
            behaviour = 1
        else:
            behaviour = 0
        det = (not generated) if setting == "base" else (valid is False)
        out.update(sql=behaviour, det=int(det))
        if setting == "base":
            out.update(type=None, type_category=None)
        else:
            code = reply.get("flaw_code")
            out.update(type=int(det and code == record["flaw"]),
                       type_category=int(det and bool(code) and code[:2] == record["flaw"][:2]))
        out["as_interpretations"] = int(setting == "vouch" and valid is True and (reply.get("interpretations") or 0) >= 2)
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

    def __init__(self, llm) -> None:
        self._llm = llm
        self.parsed: dict | None = None

    def __getattr__(self, name):
        return getattr(self._llm, name)

    def complete_json(self, request, *, stage: str, validate=lambda d: d):
        def keep(data: dict):
            self.parsed = data
            return validate(data)

        return self._llm.complete_json(request, stage=stage, validate=keep)


def _ask(llm, setting: str, item: PremiseItem, schema: str, dialect: str) -> dict:
    """One model call (two for the assess step's repair); the raw reply and any parsed object."""
    from ..llm import Request

    if setting == "vouch":
        cap = _Capture(llm)
        try:
            assess(cap, item.question, schema=schema, dialect=dialect, definitions="(none)", hint="(none)")
            error = None
        except ModelError as exc:
            error = exc.message
        return {"parsed": cap.parsed, "error": error}
    system, user = PROMPTS[setting]
    request = Request.of([{"role": "system", "content": system},
                          {"role": "user", "content": user.format(schema=schema, question=item.question)}],
                         temperature=0.0, max_tokens=MAX_TOKENS)
    try:
        return {"raw": llm.complete(request, stage=f"premise_{setting}").text, "error": None}
    except ModelError as exc:
        return {"raw": None, "error": exc.message}


def as_llm(model, config: Config):
    """A :class:`vouchsql.llm.LLM` around a model spec or Model object (response cache as configured)."""
    from ..llm import LLM, llm_from_config

    if isinstance(model, LLM):
        return model
    return llm_from_config(model, config)


def run_premise(input_path: Path, config: Config, out_dir: Path, *, model, model_name: str | None = None,
                settings=SETTINGS, datasets: Path | None = None, command: str = "", parameters: dict | None = None,
                progress=None, workers: int | None = None) -> tuple[list[dict], dict]:
    """Ask every (question, setting) not yet recorded in ``out_dir``; return all records and the manifest."""
    progress = progress or NoProgress()
    input_path = Path(input_path)
    items = load_premise(input_path)
    settings = parse_settings(",".join(settings))
    llm = as_llm(model, config)
    resolver = DatabaseResolver(input_path, config, datasets)
    paths = {name: resolver.resolve(name) for name in sorted({i.db for i in items})}
    manifest = build_manifest(HARNESS, command=command, datasets={"input": input_path},
                              databases={n: p for n, p in paths.items() if p is not None},
                              prompts=prompt_texts(settings), model=model_name or getattr(llm, "spec", str(model)),
                              parameters={"settings": list(settings), "max_tokens": MAX_TOKENS, **(parameters or {})},
                              seed=(parameters or {}).get("seed"), record_keys=("max_tokens",))
    out_dir = Path(out_dir)
    prepare_run_dir(out_dir, manifest, RECORDS)
    log = RecordLog(out_dir / RECORDS)
    jobs = [(n, item, s) for n, (item, s) in enumerate(itertools.product(items, settings))
            if not log.done(f"{item.id}/{s}")]
    progress.start(len(items) * len(settings), len(items) * len(settings) - len(jobs))
    from ..db import connect

    dbs, schemas, profiles = {}, {}, {}
    try:
        for name, path in paths.items():
            if path is not None and path.exists():
                dbs[name] = connect(path, config=config)
                schemas[name] = schema_text(dbs[name])
                if "vouch" in settings:
                    profiles[name] = vouch_schema_text(dbs[name])
        lock = threading.Lock()

        def work(job):
            n, item, setting = job
            if item.db not in dbs:
                return job, None
            schema = profiles[item.db] if setting == "vouch" else schemas[item.db]
            return job, _ask(llm, setting, item, schema, dbs[item.db].dialect)

        with ThreadPoolExecutor(max_workers=workers or getattr(config, "concurrency", 4)) as pool:
            futures = [pool.submit(work, job) for job in jobs]
            for fut in as_completed(futures):
                (n, item, setting), reply = fut.result()
                rec = _record(n, item, setting, reply, dbs.get(item.db))
                with lock:
                    log.append(rec)
                progress.advance(f"{item.id}/{setting}")
    finally:
        for db in dbs.values():
            db.close()
    keys = {f"{i.id}/{s}" for i in items for s in settings}
    return [r for r in log.records() if r["key"] in keys], manifest


def _record(index: int, item: PremiseItem, setting: str, reply: dict | None, db) -> dict:
    base = {"key": f"{item.id}/{setting}", "index": index, "id": item.id, "pair_id": item.pair_id, "db": item.db,
            "setting": setting, "label": item.label, "flaw": item.flaw, "question": item.question,
            "gold_sql": item.gold_sql}
    if reply is None:
        return {**base, "skipped": f"database {item.db!r} not found"}
    rec = {**base, **reply, "sql_error": None, "exec_match": None, "gold_error": None}
    if setting != "vouch" and reply.get("raw") is not None:
        sql = read_reply(setting, reply["raw"]).get("sql")
        if sql:
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


def analyse(records: list[dict], settings: list[str], *, replicates: int = M.DEFAULT_REPLICATES,
            seed: int = M.DEFAULT_SEED) -> dict:
    kept = [r for r in records if not r.get("skipped")]
    first: dict[str, int] = {}
    for r in kept:
        first[r["pair_id"]] = min(first.get(r["pair_id"], r["index"]), r["index"])
    pairs = sorted(first, key=first.get)
    pair_at = {p: i for i, p in enumerate(pairs)}
    P = len(pairs)
    measured = {(r["id"], r["setting"]): (r, measure(r)) for r in kept}
    items = {}
    for r in kept:
        items.setdefault(r["id"], r)
    flawed_ids = [i for i, r in items.items() if r["label"] == "flawed"]
    original_ids = [i for i, r in items.items() if r["label"] == "original"]

    def per_pair(setting: str, ids: list[str], name: str, transform=lambda v: v):
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

    stats, arrays = {}, {}
    for s in settings:
        for name in _FLAWED + _ORIGINAL:
            ids = flawed_ids if name in _FLAWED else original_ids
            num, den = per_pair(s, ids, name, (lambda v: v / 2) if name == "sql" else (lambda v: v))
            arrays[(s, name)] = (num, den)
            stats[f"{s}:{name}"] = M.ratio_stat(num, den)
    boot = M.bootstrap(stats, P, replicates=replicates, seed=seed)

    def point(s, name):
        num, den = arrays[(s, name)]
        return float(num.sum() / den.sum()) if den.sum() else float("nan")

    out_settings = {}
    for s in settings:
        flawed = [measured[(i, s)][1] for i in flawed_ids if (i, s) in measured]
        originals = [measured[(i, s)][1] for i in original_ids if (i, s) in measured]
        ok_f = [m for m in flawed if not m.get("malformed")]
        ok_o = [m for m in originals if not m.get("malformed")]
        f = {"n": len(flawed), "malformed": len(flawed) - len(ok_f),
             "sql_levels": [sum(m["sql"] == k for m in ok_f) for k in (0, 1, 2)],
             "as_interpretations": sum(m.get("as_interpretations", 0) for m in ok_f)}
        for name in _FLAWED:
            f[name] = point(s, name)
            f[f"{name}_ci"] = boot.interval(f"{s}:{name}")
        o = {"n": len(originals), "malformed": len(originals) - len(ok_o)}
        for name in _ORIGINAL:
            o[name] = point(s, name)
            o[f"{name}_ci"] = boot.interval(f"{s}:{name}")
        gen_ex = [m["ex"] for m in ok_o if m.get("gen") and m.get("ex") is not None]
        o["ex_given_gen"] = float(np.mean(gen_ex)) if gen_ex else float("nan")
        out_settings[s] = {"flawed": f, "original": o, "by_flaw": _by_flaw(measured, items, s, replicates, seed)}
    paired = {}
    for a, b in itertools.combinations(settings, 2):
        entry = {}
        for name in _FLAWED + _ORIGINAL:
            pa, pb = point(a, name), point(b, name)
            if np.isnan(pa) or np.isnan(pb):
                continue
            entry[name] = {"diff": pb - pa, "ci": boot.paired(f"{b}:{name}", f"{a}:{name}")}
        for name, ids in (("det", flawed_ids), ("gen", original_ids)):
            both = [(measured[(i, a)][1], measured[(i, b)][1]) for i in ids
                    if (i, a) in measured and (i, b) in measured]
            both = [(x[name], y[name]) for x, y in both if not x.get("malformed") and not y.get("malformed")
                    and x.get(name) is not None and y.get(name) is not None]
            if both:
                entry[f"mcnemar_{name}"] = M.mcnemar_exact([x for x, _ in both], [y for _, y in both])
        paired[f"{b}-{a}"] = entry
    return M.jsonable({
        "n_pairs": P, "n_flawed": len(flawed_ids), "n_original": len(original_ids),
        "settings": out_settings, "paired": paired, "bootstrap": {"replicates": replicates, "seed": seed},
        "model_errors": sum(1 for r in kept if r.get("error")),
    })


def _by_flaw(measured: dict, items: dict, setting: str, replicates: int, seed: int) -> dict:
    out = {}
    for code in FLAW_CODES:
        ms = [measured[(i, setting)][1] for i, r in items.items()
              if r["label"] == "flawed" and r["flaw"] == code and (i, setting) in measured]
        ok = [m for m in ms if not m.get("malformed")]
        if not ms:
            continue
        entry = {"n": len(ms), "malformed": len(ms) - len(ok)}
        values = {name: [m[name] / (2 if name == "sql" else 1) for m in ok if m.get(name) is not None]
                  for name in ("sql", "det", "type")}
        values = {k: v for k, v in values.items() if v}
        boot = M.bootstrap({k: M.mean_stat(v) for k, v in values.items()}, len(ok), replicates=replicates, seed=seed)
        for name in ("sql", "det", "type"):
            entry[name] = float(np.mean(values[name])) if name in values else float("nan")
            entry[f"{name}_ci"] = boot.interval(name) if name in values else [float("nan")] * 2
        out[code] = entry
    return out


def finish(out_dir: Path, records: list[dict], manifest: dict, settings: list[str], *, replicates: int, seed: int,
           replay_of: str | None = None) -> dict:
    from .report import write_report

    metrics = analyse(records, settings, replicates=replicates, seed=seed)
    write_json(Path(out_dir) / "metrics.json", metrics)
    report = build_report(metrics, records, manifest, replay_of=replay_of)
    write_report(out_dir, report)
    return metrics, report


def replay(run_dir: Path, out_dir: Path, *, settings: list[str] | None = None, replicates: int | None = None,
           seed: int | None = None) -> tuple[dict, dict]:
    manifest = read_manifest(run_dir, HARNESS)
    settings = settings or manifest.get("parameters", {}).get("settings") or list(SETTINGS)
    replicates, seed = replay_bootstrap(manifest, replicates, seed)
    records = load_records(run_dir, RECORDS)
    metrics, _ = finish(out_dir, records, manifest, settings, replicates=replicates, seed=seed, replay_of=str(run_dir))
    return manifest, metrics


__all__ = ["SETTINGS", "PROMPTS", "BUILTIN", "run_premise", "analyse", "finish", "replay", "read_reply", "measure",
           "schema_text"]
