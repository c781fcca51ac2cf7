"""What every ``vouch eval`` command shares: its command line as recorded, the run and
replay folders, the bootstrap's replicates and seed, and how a replay and a summary are
printed. Imported by :mod:`.cli` and by the harnesses' own command functions; imports none
of them."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from ..errors import UserInputError

if TYPE_CHECKING:
    from .report import Report


def command(args: argparse.Namespace) -> str:
    return "vouch " + shlex.join(getattr(args, "argv", []) or [])


def positive(value: int | None, name: str) -> None:
    if value is not None and value < 1:
        raise UserInputError(f"{name} must be at least 1")


def replay_out(args: argparse.Namespace) -> Path:
    return Path(args.out) if args.out else Path(args.replay) / "replay"


def run_out(args: argparse.Namespace, harness: str) -> Path:
    from .runs import default_out

    return Path(args.out) if args.out else default_out(harness)


def path(value: str | None) -> Path | None:
    return Path(value) if value else None


def bootstrap(args: argparse.Namespace) -> tuple[int, int]:
    """The replicates and seed of a new run (a replay takes them from its manifest)."""
    from .metrics import DEFAULT_REPLICATES, DEFAULT_SEED

    return args.bootstrap or DEFAULT_REPLICATES, DEFAULT_SEED if args.seed is None else args.seed


def report_replay(out: Console, run_dir: str, out_dir: Path, metrics: dict[str, Any]) -> int:
    """Compare the recomputed numbers with the stored ones; write replay.json."""
    import json

    from .runs import compare_metrics, write_json

    stored_path = Path(run_dir) / "metrics.json"
    stored = json.loads(stored_path.read_text(encoding="utf-8")) if stored_path.is_file() else None
    diffs = compare_metrics(metrics, stored) if stored is not None else ["no stored metrics.json to compare"]
    write_json(out_dir / "replay.json", {"replay_of": str(run_dir), "identical": not diffs, "differences": diffs})
    if not diffs:
        out.print(f"Replayed {run_dir}: every number identical to the stored metrics.json "
                  f"(written to {out_dir}).", highlight=False)
    else:
        out.print(f"Replayed {run_dir} into {out_dir}; {len(diffs)} difference(s) from the stored metrics.json:",
                  highlight=False)
        for d in diffs[:20]:
            out.print(f"  {d}", highlight=False, markup=False)
    return 0


def print_summary(out: Console, report: Report, out_dir: Path, files: str) -> None:
    from rich.markdown import Markdown

    from .report import render_markdown

    out.print(Markdown(render_markdown(report, console=True)))
    out.print(f"Wrote {out_dir}: {files}", highlight=False)
