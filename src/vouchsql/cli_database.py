"""How every command opens its database: once, through :func:`vouchsql.api.connect`, with
the role's powers read and a role that may write or reach the server's files warned about
(docs/security.md). Shared by ``cli`` and ``ask_cli``; imports neither."""

from __future__ import annotations

from .errors import VouchError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import os

    from .db import Database
    from .settings import Config


def open_database(target: "str | os.PathLike[str] | Database", config: Config) -> Database:
    """``api.connect`` for a command. Every command opens its database here, once, so a role
    that may write or reach the server's files (docs/security.md) is warned about once."""
    from . import api

    db = api.connect(target, config=config)
    try:
        powers = db.role_powers()
    except VouchError:
        db.close()
        raise
    if powers is not None and powers.privileged:
        from rich.console import Console
        from rich.text import Text

        warning = powers.warning()
        assert warning is not None  # a privileged role always has its warning
        Console(stderr=True, soft_wrap=True).print(Text("warning: ", style="bold yellow") + Text(warning),
                                                   highlight=False)
    return db
