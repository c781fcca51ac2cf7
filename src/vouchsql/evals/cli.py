"""The ``vouch eval …`` subcommands. ``register`` adds them to the CLI; each parser sets a
``handler(args, config, console) -> int``. Heavy imports stay inside the handlers.

Every harness writes its run folder (``--out``): the manifest, the JSONL records (rerunning
with the same ``--out`` skips the ids already done), ``metrics.json`` and the reports
(``report.md``, ``report.html``). ``--replay RUN_DIR`` recomputes every number of a stored run
with no SQL and no model call, into ``RUN_DIR/replay`` (or ``--out``), and says whether the
numbers are identical to the stored ones.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from ..errors import UserInputError
from ..rules import CHECK_SETS, RULE_NAMES
from .command import bootstrap as _bootstrap
from .command import command as _command
from .command import path as _path
from .command import positive as _positive
from .command import print_summary as _print_summary
from .command import replay_out as _replay_out
from .command import report_replay as _report_replay
from .command import run_out as _run_out

if TYPE_CHECKING:
    from ..settings import Config


def _bootstrap_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", type=int, default=None, metavar="N",
                   help="bootstrap replicates for the intervals (default 2000)")
    p.add_argument("--seed", type=int, default=None, help="seed of the bootstrap resamples (default 0)")


def _run_options(p: argparse.ArgumentParser, harness: str) -> None:
    p.add_argument("--out", help=f"run folder for records, metrics and reports (default: vouch-eval/{harness}; "
                                 "rerunning with the same folder skips finished items)")
    p.add_argument("--replay", metavar="RUN_DIR",
                   help="recompute every number of a stored run (no SQL, no model call)")
    p.add_argument("--datasets", help="folder holding chinook/sakila/northwind .sqlite (default: ../shared/datasets)")


def register(evals: argparse._SubParsersAction[Any], common: argparse.ArgumentParser) -> None:
    e = evals.add_parser("planted", parents=[common],
                         help="plant errors into correct cases and report what the gate withholds (IES Table 3)")
    e.add_argument("--cases", help="JSONL of correct cases (default: the cases shipped with Vouch)")
    e.add_argument("--out", help="folder for planted.jsonl, metrics.json, manifest.json and the reports")
    e.add_argument("--k", type=int, default=5, help="samples per answer (default 5)")
    e.add_argument("--kinds", help="comma-separated plant kinds (default: all)")
    e.add_argument("--rules", default="agreement_first,designed",
                   help="comma-separated scoring rules to report (default: agreement_first,designed)")
    e.add_argument("--datasets", help="folder holding chinook/sakila/northwind .sqlite (default: ../shared/datasets)")
    e.add_argument("--replay", metavar="RUN_DIR", help="recompute the tables of a stored planted run")
    e.set_defaults(handler=run_planted_command)

    c = evals.add_parser("confidence", parents=[common],
                         help="AUROC, calibration and gate quantities of the scoring rules on labelled answers (IES §4.4)")
    c.add_argument("--input", help="JSONL: {id, db, question, candidates: [sql, …], answer_text?, hint?, gold_sql?, label?}")
    c.add_argument("--rules", default=None, help="comma-separated scoring rules (default: all of "
                                                  + ", ".join(RULE_NAMES) + ")")
    c.add_argument("--model", help="generate the candidates with `vouch ask`'s sampler (provider:model)")
    c.add_argument("--k", type=int, default=5, help="candidates per question with --model (default 5)")
    c.add_argument("--dataset", help="with --model: a Spider/BIRD questions file or folder instead of --input")
    c.add_argument("--split", help="split name in a Spider/BIRD folder (dev, test…)")
    c.add_argument("--db-root", help="folder of <db_id>/<db_id>.sqlite (default: beside the questions)")
    c.add_argument("--paper", choices=("ies",), default=None,
                   help="ies: every rule, the paper's checks, sample 0 shown, the judge's COMPLETE with --model, and "
                        "IES Tables 2, 4, 5, 7, 8, 9 with the H1–H4 verdicts in the report")
    c.add_argument("--check-set", choices=CHECK_SETS, default=None,
                   help="the checks the rules' vetoes and caps read: vouch (every check; default) or paper (IES §3.2 "
                        "only; the default with --paper ies)")
    c.add_argument("--no-judge", action="store_true",
                   help="with --model: no judge calls — COMPLETE then comes from the question–SQL alignment, and no "
                        "claim judge reads the written answer")
    c.add_argument("--splits", type=int, default=None,
                   help="random whole-database splits of the fitted variant (--paper ies; default 20)")
    _bootstrap_options(c)
    _run_options(c, "confidence")
    c.set_defaults(handler=run_confidence_command)

    x = evals.add_parser("exec", parents=[common],
                         help="execution accuracy of predicted SQL, strict (BIRD set equality) and relaxed (IES matching)")
    x.add_argument("--input", help="JSONL predictions: {id, db, question, sql, gold_sql}")
    x.add_argument("--dataset", help="Spider/BIRD questions file or folder (with --predictions or --model)")
    x.add_argument("--split", help="split name in a Spider/BIRD folder (dev, test, train_spider…)")
    x.add_argument("--db-root", help="folder of <db_id>/<db_id>.sqlite (default: database/ or dev_databases/ beside the questions)")
    x.add_argument("--predictions", help="predicted SQL for --dataset: Spider text (one per line) or BIRD JSON")
    x.add_argument("--model", help="predict with `vouch ask` (provider:model) instead of a predictions file")
    _bootstrap_options(x)
    _run_options(x, "exec")
    x.set_defaults(handler=run_exec_command)

    p = evals.add_parser("premise", parents=[common],
                         help="premise critique: Base, Implicit, Explicit (PremiseSQL App. B.1) and Vouch's assess step")
    p.add_argument("--input", help="PremiseSQL-style JSONL (default: the built-in set on the demo database)")
    p.add_argument("--model", help="the model: provider:model, or py:package.module:function for your own")
    p.add_argument("--settings", default=None,
                   help="comma-separated settings (default: base,implicit,explicit,vouch; with --paper the paper's three)")
    p.add_argument("--judges", metavar="P:M,P:M",
                   help="the two judge models that score SQL behaviour, DET and TYPE from each response "
                        "(PremiseSQL §3.5, App. B.2); py:module:function works too")
    p.add_argument("--det-from", choices=("judges", "structured"), default=None,
                   help="judges (the paper's protocol; default) or structured: the fallback that reads DET from "
                        "is_valid (Base: no SQL) and leaves TYPE unmeasured, named as such in the report")
    p.add_argument("--mechanism-judges", metavar="P:M,P:M",
                   help="two judge models that attribute failure mechanisms M01–M04 in strict agreement "
                        "(PremiseSQL §4.4, App. C); needs --judges")
    p.add_argument("--mechanism-sample", type=int, default=None, metavar="N",
                   help="eligible failures attributed, a stratified sample by setting × error category "
                        "(PremiseSQL App. C.3: 250; 0 for every one)")
    p.add_argument("--paper", choices=("premisesql",),
                   help="print the paper's Tables 3 and 4 in its layout (also written to paper_tables.md)")
    p.add_argument("--paper-runs", nargs="+", metavar="RUN_DIR",
                   help="with --paper: print the tables over stored runs, one Table 3 row per run (model) and an "
                        "Aggregate row, Table 4 over all their outputs (no model call)")
    _bootstrap_options(p)
    _run_options(p, "premise")
    p.set_defaults(handler=run_premise_command)

    register_predictions(evals, common)
    register_choices(evals, common)


def register_predictions(evals: argparse._SubParsersAction[Any], common: argparse.ArgumentParser) -> None:
    """``vouch eval predictions``: the IES study on published predictions (evals/predictions.py)."""
    r = evals.add_parser("predictions", parents=[common],
                         help="vouch for published predictions of one or more systems and measure the gate on them "
                              "(AUROC against agreement, confident errors, each check's precision)")
    r.add_argument("--questions", help="questions: Spider/BIRD JSON, or JSONL/CSV {id, question, db, gold_sql?, "
                                       "predictions?: {system: sql}, correct?: {system: bool}}")
    r.add_argument("--predictions", nargs="+", metavar="NAME=FILE", default=[],
                   help="one file per system: Spider text (one SQL a line), BIRD JSON, or JSON/JSONL/CSV by "
                        "question id ({id, sql} or {id, samples: [...]} for K samples)")
    r.add_argument("--gold", help="gold SQL: Spider's dev_gold.sql (SQL<TAB>db_id a line) or JSONL/CSV {id, gold_sql} "
                                  "(default: the questions file's)")
    r.add_argument("--labels", help="given correctness labels: JSONL/CSV {id, system, label} (default: by execution "
                                    "against the gold)")
    r.add_argument("--db-dir", help="folder of <db_id>/<db_id>.sqlite or <db_id>.sqlite")
    r.add_argument("--db", action="append", default=[], metavar="ID=URL",
                   help="the database of one db_id, as a path or URL (repeatable)")
    r.add_argument("--k", type=int, default=5, help="candidates per shown answer, the shown one included (default 5)")
    r.add_argument("--systems", dest="shown_systems", metavar="A,B",
                   help="systems to show (default: every one; samples come from all)")
    r.add_argument("--rules", default=None, help="comma-separated scoring rules (default: agreement_alone, "
                                                  "agreement_first, v3)")
    r.add_argument("--show-gold", action="store_true",
                   help="also show each gold SQL as all K candidates and count what is withheld")
    r.add_argument("--exclude", metavar="FILE",
                   help="JSONL/CSV of question ids to leave out of the figures (e.g. questions whose gold is wrong)")
    r.add_argument("--write-measured", metavar="PATH",
                   help="write the per-alarm precision table the severity rule reads (vouch-measured/1)")
    r.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    r.add_argument("--no-exact-columns", action="store_true",
                   help="judge the answers as `vouch check` does by default, a returned column the question did "
                        "not ask for a signal; without it this command turns exact_columns on, since its labels "
                        "compare the returned columns (the report gives both)")
    _bootstrap_options(r)
    r.add_argument("--out", help="run folder for records, metrics and reports (default: vouch-eval/predictions; "
                                 "rerunning with the same folder skips finished questions)")
    r.add_argument("--replay", metavar="RUN_DIR", help="recompute every number of a stored run (no SQL)")
    r.set_defaults(handler=run_predictions_command)


def register_choices(evals: argparse._SubParsersAction[Any], common: argparse.ArgumentParser) -> None:
    """Add ``vouch eval choices`` to the ``vouch eval`` subparsers."""
    c = evals.add_parser("choices", parents=[common],
                         help="request sets: do the choice detectors find the other interpretation (SpecBridge §2–3)")
    c.add_argument("--sets", help="JSONL of request sets and no-difference cases (default: the sets shipped with Vouch)")
    c.add_argument("--out", help="run folder for choices.jsonl, metrics.json, manifest.json and the reports "
                                 "(default: vouch-eval/choices; rerunning with the same folder skips finished items)")
    c.add_argument("--replay", metavar="RUN_DIR", help="recompute every number of a stored run (no SQL)")
    c.add_argument("--datasets", help="folder holding chinook/sakila/northwind .sqlite (default: ../shared/datasets)")
    c.add_argument("--budget-rows", type=int, default=None, metavar="ROWS",
                   help="rows the detectors may read per request, by the profile (default: Vouch's own, "
                        "8 times what the shown query reads, at least 1,000,000)")
    c.add_argument("--types", help="comma-separated choice types to evaluate (default: all)")
    # SpecBridge's experiment with a model (evals/choices_model.py); without --model/--methods
    # the command is the model-free detector evaluation above, unchanged.
    c.add_argument("--model", metavar="PROVIDER:MODEL", help="answer every request with a model, by --methods")
    c.add_argument("--methods", help="comma-separated: decide_then_answer, decide_then_search, plain, three_samples, "
                                     "decide_then_pick, single_answer, clarifying_question, detectors "
                                     "(default with --model: all but decide_then_search and detectors)")
    c.add_argument("--judge", metavar="PROVIDER:MODEL", help="judge model for 'named' (default: the structured output)")
    c.add_argument("--k", type=int, default=None, help="SQL samples per interpretation for the model methods (default 1)")
    c.add_argument("--simulated-user", action="store_true", help="also run the two-turn experiment (SpecBridge §7.2)")
    c.add_argument("--second-turn", choices=("specific", "clause"), default="specific",
                   help="the simulated user's second answer: the specific request (the paper's; default) or the open "
                        "request with the interpretation's clause (Vouch's phase 2)")
    c.add_argument("--ambrosia", metavar="FILE", help="answer AMBROSIA questions (its CSV, or JSONL) instead of request sets")
    c.add_argument("--ambrosia-split", default="test", help="AMBROSIA split to run (default test; 'all' for every split)")
    c.set_defaults(handler=_run_choices)


def _run_choices(args: argparse.Namespace, config: Config, out: Console) -> int:
    """``vouch eval choices``: the detectors' evaluation (evals/choices_eval.py), or with
    ``--model``/``--methods``/``--ambrosia`` SpecBridge's methods (evals/choices_model.py), or a
    replay of either. The harnesses load sqlglot and numpy: only when the command runs."""
    from rich.markdown import Markdown

    from . import choices_eval as E
    from . import choices_model
    from .progress import RichProgress
    from .runs import read_manifest

    if args.replay:
        out_dir = _replay_out(args)
        harness = read_manifest(Path(args.replay)).get("harness")
        if harness == choices_model.HARNESS:
            return _report_replay(out, args.replay, out_dir, choices_model.replay(Path(args.replay), out_dir))
        if harness == "choices_ambrosia":
            from . import ambrosia
            return _report_replay(out, args.replay, out_dir, ambrosia.replay(Path(args.replay), out_dir))
        return _report_replay(out, args.replay, out_dir, E.replay(Path(args.replay), out_dir))
    if getattr(args, "model", None) or getattr(args, "methods", None) or getattr(args, "ambrosia", None):
        return choices_model.run_command(args, config, out)
    sets = Path(args.sets) if args.sets else E.DEFAULT_SETS
    out_dir = _run_out(args, E.HARNESS)
    types = args.types.split(",") if args.types else None
    with RichProgress("choices") as bar:
        records, manifest = E.run_choices(sets, config, out_dir, datasets=_path(args.datasets),
                                          command=_command(args), budget_rows=args.budget_rows, types=types,
                                          progress=bar)
    E.finish(out_dir, records, manifest)
    out.print(Markdown((out_dir / "report.md").read_text(encoding="utf-8")))
    out.print(f"Wrote {out_dir}: {E.RECORDS}, metrics.json, manifest.json, report.md, report.html", highlight=False)
    return 0


# ---------------------------------------------------------------------------------------
# planted
# ---------------------------------------------------------------------------------------
def run_planted_command(args: argparse.Namespace, config: Config, out: Console) -> int:
    from rich.markdown import Markdown

    from .planted import replay_planted, report_markdown, run_planted, summarise, write_outputs
    from .progress import RichProgress

    if args.replay:
        out_dir = _replay_out(args)
        summary = replay_planted(Path(args.replay), out_dir)
        return _report_replay(out, args.replay, out_dir, summary)
    _positive(args.k, "--k")
    cases = Path(args.cases) if args.cases else Path(__file__).parents[1] / "data" / "planted_cases.jsonl"
    kinds = [k.strip() for k in args.kinds.split(",")] if args.kinds else None
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    datasets = _path(args.datasets)
    with RichProgress("planting") as bar:
        records, skipped = run_planted(cases, config, k=args.k, kinds=kinds, rules=rules, datasets=datasets,
                                       progress=lambda cid: bar.advance(cid))
    summary = summarise(records)
    command = _command(args)
    report = report_markdown(summary, skipped, command)
    if args.out:
        write_outputs(Path(args.out), records, summary, skipped=skipped, command=command, cases=cases,
                      parameters={"k": args.k, "kinds": kinds, "rules": rules}, config=config, datasets=datasets)
    out.print(Markdown(report))
    if args.out:
        out.print(f"Wrote {args.out}/planted.jsonl, metrics.json, manifest.json, report.md and report.html")
    return 0


# ---------------------------------------------------------------------------------------
# confidence
# ---------------------------------------------------------------------------------------
def run_confidence_command(args: argparse.Namespace, config: Config, out: Console) -> int:
    from . import confidence as C
    from .progress import RichProgress

    _positive(args.bootstrap, "--bootstrap")
    if args.splits is not None:
        _positive(args.splits, "--splits")
    paper = args.paper
    check_set = args.check_set or ("paper" if paper == "ies" else None)
    rules = C.parse_rules(args.rules) if args.rules else None
    if paper == "ies" and rules and set(rules) != set(C.DEFAULT_RULES):
        raise UserInputError("--paper ies reports every rule: leave out --rules")
    if args.replay:
        out_dir = _replay_out(args)
        _, metrics = C.replay(Path(args.replay), out_dir, rules=rules, replicates=args.bootstrap, seed=args.seed,
                              check_set=check_set, paper=paper)
        if paper:
            # The paper's tables, as the live run prints them, recomputed from the records.
            from rich.markdown import Markdown

            out.print(Markdown((out_dir / "report.md").read_text(encoding="utf-8")))
        return _report_replay(out, args.replay, out_dir, metrics)
    if not args.input and not args.dataset:
        raise UserInputError("give --input FILE.jsonl, --dataset SPIDER_OR_BIRD with --model, or --replay RUN_DIR")
    _positive(args.k, "--k")
    rules = rules or list(C.DEFAULT_RULES)
    replicates, seed = _bootstrap(args)
    if args.model:
        # The judge measures COMPLETE on --model runs unless told not to (IES §3.2); the paper
        # scores sample 0 (§3.1) unless --shown (or VOUCH_SHOWN / vouch.toml) says otherwise.
        overrides: dict[str, Any] = {"judge_complete": not args.no_judge, "judge_claims": not args.no_judge}
        if paper == "ies" and args.shown is None and "shown" not in config.sources:
            overrides["shown"] = "first"
        config = config.with_overrides(**overrides)
    out_dir = _run_out(args, "confidence")
    with RichProgress("checking") as bar:
        records, manifest = C.run_confidence(
            _path(args.input), config, out_dir, datasets=_path(args.datasets), command=_command(args),
            parameters={"rules": rules, "bootstrap": replicates, "seed": seed, "paper": paper,
                        "splits": args.splits or 20},
            progress=bar, model=args.model, k=args.k, check_set=check_set or "vouch", dataset=_path(args.dataset),
            split=args.split, db_root=_path(args.db_root))
    _, report = C.finish(out_dir, records, manifest, rules, replicates=replicates, seed=seed)
    _print_summary(out, report, out_dir, "confidence.jsonl, metrics.json, curves.json, report.md, report.html, figures/")
    return 0


# ---------------------------------------------------------------------------------------
# predictions
# ---------------------------------------------------------------------------------------
def _pairs(values: list[str], option: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        name, sep, rest = v.partition("=")
        if not sep or not name.strip() or not rest.strip():
            raise UserInputError(f"{option} {v!r}: write NAME=VALUE")
        out.append((name.strip(), rest.strip()))
    return out


def _labels_contract(args: argparse.Namespace, config: Config) -> Config:
    """``exact_columns`` for a predictions run: on unless asked otherwise. Its labels are
    execution matches, which compare the returned columns, so an extra column is what they call
    wrong; a setting given in vouch.toml or VOUCH_EXACT_COLUMNS stands."""
    if args.no_exact_columns:
        if args.exact_columns:
            raise UserInputError("give --exact-columns or --no-exact-columns, not both")
        return config.with_overrides(exact_columns=False)
    if args.exact_columns is None and "exact_columns" not in config.sources:
        return config.with_overrides(exact_columns=True)
    return config


def run_predictions_command(args: argparse.Namespace, config: Config, out: Console) -> int:
    from . import predictions as P
    from .confidence import parse_rules
    from .progress import RichProgress
    from .runs import write_json

    _positive(args.bootstrap, "--bootstrap")
    _positive(args.jobs, "--jobs")
    rules = parse_rules(args.rules, P.DEFAULT_RULES) if args.rules else None
    exclude = P.read_ids(Path(args.exclude)) if args.exclude else None
    if args.replay:
        out_dir = _replay_out(args)
        manifest, metrics = P.replay(Path(args.replay), out_dir, replicates=args.bootstrap, seed=args.seed,
                                     rules=rules, exclude=exclude)
        code = _report_replay(out, args.replay, out_dir, metrics)
    else:
        if not args.questions:
            raise UserInputError("give --questions FILE (with --predictions NAME=FILE … unless the file holds them), "
                                 "or --replay RUN_DIR")
        _positive(args.k, "--k")
        rules = rules or list(P.DEFAULT_RULES)
        replicates, seed = _bootstrap(args)
        preds = [(n, Path(f)) for n, f in _pairs(args.predictions, "--predictions")]
        questions = P.load_inputs(Path(args.questions), preds, gold=_path(args.gold), labels=_path(args.labels))
        databases = P.resolve_databases(questions, _path(args.db_dir), dict(_pairs(args.db, "--db")))
        files = {"questions": Path(args.questions), **{f"predictions:{n}": p for n, p in preds}}
        for name, value in (("gold", args.gold), ("labels", args.labels), ("exclude", args.exclude)):
            if value:
                files[name] = Path(value)
        shown = [s.strip() for s in args.shown_systems.split(",") if s.strip()] if args.shown_systems else None
        out_dir = _run_out(args, "predictions")
        config = _labels_contract(args, config)
        with RichProgress("vouching") as bar:
            records, manifest = P.run_predictions(
                questions, config, out_dir, databases=databases, k=args.k, shown=shown, show_gold=args.show_gold,
                jobs=args.jobs, command=_command(args), files=files, progress=bar,
                parameters={"rules": rules, "bootstrap": replicates, "seed": seed, "exclude": exclude or []})
        metrics, report = P.finish(out_dir, records, manifest, rules=rules, replicates=replicates, seed=seed)
        _print_summary(out, report, out_dir, "predictions.jsonl, metrics.json, curves.json, report.md, report.html, "
                                             "figures/")
        code = 0
    if args.write_measured:
        params = manifest.get("parameters", {})
        questions_file = Path(manifest.get("datasets", {}).get("questions", {}).get("path", "the questions")).name
        data = (f"{questions_file}: each of {len(params.get('systems') or [])} systems shown in turn with K = "
                f"{params.get('k')} candidates; labels: {metrics['labels']['given']} given, "
                f"{metrics['labels']['execution']} by execution")
        # the command that made the records, and this one where it only replayed them
        made_by = manifest.get("command", "")
        made_by = f"{made_by}; then {_command(args)}" if args.replay else _command(args)
        write_json(Path(args.write_measured), P.measured_table(metrics, made_by, data))
        out.print(f"Wrote the per-alarm precision table to {args.write_measured}", highlight=False)
    return code


# ---------------------------------------------------------------------------------------
# exec
# ---------------------------------------------------------------------------------------
def run_exec_command(args: argparse.Namespace, config: Config, out: Console) -> int:
    from . import execution as X
    from .progress import RichProgress

    _positive(args.bootstrap, "--bootstrap")
    if args.replay:
        out_dir = _replay_out(args)
        _, metrics = X.replay(Path(args.replay), out_dir, replicates=args.bootstrap, seed=args.seed)
        return _report_replay(out, args.replay, out_dir, metrics)
    if bool(args.input) == bool(args.dataset):
        raise UserInputError("give either --input PREDICTIONS.jsonl or --dataset (Spider/BIRD) with --predictions or --model")
    if args.dataset and not (args.predictions or args.model):
        raise UserInputError("--dataset needs --predictions FILE or --model")
    replicates, seed = _bootstrap(args)
    out_dir = _run_out(args, "exec")
    with RichProgress("executing") as bar:
        records, manifest = X.run_exec(
            config, out_dir, input_path=_path(args.input), dataset=_path(args.dataset), split=args.split,
            db_root=_path(args.db_root), predictions=_path(args.predictions), model=args.model,
            datasets=_path(args.datasets), command=_command(args),
            parameters={"bootstrap": replicates, "seed": seed}, progress=bar)
    _, report = X.finish(out_dir, records, manifest)
    _print_summary(out, report, out_dir, "exec.jsonl, metrics.json, report.md, report.html")
    return 0


# ---------------------------------------------------------------------------------------
# premise
# ---------------------------------------------------------------------------------------
def _judge_list(value: str | None, option: str) -> list[str]:
    if not value:
        return []
    specs = [v.strip() for v in value.split(",") if v.strip()]
    if len(specs) != 2:
        raise UserInputError(f"{option} takes two judge models, PROVIDER:MODEL,PROVIDER:MODEL (got {len(specs)})")
    return specs


def run_premise_command(args: argparse.Namespace, config: Config, out: Console) -> int:
    from . import premise as P
    from .progress import RichProgress

    _positive(args.bootstrap, "--bootstrap")
    settings = P.parse_settings(args.settings) if args.settings else None
    if args.paper_runs:
        from .premise_paper import render_runs

        if not args.paper:
            raise UserInputError("--paper-runs prints a paper's tables: give --paper premisesql")
        if args.replay or args.model:
            raise UserInputError("--paper-runs reads stored runs: give it without --model or --replay")
        text = render_runs(args.paper, [Path(d) for d in args.paper_runs])
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / "paper_tables.md").write_text(text, encoding="utf-8")
        out.print(text, markup=False, highlight=False, soft_wrap=True)
        return 0
    if args.replay:
        out_dir = _replay_out(args)
        manifest, metrics = P.replay(Path(args.replay), out_dir, settings=settings, replicates=args.bootstrap,
                                     seed=args.seed)
        code = _report_replay(out, args.replay, out_dir, metrics)
        if args.paper:
            _print_paper(out, args.paper, metrics, manifest.get("model") or "model", out_dir)
        return code
    if not args.model:
        raise UserInputError("vouch eval premise needs a model: --model provider:model (or py:module:function); "
                             "--replay RUN_DIR recomputes a stored run without one")
    from .model import resolve_model

    model = resolve_model(args.model)
    judges = _judge_list(args.judges, "--judges")
    mechanism_judges = _judge_list(args.mechanism_judges, "--mechanism-judges")
    det_from = args.det_from or ("judges" if judges else None)
    if det_from is None:
        raise UserInputError("DET and TYPE are judged from the response by two judge models (PremiseSQL §3.5, "
                             "App. B.2): give --judges PROVIDER:MODEL,PROVIDER:MODEL, or --det-from structured "
                             "for the structured-output reading")
    if det_from == "structured" and mechanism_judges:
        raise UserInputError("--mechanism-judges rests on the judges' labels (App. C.2): use --judges, "
                             "not --det-from structured")
    settings = settings or list(P.PAPER_SETTINGS if args.paper else P.SETTINGS)
    replicates, seed = _bootstrap(args)
    if args.paper and not args.bootstrap:
        replicates = PREMISESQL_REPLICATES  # App. B.8
    out_dir = _run_out(args, "premise")
    with RichProgress("asking") as bar:
        records, manifest = P.run_premise(
            _path(args.input) or P.BUILTIN, config, out_dir, model=model, model_name=args.model, settings=settings,
            datasets=_path(args.datasets), command=_command(args),
            parameters={"settings": settings, "bootstrap": replicates, "seed": seed}, progress=bar,
            judges=[resolve_model(j) for j in judges], judge_names=judges,
            mechanism_judges=[resolve_model(j) for j in mechanism_judges], mechanism_judge_names=mechanism_judges,
            det_from=det_from, mechanism_sample=args.mechanism_sample)
    metrics, report = P.finish(out_dir, records, manifest, settings, replicates=replicates, seed=seed)
    _print_summary(out, report, out_dir, "premise.jsonl, metrics.json, report.md, report.html")
    if args.paper:
        _print_paper(out, args.paper, metrics, args.model, out_dir)
    return 0


PREMISESQL_REPLICATES = 10_000


def _print_paper(out: Console, paper: str, metrics: dict[str, Any], model: str, out_dir: Path) -> None:
    from .premise_paper import render

    text = render(paper, metrics, model)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "paper_tables.md").write_text(text, encoding="utf-8")
    # Plain text, not Markdown: the tables are printed exactly as written to paper_tables.md.
    out.print(text, markup=False, highlight=False, soft_wrap=True)
