"""``vouch sets generate``: request sets from seed questions with SQL on any database (the
generator is :mod:`vouchsql.evals.generate_sets`). Imports only argparse helpers at start-up."""

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
        gen_sub = p.add_subparsers(dest="sets_command", metavar="ACTION", required=True, parser_class=FilledOnUse)
        from .cli_parsers import add_command

        add_command(gen_sub, "generate", common, _generate_args,
                    help="write request sets from seeds {id?, db?, question, sql}, by Vouch's choice detectors")

    sub.add_parser("sets", help="build request sets for `vouch eval choices` from your own questions and SQL",
                   fill=fill)


def _generate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="database of the seeds that name none (file, URL, demo, chinook, sakila, northwind)")
    p.add_argument("--seeds", required=True, help='JSONL, one seed a line: {"id"?, "db"?, "question", "sql"}')
    p.add_argument("--out", required=True, help="where to write the request sets (JSONL)")
    p.add_argument("--datasets", help="folder holding chinook/sakila/northwind .sqlite (default: ../shared/datasets)")
    p.add_argument("--model", metavar="PROVIDER:MODEL",
                   help="paraphrase each specific request with a model (kept where the choice stays settled)")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace, config: Config, out: Console) -> int:
    from .evals.generate_sets import run_generate_command

    return run_generate_command(args, config, out)
