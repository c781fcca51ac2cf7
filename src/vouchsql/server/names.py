"""What a client may call a database, and whether a host is this machine only: shared by
the app, ``vouch serve`` and ``vouch mcp``, none of which needs FastAPI for it."""

from __future__ import annotations

import re

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
