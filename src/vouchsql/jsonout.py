"""JSON text as every command prints it with ``--json``. Its own module, so that printing
JSON does not load the terminal views (rich)."""

from __future__ import annotations

import json
from typing import Any


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)
