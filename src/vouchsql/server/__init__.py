"""The HTTP API and the web page: a thin layer over :mod:`vouchsql.api`.

``create_app(ServerOptions(...))`` builds the FastAPI app; ``vouch serve`` (``server.cli``)
runs it with uvicorn. FastAPI and uvicorn come with the ``[server]`` extra and are imported
only here, never by the rest of the package.
"""

from __future__ import annotations

__all__ = ["create_app", "ServerOptions"]

from .names import DB_NAME as DB_NAME, is_loopback as is_loopback  # part of this package's surface

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


def __getattr__(name: str) -> Any:  # lazy: importing vouchsql.server must not need FastAPI yet
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(name)
