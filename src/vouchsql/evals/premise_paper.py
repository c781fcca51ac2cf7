"""``vouch eval premise --paper premisesql``: PremiseSQL's Tables 3 and 4 in the paper's layout,
from a run's metrics.

Table 3 (premise critique on positive and negative samples): one row per model; for each of
Base, Implicit and Explicit the flawed-question columns SQL (normalised SQL behaviour), DET and
TYPE, then GEN and — Implicit and Explicit only, since Base asks for no ``is_valid`` — VAL on
the originals. The text of the paper keeps only Table 3's caption and §4.2's numbers (its body
is a shaded figure), so the columns follow the caption's order. Table 4: per error type under
Implicit prompting, ``Code | Error Type | SQL | DET | TYPE`` with the paper's shortened names.
Values to three decimals, as printed in the paper; judge κ to four, as §4.2.3 gives them.
"""

from __future__ import annotations

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


def _cell(v) -> str:
    return "—" if v is None else f"{v:.3f}"


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table3(metrics: dict, model: str) -> str:
    head = ["Model"]
    row = [model]
    for key, title, measures in TABLE3_SETTINGS:
        s = metrics["settings"].get(key)
        for m in measures:
            head.append(f"{title} {m.upper()}")
            if s is None:
                row.append("—")
            else:
                row.append(_cell((s["flawed"] if m in ("sql", "det", "type") else s["original"]).get(m)))
    return "\n".join(["Table 3: Premise critique performance on positive and negative samples. SQL is normalized "
                      "SQL Behavior; DET and TYPE denote Detection and Type Identification. GEN is the "
                      "SQL-generation rate on original queries, and VAL is the rate at which the model explicitly "
                      "recognizes those queries as valid.", "",
                      _row(head), _row(["---"] * len(head)), _row(row)])


def table4(metrics: dict) -> str:
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


def agreement(metrics: dict) -> str:
    j = metrics.get("judges")
    if not j:
        return ("DET and TYPE: structured-output reading (--det-from structured), not the paper's two judges; "
                "no judge agreement to report.")
    k = j["kappa"]["all"]

    def f(v):
        return "—" if v is None else f"{v:.4f}"
    return (f"Inter-evaluator Cohen's κ ({' and '.join(j['names'])}, {k['n']} flawed-query outputs): "
            f"{f(k['sql'])} for SQL Behavior, {f(k['det'])} for Detection, and {f(k['type'])} for Type "
            "Identification.")


def render(paper: str, metrics: dict, model: str) -> str:
    if paper not in PAPERS:
        raise UserInputError(f"unknown --paper {paper!r}; choose from {', '.join(PAPERS)}")
    return "\n\n".join([table3(metrics, model), table4(metrics), agreement(metrics)]) + "\n"


__all__ = ["PAPERS", "TABLE4_NAMES", "render", "table3", "table4"]
