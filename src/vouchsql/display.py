"""How an Answer, a Result and a Profile show themselves in a notebook and in a terminal REPL.

Jupyter calls ``_repr_html_``: an Answer is the gate first (with its score and every reason),
the question, the result and its SQL, the checks that fired, then every reading of the
request side by side — the one shown and each open choice, each with its SQL and its result —
so the answers that differ are next to each other. rich's REPL (``rich.pretty.install()``,
IPython with rich) calls ``__rich_console__``, which renders what ``vouch check`` prints.
Every value from the database is escaped: a cell may hold any text.
"""

from __future__ import annotations

import html
import io
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.text import Text

    from .answer import Answer, Result
    from .db.profile import Profile

MAX_ROWS = 20
_GATE_COLOURS = {"pass": ("#1b5e20", "#e8f5e9"), "flag": ("#8a5a00", "#fff8e1"), "abstain": ("#b71c1c", "#ffebee")}
_STYLE = ("<style>.vouch table{border-collapse:collapse;margin:4px 0}.vouch th,.vouch td{border:1px solid #ccc;"
          "padding:2px 6px;text-align:left;vertical-align:top;font-size:90%}.vouch pre{margin:2px 0;"
          "white-space:pre-wrap}.vouch .gate{font-weight:bold;padding:2px 8px;border-radius:4px}"
          ".vouch .dim{color:#666;font-size:85%}</style>")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _cell(value: Any) -> str:
    if value is None:
        return '<span class="dim">NULL</span>'
    if isinstance(value, float):
        return _e(f"{value:.6g}" if abs(value) < 1e15 else value)
    return _e(value)


def result_html(result: Result, limit: int = MAX_ROWS) -> str:
    if result.error is not None:
        return f'<p style="color:#b71c1c">did not run ({_e(result.error.kind)}): {_e(result.error.message)}</p>'
    head = "".join(f"<th>{_e(c)}</th>" for c in result.columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in result.rows[:limit])
    caption = f"{result.row_count} row{'s' if result.row_count != 1 else ''}"
    if result.truncated:
        caption += f" · truncated ({_e(result.truncated_reason or 'rows')})"
    if result.row_count > limit:
        caption += f" · first {limit} shown"
    return f'<table><tr>{head}</tr>{body}</table><div class="dim">{caption}</div>'


def agreement_text(answer: Answer) -> str:
    """How far the candidates agree, in the one wording every surface prints beside the score
    (``vouch check`` and ``vouch ask``, rich's REPL, a notebook): unmeasured with one candidate
    (there is nothing to agree with), else the agreement over the candidates; empty where
    there is no candidate or no agreement to show."""
    n = len(answer.candidates)
    if n == 1:
        return "agreement unmeasured (one candidate)"
    if n == 0 or answer.agreement is None:
        return ""
    return f"agreement {answer.agreement:.2f} over {n} candidates"


def answer_html(answer: Answer) -> str:
    v = answer.verdict
    fg, bg = _GATE_COLOURS[v.gate]
    agreement = agreement_text(answer)
    agreement = f" · {agreement}" if agreement else ""
    parts = [_STYLE, '<div class="vouch">',
             f'<div><span class="gate" style="color:{fg};background:{bg}">{v.gate.upper()}</span> '
             f"score {v.score:.2f} ({_e(v.rule)}; not a probability){_e(agreement)}</div>"]
    if v.reasons:
        parts.append("<ul>" + "".join(f"<li>{_e(r)}</li>" for r in v.reasons) + "</ul>")
    parts.append(f"<p><b>Question:</b> {_e(answer.question)}</p>")
    if answer.premise is not None and not answer.premise.is_valid:
        parts.append(f"<p><b>Not answered: the question's premise</b> ({_e(answer.premise.flaw_code or 'flawed')}): "
                     f"{_e(answer.premise.reason)}"
                     + (f"<br><b>Asked back:</b> {_e(answer.premise.clarification)}" if answer.premise.clarification
                        else "") + "</p>")
    fired = [c for c in answer.checks if c.fired]
    if fired:
        parts.append("<p><b>Checks that fired</b></p><ul>" + "".join(
            f"<li><b>{_e(c.name)}</b> ({_e(c.kind)}): {_e(c.detail)}</li>" for c in fired) + "</ul>")
    elif answer.checks:
        parts.append(f'<p class="dim">No check fired ({len(answer.checks)} run).</p>')
    readings: list[tuple[str, str, str, Result | None]] = [
        ("shown", "the answer checked", answer.shown.sql, answer.shown.result)]
    for i, reading in enumerate(answer.interpretations, 1):  # `ask`: each interpretation, answered apart
        if reading.answer is not None and not reading.shown:
            readings.append((f"interpretation {i}", reading.text, reading.answer.shown.sql,
                             reading.answer.shown.result))
    for choice in answer.choices:
        label = "open choice" if choice.differs and not choice.settled_by else "choice"
        note = choice.description + (f" (settled by the wording: “{choice.settled_by}”)" if choice.settled_by
                                     else "" if choice.differs else " (same answer)")
        readings.append((f"{label}: {choice.type}", note, choice.sql, choice.result))
    title = "The answer" if len(readings) == 1 else "Each reading of the request, side by side"
    parts.append(f"<p><b>{title}</b></p><table><tr>" + "".join(
        f"<th>{_e(name)}<div class='dim'>{_e(note)}</div></th>" for name, note, _, _ in readings) + "</tr><tr>"
        + "".join(f"<td>{result_html(r) if r is not None else ''}</td>" for _, _, _, r in readings) + "</tr><tr>"
        + "".join(f"<td><pre>{_e(sql)}</pre></td>" for _, _, sql, _ in readings) + "</tr></table>")
    parts.append("</div>")
    return "".join(parts)


def profile_html(profile: Profile) -> str:
    rows = []
    for t in profile.tables:
        keys = ", ".join(t.primary_key)
        refs = "; ".join(f"{', '.join(fk.columns)} → {fk.ref_table}" for fk in t.foreign_keys)
        stand = "; ".join(f"{c.name}: " + ", ".join(f"{s.value:g} ({s.share:.1%})" for s in c.stand_ins)
                          for c in t.columns if c.stand_ins)
        count = "" if t.row_count is None else f"{'≈' if t.row_count_estimated else ''}{t.row_count:,}"
        rows.append(f"<tr><td>{_e(t.name)}{' (view)' if t.is_view else ''}</td><td>{_e(count)}</td>"
                    f"<td>{len(t.columns)}</td><td>{_e(keys)}</td><td>{_e(refs)}</td><td>{_e(stand)}</td></tr>")
    return (f'{_STYLE}<div class="vouch"><p><b>{_e(profile.target)}</b> ({_e(profile.engine)}, '
            f"{len(profile.tables)} tables)</p><table><tr><th>table</th><th>rows</th><th>columns</th>"
            f"<th>primary key</th><th>foreign keys</th><th>stand-in codes</th></tr>{''.join(rows)}</table></div>")


def rich_lines(print_fn: Callable[[Console, Any], None], obj: Any, console: Console,
               options: ConsoleOptions) -> Iterator[Text]:
    """What ``print_fn(console, obj)`` prints, rendered for ``console`` at its width."""
    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    # rich types Console.color_system as str, though it returns one of the names color_system= takes
    inner = Console(file=buffer, width=options.max_width, color_system=console.color_system,  # type: ignore[arg-type]
                    force_terminal=console.is_terminal, soft_wrap=False)
    print_fn(inner, obj)
    yield Text.from_ansi(buffer.getvalue().rstrip("\n"))
