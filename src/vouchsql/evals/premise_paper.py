"""``vouch eval premise --paper premisesql``: PremiseSQL's Tables 3 and 4 in the paper's layout,
from a run's metrics.

Table 3 (premise critique on positive and negative samples): one row per model; for each of
Base, Implicit and Explicit the flawed-question columns SQL (normalised SQL behaviour), DET and
TYPE, then GEN and — Implicit and Explicit only, since Base asks for no ``is_valid`` — VAL on
the originals. The text of the paper keeps only Table 3's caption and §4.2's numbers (its body
is a shaded figure), so the columns follow the caption's order. Table 4: per error type under
Implicit prompting, ``Code | Error Type | SQL | DET | TYPE`` with the paper's shortened names.
Values to three decimals, as printed in the paper; judge κ to four, as §4.2.3 gives them.
Several stored runs (one per model) print together with ``--paper-runs``: a row per model, an
Aggregate row, and Table 4 over all their outputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UserInputError
from .datasets import FLAW_CODES

PAPERS = ("premisesql",)
# Table 4 shortens three names; Table 1 and Table 10 spell them out.
TABLE4_NAMES = {
    "E1.1": "Ambiguity",
    "E1.2": "Unclear Intent",
    "E2.1": "Internal Text Contrad.",
    "E2.2": "Question–Schema Contrad.",
    "E3.1": "Missing Constraint",
    "E3.2": "Missing Schema Premise",
    "E3.3": "Semantic Gap",
    "E4.1": "Inexpressible in SQL",
    "E4.2": "External Knowledge Req.",
}
TABLE3_SETTINGS = (("base", "Base", ("sql", "det", "type", "gen")),
                   ("implicit", "Implicit", ("sql", "det", "type", "gen", "val")),
                   ("explicit", "Explicit", ("sql", "det", "type", "gen", "val")))


def _cell(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table3(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """One row per (model name, metrics)."""
    head = ["Model"]
    for _, title, measures in TABLE3_SETTINGS:
        head += [f"{title} {m.upper()}" for m in measures]
    lines = []
    for model, metrics in rows:
        row = [model]
        for key, _, measures in TABLE3_SETTINGS:
            s = metrics["settings"].get(key)
            for m in measures:
                if s is None:
                    row.append("—")
                else:
                    row.append(_cell((s["flawed"] if m in ("sql", "det", "type") else s["original"]).get(m)))
        lines.append(_row(row))
    return "\n".join(["Table 3: Premise critique performance on positive and negative samples. SQL is normalized "
                      "SQL Behavior; DET and TYPE denote Detection and Type Identification. GEN is the "
                      "SQL-generation rate on original queries, and VAL is the rate at which the model explicitly "
                      "recognizes those queries as valid.", "",
                      _row(head), _row(["---"] * len(head)), *lines])


def table4(metrics: dict[str, Any]) -> str:
    s = metrics["settings"].get("implicit")
    if s is None:
        raise UserInputError("Table 4 is the Implicit setting's: run it (--settings must include implicit)")
    lines = ["Table 4: Performance by taxonomy error type under Implicit prompting"
             + (", labels averaged over two judges." if metrics.get("det_from") == "judges" else
                ", structured-output reading (not the paper's two judges)."), "",
             _row(["Code", "Error Type", "SQL", "DET", "TYPE"]), _row(["---"] * 5)]
    for code in FLAW_CODES:
        e = s["by_flaw"].get(code)
        if e is None:
            continue
        lines.append(_row([code, TABLE4_NAMES[code], _cell(e.get("sql")), _cell(e.get("det")), _cell(e.get("type"))]))
    return "\n".join(lines)


def agreement(metrics: dict[str, Any], names: str | None = None) -> str:
    j = metrics.get("judges")
    if not j:
        return ("DET and TYPE: structured-output reading (--det-from structured), not the paper's two judges; "
                "no judge agreement to report.")
    k = j["kappa"]["all"]

    def f(v: float | None) -> str:
        return "—" if v is None else f"{v:.4f}"
    return (f"Inter-evaluator Cohen's κ ({names or ' and '.join(j['names'])}, {k['n']} flawed-query outputs): "
            f"{f(k['sql'])} for SQL Behavior, {f(k['det'])} for Detection, and {f(k['type'])} for Type "
            "Identification.")


def render(paper: str, metrics: dict[str, Any], model: str) -> str:
    """The tables of one run."""
    if paper not in PAPERS:
        raise UserInputError(f"unknown --paper {paper!r}; choose from {', '.join(PAPERS)}")
    return "\n\n".join([table3([(model, metrics)]), table4(metrics), agreement(metrics)]) + "\n"


def render_runs(paper: str, run_dirs: list[Path]) -> str:
    """The tables over several stored runs (one per model, as the paper has 16): a Table 3 row per
    run and an Aggregate row, Table 4 and κ over every run's outputs pooled — the paper's Table 4
    is "aggregated across all 16 models". Recomputed from the records; no model call."""
    if paper not in PAPERS:
        raise UserInputError(f"unknown --paper {paper!r}; choose from {', '.join(PAPERS)}")
    rows, pooled, judges = pool_runs(run_dirs)
    if len(rows) > 1:
        rows = [*rows, ("Aggregate", pooled)]
    return "\n\n".join([table3(rows), table4(pooled), agreement(pooled, judges)]) + "\n"


def pool_runs(run_dirs: list[Path]) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any], str | None]:
    """Each run's point estimates (model name, metrics), the metrics of all runs' outputs pooled,
    and the judges named across the runs."""
    from . import premise as P
    from .runs import load_records, read_manifest

    if not run_dirs:
        raise UserInputError("give at least one run folder")
    rows, records, modes, settings, judge_sets = [], [], set(), None, []
    for k, run_dir in enumerate(run_dirs):
        run_dir = Path(run_dir)
        manifest = read_manifest(run_dir, P.HARNESS)
        params = manifest.get("parameters", {})
        det_from = params.get("det_from") or "structured"
        modes.add(det_from)
        ran = [s for s in P.PAPER_SETTINGS if s in (params.get("settings") or [])]
        settings = ran if settings is None else [s for s in settings if s in ran]
        run_records = load_records(run_dir, P.RECORDS)
        # Point estimates only: the tables print no intervals (the run's own report has them).
        rows.append((manifest.get("model") or run_dir.name,
                     P.analyse(run_records, ran, replicates=1, seed=0, det_from=det_from)))
        names = " and ".join(params.get("judges") or [])
        if names and names not in judge_sets:
            judge_sets.append(names)
        # Items from different runs stay distinct when pooled.
        records += [{**r, "id": f"{k}/{r['id']}", "pair_id": f"{k}/{r['pair_id']}",
                     "index": k * 10**9 + int(r.get("index", 0))} for r in run_records]
    if len(modes) > 1:
        raise UserInputError("these runs read DET and TYPE differently (judges in some, --det-from structured in "
                             "others); pool runs of one kind")
    if not settings:
        raise UserInputError("these runs share none of the paper's settings (base, implicit, explicit)")
    pooled = P.analyse(records, settings, replicates=1, seed=0, det_from=modes.pop())
    return rows, pooled, "; ".join(judge_sets) or None


__all__ = ["PAPERS", "TABLE4_NAMES", "render", "render_runs", "pool_runs", "table3", "table4"]
