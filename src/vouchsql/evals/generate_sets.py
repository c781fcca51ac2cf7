"""``vouch sets generate``: request sets built on any database from seed questions with SQL,
by Vouch's own choice detectors (SpecBridge §2, Figure 2's last step, without the model review).

Each seed line is ``{"id"?, "db"?, "question", "sql"}`` (``db`` defaults to ``--db``). For
every seed: the SQL must run; the detectors (:func:`vouchsql.choices.detect_choices`, default
mode: only choices whose alternative gives a different result and that no word of the question
settles) read it; for every such choice the alternative SQL runs again here, and the set is
written only when both references ran and their results differ under the harness's matching
(:func:`vouchsql.evals.reference_match.match_reference`: relaxed, numbers to four decimal
places, tied rows interchangeable). Reference A is the seed's SQL, B the detector's rewrite.

The requests: ``open`` is the seed question word for word; each specific request is the open
request plus one clause that settles the choice (the phase-2 form, §7.3), the clause written
from a template per choice type, its direction read from the two SQL texts (which one keeps
the cut-off's ties, the NULLs, the unmatched rows, the distinct count, the equal values) or,
for the types without a template, from the detector's own description of the two readings.
``clause_a`` / ``clause_b`` are kept, so the two-turn experiment appends them. With ``--model``
a model paraphrases each specific request (open request + clause) into one natural request
(the ``paraphrase`` prompt); a paraphrase is kept only where the detectors' words for the
choice type still appear in it (its lexicon), else the template stays and the note says why.

Every line also carries ``rows_a``, ``rows_b`` and ``provenance`` (seed id and question, the
detector's description, the generator and its version). The output is in the format
``vouch eval choices`` reads (:func:`vouchsql.evals.choices_eval.load_choice_file`).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserInputError
from .cases import read_jsonl
from .reference_match import match_reference, tie_context

if TYPE_CHECKING:
    from rich.console import Console

    from ..db import Database
    from ..llm import LLM, Model
    from ..settings import Config

GENERATOR = "vouch sets generate"


def _count(pattern: str, sql: str) -> int:
    return len(re.findall(pattern, sql, flags=re.I))


def _clauses(choice_type: str, sql_a: str, sql_b: str, rows_a: int | None, rows_b: int | None,
             description: str) -> tuple[str, str]:
    """(clause for A, clause for B): each one sentence that settles the choice one way."""
    if choice_type == "ties":
        # The ties detector's alternative returns more rows: A is the cut, B keeps the ties.
        k = rows_a if rows_a is not None else 1
        return (f"Return exactly {k} row{'s' if k != 1 else ''}, choosing arbitrarily among rows tied at the cut-off.",
                "Include every row tied at the cut-off, even if that gives more rows.")
    if choice_type == "strict_cutoff":
        inclusive_b = _count(r">=|<=", sql_b) > _count(r">=|<=", sql_a)
        strict, inclusive = ("Count only values strictly beyond the cutoff (values equal to it are left out).",
                             "Include values equal to the cutoff (inclusive).")
        return (strict, inclusive) if inclusive_b else (inclusive, strict)
    if choice_type == "counting_unit" and _count(r"\bDISTINCT\b", sql_b) != _count(r"\bDISTINCT\b", sql_a):
        distinct_b = _count(r"\bDISTINCT\b", sql_b) > _count(r"\bDISTINCT\b", sql_a)
        rows, once = ("Count the matching rows, repeats included.", "Count each distinct entity only once.")
        return (rows, once) if distinct_b else (once, rows)
    if choice_type == "population_scope":
        outer_b = _count(r"\bLEFT\s+(OUTER\s+)?JOIN\b", sql_b) > _count(r"\bLEFT\s+(OUTER\s+)?JOIN\b", sql_a)
        inner, outer = ("Only include those with at least one matching record.",
                        "Also include those with no matching record, counted as zero.")
        return (inner, outer) if outer_b else (outer, inner)
    if choice_type == "missing_values":
        # Read from the detector's words: the SQL forms vary (GROUP BY, <> with NULLs, AVG).
        first = description.split("the alternative", 1)[0]
        keep = ("Count the records with a missing value as zero." if "as 0" in description else
                "Keep the records with a missing value (as a group of their own where grouped).")
        skip = "Leave out the records with a missing value."
        return (keep, skip) if "keeps" in first else (skip, keep)
    if choice_type == "aggregation_level" and re.search(r"AVG\s*\([^()]*/", sql_a, flags=re.I):
        return ("Take the average of the ratios, each row counted equally.",
                "Use the ratio of the totals (the sum of one over the sum of the other), so larger rows weigh more.")
    if choice_type == "aggregation_level" and re.search(r"AVG\s*\([^()]*/", sql_b, flags=re.I):
        return ("Use the ratio of the totals (the sum of one over the sum of the other), so larger rows weigh more.",
                "Take the average of the ratios, each row counted equally.")
    # The detectors word A first and B after "the alternative": read the direction there.
    a_part = description.split("the alternative", 1)[0]
    if choice_type == "aggregation_level" and "pools every" in description:
        pooled, grouped = ("Average over all records pooled, so an entity with more records weighs more.",
                           "Take the average of the averages: each entity's own average first, each counted equally.")
        return (pooled, grouped) if "pools every" in a_part else (grouped, pooled)
    if choice_type == "aggregation_level" and "ranks each" in description:
        single, average = ("Rank by a single record's value.", "Rank by the pooled average over each one's records.")
        return (single, average) if " by one " in a_part else (average, single)
    if choice_type == "quantifier" and "reads it as" in description:
        every, one = "Read 'than any' as than every one of them.", "Read 'than any' as than at least one of them."
        return (every, one) if "every value" in a_part.split("reads it as", 1)[-1] else (one, every)
    if choice_type == "negation" and "the alternative" in description:
        none, some = ("Only those with no matching record at all.",
                      "Those with at least one record that does not match (other records may match).")
        return (some, none) if "at least one" in a_part else (none, some)
    # aggregation level, negation, quantifier, …: the detector's two readings, in its words,
    # without the numbers it quotes (they would give the answer away).
    text = re.sub(r"\s*\([^()]*\bvs\b[^()]*\)", "", description).strip()
    for mark in ("; the alternative ", ", the alternative ", "; "):
        if mark in text:
            a, b = text.split(mark, 1)
            return (f"Compute it this way: {a.strip().rstrip('.')}.", f"Compute it this way: {b.strip().rstrip('.')}.")
    return ("Compute it as the most direct reading of the request does.", f"Compute it this way: {text.rstrip('.')}.")


def _paraphrase(llm: LLM, question: str, clause: str, choice_type: str) -> tuple[str | None, str]:
    """The model's one natural request for ``question`` + ``clause``, kept only when Vouch's
    detectors still read the choice as settled by its words (else the template stays)."""
    from ..choices import CHOICES
    from ..errors import ModelError
    from ..llm import BadOutput, Request, load_prompt
    from ..prompting import data_text as data

    def read(d: dict[str, Any]) -> str:
        text = str(d.get("request") or "").strip()
        if not text:
            raise BadOutput("field 'request' is empty")
        return text

    messages = load_prompt("paraphrase").messages(request=data.escaped(question, data.LONG_LIMIT),
                                                  clause=data.escaped(clause, data.TEXT_LIMIT))
    try:
        text = llm.complete_json(Request.of(messages, temperature=0.0, max_tokens=512), stage="paraphrase",
                                 validate=read)
    except ModelError as exc:
        return None, f"the model failed ({exc.message})"
    detector = next((d for d in CHOICES if d.type == choice_type), None)
    if detector is not None and not detector.lexicon.match(text):
        return None, "the paraphrase lost the words that settle the choice"
    return text, "kept"


def generate_sets(seeds_path: Path, config: Config, *, db: str | None = None, datasets: Path | None = None,
                  model: str | Model | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(request sets, notes on seeds that gave none and why). With ``model`` each specific
    request is the model's paraphrase of the open request plus its clause, kept where the
    detectors still read the clause's choice as settled; the template text otherwise (noted)."""
    from .. import __version__
    from ..choices import detect_choices
    from ..db import connect
    from .cases import DatabaseResolver

    seeds_path = Path(seeds_path)
    rows = read_jsonl(seeds_path)
    if not rows:
        raise UserInputError(f"{seeds_path}: no seeds")
    resolver = DatabaseResolver(seeds_path, config, datasets)
    out: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    opened: dict[Path, Database] = {}
    llm = None
    if model is not None:
        from ..llm import llm_from_config
        llm = llm_from_config(model, config)
    try:
        for n, seed in enumerate(rows, 1):
            sid = str(seed.get("id") or f"seed-{n}")
            question, sql, name = seed.get("question"), seed.get("sql"), seed.get("db") or db
            if not question or not sql:
                raise UserInputError(f"{seeds_path}: seed {sid!r} needs both 'question' and 'sql'")
            if not name:
                raise UserInputError(f"{seeds_path}: seed {sid!r} names no database; give 'db' or --db")
            path = resolver.resolve(str(name))
            if path is None:
                raise UserInputError(f"seed {sid!r}: database {name!r} not found")
            handle = opened.get(path) or opened.setdefault(path, connect(path, config=config))
            res_a = handle.execute(sql)
            if not res_a.ok:
                assert res_a.error is not None  # not ok: it has an error
                notes.append({"seed": sid, "note": f"the seed SQL does not run ({res_a.error.message})"})
                continue
            choices = detect_choices(question, handle, sql, res_a)
            if not choices:
                notes.append({"seed": sid, "note": "no open choice whose other reading changes the answer"})
            per_type: dict[str, int] = {}
            for choice in choices:
                res_b = handle.execute(choice.sql)  # run again here: the set must stand on its own
                if not res_b.ok:
                    notes.append({"seed": sid, "note": f"{choice.type}: the alternative does not run"})
                    continue
                if match_reference(res_a, res_b, tie_context(handle, choice.sql, res_b)) is not None:
                    notes.append({"seed": sid, "note": f"{choice.type}: the two readings give the same result"})
                    continue
                per_type[choice.type] = per_type.get(choice.type, 0) + 1
                clause_a, clause_b = _clauses(choice.type, sql, choice.sql, res_a.row_count, res_b.row_count,
                                              choice.description)
                suffix = "" if per_type[choice.type] == 1 else f"-{per_type[choice.type]}"
                sep = "" if question.endswith(" ") else " "
                set_id = f"{sid}-{choice.type}{suffix}"
                specific = {"a": question + sep + clause_a, "b": question + sep + clause_b}
                provenance = {"seed": sid, "seed_question": question, "detector": choice.type,
                              "description": choice.description, "generator": GENERATOR,
                              "vouchsql_version": __version__}
                if llm is not None:
                    provenance["paraphrase"] = {}
                    for side, clause in (("a", clause_a), ("b", clause_b)):
                        text, verdict = _paraphrase(llm, question, clause, choice.type)
                        provenance["paraphrase"][side] = verdict
                        if text is not None:
                            provenance[f"template_{side}"] = specific[side]
                            specific[side] = text
                        else:
                            notes.append({"seed": sid, "note": f"{set_id} specific_{side}: {verdict}; the template is kept"})
                out.append({"id": set_id, "db": str(name), "type": choice.type,
                            "open": question, "specific_a": specific["a"],
                            "specific_b": specific["b"], "clause_a": clause_a, "clause_b": clause_b,
                            "sql_a": sql, "sql_b": choice.sql, "rows_a": res_a.row_count, "rows_b": res_b.row_count,
                            "provenance": provenance})
    finally:
        for h in opened.values():
            h.close()
    return out, notes


def run_generate_command(args: argparse.Namespace, config: Config, out: Console) -> int:
    from .cases import SHARED_NAMES

    db = args.db
    if db and db != "demo" and db not in SHARED_NAMES and Path(db).exists():
        db = str(Path(db).resolve())  # given from the working folder, not the seeds file's
    model = None
    if getattr(args, "model", None):
        from .model import resolve_model
        model = resolve_model(args.model)
    sets, notes = generate_sets(Path(args.seeds), config, db=db,
                                datasets=Path(args.datasets) if args.datasets else None, model=model)
    dest = Path(args.out)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sets), encoding="utf-8")
    by_type: dict[str, int] = {}
    for s in sets:
        by_type[s["type"]] = by_type.get(s["type"], 0) + 1
    summary = ", ".join(f"{t} {k}" for t, k in sorted(by_type.items())) or "none"
    out.print(f"Wrote {len(sets)} request sets to {dest} ({summary}).", highlight=False)
    for note in notes:
        out.print(f"  {note['seed']}: {note['note']}", highlight=False)
    return 0


__all__ = ["generate_sets", "run_generate_command", "GENERATOR"]
