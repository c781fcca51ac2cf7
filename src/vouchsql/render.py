"""Terminal views (rich) of results, profiles and answers. Pure presentation: every value
shown here is already in the JSON the same command prints with ``--json``."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .display import agreement_text
from .flaws import flaw_name
from .jsonout import dumps
from .rules import RHO_MIN

if TYPE_CHECKING:
    from .answer import Answer, Result
    from .db.profile import Profile

MAX_SHOWN_ROWS = 50


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e15 else str(value)
    return str(value)


def result_table(result: Result, title: str | None = None, limit: int = MAX_SHOWN_ROWS) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAVY, show_lines=False)
    for col in result.columns:
        table.add_column(str(col), overflow="fold")
    for row in result.rows[:limit]:
        table.add_row(*(_cell(v) for v in row), style=None)
    return table


def result_caption(result: Result, limit: int = MAX_SHOWN_ROWS) -> str:
    parts = [f"{result.row_count} row{'s' if result.row_count != 1 else ''}"]
    if result.truncated:
        parts.append(f"truncated at the {result.row_count}-row cap (raise it with --max-rows)")
    if result.row_count > limit:
        parts.append(f"first {limit} shown")
    parts.append(f"{result.elapsed_ms:.1f} ms")
    return " · ".join(parts)


def print_result(console: Console, result: Result) -> None:
    console.print(result_table(result))
    console.print(Text(result_caption(result), style="dim"))


def result_csv(result: Result) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows(["" if v is None else v for v in row] for row in result.rows)
    return buf.getvalue()


def print_profile(console: Console, profile: Profile) -> None:
    console.print(Text(f"{profile.target}  ({profile.engine}, {len(profile.tables)} tables, "
                       f"profiled in {profile.built_seconds:.2f} s)", style="bold"))
    for t in profile.tables:
        head = f"{t.name}{' (view)' if t.is_view else ''} — {t.row_count:,} rows"
        if t.sampled:
            head += (f"; estimates (≈) from a {t.sample_size:,}-row sample" if t.sample_size is not None
                     else "; estimates (≈) from the engine's statistics")
            if t.row_count_estimated:
                head = head.replace(" rows;", " rows (≈);", 1)
        if t.partial:
            head += f" — partial: {t.partial}"
        if t.error:
            head += f" — could not profile: {t.error}"
        table = Table(title=head, title_justify="left", box=box.SIMPLE, title_style="bold cyan")
        for name in ("column", "type", "key", "nulls", "distinct", "min", "max", "top values", "stand-ins"):
            table.add_column(name, overflow="fold")
        fk_cols = {c: f"→ {fk.ref_table}.{fk.ref_columns[i]}" for fk in t.foreign_keys
                   for i, c in enumerate(fk.columns)}
        for c in t.columns:
            key = " ".join(k for k in ("PK" if c.name in t.primary_key else "", fk_cols.get(c.name, "")) if k)
            distinct = f"≈{c.distinct_count:,}" if c.distinct_estimated else f"{c.distinct_count:,}"
            nulls = f"≈{c.null_count:,}" if c.null_estimated else f"{c.null_count:,}"
            top = ", ".join(f"{_clip(v, 16)} ({n})" for v, n in c.top_values[:3])
            stand = ", ".join(f"{s.value:g} ({s.share:.1%})" for s in c.stand_ins)
            table.add_row(c.name, c.type, key, nulls, distinct, _clip(c.min), _clip(c.max),
                          top, Text(stand, style="bold red") if stand else "")
        console.print(table)
    if profile.join_pairs:
        jt = Table(title="Join pairs (key overlap ρ over distinct non-null values)", title_justify="left",
                   box=box.SIMPLE, title_style="bold cyan")
        for name in ("left", "right", "source", "ρ", "|Ka|", "|Kb|", "|Ka∩Kb|"):
            jt.add_column(name)
        for p in profile.join_pairs:
            rho = "n/a" if p.rho is None else f"{'≈' if p.estimated else ''}{p.rho:.3f}"
            style = "bold red" if p.rho is not None and p.rho < RHO_MIN else None
            jt.add_row(f"{p.left_table}.{p.left_column}", f"{p.right_table}.{p.right_column}", p.source,
                       Text(rho, style=style or ""), f"{p.left_distinct:,}", f"{p.right_distinct:,}",
                       f"{p.overlap:,}")
        console.print(jt)


def _clip(value: Any, width: int = 24) -> str:
    text = _cell(value)
    return text if len(text) <= width else text[: width - 1] + "…"


__all__ = ["Console", "Group", "Panel", "print_result", "print_profile", "result_csv", "result_table",
           "result_caption", "dumps"]


_GATE_STYLE = {"pass": "bold white on green", "flag": "bold black on yellow", "abstain": "bold white on red"}


def _print_shown(console: Console, answer: Answer) -> None:
    result = answer.shown.result
    if result.error is not None:
        console.print(Text(f"The shown SQL did not run ({result.error.kind}): {result.error.message}", style="red"))
    else:
        print_result(console, result)
    console.print(Panel(answer.shown.sql, title="SQL", title_align="left", border_style="dim"))


def _print_checks(console: Console, answer: Answer, show_all: bool) -> None:
    shown_checks = answer.checks if show_all else [c for c in answer.checks if c.fired]
    if shown_checks:
        console.print(Text("Checks" + ("" if show_all else " that fired"), style="bold"))
        for c in shown_checks:
            style = {"veto": "red", "cap": "yellow", "signal": "cyan"}[c.kind] if c.fired else "green"
            console.print(Text(f"  {'✗' if c.fired else '✓'} {c.name} ({c.kind}): ", style=style) + Text(c.detail))
    elif answer.checks:
        console.print(Text(f"No check fired ({len(answer.checks)} run).", style="green"))


def _print_verdict(console: Console, answer: Answer) -> None:
    """The gate badge, the score, the agreement (in the words a notebook shows too), the
    reasons and the question."""
    v = answer.verdict
    head = Text()
    head.append(f" {v.gate.upper()} ", style=_GATE_STYLE[v.gate])
    head.append(f"  score {v.score:.2f} ({v.rule}; not a probability)")
    agreement = agreement_text(answer)
    head.append(f" · {agreement}" if agreement else "")
    console.print(head)
    for reason in v.reasons:
        console.print(f"  • {reason}", highlight=False)
    console.print(Text(f"\nQuestion: {answer.question}", style="bold"))


def print_answer(console: Console, answer: Answer, show_all_checks: bool = False) -> None:
    """The verdict first, then the result, the SQL, the checks that fired and open choices."""
    _print_verdict(console, answer)
    _print_shown(console, answer)
    _print_checks(console, answer, show_all_checks)
    for choice in answer.choices:
        label = "Open choice" if choice.differs and not choice.settled_by else "Choice"
        alt = choice.result
        tail = ""
        rows = f"{alt.row_count} row{'s' if alt.row_count != 1 else ''}" if alt is not None else ""
        if alt is not None and alt.error is None and rows not in choice.description:
            tail = f"; the other interpretation returns {rows}"
        if choice.settled_by:
            tail += f" (settled by the wording: “{choice.settled_by}”)"
        elif not choice.differs:
            tail += " (same answer)"
        console.print(Text(f"\n{label} — {choice.type}: ", style="bold magenta") + Text(choice.description + tail))
        console.print(Panel(choice.sql, title="other interpretation", title_align="left", border_style="dim"))
        if alt is not None and alt.error is None:
            print_result(console, alt)


def print_answer_brief(console: Console, title: str, answer: Answer) -> None:
    """One example in a few lines: the gate, what moved it, and any open choice."""
    v = answer.verdict
    line = Text()
    line.append(f" {v.gate.upper():7} ", style=_GATE_STYLE[v.gate])
    line.append(f" {title}: ", style="bold")
    line.append(answer.question)
    console.print(line)
    for c in answer.checks:
        if c.fired:
            console.print(Text(f"      {c.name} ({c.kind}): ", style="dim") + Text(c.detail))
    for reason in v.reasons:
        if reason.startswith("agreement"):
            console.print(Text(f"      {reason}", style="dim"))
    for choice in answer.choices:
        if choice.differs and not choice.settled_by:
            n = choice.result.row_count if choice.result is not None else "?"
            console.print(Text(f"      open choice — {choice.type}: ", style="magenta") +
                          Text(f"{choice.description} (the other interpretation returns {n} rows)"))


def print_ask_answer(console: Console, answer: Answer, show_all_checks: bool = False) -> None:
    """``vouch ask``: the verdict badge and its reasons first, then the premise (when flawed),
    the answer text, the interpretation computed, the alternatives, the result table, the
    SQL, the checks that fired and what the model calls cost."""
    v = answer.verdict
    _print_verdict(console, answer)
    p = answer.premise
    if p is not None and not p.is_valid:
        console.print(Text(f"Premise flawed — {p.flaw_code} {flaw_name(p.flaw_code)}: ", style="bold red")
                      + Text(p.reason or ""))
        if p.clarification:
            console.print(Text("To answer, Vouch needs to know: ", style="bold") + Text(p.clarification))
    if answer.answer_text and (p is None or p.is_valid):
        console.print(Panel(Text(answer.answer_text), title="Answer", title_align="left",
                            border_style={"pass": "green", "flag": "yellow", "abstain": "red"}[v.gate]))
    interps = answer.interpretations
    shown = next((i for i in interps if i.shown), None)
    if shown is not None and (shown.stated or shown.assumptions):
        line = Text("Interpretation: ", style="bold")
        line.append(shown.stated or "(not stated)")
        console.print(line)
        for a in shown.assumptions:
            console.print(Text(f"  assumes: {a}", style="dim"))
    if len(interps) > 1:
        console.print(Text("\nInterpretations (pick one with --pick N):", style="bold magenta"))
        for n, interp in enumerate(interps, 1):
            mark = "shown" if interp.shown else "picked" if interp.picked else ""
            line = Text(f"  {n}. ", style="bold") + Text(interp.text)
            if mark:
                line.append(f"  [{mark}]", style="green")
            console.print(line)
            alt = interp.answer
            if alt is None:
                continue
            if interp.same_result_as is not None:
                console.print(Text(f"     same result as {interp.same_result_as + 1}", style="dim"))
                continue
            tail = Text("     ")
            tail.append(f" {alt.verdict.gate.upper()} ", style=_GATE_STYLE[alt.verdict.gate])
            tail.append(f" {alt.answer_text or ''}")
            console.print(tail)
            if alt.shown.result.error is None:
                console.print(result_table(alt.shown.result, limit=5))
    for choice in answer.choices:
        console.print(Text(f"\nOpen choice — {choice.type}: ", style="bold magenta") + Text(choice.description))
        console.print(Panel(choice.sql, title="other interpretation", title_align="left", border_style="dim"))
    if answer.shown.sql:
        _print_shown(console, answer)
    _print_checks(console, answer, show_all_checks)
    u = answer.usage
    if u is not None:
        calls = " + ".join(f"{s.calls} {name}" for name, s in u.stages.items() if s.calls)
        cost = (f"{u.model}: {calls or 'no'} call(s) in {u.rounds} round(s); "
                f"{u.total.input_tokens:,} tokens in, {u.total.output_tokens:,} out")
        if u.total.cached:
            cost += f"; {u.total.cached} answered from the cache"
        console.print(Text(cost, style="dim"), highlight=False)
