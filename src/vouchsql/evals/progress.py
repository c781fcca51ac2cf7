"""A minimal progress protocol the harnesses report to; the CLI backs it with a rich bar."""

from __future__ import annotations

from typing import Any, Protocol


class ProgressSink(Protocol):
    def start(self, total: int, done: int = 0) -> None: ...

    def advance(self, label: str) -> None: ...


class NoProgress:
    def start(self, total: int, done: int = 0) -> None:
        pass

    def advance(self, label: str) -> None:
        pass


class RichProgress:
    """A transient rich progress bar on stderr; items already done by an earlier run of the
    same ``--out`` count as done from the start."""

    def __init__(self, description: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeRemainingColumn(), TextColumn("{task.fields[item]}"),
                             console=Console(stderr=True), transient=True)
        self._task = self._bar.add_task(description, total=None, item="")

    def __enter__(self) -> "RichProgress":
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bar.__exit__(*exc)

    def start(self, total: int, done: int = 0) -> None:
        self._bar.update(self._task, total=total, completed=done)

    def advance(self, label: str) -> None:
        self._bar.update(self._task, advance=1, item=label)
