"""Sending corpus cases to a world through the library, the CLI or the HTTP API, and judging
what came back. Used by test_isolation.py and bench/isolation.py.

Every hostile case is checked on the spot for the cheap things: it was refused, it wrote no
``{{OUT}}`` file, no secret text is in anything it returned, nothing raised, no traceback.
The world's snapshot (checksums, slots, locks, files …) is compared once per batch; only
when the batch changed something is each case replayed alone, the world restored after each
one that changes it, to name the culprits.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .corpus import Case
from .worlds import TRUST_ALL, World

# Error kinds of refusals Vouch itself decides before the SQL runs (the gate, the engine policy,
# the byte bound): `vouch sql` exits 2 for these, as docs/cli.md documents; an engine's own
# refusal (read_only, execution, timeout) exits 1.
EXIT_2_KINDS = frozenset({"rejected", "empty", "parse", "multiple_statements", "not_select", "bad_input",
                          "forbidden", "too_large"})


@dataclass
class Outcome:
    case: Case
    channel: str  # "library", "cli" or "api"
    sql: str
    refused: bool
    kind: str | None = None  # the error kind (library), or what stood for it (cli: exit code, api: status)
    detail: str = ""
    wrote: str | None = None  # an {{OUT}} path that exists afterwards
    leaked: list[str] = field(default_factory=list)  # names of secrets found in what came back
    changes: list[str] = field(default_factory=list)  # snapshot parts this case changed
    problems: list[str] = field(default_factory=list)  # channel-specific faults (traceback, exit code …)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """For a hostile case: refused, and nothing written, leaked, changed or wrong."""
        return self.refused and not (self.wrote or self.leaked or self.changes or self.problems)

    def describe(self) -> str:
        bits = [f"{self.case.key} via {self.channel}"]
        if not self.refused:
            bits.append("NOT REFUSED")
        if self.wrote:
            bits.append(f"wrote {self.wrote}")
        if self.leaked:
            bits.append(f"leaked {', '.join(self.leaked)}")
        if self.changes:
            bits.append(f"changed {', '.join(self.changes)}")
        bits += self.problems
        bits.append(f"[{self.kind}] {self.detail[:200]}")
        bits.append(f"sql: {self.sql[:200]!r}")
        return "; ".join(bits)


# -- the channels ----------------------------------------------------------------------------

def via_library(world: World, sql: str) -> tuple[bool, str | None, str, str, list[str]]:
    """(refused, kind, detail, everything returned as text, problems)."""
    try:
        result = world.db.execute(sql)
    except BaseException as exc:  # noqa: BLE001 - execute() is documented never to raise
        return False, "raised", f"{type(exc).__name__}: {exc}", "", ["execute() raised"]
    text = json.dumps(result.model_dump(mode="json"), default=str)
    if result.error is None:
        return False, None, f"{result.row_count} rows: {json.dumps(result.rows[:3], default=str)[:300]}", text, []
    return True, result.error.kind, result.error.message, text, []


def via_cli(world: World, sql: str, expect_kind: str | None) -> tuple[bool, str | None, str, str, list[str]]:
    """`vouch sql --db TARGET SQL` in this process: exit code, one error line, no traceback."""
    from vouchsql.cli import main

    out, err = io.StringIO(), io.StringIO()
    args = ["sql", "--db", world.target, "--timeout", f"{world.timeout:g}", "--cache-dir", str(world.cache_dir),
            "--trusted-objects", TRUST_ALL, sql]
    problems = []
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    except SystemExit as exc:  # noqa: PERF203
        code = exc.code
        problems.append("SystemExit escaped main()")
    except BaseException as exc:  # noqa: BLE001
        return False, "raised", f"{type(exc).__name__}: {exc}", "", ["main() raised"]
    stdout, stderr = out.getvalue(), err.getvalue()
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    others = [line for line in stderr.splitlines() if line.strip() and not line.startswith(("error:", "warning:"))]
    if "Traceback" in stdout + stderr:
        problems.append("a traceback was printed")
    if code != 0 and len(errors) != 1:
        problems.append(f"{len(errors)} error lines")
    if others:
        problems.append(f"unexpected stderr lines: {others[:2]}")
    if code != 0 and stdout.strip():
        problems.append("stdout is not empty")
    expected = 2 if expect_kind in EXIT_2_KINDS else 1
    if code not in (0, expected):
        problems.append(f"exit code {code}, expected {expected} for a {expect_kind} refusal")
    return code != 0, f"exit {code}", (errors[0] if errors else stdout[:200]), stdout + stderr, problems


def via_api(client, sql: str) -> tuple[bool, str | None, str, str, list[str]]:
    """POST /api/check with the statement as the only candidate."""
    resp = client.post("/api/check", json={"db": "w", "question": "What does this return?", "candidates": [sql]})
    text = resp.text
    problems = []
    if "Traceback" in text:
        problems.append("a traceback in the response")
    if resp.status_code >= 500:
        problems.append(f"HTTP {resp.status_code}")
    if resp.status_code == 200:
        body = resp.json()
        error = (body.get("shown") or {}).get("result", {}).get("error")
        if error is None:
            return False, "200", "the candidate ran", text, problems
        if body.get("verdict", {}).get("gate") != "abstain":
            problems.append(f"gate {body.get('verdict', {}).get('gate')!r} for a refused candidate")
        return True, f"200 {error.get('kind')}", error.get("message", ""), text, problems
    try:
        error = resp.json().get("error", {})
    except ValueError:
        error = {}
    return resp.status_code in (400, 413, 422, 504), str(resp.status_code), error.get("message", text[:200]), text, problems


# -- one case, a batch ----------------------------------------------------------------------------

def run_one(world: World, case: Case, channel: str, secrets: dict[str, list[str]], *, client=None,
            expect_kind: str | None = None) -> Outcome:
    sql = case.render(world.values())
    out_path = world.out_for(case.id) if case.writes_file else None
    started = time.monotonic()
    if channel == "library":
        refused, kind, detail, text, problems = via_library(world, sql)
    elif channel == "cli":
        refused, kind, detail, text, problems = via_cli(world, sql, expect_kind)
    elif channel == "api":
        refused, kind, detail, text, problems = via_api(client, sql)
    else:
        raise ValueError(channel)
    outcome = Outcome(case, channel, sql, refused, kind, detail, problems=problems,
                      seconds=time.monotonic() - started)
    if out_path and os.path.exists(out_path):
        outcome.wrote = out_path
        _remove(out_path)
    outcome.leaked = sorted(name for name, texts in secrets.items() if any(t and t in text for t in texts))
    return outcome


def run_batch(world: World, cases: list[Case], channel: str, *, client=None,
              expect: dict[str, str | None] | None = None) -> tuple[dict[str, Outcome], list[str]]:
    """Run ``cases`` one after the other, then compare the snapshot once. When it changed,
    restore the world and replay each case alone to name the ones that change it. Returns
    the outcomes by case id and the changes no single case reproduced (empty when clean).

    A change no case reproduces is checked once more by running the whole batch again: what
    a statement does, it does again, while the servers are shared (another test run's WAL
    can fill a segment meanwhile). Only a change that comes back is reported."""
    expect = expect or {}
    if world.changes():
        world.restore()  # something before this batch changed the world: start clean
    secrets = world.secrets()

    def run_all() -> dict[str, Outcome]:
        return {c.id: run_one(world, c, channel, secrets, client=client, expect_kind=expect.get(c.id))
                for c in cases}

    outcomes = run_all()
    after = world.changes()
    if not after:
        return outcomes, []
    world.restore()
    if _name_culprits(world, cases, outcomes, run_one_alone=lambda c: run_one(
            world, c, channel, secrets, client=client, expect_kind=expect.get(c.id))):
        return outcomes, []
    run_all()
    again = world.changes()
    if again:
        world.restore()
    return outcomes, again


def _name_culprits(world: World, cases: list[Case], outcomes: dict[str, Outcome], run_one_alone) -> bool:
    named = False
    for c in cases:
        run_one_alone(c)
        changed = world.changes()
        if changed:
            outcomes[c.id].changes = changed
            named = True
            world.restore()
    return named


# A legitimate read must never fail because the machine is busy: the world's 1 s limit is for
# the hostile and resource corpora (stopping what runs long); legitimate reads get this one, so
# a correlated subquery on MariaDB at a load of 5 is not counted as a false block.
LEGIT_TIMEOUT = 30.0


def run_legit(world: World, cases: list[Case]) -> dict[str, Outcome]:
    secrets: dict[str, list[str]] = {}
    saved = world.db
    world.db = world.open(timeout=LEGIT_TIMEOUT)
    try:
        return {c.id: run_one(world, c, "library", secrets) for c in cases}
    finally:
        world.db.close()
        world.db = saved


def _remove(path: str) -> None:
    try:
        p = Path(path)
        if p.is_dir():
            import shutil

            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink()
    except OSError:
        pass


# -- resource cases, measured in a child process ----------------------------------------------------

MEASURE = Path(__file__).resolve().parent / "measure.py"
MiB = 1024 * 1024


def measure(world: World, cases: list[Case], *, timeout: float, max_result_bytes: int,
            python: str | None = None) -> dict[str, dict]:
    """Run ``cases`` in a fresh Python process (tests/isolation/measure.py) on the world's
    target, each with its peak RSS measured; returns the child's record per case id (with
    ``raised`` set for every case when the child itself failed)."""
    import subprocess
    import sys

    values = world.values()
    job = {"target": world.target,
           "settings": {"timeout": timeout, "max_result_bytes": max_result_bytes, "cache_dir": str(world.cache_dir),
                        "trusted_objects": TRUST_ALL},
           "cases": [{"id": c.id, "sql": c.render(values)} for c in cases]}
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOUCH_")}
    env["MALLOC_ARENA_MAX"] = "2"
    budget = 60 + len(cases) * (timeout + 5)
    proc = subprocess.run([python or sys.executable, str(MEASURE)], input=json.dumps(job), capture_output=True,
                          text=True, timeout=budget, env=env)
    records = {}
    for line in proc.stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        records[record["id"]] = record
    for c in cases:
        if c.id not in records:
            records[c.id] = {"id": c.id, "raised": f"the child exited {proc.returncode} before this case: "
                                                  f"{proc.stderr.strip()[-500:]}"}
    return records


def rss_bound(max_result_bytes: int) -> int:
    """The issue's target for one request: 2 × max_result_bytes + 300 MB."""
    return 2 * max_result_bytes + 300 * 1000 * 1000
