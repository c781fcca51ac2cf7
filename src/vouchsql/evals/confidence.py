"""``vouch eval confidence``: does the score know when an answer is right? (IES §4.4, §6–8)

Each input line is one answer to score::

    {"id": "q1", "db": "chinook", "question": "…", "candidates": ["SELECT …", "SELECT …"],
     "answer_text": "…"?, "hint": "…"?, "gold_sql": "SELECT …"?, "label": true?,
     "judged_parts": [["part", true]]?, "judged_claims": [["claim", true]]?}

``db`` is a path relative to the input file's folder, ``demo``, or a shared database name
(chinook, sakila, northwind). The first candidate is the shown answer; the others are samples
for agreement. The label is taken as given, or computed as the relaxed execution match
(IES §3.3) of the shown answer's result against ``gold_sql``'s. When both are given, the given
label is used and the execution label is kept beside it, and their agreement (Cohen's κ) is
reported (IES §7, "Under execution-match labels").

Every candidate runs once (``check_candidates``). The record keeps the evidence every rule
scores from (agreement, K, strict-match clusters, every check with its evidence), so each rule
is recomputed from the record (``score_from_record``), the live run and ``--replay`` alike.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..answer import CheckResult, Reason, Result, Verdict
from ..rules import RULE_NAMES
from ..choices import reported
from ..errors import UserInputError, VouchError
from ..agreement import strict_clusters
from ..pipeline import check_candidates, rescore
from ..score import RULES, ScoreInput, gate, score
from ..settings import Config
from . import metrics as M
from .cases import DatabaseResolver, read_items
from .progress import NoProgress, ProgressSink
from .report import (Figure, Item, Report, Section, Table, Text, manifest_section, pct, pct_ci, reliability_png,
                     risk_coverage_png, with_ci)
from .runs import build_manifest, load_records, read_manifest, replay_bootstrap, run_items, write_json

if TYPE_CHECKING:
    from ..db.base import Database

HARNESS = "confidence"
RECORDS = "confidence.jsonl"
DEFAULT_RULES = RULE_NAMES
RECORD_KEYS = ("k", "max_rows", "timeout")

_TRUE = {"1", "true", "yes", "right", "correct"}
_FALSE = {"0", "false", "no", "wrong", "incorrect"}


def parse_label(value: object) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise UserInputError(f"label {value!r} is not a correctness label (true/false, 1/0, right/wrong)")


def parse_rules(text: str | None, default: Sequence[str] = DEFAULT_RULES) -> list[str]:
    rules = [r.strip() for r in (text.split(",") if text else default) if r.strip()]
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise UserInputError(f"unknown scoring rule(s) {', '.join(unknown)}; choose from {', '.join(RULES)}")
    if not rules:
        raise UserInputError("--rules names no rule")
    return list(dict.fromkeys(rules))


def load_items(path: Path, *, need_candidates: bool = True) -> list[dict[str, Any]]:
    items = read_items(path, ("db", "question"))
    for item in items:
        cands = item.get("candidates")
        if need_candidates and (not isinstance(cands, list) or not cands or not all(isinstance(c, str) for c in cands)):
            raise UserInputError(f"{path}: item {item['id']!r} needs \"candidates\": a non-empty list of SQL strings")
        parse_label(item.get("label"))  # fail early on a bad label
    return items


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------
def _summary(result: Result) -> dict[str, Any]:
    return {"columns": result.columns, "row_count": result.row_count, "truncated": result.truncated,
            "error": result.error.message if result.error else None}


def evaluate_item(db: Database, item: dict[str, Any], index: int, check_set: str = "vouch") -> dict[str, Any]:
    """Check one answer and return its record (or a record with ``skipped``). An item may
    carry ``judged_parts`` (a judge's COMPLETE: ``[[part, covered], …]``) and
    ``judged_claims`` (a judge's unsupported claims: ``[[claim, about_answer], …]``), as
    ``--model`` runs record them; the stored verdicts are under ``check_set``."""
    base = {"key": item["id"], "index": index, "id": item["id"], "db": item["db"], "question": item["question"]}
    given = parse_label(item.get("label"))
    gold_sql = item.get("gold_sql")
    if given is None and not gold_sql:
        return {**base, "skipped": "no label and no gold_sql to compute one"}
    try:
        from ..checks.claim_judge import from_claims
        from ..checks.complete_judge import from_parts

        answer = check_candidates(db, item["question"], list(item["candidates"]),
                                  answer_text=item.get("answer_text"), hint=item.get("hint"),
                                  judged_complete=from_parts(item.get("judged_parts")),
                                  judged_claims=from_claims(item.get("judged_claims")))
    except VouchError as exc:
        return {**base, "skipped": exc.message}
    exec_label: bool | None
    determined: bool | None
    gold: dict[str, Any] | None
    exec_label, determined, gold = None, None, None
    if gold_sql:
        from ..agreement import results_match

        gold_result = db.execute(gold_sql)
        gold = _summary(gold_result)
        if gold_result.error is None:
            m = results_match(answer.shown.result, gold_result)
            exec_label, determined = bool(m.matched), bool(m.determined)
        elif given is None:
            return {**base, "skipped": f"gold_sql does not run ({gold_result.error.message})"}
    label = given if given is not None else exec_label
    results = [c.result for c in answer.candidates]
    strict = strict_clusters(results)
    return {
        **base,
        "hint": item.get("hint"), "answer_text": item.get("answer_text"),
        "label": label, "label_source": "given" if given is not None else "execution",
        "exec_label": exec_label, "exec_label_determined": determined, "gold_sql": gold_sql, "gold": gold,
        "candidates": [{"sql": c.sql, "cluster": c.cluster, **_summary(c.result)} for c in answer.candidates],
        "k": len(results),
        "agreement": answer.agreement,
        "agreement_lower": answer.agreement_bounds.lower_bound if answer.agreement_bounds else None,
        "truncated_pairs": answer.agreement_bounds.truncated_pairs if answer.agreement_bounds else 0,
        "strict_clusters": strict,
        "checks": [c.model_dump(mode="json") for c in answer.checks],
        "fired": [c.name for c in answer.checks if c.fired],
        "choices": [c.type for c in answer.choices if reported(c)],  # open choices named in the reasons
        "choice_descriptions": {c.type: c.description for c in reversed(answer.choices) if reported(c)},
        "check_set": check_set,
        "verdicts": {rule: rescore(answer, rule, strict=strict, check_set=check_set).model_dump(mode="json")
                     for rule in RULES},
    }


def score_from_record(record: dict[str, Any], rule: str, checks: list[CheckResult] | None = None,
                      check_set: str = "vouch") -> Verdict:
    """The verdict of ``rule`` under ``check_set`` recomputed from a record's stored evidence (no SQL)."""
    if checks is None:
        checks = [CheckResult.model_validate(c) for c in record["checks"]]
    verdict = score(rule, ScoreInput(agreement=record["agreement"] or 0.0, k=record["k"], checks=checks,
                                     strict_clusters=list(record["strict_clusters"]), check_set=check_set))
    # As the pipeline does: an open choice is named in the reasons, never scored.
    for kind in dict.fromkeys(record.get("choices", [])):
        verdict.reasons.append(f"open_choice:{kind}")
        detail = record.get("choice_descriptions", {}).get(kind, f"the {kind} choice is open")
        verdict.reason_codes.append(Reason(code=f"open_choice:{kind}", detail=detail))
    return verdict


def run_confidence(input_path: Path | None, config: Config, out_dir: Path, *, datasets: Path | None = None,
                   command: str = "", parameters: dict[str, Any] | None = None, progress: ProgressSink | None = None,
                   model: str | None = None, k: int | None = None, check_set: str = "vouch",
                   dataset: Path | None = None, split: str | None = None,
                   db_root: Path | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run every item not yet in ``out_dir``'s records; return all records and the manifest.
    With ``model``, the candidates come from ``vouch ask`` under ``config`` (its ``shown`` and
    ``judge_complete`` settings are recorded in the manifest)."""
    progress = progress or NoProgress()
    if dataset is not None:
        # A Spider/BIRD split (the IES benchmarks): questions, gold SQL and BIRD's evidence as
        # the hint; the candidates come from the model.
        from .datasets import find_questions, load_spider_bird

        if model is None:
            raise UserInputError("--dataset gives questions without candidates: add --model provider:model")
        input_path = find_questions(Path(dataset), split)
        items = [{"id": str(q.id), "db": str(q.db_path) if q.db_path else q.db_id, "question": q.question,
                  "gold_sql": q.gold_sql, "hint": q.hint}
                 for q in load_spider_bird(Path(dataset), split=split, db_root=db_root)]
    else:
        assert input_path is not None  # without a dataset the items come from the input file
        input_path = Path(input_path)
        items = load_items(input_path, need_candidates=model is None)
    if model is not None:
        from .model import sample_candidates  # raises a clear UserInputError without `vouch ask`
        # The IES preset answers each question as asked (K samples, no assess step): the
        # paper has no premise refusal and no interpretations scored apart.
        sampler = sample_candidates(model, k=k, assess=(parameters or {}).get("paper") != "ies")
    else:
        sampler = None
    resolver = DatabaseResolver(input_path, config, datasets)
    paths = {name: resolver.resolve(name) for name in sorted({str(i["db"]) for i in items})}
    params = {"k": (k or config.samples) if model else None, "max_rows": config.max_rows, "timeout": config.timeout,
              "check_set": check_set, "shown": config.shown if model else "given",
              "judge_complete": config.judge_complete if model else None,
              "judge_claims": config.judge_claims if model else None,
              "assess": (parameters or {}).get("paper") != "ies" if model else None, **(parameters or {})}
    manifest = build_manifest(HARNESS, command=command, datasets={"input": input_path},
                              databases={n: p for n, p in paths.items() if p is not None}, model=_model_name(model),
                              parameters=params, seed=params.get("seed"), record_keys=RECORD_KEYS)

    def skipped(index: int, item: dict[str, Any], why: str) -> dict[str, Any]:
        return {"key": item["id"], "index": index, "id": item["id"], "db": item["db"], "question": item["question"],
                "skipped": why}

    def evaluate(db: Database, index: int, item: dict[str, Any]) -> dict[str, Any]:
        if sampler is None:
            return evaluate_item(db, item, index, check_set)
        drawn = sampler(db, item)
        if not drawn["candidates"]:
            return skipped(index, item, drawn["note"])
        record = evaluate_item(db, {**item, "candidates": drawn["candidates"], "answer_text": drawn["answer_text"],
                                    "judged_parts": drawn["judged_parts"], "judged_claims": drawn.get("judged_claims")},
                               index, check_set)
        if drawn.get("interpretations", 0) > 1:
            # Scored on the first interpretation's samples: said in the record, not hidden.
            record["interpretations"] = drawn["interpretations"]
        return record

    records = run_items(out_dir, manifest, RECORDS, items, key=lambda item: item["id"],
                        path_of=lambda item: paths.get(str(item["db"])), evaluate=evaluate,
                        missing=lambda index, item: skipped(index, item, f"database {item['db']!r} not found"),
                        config=config, progress=progress)
    return records, manifest


def _model_name(model: object) -> str | None:
    if model is None or isinstance(model, str):
        return model
    return f"{getattr(model, 'provider', '?')}:{getattr(model, 'name', '?')}"


# ---------------------------------------------------------------------------------------
# Analysis (shared by the live run and --replay)
# ---------------------------------------------------------------------------------------
def analyse(records: list[dict[str, Any]], rules: list[str], *, replicates: int = M.DEFAULT_REPLICATES,
            seed: int = M.DEFAULT_SEED, check_set: str = "vouch", paper: str | None = None,
            splits: int = 20) -> tuple[dict[str, Any], dict[str, Any]]:
    """metrics.json and the curves behind the figures, from the records alone. ``check_set``:
    which checks the rules read; ``paper="ies"`` adds the paper's tables (:mod:`.ies`)."""
    kept = [r for r in records if not r.get("skipped")]
    y = np.array([bool(r["label"]) for r in kept], dtype=bool)
    n = len(kept)
    scores: dict[str, npt.NDArray[np.float64]]
    gates: dict[str, list[str]]
    scores, gates, reproduced, comparable = {}, {}, 0, 0
    parsed = [[CheckResult.model_validate(c) for c in r["checks"]] for r in kept]
    for rule in rules:
        verdicts = [score_from_record(r, rule, checks, check_set) for r, checks in zip(kept, parsed)]
        scores[rule] = np.array([v.score for v in verdicts], dtype=float)
        gates[rule] = [v.gate for v in verdicts]
        for r, v in zip(kept, verdicts):
            if r.get("check_set", "vouch") == check_set and rule in r["verdicts"]:
                comparable += 1
                reproduced += r["verdicts"][rule] == v.model_dump(mode="json")
    ies_metrics: dict[str, Any]
    extra: dict[str, Any]
    ies_metrics, extra = {}, {}
    if paper == "ies":
        from .ies import analyse_ies

        ies_metrics, extra = analyse_ies(kept, parsed, y, check_set, scores, splits=splits, seed=seed)
    stats = {name: M.auroc_stat(s, y) for name, s in {**scores, **extra}.items()}
    boot = M.bootstrap(stats, n, replicates=replicates, seed=seed)
    out_rules: dict[str, dict[str, Any]]
    curves: dict[str, dict[str, Any]]
    out_rules, curves = {}, {"risk_coverage": {}, "reliability": {}}
    for rule in rules:
        out_rules[rule] = _quantities(scores[rule], gates[rule], y, boot, rule)
        rc = M.risk_coverage(scores[rule], y)
        out_rules[rule]["aurc"] = rc["aurc"]
        curves["risk_coverage"][rule] = rc
        curves["reliability"][rule] = M.reliability(scores[rule], y)
    if "fitted" in extra:
        ies_metrics["fitted"]["metrics"] = _quantities(extra["fitted"], [gate(v) for v in extra["fitted"]], y, boot,
                                                       "fitted")
    paired: dict[str, Any] = {}
    for a, b in itertools.combinations(rules, 2):
        paired[f"{b}-{a}"] = {"diff": out_rules[b]["auroc"] - out_rules[a]["auroc"], "ci": boot.paired(b, a)}
    if paper == "ies":
        from .ies import hypotheses

        # Proposition 1 in practice (IES §8): the agreement with the shown answer against the
        # entropy over strict clusters, on the same resamples.
        ies_metrics["a_minus_l2"] = {"diff": M.auroc(extra["a_strict"], y) - M.auroc(extra["l2_alone"], y),
                                     "ci": boot.paired("a_strict", "l2_alone")}
        if "l2_relaxed" in extra:
            ies_metrics["a_minus_l2_relaxed"] = {
                "diff": out_rules["agreement_alone"]["auroc"] - M.auroc(extra["l2_relaxed"], y),
                "ci": boot.paired("agreement_alone", "l2_relaxed")}
        accuracy = float(y.mean()) if n else float("nan")
        ies_metrics["hypotheses"] = hypotheses(M.jsonable(out_rules), M.jsonable(paired),
                                               ies_metrics["empty_result"], accuracy,
                                               M.jsonable(ies_metrics["truncation_lower_bound"]))
    both = [r for r in kept if r.get("label_source") == "given" and r.get("exec_label") is not None]
    labels = {
        "given": sum(r.get("label_source") == "given" for r in kept),
        "execution": sum(r.get("label_source") == "execution" for r in kept),
        "undetermined_execution": sum(r.get("exec_label_determined") is False for r in kept),
    }
    if both:
        la = [bool(r["label"]) for r in both]
        lb = [bool(r["exec_label"]) for r in both]
        labels["given_vs_execution"] = {"n": len(both), "agreement": float(np.mean(np.equal(la, lb))),
                                        "kappa": M.cohen_kappa(la, lb), "mcnemar": M.mcnemar_exact(la, lb)}
    metrics: dict[str, Any] = {
        "n": n, "accuracy": float(y.mean()) if n else float("nan"),
        # --model runs with the assess step: questions scored on their first interpretation.
        "first_interpretation_only": sum(r.get("interpretations", 0) > 1 for r in kept),
        "accuracy_ci": M.wilson(int(y.sum()), n),
        "skipped": len(records) - n,
        "rules": out_rules, "paired": paired, "labels": labels,
        "bootstrap": {"replicates": replicates, "seed": seed},
        "check_set": check_set,
        "stored_verdicts_reproduced": [reproduced, comparable],
    }
    if ies_metrics:
        metrics["ies"] = ies_metrics
    return M.jsonable(metrics), M.jsonable(curves)


def _quantities(s: np.ndarray, gates: list[str], y: np.ndarray, boot: M.Bootstrap, name: str) -> dict[str, Any]:
    g = M.gate_quantities(gates, y)
    n_pass = sum(g["gate"]["pass"])
    return {
        "auroc": M.auroc(s, y), "auroc_ci": boot.interval(name),
        "ece": M.ece(s, y), "brier": M.brier(s, y),
        "pass_accuracy": g["pass_accuracy"], "pass_accuracy_ci": M.wilson(g["gate"]["pass"][0], n_pass),
        "pass_share": g["pass_share"], "correct_withheld": g["correct_withheld"],
        "wrong_withheld": g["wrong_withheld"], "gate": g["gate"],
        "mean_score": float(s.mean()) if len(s) else float("nan"),
    }


def build_report(metrics: dict[str, Any], curves: dict[str, Any], records: list[dict[str, Any]],
                 manifest: dict[str, Any], *, replay_of: str | None = None) -> Report:
    rules = list(metrics["rules"])
    rows = []
    for rule in rules:
        m = metrics["rules"][rule]
        rows.append([rule, with_ci(m["auroc"], m["auroc_ci"]), pct_ci(m["pass_accuracy"], m["pass_accuracy_ci"]),
                     pct(m["pass_share"]), pct(m["correct_withheld"]), pct(m["wrong_withheld"]),
                     f"{m['ece']:.3f}" if m["ece"] is not None else "—",
                     f"{m['brier']:.3f}" if m["brier"] is not None else "—"])
    gate_rows = [[rule] + [f"{metrics['rules'][rule]['gate'][g][0]} / {metrics['rules'][rule]['gate'][g][1]}"
                           for g in ("pass", "flag", "abstain")] for rule in rules]
    paired_rows = [[name, with_ci(p["diff"], p["ci"], signed=True)] for name, p in metrics["paired"].items()]
    boot = metrics["bootstrap"]
    reproduced, total = metrics["stored_verdicts_reproduced"]
    intro: list[Item]
    intro = [Text(f"{metrics['n']} labelled answers, accuracy {pct_ci(metrics['accuracy'], metrics['accuracy_ci'])}"
                  f" (Wilson 95% interval); {metrics['skipped']} skipped. AUROC counts ties one half; its interval "
                  f"and the paired differences are percentile intervals from {boot['replicates']:,} bootstrap "
                  f"resamples of answers (seed {boot['seed']}). The score is not a probability.")]
    if replay_of:
        intro.append(Text(f"Replayed from `{replay_of}`: every number recomputed from the stored records "
                          "(no SQL, no model call)."))
    sections: list[Section] = []
    if "ies" in metrics:
        from .ies import sections as ies_sections

        sections += ies_sections(metrics)
    sections += [
        Section("Scores", [
            Table(["rule", "AUROC (95% CI)", "pass accuracy", "pass share", "correct withheld", "wrong withheld",
                   "ECE", "Brier"], rows),
            Text("Pass accuracy = P(right | pass); correct withheld = P(abstain | right); wrong withheld = "
                 "P(abstain | wrong). ECE over 10 equal-width bins."),
            Table(["rule", "pass (right / wrong)", "flag (right / wrong)", "abstain (right / wrong)"], gate_rows,
                  caption="Gate decisions by correctness (IES Table 8 layout)."),
        ]),
    ]
    if paired_rows:
        sections.append(Section("Paired AUROC differences", [
            Table(["difference", "AUROC difference (95% CI)"], paired_rows),
            Text("Each difference is computed on the same bootstrap resamples as the intervals above."),
        ]))
    figures: list[Item]
    figures = [Figure("risk_coverage", risk_coverage_png(curves["risk_coverage"]),
                      "Accuracy of the answers shown against the share shown, as the threshold is lowered; "
                      "markers are attainable thresholds.")]
    for rule in rules:
        figures.append(Figure(f"reliability_{rule}", reliability_png(curves["reliability"][rule], f"Reliability: {rule}"),
                              f"Reliability diagram, {rule}: share right per score bin (numbers: answers per bin)."))
    sections.append(Section("Risk–coverage and reliability", figures))
    labels = metrics["labels"]
    label_items: list[Item]
    label_items = [Text(f"Labels: {labels['given']} given, {labels['execution']} by relaxed execution match "
                        f"({labels['undetermined_execution']} of those undetermined by truncation, counted as matching).")]
    if "given_vs_execution" in labels:
        g = labels["given_vs_execution"]
        label_items.append(Text(f"Where both exist ({g['n']} answers) the given labels and the execution-match labels "
                                f"agree on {pct(g['agreement'])} (Cohen's κ = {g['kappa'] if g['kappa'] is None else round(g['kappa'], 3)}; "
                                f"exact McNemar p = {g['mcnemar']['p']:.3g})."))
    label_items.append(Text(f"Stored verdicts reproduced from the records' evidence: {reproduced} of {total}."))
    if metrics.get("first_interpretation_only"):
        label_items.append(Text(f"{metrics['first_interpretation_only']} questions had an open choice: `vouch ask` "
                                "answered each interpretation apart and these are scored on the first "
                                "interpretation's samples (the IES preset, `--paper ies`, answers every question "
                                "as asked instead)."))
    sections.append(Section("Labels and reproducibility", label_items))
    skipped = [r for r in records if r.get("skipped")]
    if skipped:
        sections.append(Section("Skipped", [Text("\n".join(f"- {r['id']}: {r['skipped']}" for r in skipped))]))
    sections.append(manifest_section(manifest))
    return Report(title="Confidence: does the score know when an answer is right?", command=manifest.get("command"),
                  intro=intro, sections=sections, manifest=manifest)


def finish(out_dir: Path, records: list[dict[str, Any]], manifest: dict[str, Any], rules: list[str], *,
           replicates: int, seed: int, replay_of: str | None = None, check_set: str | None = None,
           paper: str | None = None, splits: int | None = None) -> tuple[dict[str, Any], Report]:
    from .report import write_report

    params = manifest.get("parameters", {})
    metrics, curves = analyse(records, rules, replicates=replicates, seed=seed,
                              check_set=check_set or params.get("check_set") or "vouch",
                              paper=paper if paper is not None else params.get("paper"),
                              splits=splits or params.get("splits") or 20)
    write_json(Path(out_dir) / "metrics.json", metrics)
    write_json(Path(out_dir) / "curves.json", curves)
    report = build_report(metrics, curves, records, manifest, replay_of=replay_of)
    write_report(out_dir, report)
    return metrics, report


def replay(run_dir: Path, out_dir: Path, *, rules: list[str] | None = None, replicates: int | None = None,
           seed: int | None = None, check_set: str | None = None,
           paper: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Recompute a stored run's numbers into ``out_dir`` (under another check set or with the
    paper's tables if asked); returns (manifest, metrics)."""
    manifest = read_manifest(run_dir, HARNESS)
    rules = rules or manifest.get("parameters", {}).get("rules") or list(DEFAULT_RULES)
    if paper == "ies":
        rules = list(DEFAULT_RULES)
    replicates, seed = replay_bootstrap(manifest, replicates, seed)
    records = load_records(run_dir, RECORDS)
    metrics, _ = finish(out_dir, records, manifest, rules, replicates=replicates, seed=seed, replay_of=str(run_dir),
                        check_set=check_set, paper=paper)
    return manifest, metrics
