"""``vouch eval planted``: plant each model-free error of IES Appendix B into correct cases,
re-execute, and report per kind the share withheld, not passed, and caught by its own check
(the layout of IES Table 3).

Two sampling modes, both reported:
- ``independent``: the planted answer is shown and the other K−1 samples are the case's
  correct SQL, as when one sample of a model goes wrong;
- ``consistent``: all K samples carry the plant, as when a model makes the same error every
  time — agreement cannot help, so only the checks can withhold it.
For SQL-changing plants the answer text is rewritten from the planted rows (as the paper's
model rewrote its answer), so the text agrees with the broken result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Sequence

from ..agreement import strict_clusters
from ..answer import Result
from ..db import connect
from ..db.profile import patched_profile
from ..errors import SQLRejected, UserInputError, VouchError
from ..pipeline import check_candidates, rescore
from ..score import RULES
from ..settings import Config
from ..sql.inspect import inspect_sql
from .cases import DatabaseResolver, read_jsonl
from .plants import PLANTS, PlantContext, Planted

if TYPE_CHECKING:
    from ..answer import Answer
    from ..db.base import Database
    from .report import Item, Report, Section

MODES = ("independent", "consistent")


def template_text(result: Result) -> str:
    """A deterministic answer text that cites only the result: its row count and first row."""
    if result.error is not None:
        return "The query returned no result."
    if not result.rows:
        return "The query returned no rows."
    first = "; ".join(f"{c} = {_fmt(v)}" for c, v in zip(result.columns, result.rows[0]))
    return f"The result has {result.row_count} rows. The first is: {first}."


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.2f}" if abs(v) < 1e12 else repr(v)
    return "NULL" if v is None else str(v)


@dataclass
class Record:
    id: str
    kind: str  # a plant kind, or "control"
    mode: str
    rule: str
    gate: str
    score: float
    fired: list[str]
    own_check: str | None
    own_fired: bool | None
    note: str
    sql: str
    answer_text: str | None
    effective: bool = True


DEFAULT_RULES = ("agreement_first", "designed")


def run_planted(case_file: Path, config: Config, *, k: int = 5, kinds: Iterable[str] | None = None,
                rules: Iterable[str] = DEFAULT_RULES, datasets: Path | None = None,
                progress: Callable[[str], object] | None = None) -> tuple[list[Record], list[str]]:
    """Every record, and the notes on cases that could not be used."""
    kinds = list(kinds or PLANTS)
    unknown: Collection[str] = set(kinds) - set(PLANTS)
    if unknown:
        raise UserInputError(f"unknown plant kind(s) {', '.join(sorted(unknown))}; known: {', '.join(PLANTS)}")
    rules = list(rules)
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise UserInputError(f"unknown scoring rule(s) {', '.join(unknown)}; choose from {', '.join(RULES)}")
    cases = read_jsonl(case_file)
    for n, case in enumerate(cases, 1):
        for key in ("db", "question", "sql"):
            if not case.get(key):
                raise UserInputError(f"{case_file}: case {case.get('id', n)!r} has no {key}")
    resolver = DatabaseResolver(case_file, config, datasets)
    records: list[Record] = []
    skipped: list[str] = []
    open_dbs: dict[Path, Database] = {}
    try:
        for case in cases:
            cid = str(case.get("id", f"case-{len(records)}"))
            path = resolver.resolve(str(case.get("db", "")))
            if path is None or not path.exists():
                skipped.append(f"{cid}: database {case.get('db')!r} not found")
                continue
            db = open_dbs.get(path) or open_dbs.setdefault(path, connect(path, config=config))
            records.extend(_run_case(db, case, cid, kinds, k, rules, skipped))
            if progress:
                progress(cid)
    finally:
        for db in open_dbs.values():
            db.close()
    return records, skipped


def _run_case(db: Database, case: dict[str, Any], cid: str, kinds: list[str], k: int, rules: list[str],
              skipped: list[str]) -> list[Record]:
    question, sql = case["question"], case["sql"]
    original = db.execute(sql)
    if original.error is not None:
        skipped.append(f"{cid}: the case's SQL does not run ({original.error.message})")
        return []
    text = case.get("answer_text") or template_text(original)
    profile = db.profile()
    try:
        tree = db.parse(sql)
    except SQLRejected as exc:
        skipped.append(f"{cid}: {exc.message}")
        return []
    ctx = PlantContext(db=db, profile=profile, tree=tree, inspection=inspect_sql(tree, profile, db.dialect),
                       result=original, answer_text=text, question=question)
    out: list[Record] = []
    control = check_candidates(db, question, [sql] * k, answer_text=text, hint=case.get("hint"))
    out.extend(_records(cid, "control", "consistent", control, rules, None, "unchanged", sql, text))
    for kind in kinds:
        try:
            planted = PLANTS[kind](ctx)
        except VouchError as exc:
            skipped.append(f"{cid}/{kind}: could not plant ({exc.message})")
            continue
        if planted is None:
            continue
        out.extend(_score_plant(db, case, cid, planted, original, sql, k, rules))
    return out


def _score_plant(db: Database, case: dict[str, Any], cid: str, planted: Planted, original: Result, sql: str, k: int,
                 rules: list[str]) -> list[Record]:
    with patched_profile(db) as profile:
        if planted.patch_profile is not None:
            planted.patch_profile(profile)
        return _score_patched(db, case, cid, planted, original, sql, k, rules)


def _score_patched(db: Database, case: dict[str, Any], cid: str, planted: Planted, original: Result, sql: str, k: int,
                   rules: list[str]) -> list[Record]:
    text = planted.answer_text
    new_result = db.execute(planted.sql)
    if text is None:
        text = template_text(new_result)
    effective = planted.answer_text != case.get("answer_text") if planted.kind == "wrong_number" else \
        new_result.model_dump(exclude={"elapsed_ms"}) != original.model_dump(exclude={"elapsed_ms"})
    out: list[Record] = []
    for mode in MODES:
        cands = [planted.sql] + ([sql] * (k - 1) if mode == "independent" else [planted.sql] * (k - 1))
        answer = check_candidates(db, case["question"], cands, answer_text=text, hint=case.get("hint"))
        out.extend(_records(cid, planted.kind, mode, answer, rules, planted.own_check, planted.note,
                            planted.sql, text, effective))
    return out


def _records(cid: str, kind: str, mode: str, answer: Answer, rules: list[str], own_check: str | None, note: str,
             sql: str, text: str, effective: bool = True) -> list[Record]:
    fired = [c.name for c in answer.checks if c.fired]
    strict = strict_clusters([c.result for c in answer.candidates])
    out: list[Record] = []
    for rule in rules:
        verdict = rescore(answer, rule, strict=strict)
        out.append(Record(id=cid, kind=kind, mode=mode, rule=rule, gate=verdict.gate, score=verdict.score,
                          fired=fired, own_check=own_check,
                          own_fired=(own_check in fired) if own_check else None,
                          note=note, sql=sql, answer_text=text, effective=effective))
    return out


def summarise(records: list[Record]) -> dict[str, Any]:
    """Per kind and mode: n, withheld (abstain), not passed, own check fired — effective plants only."""
    table: dict[str, Any] = {}
    for r in records:
        if not r.effective:
            continue
        row = table.setdefault(r.rule, {}).setdefault(r.kind, {}).setdefault(
            r.mode, {"n": 0, "withheld": 0, "not_pass": 0, "own_check": 0, "own_measured": 0})
        row["n"] += 1
        row["withheld"] += r.gate == "abstain"
        row["not_pass"] += r.gate != "pass"
        if r.own_check:
            row["own_measured"] += 1
            row["own_check"] += bool(r.own_fired)
    ineffective: dict[str, int] = {}
    for r in records:
        if not r.effective and r.mode == "consistent" and r.rule == records[0].rule:
            ineffective[r.kind] = ineffective.get(r.kind, 0) + 1
    return {"rules": table, "ineffective": ineffective}


def _pct(num: int, den: int) -> str:
    return f"{100 * num / den:.1f}%" if den else "—"


def planted_report(summary: dict[str, Any], skipped: list[str], command: str,
                   manifest: dict[str, Any] | None = None) -> Report:
    """The report in the shared layout (:mod:`vouchsql.evals.report`)."""
    from .report import Report, Section, Table, Text, manifest_section

    order = ["control"] + list(PLANTS)
    sections: list[Section] = []
    for rule, kinds in summary["rules"].items():
        rows = []
        for kind in order:
            for mode in MODES:
                row = kinds.get(kind, {}).get(mode)
                if not row:
                    continue
                own = _pct(row["own_check"], row["own_measured"]) if row["own_measured"] else "— (needs a judge)"
                if kind == "control":
                    own = "—"
                rows.append([kind, mode, row["n"], _pct(row["withheld"], row["n"]), _pct(row["not_pass"], row["n"]), own])
        sections.append(Section(f"Rule `{rule}`", [Table(["error", "mode", "n", "withheld", "not pass", "own check"], rows)]))
    notes: list[Item]
    notes = [Text("Withheld = gate `abstain`; not pass = `flag` or `abstain`. The control rows rescore the "
                  "unplanted cases (all K samples correct): they should pass.")]
    if summary["ineffective"]:
        notes.append(Text("Plants that left the result unchanged (not counted): " + ", ".join(
            f"{k} {v}" for k, v in summary["ineffective"].items())))
    if skipped:
        notes.append(Text("Skipped:"))
        notes.append(Text("\n".join(f"- {s}" for s in skipped)))
    sections.append(Section("Notes", notes))
    if manifest:
        sections.append(manifest_section(manifest))
    return Report(title="Planted errors (IES Appendix B, Table 3 layout)", command=command, sections=sections,
                  manifest=manifest)


def report_markdown(summary: dict[str, Any], skipped: list[str], command: str,
                    manifest: dict[str, Any] | None = None) -> str:
    from .report import render_markdown

    return render_markdown(planted_report(summary, skipped, command, manifest))


RECORDS = "planted.jsonl"


def write_outputs(out_dir: Path, records: list[Record], summary: dict[str, Any], *, skipped: Sequence[str] = (),
                  command: str = "", cases: Path | None = None, parameters: dict[str, Any] | None = None,
                  config: Config | None = None, datasets: Path | None = None) -> None:
    """planted.jsonl, metrics.json (the summary), manifest.json, report.md and report.html.
    ``datasets`` as given to :func:`run_planted`, so the manifest hashes the databases the run read."""
    from .report import write_report
    from .runs import build_manifest, write_json

    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / RECORDS, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r.__dict__, ensure_ascii=False) + "\n")
    (out_dir / "metrics.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    databases: dict[str, Path] = {}
    if cases is not None and config is not None:
        resolver = DatabaseResolver(cases, config, datasets)
        for case in read_jsonl(cases):
            path = resolver.resolve(str(case.get("db", "")))
            if path is not None and path.is_file():
                databases[str(case.get("db"))] = path
    manifest = build_manifest("planted", command=command, datasets={"cases": cases} if cases else {},
                              databases=databases, parameters={**(parameters or {}), "skipped": list(skipped)})
    write_json(out_dir / "manifest.json", manifest)
    write_report(out_dir, planted_report(summary, list(skipped), command, manifest))


def replay_planted(run_dir: Path, out_dir: Path) -> dict[str, Any]:
    """Recompute the tables of a stored run from planted.jsonl (no SQL)."""
    from .report import write_report
    from .runs import read_manifest, write_json

    manifest = read_manifest(run_dir, "planted")
    path = Path(run_dir) / RECORDS
    if not path.is_file():
        raise UserInputError(f"{run_dir}: no {RECORDS}; nothing to replay")
    records = [Record(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    summary = summarise(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "metrics.json", summary)
    write_report(out_dir, planted_report(summary, manifest.get("parameters", {}).get("skipped", []),
                                         manifest.get("command", ""), manifest))
    return summary
