#!/usr/bin/env python
"""Benchmark: what one `vouch ask` costs in model calls, requests, tokens and sequential rounds.

Not a test. The issue's target (issue 14, SpecBridge §7.1's Decide-then-answer budget): a
clear request costs at most 2 calls and an open one at most 1 + n calls at K = 5 on an
endpoint that returns several choices per request (OpenAI-compatible ``n``).

Each case runs the real ``vouchsql.ask`` through the real ``openai`` / ``anthropic`` SDK
against the scripted server of the test suite (``tests/fakes/servers.py``: on loopback, no
model, no network) over the demo database, with the response cache off, and reads

* ``calls``, ``requests``, ``input_tokens``, ``output_tokens`` and ``rounds`` from the
  Answer's ``usage`` (Vouch's own accounting), and
* ``http`` (POSTs the server received) and ``server_rounds`` (sequential rounds the server
  saw: a round starts with a request that arrived after every earlier one was answered).

The scripted server bills 11 prompt tokens per request and 7 completion tokens per choice, so
tokens here count requests and choices, not real prompt sizes; a real model's come from the
provider's usage fields the same way.

Run: ``python bench/ask_calls.py [--k 5] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes.servers import Reply, Script, ScriptedServer, assess_reply  # noqa: E402

import vouchsql  # noqa: E402

CLEAR_Q = "How many stores are there?"
STORES = "SELECT COUNT(*) AS n FROM stores"
OPEN_Q = "How many customers placed orders?"
INTERPS = [("How many customers placed orders, counting each customer once?", "Count each customer once."),
           ("How many customers placed orders, counting every order row?", "Count every order row.")]
SAMPLES = {"each customer once": ["SELECT COUNT(DISTINCT customer_id) AS customers FROM orders"],
           "every order row": ["SELECT COUNT(*) AS orders FROM orders"]}
JUDGE = json.dumps({"parts": [{"part": "the number asked for", "covered": True}]})


def cases(k: int):
    """(name, protocol, question, script, ask options, budget or None)."""
    n = len(INTERPS)
    for protocol in ("openai", "anthropic"):
        yield (f"clear, {protocol}", protocol, CLEAR_Q, Script(samples=[STORES]), {}, 2 if protocol == "openai" else None)
        yield (f"open n={n}, {protocol}", protocol, OPEN_Q, Script(assess=assess_reply(interpretations=INTERPS),
                                                                 samples=SAMPLES), {}, 1 + n if protocol == "openai" else None)
    yield ("clear, openai, --prose", "openai", CLEAR_Q, Script(samples=[STORES], write="There are 8 stores."),
           {"prose": True}, None)
    yield (f"open n={n}, openai, --prose", "openai", OPEN_Q,
           Script(assess=assess_reply(interpretations=INTERPS), samples=SAMPLES, write="See the result."),
           {"prose": True}, None)
    yield ("clear, openai, judge_complete", "openai", CLEAR_Q, _with_judge(Script(samples=[STORES])),
           {"judge_complete": True}, None)
    yield ("clear, openai server ignoring n", "openai", CLEAR_Q, Script(samples=[STORES], honour_n=False), {}, None)


def _with_judge(script: Script):
    def handler(call):
        return JUDGE if call.stage == "judge_complete" else script(call)
    return handler


def slowed(handler, delay: float):
    """Each reply held ``delay`` seconds, so requests sent in parallel overlap at the server
    and ``server_rounds`` sees them as one round (an instant reply can finish before its
    sibling arrives, which would read as two rounds)."""
    def answer(call):
        out = handler(call)
        if isinstance(out, list):
            return Reply(choices=out, delay=delay)
        return Reply(content=out, delay=delay) if isinstance(out, str) else out
    return answer


def run(k: int, db: Path, cache: Path, delay: float = 0.2) -> list[dict]:
    rows = []
    for name, protocol, question, script, options, budget in cases(k):
        with ScriptedServer(slowed(script, delay), protocol=protocol) as srv:
            answer = vouchsql.ask(db, question, model=f"{protocol}:scripted", base_url=srv.base_url, k=k,
                                  cache_dir=str(cache), no_model_cache=True, max_retries=0, **options)
            http, server_rounds = len(srv.calls), len(srv.rounds())
        u = answer.usage
        judge = u.stages.get("judge")
        rows.append({"case": name, "k": k, "calls": u.total.calls, "requests": u.total.requests, "http": http,
                     "rounds": u.rounds, "server_rounds": server_rounds, "input_tokens": u.total.input_tokens,
                     "output_tokens": u.total.output_tokens, "judge_calls": judge.calls if judge else 0,
                     "candidates": len(answer.candidates), "gate": answer.verdict.gate, "budget": budget,
                     "within_budget": None if budget is None else u.total.calls - (judge.calls if judge else 0) <= budget})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=5, help="samples per interpretation (default 5)")
    parser.add_argument("--json", metavar="OUT", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = vouchsql.build_demo(Path(tmp) / "demo.sqlite")
        rows = run(args.k, Path(db), Path(tmp) / "cache")
    head = ["case", "calls", "requests", "http", "rounds", "server_rounds", "input_tokens", "output_tokens",
            "judge_calls", "candidates", "budget", "within_budget"]
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in head]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(str(r[h]).ljust(w) for h, w in zip(head, widths)))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0 if all(r["within_budget"] is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
