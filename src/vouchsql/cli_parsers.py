"""Subcommand parsers filled on use, so that ``vouch --help`` lists the commands without
building their arguments or importing what builds them (the settings table, the evaluation
harnesses). Imports only argparse."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

    Fill = Callable[[argparse.ArgumentParser], None]


class FilledOnUse(argparse.ArgumentParser):
    """A subcommand's parser whose arguments ``fill(parser)`` adds just before it parses or
    formats its usage or help. Without ``fill`` it is a plain ArgumentParser."""

    def __init__(self, *args: Any, fill: "Fill | None" = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fill = fill

    def _filled(self) -> None:
        fill, self._fill = self._fill, None
        if fill is not None:
            fill(self)

    def parse_known_args(self, args: Iterable[str] | None = None,
                         namespace: Any = None) -> tuple[Any, list[str]]:
        self._filled()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._filled()
        return super().format_usage()

    def format_help(self) -> str:
        self._filled()
        return super().format_help()


def add_command(sub: argparse._SubParsersAction[Any], name: str,
                common: argparse.ArgumentParser | Callable[[], argparse.ArgumentParser], add_args: Fill,
                **kwargs: Any) -> argparse.ArgumentParser:
    """``sub.add_parser(name, parents=[common], **kwargs)``, then ``add_args(parser)``; both
    wait for the command to be used when ``sub`` makes :class:`FilledOnUse` parsers.
    ``common``: the settings parser, or a function that returns it."""
    get_common = common if callable(common) else (lambda: common)
    if issubclass(getattr(sub, "_parser_class", object), FilledOnUse):
        def fill(p: argparse.ArgumentParser) -> None:
            parent = get_common()
            p._add_container_actions(parent)  # what ArgumentParser(parents=[parent]) does
            p._defaults.update(parent._defaults)
            add_args(p)

        filled: argparse.ArgumentParser = sub.add_parser(name, fill=fill, **kwargs)
        return filled
    p: argparse.ArgumentParser = sub.add_parser(name, parents=[get_common()], **kwargs)
    add_args(p)
    return p
