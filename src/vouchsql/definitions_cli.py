"""``vouch definitions draft``: a starting definitions file from the profile
(:mod:`vouchsql.definitions_draft`). Imports only argparse helpers at start-up."""

from __future__ import annotations

from .cli_parsers import FilledOnUse

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable

    from rich.console import Console

    from .settings import Config


def register(sub: argparse._SubParsersAction[Any], common: Callable[[], argparse.ArgumentParser]) -> None:
    def fill(p: argparse.ArgumentParser) -> None:
        actions = p.add_subparsers(dest="definitions_command", metavar="ACTION", required=True,
                                   parser_class=FilledOnUse)
        from .cli_parsers import add_command

        add_command(actions, "draft", common, _draft_args,
                    help="write a starting definitions file from the data: stand-in codes, value lists, keys, comments")
        add_command(actions, "check", common, _check_args,
                    help="run every verified query, metric and filter of a definitions file or semantic model once; "
                         "name those that fail or return nothing, and the fields not read")

    sub.add_parser("definitions", help="definitions files and semantic models: draft one, check one against a database",
                   fill=fill)


def _draft_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="SQLite/DuckDB file, folder of CSV/Parquet files, or database URL")
    p.add_argument("--format", choices=("vouch", "cortex"), default="vouch",
                   help="vouch: Vouch's TOML (the definitions setting reads it); cortex: a Cortex Analyst-style "
                        "semantic model (YAML)")
    p.add_argument("--max-values", type=int, default=None,
                   help="list every value of a text column with at most this many (default 12)")
    p.add_argument("--out", help="write the draft here instead of to standard output (an existing file is kept)")
    p.set_defaults(handler=_run)


def _check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE",
                   help="Vouch definitions (TOML/YAML/JSON), a Cortex Analyst semantic model (YAML), WrenAI MDL "
                        "(JSON), a YAML file of dbt semantic models, or a dbt project folder")
    p.add_argument("--db", required=True, help="SQLite/DuckDB file, folder of CSV/Parquet files, or database URL")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_check)


def _check(args: argparse.Namespace, config: Config, out: Console) -> int:
    from .cli_database import open_database
    from .definitions import load_definitions
    from .definitions_audit import audit

    defs = load_definitions(args.file)
    assert defs is not None  # a file gives definitions or an error
    with open_database(args.db, config) as db:
        entries = audit(defs, db)
    if args.json:
        from .jsonout import dumps

        print(dumps({"file": defs.source, "format": defs.format, "unmapped": list(defs.unmapped),
                     "entries": [e.__dict__ for e in entries]}))
    else:
        print(f"{defs.source} ({defs.format}): {len(defs.definitions)} terms, {len(defs.synonyms)} named columns "
              f"and tables, {len(defs.values)} value lists, {len(defs.verified)} verified queries")
        for e in entries:
            print(f"  {e.status.upper():8} {e.kind} {e.name}: {e.detail}" + (f"  [{e.source}]" if e.source else ""))
        for field in defs.unmapped:
            print(f"  NOT READ {field}")
        if not entries:
            print("nothing to run: the file holds no verified queries, metrics, measures, filters or views")
        else:
            print(summary(entries))
    return 1 if any(not e.ok for e in entries) else 0


def summary(entries: list[Any]) -> str:
    """``15 of 19 ran and returned rows; 2 not run (derived, cumulative); 2 need attention``:
    what was not run is counted apart from what ran."""
    ran = [e for e in entries if e.status == "ok"]
    skipped = [e for e in entries if e.status == "not run"]
    bad = [e for e in entries if not e.ok]
    text = f"{len(ran)} of {len(entries)} ran and returned rows"
    if skipped:
        kinds = sorted({_why_kind(e.detail) for e in skipped})
        text += f"; {len(skipped)} not run ({', '.join(kinds)})"
    return text + (f"; {len(bad)} need{'s' if len(bad) == 1 else ''} attention" if bad else "")


def _why_kind(detail: str) -> str:
    """A few words for why an item was not run, from its reason."""
    for word in ("derived", "cumulative", "conversion", "ratio", "model-level", "base object", "non_additive",
                 "join"):
        if word in detail:
            return word
    return detail.split(":")[0].split(" (")[0][:40]


def _run(args: argparse.Namespace, config: Config, out: Console) -> int:
    import sys
    from pathlib import Path

    from .cli_database import open_database
    from .definitions_draft import MAX_VALUES, draft
    from .errors import UserInputError

    if args.max_values is not None and args.max_values < 1:
        raise UserInputError(f"--max-values must be at least 1, got {args.max_values}")
    if args.out and Path(args.out).exists():
        raise UserInputError(f"{args.out} exists; a draft never replaces a file: give another --out")
    with open_database(args.db, config) as db:
        text = draft(db, args.format, args.max_values or MAX_VALUES)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"Draft written to {args.out}: review it, then use it with --definitions {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
