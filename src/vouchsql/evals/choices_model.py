"""``vouch eval choices --model P:M --methods …``: SpecBridge's experiment with a model
(§3 measures, §4.1 baselines, §7 Decide-then-answer and the two-turn experiment).

Per request set, every method of :mod:`vouchsql.evals.choice_methods` answers the open request
and both specific requests; every query it returns runs read-only and is matched with the
references' results (:func:`vouchsql.evals.reference_match.match_reference`: relaxed matching,
numbers to four decimal places, rows tied at a cut-off interchangeable). The ``detectors``
method is today's model-free evaluation (:func:`vouchsql.evals.choices_eval.evaluate_set`):
the detectors are handed A, so only its coverage and false alarms are measured.

Measures per method, overall and per choice type (SpecBridge §3):

- **accuracy**: specific requests whose main query gives that request's reference result;
- **precision**: of the queries returned for specific requests, the share with the request's
  reference result (Table 5's "Prec.");
- **coverage**: open requests where the returned queries include one with A's result and one
  with B's ("both returned"); also over the *computable* sets, where the same method answered
  both specific requests right;
- **named**: open requests whose response names the choice — by the judge model
  (``--judge P:M``) when given, else from the structured output (the method lists two or more
  interpretations, or returns an alternative); the report says which;
- **false alarms**: specific requests where a returned query gives the *other* reference's
  result, or (with a judge) whose words call the set's choice open;
- **calls** and **tokens** per request (open and specific requests alike);
- paired bootstrap differences (resampling sets, :mod:`vouchsql.evals.metrics`) between the
  first method given (``decide_then_answer`` by default) and each other one.

``--simulated-user`` (§7.2): a user has one interpretation in mind — for the open request one
user holds A and another B; each specific request's user holds its own. The first turn is the
method's answer to the request; when none of its queries gives the held interpretation's result
(a clarifying question shows none), the user states the interpretation in one more turn and the
model answers the specific request (one generate call, the same second answer for every
method). ``--second-turn clause`` answers the open request with the interpretation's clause
appended instead (Vouch's phase 2, §7.3; ``clause_a`` / ``clause_b`` of the set, the specific
request where it has none). Reported, over the set's three requests (the open one counted once,
its two users averaged): user turns per 100 requests (100 + the second turns), final accuracy
over users, calls per request.

Records (``choices_model.jsonl``) keep every response, its SQL and each query's matches, so
``--replay`` recomputes every number with no model call and no SQL.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, cast

from ..errors import UserInputError
from ..settings import Config
from . import metrics as M
from .choice_methods import ALL_METHODS, METHODS, RUNNERS, Context, judge_named, second_answer
from .datasets import RequestSet
from .progress import NoProgress, ProgressSink
from .reference_match import match_reference, tie_context
from .report import Item, Report, Section, Table, Text, fmt, manifest_section, pct_ci, with_ci
from .runs import build_manifest, finish_run, load_records, read_manifest, run_items

if TYPE_CHECKING:
    from rich.console import Console

    from ..answer import Result
    from ..db import Database
    from ..llm import Model
    from .reference_match import TieContext

HARNESS = "choices_model"
RECORDS = "choices_model.jsonl"
DEFAULT_METHODS = ("decide_then_answer", "plain", "three_samples", "decide_then_pick", "single_answer",
                   "clarifying_question")


def parse_methods(text: str | None) -> list[str]:
    names = [m.strip() for m in (text or ",".join(DEFAULT_METHODS)).split(",") if m.strip()]
    if not names:
        raise UserInputError("--methods names no method")
    unknown = [m for m in names if m not in ALL_METHODS]
    if unknown:
        raise UserInputError(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(ALL_METHODS)}")
    return list(dict.fromkeys(names))


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------
def _score(db: Database, sqls: list[str], refs: dict[str, Result], ties: dict[str, TieContext | None],
           known: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for sql in sqls:
        if sql not in known:
            known[sql] = db.execute(sql)
        res = known[sql]
        out.append({"sql": sql, "rows": res.row_count if res.ok else None,
                    "error": None if res.ok else res.error.message,
                    **{side: (match_reference(res, refs[side], ties[side]) if res.ok else None) for side in refs}})
    return out


SECOND_TURNS = ("specific", "clause")


def evaluate_set_with_methods(db: Database, rs: RequestSet, index: int, *, model: str | Model | None,
                              methods: list[str], k: int, judge: str | Model | None = None,
                              simulated_user: bool = False, second_turn: str = "specific") -> dict[str, Any]:
    from .choices_eval import evaluate_set

    base = {"key": rs.id, "index": index, "id": rs.id, "kind": "set", "db": rs.db, "type": rs.choice_type,
            "open_request": rs.open_request, "request_a": rs.request_a, "request_b": rs.request_b,
            "sql_a": rs.sql_a, "sql_b": rs.sql_b}
    res = {"a": db.execute(rs.sql_a), "b": db.execute(rs.sql_b)}
    for side, r in res.items():
        if not r.ok:
            assert r.error is not None  # not ok: it has an error
            return {**base, "invalid": f"sql_{side} does not run ({r.error.message})"}
    ties = {"a": tie_context(db, rs.sql_a, res["a"]), "b": tie_context(db, rs.sql_b, res["b"])}
    same = match_reference(res["a"], res["b"], ties["b"])
    if same is not None:
        return {**base, "invalid": f"sql_a and sql_b give matching results ({same}): the set tests nothing"}
    ctx = Context(db=db, model=model, k=k, temperature=db.config.temperature)
    judge_llm = None
    if judge is not None:
        from ..llm import llm_from_config
        judge_llm = llm_from_config(judge, db.config)
    known = {rs.sql_a: res["a"], rs.sql_b: res["b"]}
    requests = {"open": rs.open_request, "specific_a": rs.request_a, "specific_b": rs.request_b}
    out: dict[str, Any] = {**base, "methods": {}}
    for method in methods:
        if method == "detectors":
            out["methods"][method] = {"detectors": evaluate_set(db, rs, index)}
            continue
        parts: dict[str, Any] = {}
        for part, text in requests.items():
            resp = RUNNERS[method](ctx, text)
            rec = resp.to_dict()
            rec["scored"] = _score(db, resp.returned, res, ties, known)
            if judge_llm is not None:
                rec["named_judge"] = judge_named(judge_llm, text, rs.choice_type, rs.request_a, rs.request_b, resp)
            parts[part] = rec
        out["methods"][method] = parts
    if simulated_user:
        second: dict[str, Any] = {}
        for side in ("a", "b"):
            specific = rs.request_a if side == "a" else rs.request_b
            clause = rs.extra.get(f"clause_{side}") if second_turn == "clause" else None
            if clause:
                from ..pipeline.asking import append_clause
                text = append_clause(rs.open_request, str(clause))
            else:
                text = specific
            texts = {side: text, f"specific_{side}": specific}
            for key, words in texts.items():
                if key != side and words == text:
                    continue  # the same request: one second answer serves both users
                resp = second_answer(ctx, words)
                rec = resp.to_dict()
                rec["scored"] = _score(db, resp.returned, res, ties, known)
                rec["from_clause"] = key == side and bool(clause)
                second[key] = rec
        out["second"] = second
    return out


def run_choices_model(sets_path: Path, config: Config, out_dir: Path, *, model: str | Model | None, methods: list[str],
                      k: int = 1, judge: str | Model | None = None, simulated_user: bool = False,
                      datasets: Path | None = None, command: str = "", types: Iterable[str] | None = None,
                      progress: ProgressSink | None = None,
                      second_turn: str = "specific") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from ..llm import get_model, load_prompt, spec_of
    from .cases import DatabaseResolver
    from .choices_eval import load_choice_file

    progress = progress or NoProgress()
    if not isinstance(k, int) or k < 1:
        raise UserInputError(f"--k must be a whole number >= 1, got {k!r}")
    if second_turn not in SECOND_TURNS:
        raise UserInputError(f"--second-turn {second_turn!r}: choose {' or '.join(SECOND_TURNS)}")
    if any(m != "detectors" for m in methods) and model is None:
        raise UserInputError("the model methods need --model provider:model (only `detectors` runs without one)")
    sets_path = Path(sets_path)
    sets, _ = load_choice_file(sets_path)  # no-difference cases have no specific requests: not used here
    if types:
        wanted = {t.strip() for t in types if t.strip()}
        sets = [s for s in sets if s.choice_type in wanted]
    if not sets:
        raise UserInputError(f"{sets_path}: no request sets to run")
    spec = spec_of(get_model(model)) if model is not None and not isinstance(model, str) else model
    judge_spec = spec_of(get_model(judge)) if judge is not None and not isinstance(judge, str) else judge
    resolver = DatabaseResolver(sets_path, config, datasets)
    paths = {name: resolver.resolve(name) for name in sorted({s.db for s in sets})}
    prompts = {n: load_prompt(n).text for n in ("decide", "generate", "plain", "interpretations", "missing",
                                                  "judge_named")}
    parameters = {"methods": methods, "k": k, "judge": judge_spec, "simulated_user": simulated_user,
                  "second_turn": second_turn if simulated_user else None,
                  "temperature": config.temperature, "max_rows": config.max_rows, "timeout": config.timeout,
                  "named_by": "judge" if judge is not None else "structured"}
    manifest = build_manifest(HARNESS, command=command, datasets={"sets": sets_path},
                              databases={n: p for n, p in paths.items() if p is not None}, prompts=prompts,
                              model=spec, parameters=parameters,
                              record_keys=("methods", "k", "judge", "simulated_user", "second_turn", "temperature"))

    def evaluate(db: Database, index: int, rs: RequestSet) -> dict[str, Any]:
        return evaluate_set_with_methods(db, rs, index, model=model, methods=methods, k=k, judge=judge,
                                         simulated_user=simulated_user, second_turn=second_turn)

    def missing(index: int, rs: RequestSet) -> dict[str, Any]:
        return {"key": rs.id, "index": index, "id": rs.id, "kind": "set", "db": rs.db, "type": rs.choice_type,
                "skipped": f"database {rs.db!r} not found"}

    records = run_items(out_dir, manifest, RECORDS, sets, key=lambda rs: rs.id, path_of=lambda rs: paths.get(rs.db),
                        evaluate=evaluate, missing=missing, config=config, progress=progress)
    return records, manifest


# ---------------------------------------------------------------------------------------
# Measures
# ---------------------------------------------------------------------------------------
def _per_set(r: dict[str, Any], method: str, named_by: str) -> dict[str, Any]:
    """One set's values for one method (None where not measured)."""
    m = r["methods"][method]
    if method == "detectors":
        d = m["detectors"]
        if "open" not in d:
            return {}
        fa = [d[s]["false_alarm"] for s in ("specific_a", "specific_b")]
        return {"coverage": float(d["open"]["found"]), "false_alarm": sum(fa) / 2, "calls": 0.0, "tokens": 0.0,
                "accuracy": None, "precision_k": None, "precision_n": None, "named": None, "computable": None,
                "asked": 0.0}
    o, a, b = m["open"], m["specific_a"], m["specific_b"]
    acc = [bool(a["scored"]) and a["scored"][0]["a"] is not None, bool(b["scored"]) and b["scored"][0]["b"] is not None]
    prec_k = sum(q["a"] is not None for q in a["scored"]) + sum(q["b"] is not None for q in b["scored"])
    prec_n = len(a["scored"]) + len(b["scored"])
    both = any(q["a"] is not None for q in o["scored"]) and any(q["b"] is not None for q in o["scored"])
    if named_by == "judge":
        named = o.get("named_judge")
        fa = [any(q["b"] is not None for q in a["scored"]) or bool(a.get("named_judge")),
              any(q["a"] is not None for q in b["scored"]) or bool(b.get("named_judge"))]
    else:
        named = o["open_flag"]
        fa = [any(q["b"] is not None for q in a["scored"]), any(q["a"] is not None for q in b["scored"])]
    parts = (o, a, b)
    return {"accuracy": sum(acc) / 2, "precision_k": prec_k, "precision_n": prec_n, "coverage": float(both),
            "computable": all(acc), "named": None if named is None else float(bool(named)),
            "false_alarm": sum(fa) / 2, "calls": sum(p["calls"] for p in parts) / 3,
            "tokens": sum(p["input_tokens"] + p["output_tokens"] for p in parts) / 3,
            "asked": float(o["asked"] is not None), "asked_specific": sum(p["asked"] is not None for p in (a, b)) / 2,
            "errors": sum(p["error"] is not None for p in parts)}


def _user(first: dict[str, Any], second: dict[str, Any], side: str) -> tuple[int, bool, float]:
    """One simulated user holding ``side``: (turns, right at the end, calls)."""
    shown = any(q[side] is not None for q in first["scored"])
    second_right = bool(second["scored"]) and second["scored"][0][side] is not None
    return 1 + (not shown), shown or second_right, first["calls"] + (0 if shown else second["calls"])


def _two_turn(r: dict[str, Any], method: str) -> dict[str, Any] | None:
    """Per set: turns and calls per request over its three requests (the open request's two
    users averaged), and whether each of its four users ends right."""
    if "second" not in r or method == "detectors":
        return None
    parts = r["methods"][method]
    opened = [_user(parts["open"], r["second"][side], side) for side in ("a", "b")]
    specific = [_user(parts[f"specific_{side}"], r["second"].get(f"specific_{side}", r["second"][side]), side)
                for side in ("a", "b")]
    per_request = [(sum(t for t, _, _ in opened) / 2, sum(c for _, _, c in opened) / 2)]
    per_request += [(t, c) for t, _, c in specific]
    finals = [f for _, f, _ in opened + specific]
    return {"turns": sum(t for t, _ in per_request) / 3, "calls": sum(c for _, c in per_request) / 3,
            "finals": finals, "final": sum(finals) / len(finals)}


def _method_measures(kept: list[dict[str, Any]], method: str, named_by: str) -> dict[str, Any]:
    rows = [_per_set(r, method, named_by) for r in kept]
    rows = [x for x in rows if x]
    if not rows:
        return {"sets": 0}
    out: dict[str, Any] = {"sets": len(rows)}
    if rows[0]["accuracy"] is not None:
        out["accuracy"] = M.proportion([v for x in rows for v in _split(x["accuracy"])])
        k, n = sum(x["precision_k"] for x in rows), sum(x["precision_n"] for x in rows)
        out["precision"] = {"k": k, "n": n, "rate": k / n if n else None, "ci": M.wilson(k, n)}
        comp = [x for x in rows if x["computable"]]
        out["coverage_computable"] = M.proportion([x["coverage"] == 1.0 for x in comp])
        out["asked_open"] = M.proportion([x["asked"] == 1.0 for x in rows])
        out["asked_specific"] = M.proportion([v for x in rows for v in _split(x["asked_specific"])])
        out["errors"] = sum(x["errors"] for x in rows)
    out["coverage"] = M.proportion([x["coverage"] == 1.0 for x in rows])
    named = [x["named"] for x in rows if x.get("named") is not None]
    out["named"] = M.proportion([v == 1.0 for v in named]) if named else None
    out["false_alarms"] = M.proportion([v for x in rows for v in _split(x["false_alarm"])])
    out["calls_per_request"] = statistics.fmean(x["calls"] for x in rows)
    out["tokens_per_request"] = statistics.fmean(x["tokens"] for x in rows)
    return out


def _split(mean_of_two: float) -> list[bool]:
    """A per-set mean over two specific requests back into its two flags (0, 0.5, 1)."""
    ones = round(mean_of_two * 2)
    return [True] * ones + [False] * (2 - ones)


def analyse(records: list[dict[str, Any]], manifest: dict[str, Any], *, replicates: int = M.DEFAULT_REPLICATES,
            seed: int = M.DEFAULT_SEED) -> dict[str, Any]:
    params = manifest.get("parameters", {})
    methods = params.get("methods") or []
    named_by = params.get("named_by", "structured")
    kept = [r for r in records if not r.get("skipped") and not r.get("invalid") and "methods" in r]
    types = sorted({r["type"] for r in kept})
    overall = {m: _method_measures(kept, m, named_by) for m in methods}
    per_type = {t: {m: _method_measures([r for r in kept if r["type"] == t], m, named_by) for m in methods}
                for t in types}
    out = {"sets": len(kept), "invalid": sum(1 for r in records if r.get("invalid")),
           "skipped": sum(1 for r in records if r.get("skipped")), "named_by": named_by, "methods": methods,
           "overall": overall, "per_type": per_type}
    # Paired differences: the first method against each other one, resampling sets.
    if len(methods) >= 2 and kept:
        ref = methods[0]
        rows = {m: [_per_set(r, m, named_by) for r in kept] for m in methods}
        diffs = {}
        for m in methods[1:]:
            d = {}
            for measure in ("coverage", "accuracy", "false_alarm", "calls"):
                a: list[Any] = [x.get(measure) for x in rows[ref]]
                b: list[Any] = [x.get(measure) for x in rows[m]]
                if any(v is None for v in a + b):
                    continue
                boot = M.bootstrap({"a": M.mean_stat(a), "b": M.mean_stat(b)}, len(kept), replicates=replicates,
                                   seed=seed)
                d[measure] = {"diff": statistics.fmean(a) - statistics.fmean(b), "ci": boot.paired("a", "b")}
            diffs[m] = d
        out["paired"] = {"reference": ref, "differences": diffs, "replicates": replicates, "seed": seed}
    if params.get("simulated_user"):
        two = {}
        for m in methods:
            vals: list[Any] = [_two_turn(r, m) for r in kept]
            vals = [v for v in vals if v is not None]
            if vals:
                two[m] = {"users": sum(len(v["finals"]) for v in vals),
                          "turns_per_100": 100 * statistics.fmean(v["turns"] for v in vals),
                          "final_accuracy": M.proportion([f for v in vals for f in v["finals"]]),
                          "calls_per_request": statistics.fmean(v["calls"] for v in vals)}
        model_methods = [m for m in methods if m in two]
        if len(model_methods) >= 2:
            ref = model_methods[0]
            diffs = {}
            # With a simulated user every kept set has its second turn: no None here.
            base = cast("list[dict[str, Any]]", [_two_turn(r, ref) for r in kept])
            for m in model_methods[1:]:
                other = cast("list[dict[str, Any]]", [_two_turn(r, m) for r in kept])
                d = {}
                for measure, scale in (("turns", 100), ("final", 1)):
                    a = [scale * v[measure] for v in base]
                    b = [scale * v[measure] for v in other]
                    boot = M.bootstrap({"a": M.mean_stat(a), "b": M.mean_stat(b)}, len(kept),
                                       replicates=replicates, seed=seed)
                    d[measure] = {"diff": statistics.fmean(a) - statistics.fmean(b), "ci": boot.paired("a", "b")}
                diffs[m] = d
            two["paired"] = {"reference": ref, "differences": diffs}
        out["two_turn"] = two
    return cast("dict[str, Any]", M.jsonable(out))


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------
def _p(p: dict[str, Any] | None) -> str:
    if not p or p.get("n") in (None, 0):
        return "—"
    return f"{pct_ci(p['rate'], p['ci'])} ({p['k']}/{p['n']})"


def _d(entry: dict[str, Any] | None, digits: int = 3) -> str:
    if not entry:
        return "—"
    return with_ci(entry["diff"], entry["ci"], digits=digits, signed=True)


def build_report(metrics: dict[str, Any], manifest: dict[str, Any], *, replay_of: str | None = None) -> Report:
    named_by = metrics["named_by"]
    intro: list[Item]
    intro = [Text(f"{metrics['sets']} request sets answered by each method with `{manifest.get('model')}` "
                  f"({metrics['invalid']} left out as invalid, {metrics['skipped']} skipped). Every returned query "
                  "ran read-only and was matched with the references' results (numbers to four decimal places, rows "
                  "tied at a cut-off interchangeable)."),
             Text("Named is judged " + ("by the judge model `" + str(manifest['parameters'].get('judge')) + "`"
                                        if named_by == "judge" else
                                        "from the structured output (two or more interpretations listed, or an "
                                        "alternative returned), not by a judge model") + ".")]
    if replay_of:
        intro.append(Text(f"Replayed from `{replay_of}` (no model call, no SQL run)."))
    rows = []
    for m in metrics["methods"]:
        o = metrics["overall"][m]
        if not o.get("sets"):
            continue
        rows.append([m, _p(o.get("coverage")), _p(o.get("precision")), fmt(o.get("calls_per_request"), 1),
                     _p(o.get("accuracy")), _p(o.get("coverage_computable")), _p(o.get("named")),
                     _p(o.get("false_alarms")), fmt(o.get("tokens_per_request"), 0)])
    sections = [Section("Methods (the paper's Table 5/6 layout: coverage, precision, calls)", [
        Table(["method", "cover (open)", "prec. (specific)", "calls / request", "accuracy (specific)",
               "cover, computable", "named (open)", "false alarms (specific)", "tokens / request"], rows,
              caption="Cover: open requests whose returned queries include A's and B's results. Prec.: of the "
                      "queries returned for specific requests, those with the request's result. Accuracy: specific "
                      "requests whose main query is right. Computable: sets where the method answered both specific "
                      "requests right. False alarm: a specific request answered also with the other "
                      "interpretation's result" + (" or whose words call the choice open (judge)" if named_by == "judge"
                                                   else "") + ". The detectors method is handed A: no accuracy.")])]
    type_rows = []
    for t, by_m in metrics["per_type"].items():
        for m in metrics["methods"]:
            o = by_m.get(m) or {}
            if o.get("sets"):
                type_rows.append([t, m, o["sets"], _p(o.get("coverage")), _p(o.get("accuracy")),
                                  _p(o.get("named")), _p(o.get("false_alarms"))])
    sections.append(Section("Per choice type", [Table(["type", "method", "sets", "cover", "accuracy", "named",
                                                        "false alarms"], type_rows)]))
    paired = metrics.get("paired")
    if paired:
        prow = [[f"{paired['reference']} − {m}", _d(d.get("coverage")), _d(d.get("accuracy")),
                 _d(d.get("false_alarm")), _d(d.get("calls"), 2)] for m, d in paired["differences"].items()]
        sections.append(Section("Paired differences", [Table(
            ["difference", "cover", "accuracy", "false alarms", "calls / request"], prow,
            caption=f"Means over the same sets, with percentile intervals from {paired['replicates']} paired "
                    f"bootstrap resamples of sets (seed {paired['seed']}).")]))
    two = metrics.get("two_turn")
    if two:
        trows = [[m, v["users"], fmt(v["turns_per_100"], 1), _p(v["final_accuracy"]), fmt(v["calls_per_request"], 2)]
                 for m, v in two.items() if m != "paired"]
        items: list[Item]
        items = [Table(["method", "users", "user turns / 100 requests", "final accuracy", "calls / request"], trows,
                       caption="Every request of a set has a user with one interpretation in mind: the open "
                               "request two (one holding A, one B), each specific request one. A second user turn is "
                               "needed when no query of the first answer gives the held interpretation's result; the "
                               "second answer (one generate call on the specific request, or with --second-turn "
                               "clause on the open request plus the clause) is the same for every method. Turns and "
                               "calls are per request.")]
        if "paired" in two:
            ref = two["paired"]["reference"]
            items.append(Table(["difference", "user turns / 100", "final accuracy"],
                               [[f"{ref} − {m}", _d(d.get("turns"), 1), _d(d.get("final"))]
                                for m, d in two["paired"]["differences"].items()]))
        sections.append(Section("Two turns with a simulated user (§7.2)", items))
    sections.append(manifest_section(manifest))
    return Report(title="Open calculation choices answered by a model (SpecBridge §3, §7)",
                  command=manifest.get("command"), intro=intro, sections=sections, manifest=manifest)


def finish(out_dir: Path, records: list[dict[str, Any]], manifest: dict[str, Any], *,
           replay_of: str | None = None) -> dict[str, Any]:
    return finish_run(out_dir, records, manifest, analyse, build_report, replay_of=replay_of)


def replay(run_dir: Path, out_dir: Path) -> dict[str, Any]:
    manifest = read_manifest(run_dir, HARNESS)
    return finish(out_dir, load_records(run_dir, RECORDS), manifest, replay_of=str(run_dir))


def run_command(args: argparse.Namespace, config: Config, out: Console) -> int:
    from rich.markdown import Markdown

    from .command import command as _command
    from .command import path as _path
    from .command import run_out as _run_out
    from .model import resolve_model
    from .progress import RichProgress
    from .choices_eval import DEFAULT_SETS

    methods = parse_methods(args.methods)
    model = resolve_model(args.model) if args.model else None
    judge = resolve_model(args.judge) if getattr(args, "judge", None) else None
    if getattr(args, "ambrosia", None):
        from . import ambrosia

        if model is None:
            raise UserInputError("--ambrosia needs --model provider:model")
        out_dir = _run_out(args, ambrosia.HARNESS)
        split = None if args.ambrosia_split == "all" else args.ambrosia_split
        with RichProgress("ambrosia") as bar:
            records, manifest = ambrosia.run_ambrosia(Path(args.ambrosia), config, out_dir, model=model,
                                                      methods=[m for m in methods if m != "detectors"],
                                                      k=args.k or 1, split=split, command=_command(args),
                                                      progress=bar, simulated_user=args.simulated_user)
        ambrosia.finish(out_dir, records, manifest)
        out.print(Markdown((out_dir / "report.md").read_text(encoding="utf-8")))
        out.print(f"Wrote {out_dir}: {ambrosia.RECORDS}, metrics.json, manifest.json, report.md, report.html",
                  highlight=False)
        return 0
    sets = Path(args.sets) if args.sets else DEFAULT_SETS
    out_dir = _run_out(args, HARNESS)
    types = args.types.split(",") if args.types else None
    with RichProgress("choices") as bar:
        records, manifest = run_choices_model(sets, config, out_dir, model=model, methods=methods,
                                              k=args.k or 1, judge=judge, simulated_user=args.simulated_user,
                                              second_turn=args.second_turn,
                                              datasets=_path(args.datasets), command=_command(args), types=types,
                                              progress=bar)
    finish(out_dir, records, manifest)
    out.print(Markdown((out_dir / "report.md").read_text(encoding="utf-8")))
    out.print(f"Wrote {out_dir}: {RECORDS}, metrics.json, manifest.json, report.md, report.html", highlight=False)
    return 0


__all__ = ["DEFAULT_METHODS", "METHODS", "analyse", "build_report", "evaluate_set_with_methods", "finish",
           "parse_methods", "replay", "run_choices_model", "run_command"]
