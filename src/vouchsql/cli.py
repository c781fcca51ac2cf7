"""The ``vouch`` command: a thin layer over the library API. ``main(argv) -> int``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from . import __version__
from .errors import SQLRejected, UserInputError, VouchError
from . import ask_cli, definitions_cli, sets_cli
from .cli_database import open_database
from .cli_parsers import FilledOnUse, add_command
from .server import cli as server_cli
from .mcp_server import cli as mcp_cli

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

    from rich.console import Console

    from .contract import CheckFields
    from .settings import Config

    Command = Callable[[argparse.Namespace, Config, "_LazyConsole"], int]

# rich (~80 ms to import), the settings table, the evaluation harnesses and the library are
# imported by the commands that use them: `vouch --help` loads none of them, `vouch check
# --json` never loads rich (bench/startup.py measures it).

# Refused before it runs (the gate, the engine policy, a value certainly over the byte bound):
# the SQL is the user's to change, exit 2 like any bad input.
_REJECTED_KINDS = {"rejected", "empty", "parse", "multiple_statements", "not_select", "bad_input", "forbidden",
                   "too_large"}


# The settings each command's --help shows (settings.Setting.scope); the others are accepted
# all the same (one vouch.toml and one set of VOUCH_* variables serve every command), and
# `vouch config` lists every one with its value and where it came from.
_QUERIES = ("engine",)
_PROFILES = ("engine", "profile")
_CHECKS = ("engine", "profile", "vouch")
_ALL = ("engine", "profile", "vouch", "model")


def _settings_parent(scopes: tuple[str, ...] = _ALL) -> argparse.ArgumentParser:
    from .settings import SETTINGS

    parent = argparse.ArgumentParser(add_help=False)
    hidden = len(scopes) < len(_ALL)
    title = "settings (also VOUCH_* environment variables and vouch.toml"
    group = parent.add_argument_group(title + ("; `vouch config` lists the others this command accepts)" if hidden
                                               else ")"))
    for s in SETTINGS:
        text = s.help if s.scope in scopes else argparse.SUPPRESS
        if s.default is False:
            group.add_argument(s.option, dest=s.name, action="store_const", const=True, default=None, help=text)
        else:
            group.add_argument(s.option, dest=s.name, default=None, metavar=s.name.upper(), help=text)
    return parent


def _settings(scopes: tuple[str, ...]) -> Callable[[], argparse.ArgumentParser]:
    return lambda: _settings_parent(scopes)


def _once(make: Callable[[], argparse.ArgumentParser]) -> Callable[[], argparse.ArgumentParser]:
    made: list[argparse.ArgumentParser] = []

    def get() -> argparse.ArgumentParser:
        if not made:
            made.append(make())
        return made[0]
    return get


def build_parser() -> argparse.ArgumentParser:
    """The whole CLI. Each command's arguments (and the settings options every command
    shares) are added when that command is used: ``vouch --help`` builds none of them."""
    parser = argparse.ArgumentParser(
        prog="vouch", description="Answer questions over SQL databases, and vouch for each answer only as far as the evidence allows.")
    parser.add_argument("--version", action="version", version=f"vouchsql {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=FilledOnUse)
    common = _once(_settings_parent)

    add_command(sub, "demo", _settings(_CHECKS), _demo_args, help="build the demo database and run example checks on it")
    add_command(sub, "profile", _settings(_PROFILES), _profile_args, help="profile a database's schema and data")
    add_command(sub, "sql", _settings(_QUERIES), _sql_args, help="run one read-only SELECT and print its result")
    add_command(sub, "check", _settings(_CHECKS), _check_args, help="vouch for SQL answers to a question, without a model")
    sub.add_parser("eval", help="evaluation harnesses", fill=_eval_harnesses(common))
    server_cli.register(sub, common)
    mcp_cli.register(sub, common)
    ask_cli.register(sub, common)
    sets_cli.register(sub, common)
    definitions_cli.register(sub, _settings(_CHECKS))
    add_command(sub, "doctor", _settings(_QUERIES), _doctor_args,
                help="what the database's role can reach, and the statements that make a least-privilege reader")
    add_command(sub, "config", common, _config_args, help="show the settings in effect and where each came from")
    return parser


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="where to write the demo database (default: the cache folder)")
    p.add_argument("--seed", type=int, default=None, help="seed of the generated data")
    p.add_argument("--no-examples", action="store_true", help="only build the database")
    p.add_argument("--force", action="store_true",
                   help="replace the file at --out even when it is not a Vouch demo database")
    server_cli.add_demo_options(p)


def _profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="SQLite/DuckDB file, folder of CSV/Parquet files, or database URL")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.add_argument("--refresh", action="store_true", help="ignore the cached profile")


def _sql_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="SQLite/DuckDB file, folder of CSV/Parquet files, or database URL")
    p.add_argument("query", help="one SELECT statement")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the result as JSON")
    fmt.add_argument("--csv", action="store_true", help="print the result as CSV")


def _check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="SQLite/DuckDB file, folder of CSV/Parquet files, or database URL")
    p.add_argument("--question", "-q", required=True, help="the question the SQL answers")
    p.add_argument("--sql", action="append", required=True, metavar="SQL",
                   help="a candidate answer; the first is the one checked, the others are samples for agreement")
    p.add_argument("--answer-text", help="the written answer whose numbers must come from the result")
    p.add_argument("--hint", help="evidence or hint given with the question (its numbers are not checked)")
    p.add_argument("--all-choices", action="store_true", help="also show choices whose answer does not differ or that the wording settles")
    p.add_argument("--judged-parts", metavar="JSON",
                   help='the question\'s parts and whether the first --sql covers each, as a judge of your own '
                        'listed them: [["part", true], ...]')
    p.add_argument("--judged-claims", metavar="JSON",
                   help='claims of --answer-text its result does not support, each with whether it is about the '
                        'answer: [["claim", true], ...]')
    p.add_argument("--all-checks", action="store_true", help="list every check, not only those that fired")
    p.add_argument("--json", action="store_true", help="print the Answer as JSON (see schemas/answer.schema.json)")


def _eval_harnesses(common: Callable[[], argparse.ArgumentParser]) -> Callable[[argparse.ArgumentParser], None]:
    def fill(p: argparse.ArgumentParser) -> None:
        from .evals import cli as evals_cli

        evals_cli.register(p.add_subparsers(dest="eval_command", metavar="HARNESS", required=True), common())
    return fill


def _doctor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="database URL (PostgreSQL or MariaDB/MySQL) or file")
    p.add_argument("--reader", default="vouch_reader", help="name of the reader role the statements create")
    p.add_argument("--sql-only", action="store_true", help="print only the statements (to pipe into psql or mariadb)")


def _config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print the settings table as Markdown")


def _config_from(args: argparse.Namespace) -> Config:
    from .settings import SETTINGS, load_config

    return load_config(**{s.name: getattr(args, s.name, None) for s in SETTINGS})


def main(argv: list[str] | None = None, *, process: bool = False) -> int:
    """``process``: the process ends with this command (the ``vouch`` executable); see :func:`run`."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed a usage line
        return int(exc.code or 0)
    if not args.command:
        parser.print_help()
        return 2
    if process and args.command in _ONE_REQUEST:
        import gc

        # One request and the process ends: a collection after the check would only rescan
        # the catalogue it built (0.4 s on 20,000 tables), and what one check leaves behind
        # is freed with the process. Commands that go through many requests keep collecting.
        gc.disable()
        # pydantic looks for plugins (an entry-point scan of every installed distribution,
        # ~10 ms of `vouch check`) before its first model: plugins observe validation, and
        # in this process only Vouch's own models are validated. A value the user set stands.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    args.argv = list(sys.argv[1:] if argv is None else argv)
    out = _LazyConsole()
    err = _LazyConsole(stderr=True, soft_wrap=True)  # errors stay one line
    try:
        _require_utf8(args)
        config = _config_from(args)
        if config.definitions and args.command != "config":  # `vouch config` still shows the setting
            from .definitions import load_definitions

            load_definitions(config.definitions)  # a file that cannot be read is exit 2, not ignored
        handler = getattr(args, "handler", None)
        if handler is not None:  # another module's command: it gets rich's Console itself
            code: int = handler(args, config, out.resolve())
            return code
        return _COMMANDS[args.command](args, config, out)
    except VouchError as exc:
        _print_error(err, exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (`vouch profile --json | head`): stop quietly, as other tools do.
        # Python would report the pipe again when it flushes stdout at exit: point it at devnull.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if TYPE_CHECKING:
    _ConsoleLike = Console  # to the type checker a _LazyConsole is the Console it hands every attribute to
else:
    _ConsoleLike = object


class _LazyConsole(_ConsoleLike):
    """rich's Console, made on first use (``--json`` output never needs one). Without
    options it is the standard output's, 160 columns wide when piped."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def resolve(self) -> "Console":
        if self._console is None:
            from rich.console import Console

            console = Console(**self._options)
            if not self._options and not console.is_terminal:  # piped: wide tables, not 80-column folding
                console = Console(width=160)
            self._console = console
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.resolve(), name)


# Arguments that are text for the database or a model; paths may hold any bytes the system allows.
_TEXT_ARGS = ("query", "sql", "question", "hint", "answer_text")


def _require_utf8(args: argparse.Namespace) -> None:
    """A shell hands bytes that are not UTF-8 to Python as lone surrogates, which no driver,
    model or JSON output can carry: name the argument instead of failing later."""
    for name in _TEXT_ARGS:
        values = getattr(args, name, None)
        for i, value in enumerate(values if isinstance(values, list) else [values], 1):
            try:
                (value or "").encode("utf-8")
            except UnicodeEncodeError as exc:
                which = f"--{name.replace('_', '-')}" + (f" number {i}" if isinstance(values, list) else "")
                raise UserInputError(f"{which} is not valid UTF-8 text (character {exc.start + 1} is an "
                                     f"undecodable byte); give it as UTF-8") from None


def _print_error(console: "Console | _LazyConsole", message: str) -> None:
    from rich.text import Text

    # Messages hold literal brackets (pip install 'vouchsql[postgres]'): never parse them as markup.
    console.print(Text("error: ", style="bold red") + Text(message), highlight=False)


def _cmd_profile(args: argparse.Namespace, config: Config, out: _LazyConsole) -> int:
    from .db.profile import profile_json

    with open_database(args.db, config) as db, _table_progress() as progress:
        profile = db.profile(refresh=args.refresh, progress=progress)
    if args.json:
        print(profile_json(profile))
    else:
        from .render import print_profile

        print_profile(out, profile)
    return 0


@contextlib.contextmanager
def _table_progress() -> Iterator[Callable[[int, int, str], None] | None]:
    """A progress bar over the tables on stderr while ``vouch profile`` measures them; none
    where stderr is not a terminal (a pipe or a log gets no control codes)."""
    from rich.console import Console

    err = Console(stderr=True)
    if not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("profiling"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=err, transient=True) as bar:
        task = bar.add_task("", total=None)

        def progress(done: int, total: int, table: str) -> None:
            bar.update(task, completed=done, total=total, description=table)

        yield progress


def _cmd_sql(args: argparse.Namespace, config: Config, out: _LazyConsole) -> int:
    from .jsonout import dumps

    with open_database(args.db, config) as db:
        result = db.execute(args.query)
    if args.json:
        print(dumps(result.model_dump(mode="json")))
    elif result.error is None:
        from .render import print_result, result_csv

        if args.csv:
            sys.stdout.write(result_csv(result))
        else:
            print_result(out, result)
    if result.error is not None:
        if not args.json:
            _print_error(_LazyConsole(stderr=True, soft_wrap=True), result.error.message)
        return SQLRejected.exit_code if result.error.kind in _REJECTED_KINDS else 1
    return 0


def _check_fields(args: argparse.Namespace) -> CheckFields:
    """The request of every surface (contract.py), from the options: the same limits and the
    same errors as over HTTP and MCP."""
    import json

    from pydantic import ValidationError

    from .contract import CheckFields

    judged: dict[str, Any] = {}
    for name in ("judged_parts", "judged_claims"):
        text = getattr(args, name)
        if text is not None:
            try:
                judged[name] = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UserInputError(f"--{name.replace('_', '-')} is not JSON ({exc.msg}); give a list of "
                                     f'[text, true/false] pairs, e.g. [["how many orders", true]]') from None
    try:
        fields = CheckFields(question=args.question, candidates=args.sql, answer_text=args.answer_text,
                             hint=args.hint, all_choices=args.all_choices, **judged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserInputError(f"invalid check: {where}: {first['msg']}") from None
    problem = fields.candidate_problem()
    if problem:
        raise UserInputError(f"invalid check: {problem}")
    return fields


def _cmd_check(args: argparse.Namespace, config: Config, out: _LazyConsole) -> int:
    from .jsonout import dumps

    empty = next((i for i, sql in enumerate(args.sql, 1) if not sql.strip()), None)
    if empty is not None:
        raise UserInputError(f"--sql number {empty} is empty; give one SELECT statement in each --sql")
    fields = _check_fields(args)
    with open_database(args.db, config) as db:
        answer = fields.run(db, config.rule)
    if args.json:
        print(dumps(answer.model_dump(mode="json")))
    else:
        from .render import print_answer

        print_answer(out, answer, show_all_checks=args.all_checks)
    return 0  # the gate is data, not an error


def _cmd_demo(args: argparse.Namespace, config: Config, out: _LazyConsole) -> int:
    from rich.markup import escape

    from . import api
    from .demo import EXAMPLES
    from .render import print_answer_brief

    if args.serve:
        return server_cli.run_demo_serve(args, config, out.resolve())

    path = api.build_demo(args.out, seed=args.seed, config=config, force=args.force)
    out.print(f"[bold green]Demo database ready:[/] {escape(str(path))}")
    if not args.no_examples:
        out.print("\nVouch checks each example's SQL; where the example has a second plausible SQL, it is "
                  "passed as another sample, so agreement is measured.\n")
        with api.connect(path, config=config) as db:
            for ex in EXAMPLES:
                sqls = [ex["sql"]] + ([ex["alt_sql"]] if ex.get("alt_sql") else [])
                answer = api.check(db, ex["question"], sqls, rule=config.rule)
                print_answer_brief(out, ex["title"], answer)
    out.print("\nTry next:")
    # markup=False: a path may hold brackets, which rich would read as markup.
    out.print(f"  vouch profile --db {path}", highlight=False, markup=False)
    ex = EXAMPLES[0]
    out.print(f"  vouch check --db {path} -q \"{ex['question']}\" --sql \"{ex['sql']}\"", highlight=False,
              markup=False)
    out.print(f"  vouch sql --db {path} \"SELECT * FROM customers LIMIT 5\"", highlight=False, markup=False)
    return 0


def _cmd_doctor(args: argparse.Namespace, config: Config, out: _LazyConsole) -> int:
    """Exit 0 when Vouch would open the database as it is connected (a read-only role, no
    untrusted code within reach), 1 when not; the statements are printed either way."""
    from rich.markup import escape

    from .api import connect, doctor
    from .db.trust import match_trusted

    # Opened trusting everything, so that the report can be read; what the setting the user
    # gave covers is shown beside each object.
    with connect(args.db, config=config.with_overrides(trusted_objects="*")) as db:
        powers = db.role_powers()
        prescription = doctor(db, reader=args.reader)
        current = db.trust_report()  # as this connection's role: would Vouch open it as it is?
    if prescription is None:
        out.print(f"{escape(db.target)} has no server role to fence: it is opened read-only by construction "
                  "(docs/engines.md); nothing to do.", highlight=False)
        return 0
    if args.sql_only:
        sys.stdout.write(prescription.script)
    else:
        report = prescription.report
        trusted = set(match_trusted(report.found, config.trusted_objects))
        out.print(f"[bold]role[/]: {escape(powers.summary if powers else report.role)}", highlight=False)
        out.print(f"[bold]code within a reader's reach[/]: {len(report.found)} object(s)"
                  f"{f', {len(trusted)} named in trusted_objects' if trusted else ''}", highlight=False)
        for held in report.found:
            mark = "[green]trusted[/] " if held.name in trusted else ""
            out.print(f"  {mark}{escape(held.line())}", highlight=False)
        out.print("\n[bold]statements for a least-privilege reader[/] (run as an administrator):\n", highlight=False)
        out.print(escape(prescription.script), highlight=False, soft_wrap=True)
    assert current is not None  # an engine with roles (it has a prescription) reports the code it holds
    untrusted = len(current.found) > len(match_trusted(current.found, config.trusted_objects))
    return 1 if untrusted or (powers is not None and powers.privileged) else 0


def _cmd_config(args: argparse.Namespace, config: Config, out: _LazyConsole) -> int:
    from .settings import SETTINGS, settings_markdown

    if args.markdown:
        print(settings_markdown())
        return 0
    for s in SETTINGS:
        value = getattr(config, s.name)
        shown = str(config.cache_path) if s.name == "cache_dir" else value
        source = config.sources.get(s.name, "default")
        out.print(f"{s.name:18} = {shown!s:30} [dim]({source})[/]", highlight=False)
    return 0


# The commands that answer one request (one check, the demo's few) and end.
_ONE_REQUEST = frozenset({"check", "demo"})
_COMMANDS: dict[str, Command] = {"profile": _cmd_profile, "sql": _cmd_sql, "check": _cmd_check, "demo": _cmd_demo, "doctor": _cmd_doctor,
             "config": _cmd_config}


def run() -> None:
    """The ``vouch`` command: :func:`main`, then exit without the interpreter's last garbage
    collection. That collection rescans every object still alive, and a 20,000-table
    catalogue is over a million of them (2.5 s after a check had finished); the process ends
    anyway, so its memory goes back to the system without it. Not in :func:`main`, which
    tests and callers run in a process that goes on."""
    code = main(process=True)
    import gc

    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
