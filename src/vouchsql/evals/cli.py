"""The ``vouch eval …`` subcommands. ``register`` adds them to the CLI; each parser sets a
``handler(args, config, console) -> int``. Heavy imports stay inside the handlers."""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.console import Console

from ..errors import UserInputError


def register(evals, common) -> None:
    e = evals.add_parser("planted", parents=[common],
                         help="plant errors into correct cases and report what the gate withholds (IES Table 3)")
    e.add_argument("--cases", help="JSONL of correct cases (default: the cases shipped with Vouch)")
    e.add_argument("--out", help="folder for planted.jsonl, metrics.json and report.md")
    e.add_argument("--k", type=int, default=5, help="samples per answer (default 5)")
    e.add_argument("--kinds", help="comma-separated plant kinds (default: all)")
    e.add_argument("--rules", default="agreement_first,designed",
                   help="comma-separated scoring rules to report (default: agreement_first,designed)")
    e.add_argument("--datasets", help="folder holding chinook/sakila/northwind .sqlite (default: ../shared/datasets)")
    e.set_defaults(handler=run_planted_command)


def run_planted_command(args, config, out: Console) -> int:
    from rich.markdown import Markdown
    from rich.progress import Progress

    from .planted import report_markdown, run_planted, summarise, write_outputs

    if args.k < 1:
        raise UserInputError("--k must be at least 1")
    cases = Path(args.cases) if args.cases else Path(__file__).parents[1] / "data" / "planted_cases.jsonl"
    kinds = [k.strip() for k in args.kinds.split(",")] if args.kinds else None
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("planting", total=None)
        records, skipped = run_planted(cases, config, k=args.k, kinds=kinds, rules=rules,
                                       datasets=Path(args.datasets) if args.datasets else None,
                                       progress=lambda cid: bar.update(task, advance=1, description=cid))
    summary = summarise(records)
    report = report_markdown(summary, skipped, "vouch " + shlex.join(args.argv))
    if args.out:
        write_outputs(Path(args.out), records, summary, report)
    out.print(Markdown(report))
    if args.out:
        out.print(f"Wrote {args.out}/planted.jsonl, metrics.json and report.md")
    return 0
