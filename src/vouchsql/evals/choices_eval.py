"""``vouch eval choices``: do the choice detectors find the other interpretation of an open
request, and stay quiet when the wording settles it? (SpecBridge §2–3, request sets.)

Input: a JSONL file (default: the sets shipped with Vouch, ``vouchsql/data/request_sets.jsonl``)
with two kinds of line:

- a **request set** (read by :func:`vouchsql.evals.datasets.load_request_sets`)::

      {"id", "db", "type", "open", "specific_a", "specific_b", "sql_a", "sql_b"}

  ``open`` fits both interpretations; ``specific_a`` / ``specific_b`` select one each;
  ``sql_a`` answers ``specific_a`` and is the natural reading of ``open`` (it is the SQL the
  detectors are shown); ``sql_b`` answers ``specific_b``. The two results must differ.
- a **no-difference case**, where the other interpretation does not change the answer on the
  data (no alarm is expected)::

      {"id", "db", "type", "open", "sql_a", "no_difference": true}

``db`` is ``demo``, ``chinook``, ``sakila``, ``northwind`` or a path (see
:class:`vouchsql.evals.cases.DatabaseResolver`).

What is run, per line, with Vouch's default detection (``detect_choices``: only *reported*
choices, i.e. the alternative's result differs and no word settles the choice):

1. the **open request** with ``sql_a``: the set is *found* when some reported alternative's
   result matches ``sql_b``'s result (the rules below). An alternative of any type counts,
   as in SpecBridge ("a response returns both interpretations when its queries include one
   with the result of A and one with the result of B"); the records also say which type
   matched;
2. each **specific request**, ``specific_a`` with ``sql_a`` and ``specific_b`` with ``sql_b``:
   a reported choice of the set's type is a *false alarm* (its wording settles that choice);
   a choice of another type is not, since the set does not test it (SpecBridge §3);
3. a **no-difference case**, the open request with ``sql_a``: *any* reported choice is a false
   alarm.

Matching a result R with the reference B (both must have run):

- **relaxed matching** (:func:`vouchsql.agreement.results_match`, IES Definition 1): same row
  count; the narrower result equals, as a multiset of rows, the projection of the wider one
  onto an injective choice of its columns (column names and order ignored, extra columns
  allowed); values normalised, so numbers agree to four decimal places and ``3`` = ``3.0`` =
  ``"3"``; NULL equals NULL;
- **rows tied at a cut-off are interchangeable**: when B's outermost SELECT ends in
  ``ORDER BY key … LIMIT k`` (no OFFSET) and rows beyond the k-th tie with it on the first
  ORDER BY key (later keys are read as tie-breakers, as the ties detector reads them), R also
  matches when it has exactly k rows, holds every row of B ranked strictly above the cut-off
  value, and its other rows are rows tied at the cut-off (each at most as often as B's
  unlimited query returns it), under one injective column mapping as above. The tied rows
  come from running B once more without its LIMIT, with the key as an extra column.

A set is left out of the numbers (and listed) when a reference SQL fails or when ``sql_a`` and
``sql_b`` match under these rules: it would test nothing.

Measures, per choice type and overall, each a proportion with a Wilson 95% interval:
*found* over open sets; *false alarms* over specific requests (two per set), over
no-difference cases, and over both. The cost per request: model calls (always 0: detection
runs no model) and the detectors' queries and database time, beside the shown query's time.

The run folder holds ``manifest.json``, ``choices.jsonl`` (one record per line of the input,
with every reported alternative's SQL, type, row count and match), ``metrics.json``,
``report.md`` and ``report.html``. ``--replay`` recomputes the numbers from the records.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, cast

from ..answer import Choice, Result
from ..errors import UserInputError
from ..settings import Config
from . import metrics as M
from .cases import DatabaseResolver, read_jsonl
from .datasets import RequestSet, request_sets_from_rows
from .progress import NoProgress, ProgressSink
from .reference_match import TieContext, match_reference, tie_context
from .report import Item, Report, Section, Table, Text, fmt, manifest_section, pct_ci
from .runs import build_manifest, load_records, read_manifest, run_items, write_json

if TYPE_CHECKING:
    from ..db import Database

HARNESS = "choices"
RECORDS = "choices.jsonl"
DEFAULT_SETS = Path(__file__).resolve().parents[1] / "data" / "request_sets.jsonl"
TARGET_FOUND = 0.90


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------
@dataclass
class NoDifferenceCase:
    """An open request whose other interpretation does not change the answer on the data."""

    id: str
    db: str
    choice_type: str
    open_request: str
    sql_a: str
    extra: dict[str, Any] = field(default_factory=dict)


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"))


def load_choice_file(path: Path) -> tuple[list[RequestSet], list[NoDifferenceCase]]:
    """The request sets (read as :func:`vouchsql.evals.datasets.load_request_sets` reads them)
    and the no-difference cases of one file, in file order within each kind. Ids are unique
    across both kinds."""
    path = Path(path)
    rows = read_jsonl(path)
    full = [r for r in rows if not _truthy(r.get("no_difference"))]
    nd_rows = [r for r in rows if _truthy(r.get("no_difference"))]
    cases: list[NoDifferenceCase] = []
    for n, row in enumerate(nd_rows, 1):
        values = {}
        for name, aliases in (("db", ("db", "database", "db_id")), ("choice_type", ("type", "choice_type", "choice")),
                              ("open_request", ("open", "open_request")), ("sql_a", ("sql_a", "sql"))):
            value = next((row[a] for a in aliases if row.get(a)), None)
            if value is None:
                raise UserInputError(f"{path}: no-difference case {row.get('id', n)!r}: {name} is missing "
                                     f"(read as {', '.join(aliases)})")
            values[name] = str(value)
        known = {"id", "no_difference", "db", "database", "db_id", "type", "choice_type", "choice", "open",
                 "open_request", "sql_a", "sql"}
        cases.append(NoDifferenceCase(id=str(row.get("id", f"no-difference-{n}")), **values,
                                      extra={k: v for k, v in row.items() if k not in known}))
    sets = request_sets_from_rows(full, f"{path} (request sets)")
    ids = Counter([s.id for s in sets] + [c.id for c in cases])
    twice = sorted(i for i, k in ids.items() if k > 1)
    if twice:
        raise UserInputError(f"{path}: id {twice[0]!r} appears twice")
    if not sets and not cases:
        raise UserInputError(f"{path}: no request sets")
    return sets, cases


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------
def _choice_record(choice: Choice, ref: Result | None = None, ties: TieContext | None = None) -> dict[str, Any]:
    res = choice.result
    rec = {"type": choice.type, "description": choice.description, "sql": choice.sql,
           "differs": choice.differs, "settled_by": choice.settled_by,
           "rows": res.row_count if res is not None and res.ok else None}
    if ref is not None:
        rec["matches_b"] = match_reference(res, ref, ties)
    return rec


def _detect(db: Database, question: str, sql: str, result: Result, *, budget_rows: int | None, types: set[str] | None,
            ref: Result | None = None, ties: TieContext | None = None,
            settled_type: str | None = None) -> dict[str, Any]:
    """Run Vouch's default detection once (the measured call) and return what it reported,
    with its cost. ``settled_type``: also say which words settle that type (a second,
    unmeasured call with ``all_choices``)."""
    from ..choices import CHOICES, Budget, detect_choices

    detectors = [d for d in CHOICES if types is None or d.type in types]
    stats: dict[str, Any] = {}
    choices = detect_choices(question, db, sql, result, budget=Budget(rows=budget_rows), stats=stats,
                             detectors=detectors)
    out = {"reported": [_choice_record(c, ref, ties) for c in choices],
           "queries": int(stats.get("choices_queries", 0)), "rows_read": int(stats.get("choices_rows", 0)),
           "budget_rows": budget_rows}
    if settled_type is not None:
        detector = next((d for d in CHOICES if d.type == settled_type), None)
        out["settling_words"] = detector.lexicon.match(question) if detector is not None else None
    return out


def evaluate_set(db: Database, rs: RequestSet, index: int, *, budget_rows: int | None = None,
                 types: set[str] | None = None) -> dict[str, Any]:
    base = {"key": rs.id, "index": index, "id": rs.id, "kind": "set", "db": rs.db, "type": rs.choice_type,
            "open_request": rs.open_request, "request_a": rs.request_a, "request_b": rs.request_b,
            "sql_a": rs.sql_a, "sql_b": rs.sql_b}
    res_a, res_b = db.execute(rs.sql_a), db.execute(rs.sql_b)
    for name, res in (("sql_a", res_a), ("sql_b", res_b)):
        if not res.ok:
            assert res.error is not None  # not ok: it has an error
            return {**base, "invalid": f"{name} does not run ({res.error.message})"}
    ties_b = tie_context(db, rs.sql_b, res_b)
    a_vs_b = match_reference(res_a, res_b, ties_b)
    base.update(rows_a=res_a.row_count, rows_b=res_b.row_count, tie_cutoff_b=ties_b is not None)
    if a_vs_b is not None:
        return {**base, "invalid": f"sql_a and sql_b give matching results ({a_vs_b}): the set tests nothing"}
    opened = _detect(db, rs.open_request, rs.sql_a, res_a, budget_rows=budget_rows, types=types, ref=res_b, ties=ties_b)
    matched = [c for c in opened["reported"] if c.get("matches_b")]
    opened["found"] = bool(matched)
    opened["found_by"] = sorted({c["type"] for c in matched})
    opened["match"] = ("exact" if any(c["matches_b"] == "exact" for c in matched) else "ties") if matched else None
    spec = {}
    for side, question, sql, res in (("a", rs.request_a, rs.sql_a, res_a), ("b", rs.request_b, rs.sql_b, res_b)):
        d = _detect(db, question, sql, res, budget_rows=budget_rows, types=types, settled_type=rs.choice_type)
        d["false_alarm"] = any(c["type"] == rs.choice_type for c in d["reported"])
        spec[side] = d
    return {**base, "open": opened, "specific_a": spec["a"], "specific_b": spec["b"]}


def evaluate_no_difference(db: Database, case: NoDifferenceCase, index: int, *, budget_rows: int | None = None,
                           types: set[str] | None = None) -> dict[str, Any]:
    base = {"key": case.id, "index": index, "id": case.id, "kind": "no_difference", "db": case.db,
            "type": case.choice_type, "open_request": case.open_request, "sql_a": case.sql_a}
    res = db.execute(case.sql_a)
    if not res.ok:
        assert res.error is not None  # not ok: it has an error
        return {**base, "invalid": f"sql_a does not run ({res.error.message})"}
    d = _detect(db, case.open_request, case.sql_a, res, budget_rows=budget_rows, types=types)
    d["false_alarm"] = bool(d["reported"])
    return {**base, "rows_a": res.row_count, "open": d}


def run_choices(sets_path: Path, config: Config, out_dir: Path, *, datasets: Path | None = None,
                command: str = "", budget_rows: int | None = None, types: Iterable[str] | None = None,
                progress: ProgressSink | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Evaluate every line of ``sets_path`` into ``out_dir`` (resuming a run there); return
    the records of this input and the manifest."""
    from ..choices import CHOICES

    progress = progress or NoProgress()
    if budget_rows is not None and budget_rows < 1:
        raise UserInputError(f"--budget-rows must be a whole number of rows > 0, got {budget_rows!r}")
    sets_path = Path(sets_path)
    sets, cases = load_choice_file(sets_path)
    known = [d.type for d in CHOICES]
    type_filter = None
    if types:
        type_filter = {t.strip() for t in types if t.strip()}
        if not type_filter:
            raise UserInputError("--types names no choice type")
        unknown = sorted(type_filter - set(known))
        if unknown:
            raise UserInputError(f"unknown choice type(s) {', '.join(unknown)}; known: {', '.join(known)}")
    items: list[tuple[str, RequestSet | NoDifferenceCase]]
    items = [("set", s) for s in sets] + [("no_difference", c) for c in cases]
    if type_filter is not None:
        items = [(k, i) for k, i in items if i.choice_type in type_filter]
    resolver = DatabaseResolver(sets_path, config, datasets)
    paths = {name: resolver.resolve(name) for name in sorted({i.db for _, i in items})}
    parameters = {"budget_rows": budget_rows, "types": sorted(type_filter) if type_filter else None,
                  "max_rows": config.max_rows, "timeout": config.timeout, "detectors": known}
    manifest = build_manifest(HARNESS, command=command, datasets={"sets": sets_path},
                              databases={n: p for n, p in paths.items() if p is not None},
                              parameters=parameters, record_keys=("budget_rows", "types", "max_rows", "timeout"))

    def evaluate(db: Database, index: int, entry: tuple[Any, ...]) -> dict[str, Any]:
        kind, item = entry
        evaluate_one = evaluate_set if kind == "set" else evaluate_no_difference
        return evaluate_one(db, item, index, budget_rows=budget_rows, types=type_filter)

    def missing(index: int, entry: tuple[Any, ...]) -> dict[str, Any]:
        kind, item = entry
        return {"key": item.id, "index": index, "id": item.id, "kind": kind, "db": item.db,
                "type": item.choice_type, "skipped": f"database {item.db!r} not found"}

    records = run_items(out_dir, manifest, RECORDS, items, key=lambda entry: entry[1].id,
                        path_of=lambda entry: paths.get(entry[1].db), evaluate=evaluate, missing=missing,
                        config=config, progress=progress)
    return records, manifest


# ---------------------------------------------------------------------------------------
# Measures
# ---------------------------------------------------------------------------------------
def _counts(records: list[dict[str, Any]]) -> dict[str, Any]:
    sets = [r for r in records if r["kind"] == "set" and "open" in r]
    nds = [r for r in records if r["kind"] == "no_difference" and "open" in r]
    found = [r["open"]["found"] for r in sets]
    found_same = [r["type"] in r["open"]["found_by"] for r in sets]
    spec = [r[side]["false_alarm"] for r in sets for side in ("specific_a", "specific_b")]
    nd = [r["open"]["false_alarm"] for r in nds]
    out = {"sets": len(sets), "found": M.proportion(found), "found_same_type": sum(found_same),
           "found_by_ties_rule": sum(r["open"].get("match") == "ties" for r in sets),
           "specific_false_alarms": M.proportion(spec), "no_difference": len(nds),
           "no_difference_false_alarms": M.proportion(nd), "false_alarms": M.proportion(spec + nd)}
    return out


def _spread(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "mean": None, "median": None, "max": None, "total": 0}
    return {"n": len(values), "mean": statistics.fmean(values), "median": statistics.median(values),
            "max": max(values), "total": sum(values)}


def analyse(records: list[dict[str, Any]], types: Iterable[str] = ()) -> dict[str, Any]:
    """Per type and overall: sets, found, false alarms (Wilson 95%); the cost per request."""
    kept = [r for r in records if not r.get("skipped") and not r.get("invalid")]
    order = list(dict.fromkeys(list(types) + sorted({r["type"] for r in kept})))
    per_type = {t: _counts([r for r in kept if r["type"] == t]) for t in order
                if any(r["type"] == t for r in kept)}
    overall = _counts(kept)
    requests = []
    for r in kept:
        for part in ("open", "specific_a", "specific_b"):
            if part in r:
                requests.append(r[part])
    # Counted, not timed: a report is the same on every machine (bench/choices.py times them).
    queries = [float(d["queries"]) for d in requests]
    rows_read = [float(d.get("rows_read", 0)) for d in requests]
    cost = {"requests": len(requests), "model_calls": 0, "queries": _spread(queries),
            "rows_read": _spread(rows_read)}
    found_rate = overall["found"]["rate"]
    targets = {"found_at_least": TARGET_FOUND,
               "found_met": bool(overall["sets"]) and found_rate is not None and found_rate >= TARGET_FOUND,
               "zero_false_alarms_met": overall["false_alarms"]["k"] == 0}
    return cast("dict[str, Any]", M.jsonable({
        "items": len(records), "sets": overall["sets"], "no_difference": overall["no_difference"],
        "skipped": sum(1 for r in records if r.get("skipped")),
        "invalid": sum(1 for r in records if r.get("invalid")),
        "per_type": per_type, "overall": overall, "cost": cost, "targets": targets,
    }))


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------
def _kn(p: dict[str, Any]) -> str:
    return f"{p['k']} / {p['n']}"


def _row(name: str, c: dict[str, Any]) -> list[Any]:
    f, s, nd, fa = c["found"], c["specific_false_alarms"], c["no_difference_false_alarms"], c["false_alarms"]
    return [name, c["sets"], _kn(f), pct_ci(f["rate"], f["ci"]), _kn(s), pct_ci(s["rate"], s["ci"]),
            _kn(nd), pct_ci(nd["rate"], nd["ci"]), _kn(fa), pct_ci(fa["rate"], fa["ci"])]


def _short(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def build_report(metrics: dict[str, Any], records: list[dict[str, Any]], manifest: dict[str, Any], *,
                 replay_of: str | None = None) -> Report:
    o = metrics["overall"]
    t = metrics["targets"]
    intro: list[Item]
    intro = [Text(f"{metrics['sets']} request sets and {metrics['no_difference']} no-difference cases evaluated"
                  f" ({metrics['invalid']} left out as invalid, {metrics['skipped']} skipped). The detectors run as "
                  "`vouch check` runs them: only reported choices count (the alternative's result differs and no "
                  "word of the request settles the choice)."),
             Text(f"Targets: other interpretation found for ≥ {TARGET_FOUND:.0%} of open sets — "
                  f"**{'met' if t['found_met'] else 'not met'}** ({pct_ci(o['found']['rate'], o['found']['ci'])}); "
                  f"0 false alarms on specific and no-difference cases — "
                  f"**{'met' if t['zero_false_alarms_met'] else 'not met'}** ({o['false_alarms']['k']} false alarms).")]
    if replay_of:
        intro.append(Text(f"Replayed from `{replay_of}` (no SQL run)."))
    headers = ["type", "sets", "found", "found % (Wilson 95%)", "FA specific", "FA specific %",
               "no-diff FA", "no-diff FA %", "FA all", "FA all %"]
    rows = [_row(name, c) for name, c in metrics["per_type"].items()] + [_row("**all**", o)]
    cost = metrics["cost"]
    q, rr = cost["queries"], cost["rows_read"]
    sections = [
        Section("Per choice type", [
            Table(headers, rows, caption="Found: open sets where a reported alternative matches reference B. "
                                         "FA specific: specific requests (two per set) on which the detectors "
                                         "raised the set's own type. No-diff FA: no-difference cases with any "
                                         "reported choice. FA all: both."),
            Text(f"Found by an alternative of the set's own type: {o['found_same_type']} of {o['found']['k']}; "
                 f"found only with tied rows interchangeable: {o['found_by_ties_rule']}."),
        ]),
        Section("Cost per request", [
            Table(["measure", "mean", "median", "max"],
                  [["model calls", 0, 0, 0],
                   ["detector queries", fmt(q["mean"], 2), fmt(q["median"], 1), fmt(q["max"], 0)],
                   ["detector rows read (by the profile)", fmt(rr["mean"], 0), fmt(rr["median"], 0),
                    fmt(rr["max"], 0)]],
                  caption=f"Over {cost['requests']} detector runs (open, specific and no-difference requests). "
                          "The detectors' budget is counted in queries and rows read, never in time, so these "
                          "figures are the same on every machine; `bench/choices.py` measures the time."),
        ]),
    ]
    missed = [r for r in records if r.get("kind") == "set" and "open" in r and not r["open"]["found"]]
    if missed:
        lines = []
        for r in missed:
            got = ", ".join(f"{c['type']} ({c['rows']} rows)" for c in r["open"]["reported"]) or "nothing reported"
            lines.append(f"- `{r['id']}` ({r['type']}, {r['db']}): {got}")
        sections.append(Section("Missed sets", [Text("\n".join(lines))]))
    alarms = []
    for r in records:
        if r.get("kind") == "set" and "open" in r:
            for side in ("specific_a", "specific_b"):
                d = r[side]
                if d["false_alarm"]:
                    c = next(c for c in d["reported"] if c["type"] == r["type"])
                    alarms.append(f"- `{r['id']}` {side}: \"{_short(r['request_' + side[-1]], 90)}\" — {c['type']}: "
                                  f"{_short(c['description'])}")
        elif r.get("kind") == "no_difference" and "open" in r and r["open"]["false_alarm"]:
            for c in r["open"]["reported"]:
                alarms.append(f"- `{r['id']}` (no difference): {c['type']}: {_short(c['description'])}")
    if alarms:
        sections.append(Section("False alarms", [Text("\n".join(alarms))]))
    bad = [r for r in records if r.get("invalid") or r.get("skipped")]
    if bad:
        sections.append(Section("Left out", [Text("\n".join(f"- `{r['id']}`: {r.get('invalid') or r.get('skipped')}"
                                                          for r in bad))]))
    sections.append(Section("Matching rules", [Text(
        "An alternative matches reference B under relaxed matching (IES Definition 1: same row count; the "
        "narrower result equals the projection of the wider onto an injective choice of its columns, as a "
        "multiset; column names and order ignored; numbers to four decimal places; NULL equals NULL), or — when "
        "B's outermost SELECT ends in ORDER BY … LIMIT k and rows beyond the k-th tie with it on the first ORDER BY "
        "key — when it has k rows, holds every row of B above the cut-off value, and its other rows are rows "
        "tied at the cut-off. A set whose A and B results match under these rules is left out.")]))
    sections.append(manifest_section(manifest))
    return Report(title="Open calculation choices: request sets (SpecBridge §2–3)", command=manifest.get("command"),
                  intro=intro, sections=sections, manifest=manifest)


def finish(out_dir: Path, records: list[dict[str, Any]], manifest: dict[str, Any], *,
           replay_of: str | None = None) -> dict[str, Any]:
    from .report import write_report

    metrics = analyse(records, manifest.get("parameters", {}).get("detectors") or ())
    write_json(Path(out_dir) / "metrics.json", metrics)
    write_report(out_dir, build_report(metrics, records, manifest, replay_of=replay_of))
    return metrics


def replay(run_dir: Path, out_dir: Path) -> dict[str, Any]:
    manifest = read_manifest(run_dir, HARNESS)
    records = load_records(run_dir, RECORDS)
    return finish(out_dir, records, manifest, replay_of=str(run_dir))


__all__ = ["DEFAULT_SETS", "NoDifferenceCase", "TieContext", "analyse", "build_report", "evaluate_no_difference",
           "evaluate_set", "finish", "load_choice_file", "match_reference", "replay",
           "run_choices", "tie_context"]
