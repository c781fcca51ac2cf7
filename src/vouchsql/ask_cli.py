"""``vouch ask`` and ``vouch prompts``. ``register(sub, common)`` adds both commands to the CLI;
each parser sets ``handler(args, config, console) -> int``. The model SDKs are imported only
when a question is asked.

``--base-url``, ``--definitions``, ``--max-retries``, ``--model-timeout`` and the other model
settings come with ``common`` (the settings table); ``--model`` is ask's own option, because
``serve`` and ``demo`` already define one (default: ``VOUCH_MODEL``).
"""

from __future__ import annotations

from .cli_parsers import add_command
from .errors import UserInputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable

    from rich.console import Console
    from rich.status import Status

    from .settings import Config

# Each sample is a model call, per interpretation: a K beyond this is a typo, not a plan, and
# would queue calls without end rather than fail.
MAX_SAMPLES = 100


def register(sub: argparse._SubParsersAction[Any],
             common: argparse.ArgumentParser | Callable[[], argparse.ArgumentParser]) -> None:
    """``common``: the settings parser, or a function that returns it (then the arguments are
    added when the command is used, see :mod:`vouchsql.cli_parsers`)."""
    add_command(sub, "ask", common, _ask_args, help="answer a question with a model, and vouch for the answer",
                description="Assess the question's premise, list the interpretations of an open choice, "
                            "sample K SQL answers to each, run them read-only, vouch with the checks of "
                            "`vouch check`, and write a short answer whose numbers come from the result.")
    q = sub.add_parser("prompts", help="list the prompts Vouch sends to models, with their content hashes")
    q.add_argument("--show", metavar="NAME", help="print one prompt's text")
    q.add_argument("--json", action="store_true", help="print the list as JSON")
    q.set_defaults(handler=run_prompts)


def _ask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="SQLite/DuckDB file, folder of CSV/Parquet files, or database URL")
    p.add_argument("question", help="the question, in plain words")
    p.add_argument("--model", default=None, metavar="PROVIDER:MODEL",
                   help="openai:MODEL (any OpenAI-compatible endpoint with --base-url), anthropic:MODEL, or "
                        "replay:CASSETTE (default: VOUCH_MODEL)")
    p.add_argument("--k", type=int, default=None, metavar="K",
                   help="SQL samples per interpretation (default: the samples setting, 5)")
    p.add_argument("--pick", type=int, default=None, metavar="N",
                   help="phase 2: answer the request plus the clause of interpretation N (1 = the first listed)")
    p.add_argument("--hint", help="evidence given with the question (its numbers are not checked)")
    p.add_argument("--no-prose", action="store_true",
                   help="write the answer from a template (the default; kept for older scripts)")
    p.add_argument("--prose", action="store_true",
                   help="have the model write the answer text: one more call per interpretation (default: a "
                        "template over the result, no call)")
    p.add_argument("--record", metavar="PATH", help="record every model request and reply to this cassette "
                                                    "(replay it with --model replay:PATH)")
    p.add_argument("--all-checks", action="store_true", help="list every check, not only those that fired")
    p.add_argument("--json", action="store_true", help="print the Answer as JSON (see schemas/answer.schema.json)")
    p.set_defaults(handler=run_ask)


def run_ask(args: argparse.Namespace, config: Config, out: Console) -> int:
    from .api import ask, refine
    from rich.console import Console
    from rich.text import Text

    from .cli_database import open_database
    from .jsonout import dumps
    from .render import print_ask_answer

    if args.k is not None and args.k < 1:
        raise UserInputError("--k must be at least 1")
    k = args.k if args.k is not None else config.samples
    if k > MAX_SAMPLES:
        raise UserInputError(f"--k (or the samples setting) is {k}; Vouch draws at most {MAX_SAMPLES} "
                             f"SQL samples per interpretation")
    if args.pick is not None and args.pick < 1:
        raise UserInputError("--pick counts from 1 (the first interpretation listed)")
    err = Console(stderr=True)
    options = dict(model=args.model, k=args.k, hint=args.hint, no_prose=args.no_prose, prose=args.prose,
                   record=args.record)
    with open_database(args.db, config) as db, _spinner(err) as progress:
        answer = ask(db, args.question, progress=progress, **options)
        if args.pick is not None:
            if len(answer.interpretations) < 2:
                if answer.premise is not None and not answer.premise.is_valid:
                    raise UserInputError("--pick: the question was not answered (its premise is flawed), so there "
                                         "is nothing to pick from")
                raise UserInputError("--pick: the question leaves no choice open; it has one interpretation")
            answer = refine(answer, args.pick, db=db, progress=progress, **options)
    if args.json:
        print(dumps(answer.model_dump(mode="json")))
        return 0
    print_ask_answer(out, answer, show_all_checks=args.all_checks)
    if len(answer.interpretations) > 1 and args.pick is None:
        import shlex  # only here: every other command (and `vouch --help`) starts without it

        argv = [a for a in getattr(args, "argv", []) if a]
        again = "vouch " + shlex.join(argv) + " --pick N" if argv else "vouch ask … --pick N"
        out.print(Text(f"\nTo answer one interpretation: {again}", style="dim"), highlight=False)
    return 0  # the gate is data, not an error


class _spinner:
    """A spinner on stderr naming the stage while model calls run (only on a terminal)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.status: Status | None = None

    def __enter__(self) -> Callable[[str], None]:
        if self.console.is_terminal:
            self.status = self.console.status("starting…", spinner="dots")
            self.status.__enter__()
        return self.update

    def update(self, stage: str) -> None:
        if self.status is not None:
            self.status.update(f"{stage}…")

    def __exit__(self, *exc: Any) -> None:
        if self.status is not None:
            self.status.__exit__(*exc)


def run_prompts(args: argparse.Namespace, config: Config, out: Console) -> int:
    from rich.table import Table
    from rich.text import Text

    from .jsonout import dumps
    from .llm.prompts import PROMPT_NAMES, list_prompts, load_prompt

    if args.show:
        if args.show not in PROMPT_NAMES:
            raise UserInputError(f"no prompt named {args.show!r}; prompts: {', '.join(PROMPT_NAMES)}")
        print(load_prompt(args.show).text, end="")
        return 0
    prompts = list_prompts()
    if args.json:
        print(dumps([{"name": p.name, "hash": p.hash, "title": p.title, "slots": p.slots, "chars": len(p.text),
                      "path": p.path} for p in prompts]))
        return 0
    table = Table(title="Prompts (each Answer's usage.prompts records the hashes it used)", title_justify="left")
    for col in ("name", "hash", "chars", "what it asks"):
        table.add_column(col, overflow="fold")
    for p in prompts:
        table.add_row(p.name, p.hash, f"{len(p.text):,}", p.title.split("—", 1)[-1].strip())
    out.print(table)
    out.print(Text(f"Show one: vouch prompts --show NAME   (files: {prompts[0].path.rsplit('/', 1)[0]})",
                   style="dim"), highlight=False)
    return 0
