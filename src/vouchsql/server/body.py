"""Response bodies bounded in bytes.

Each query is already capped in rows and bytes, but one ``/api/check`` runs many (up to 16
candidates, then the checks' and detectors' own), and a 2.67 GB body was once returned. The
body is therefore serialised in the worker thread, inside the request's time limit, and when
it is over the server's limit the rows of its results are cut — each result keeps a share of
the room in proportion to its size, and says ``truncated`` with the reason ``bytes`` — so the
client still gets the verdict, the reasons and the first rows of every result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

# Room kept for the markers that cutting adds and for rounding in the shares.
_SLACK = 4096


def dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _results(node: Any) -> Iterator[dict[str, Any]]:
    """Every result object (a dict with ``rows`` and ``truncated``) anywhere in ``node``."""
    if isinstance(node, dict):
        if isinstance(node.get("rows"), list) and "truncated" in node:
            yield node
        for value in node.values():
            yield from _results(value)
    elif isinstance(node, list):
        for value in node:
            yield from _results(value)


def fit(data: Any, limit: int) -> bytes | None:
    """``data`` as JSON of at most ``limit`` bytes, cutting result rows when needed; None
    when even without any rows it would not fit (the caller answers with an error)."""
    body = dumps(data)
    if len(body) <= limit:
        return body
    results = list(_results(data))
    sizes = [[len(dumps(row)) + 1 for row in r["rows"]] for r in results]
    all_rows = sum(sum(s) for s in sizes)
    room = limit - _SLACK - (len(body) - all_rows)
    if room <= 0:
        return None
    for result, row_sizes in zip(results, sizes):
        share = room * sum(row_sizes) // max(1, all_rows)
        kept, used = 0, 0
        while kept < len(row_sizes) and used + row_sizes[kept] <= share:
            used += row_sizes[kept]
            kept += 1
        if kept < len(row_sizes):
            result["rows"] = result["rows"][:kept]
            result["truncated"] = True
            result["truncated_reason"] = "bytes"
    body = dumps(data)
    return body if len(body) <= limit else None


def hide_path(data: Any, target: str, name: str) -> Any:
    """``data`` with every mention of a file database's server-side path (and its folder)
    replaced by the database's name. URLs are left alone: their password is never shown."""
    if "://" in target:
        return data
    path = Path(target).expanduser().resolve()
    secrets = sorted({str(path), str(path.parent)} - {"/", ""}, key=len, reverse=True)
    text = dumps(data).decode("utf-8")
    hidden = text
    for secret in secrets:
        hidden = hidden.replace(json.dumps(secret)[1:-1], f"<{name}>")
    return data if hidden == text else json.loads(hidden)
