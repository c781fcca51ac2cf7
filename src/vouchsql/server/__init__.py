"""The HTTP API and the web page: a thin layer over :mod:`vouchsql.api`.

``create_app(ServerOptions(...))`` builds the FastAPI app; ``vouch serve`` (``server.cli``)
runs it with uvicorn. FastAPI and uvicorn come with the ``[server]`` extra and are imported
only here, never by the rest of the package.
"""

from __future__ import annotations

import re

__all__ = ["create_app", "ServerOptions"]

# What a client may call a database: ``server.cli`` names databases with it, ``app`` checks them.
DB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``server.cli`` and ``vouch mcp`` need no FastAPI for it)."""
    import ipaddress

    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def __getattr__(name: str):  # lazy: importing vouchsql.server must not need FastAPI yet
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(name)
