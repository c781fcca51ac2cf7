"""The shared reporting of every ``vouch eval`` harness: one :class:`Report` made of sections of
text, tables and figures, rendered as Markdown (``report.md``, figures as ``figures/*.png``)
and as one self-contained HTML file (``report.html``, figures embedded as base64 PNG, inline
CSS, no script and no CDN).

Plots use matplotlib's Agg canvas directly (no pyplot, so no global backend is changed). It
comes with the ``eval`` extra; without it the reports are written without figures and say so.
"""

from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, Union

from .metrics import jsonable


@dataclass
class Text:
    """A paragraph or a list (lines starting with ``- ``). Inline: `code`, **bold**."""

    body: str


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Any]]
    caption: str | None = None


@dataclass
class Figure:
    name: str  # the file name under figures/, without .png
    png: bytes | None
    caption: str


Item = Union[Text, Table, Figure]


@dataclass
class Section:
    title: str
    items: list[Item] = field(default_factory=list)


@dataclass
class Report:
    title: str
    command: str | None = None
    intro: list[Item] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    manifest: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------------
# Formatting helpers the harnesses share
# ---------------------------------------------------------------------------------------
def fmt(x: Any, digits: int = 3) -> str:
    x = jsonable(x)
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def pct(x: Any, digits: int = 1) -> str:
    x = jsonable(x)
    return "—" if x is None else f"{100 * x:.{digits}f}%"


def with_ci(x: Any, ci: Sequence[Any] | None, digits: int = 3, signed: bool = False) -> str:
    x = jsonable(x)
    if x is None:
        return "—"
    sign = "+" if signed else ""
    text = f"{x:{sign}.{digits}f}"
    if ci and jsonable(ci[0]) is not None:
        text += f" ({ci[0]:{sign}.{digits}f} to {ci[1]:{sign}.{digits}f})"
    return text


def pct_ci(x: Any, ci: Sequence[Any] | None, digits: int = 1) -> str:
    x = jsonable(x)
    if x is None:
        return "—"
    text = f"{100 * x:.{digits}f}%"
    if ci and jsonable(ci[0]) is not None:
        text += f" ({100 * ci[0]:.{digits}f}–{100 * ci[1]:.{digits}f})"
    return text


def manifest_section(manifest: dict[str, Any]) -> Section:
    git = manifest.get("git") or {}
    commit = git.get("commit")
    rows: list[list[Any]]
    rows = [["vouchsql", manifest.get("vouchsql_version")],
            ["git commit", f"{commit[:12]}{' (local changes)' if git.get('dirty') else ''}" if commit else "—"],
            ["python / platform", f"{manifest.get('python')} / {manifest.get('platform')}"],
            ["created", manifest.get("created")],
            ["model", manifest.get("model") or "none"],
            ["seed", manifest.get("seed")]]
    for k, v in sorted((manifest.get("parameters") or {}).items()):
        rows.append([f"parameter {k}", v if not isinstance(v, (list, tuple)) else ", ".join(map(str, v))])
    for name, d in sorted((manifest.get("datasets") or {}).items()):
        rows.append([f"dataset {name}", f"sha256 {d['sha256'][:16]}…"])
    for name, d in sorted((manifest.get("databases") or {}).items()):
        rows.append([f"database {name}", f"sha256 {d['sha256'][:16]}…"])
    for name, h in sorted((manifest.get("prompts") or {}).items()):
        rows.append([f"prompt {name}", f"sha256 {h[:16]}…"])
    return Section("Run", [Table(["item", "value"], [[str(a), fmt(b)] for a, b in rows]),
                           Text("Everything above is in `manifest.json`; `--replay` on this folder recomputes "
                                "every number from the stored records with no SQL and no model call.")])


# ---------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------
def _md_cell(v: Any) -> str:
    return fmt(v).replace("|", "\\|").replace("\n", " ")


def _md_item(item: Item) -> list[str]:
    if isinstance(item, Text):
        return [item.body, ""]
    if isinstance(item, Table):
        out = []
        if item.caption:
            out += [item.caption, ""]
        out.append("| " + " | ".join(_md_cell(h) for h in item.headers) + " |")
        out.append("|" + "|".join("---" for _ in item.headers) + "|")
        out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in item.rows]
        return out + [""]
    if isinstance(item, Figure):
        if item.png is None:
            return [f"*{item.caption}* (no figure: install matplotlib, `pip install 'vouchsql[eval]'`)", ""]
        return [f"![{item.caption}](figures/{item.name}.png)", "", f"*{item.caption}*", ""]
    raise TypeError(item)


def render_markdown(report: Report, *, console: bool = False) -> str:
    """The report as Markdown; ``console`` leaves out the figures and the run details (the
    terminal summary: the files hold everything)."""
    lines = [f"# {report.title}", ""]
    if report.command and not console:
        lines += [f"Command: `{report.command}`", ""]
    for item in report.intro:
        lines += _md_item(item)
    for section in report.sections:
        items = [i for i in section.items if not (console and isinstance(i, Figure))]
        if not items or (console and section.title == "Run"):
            continue
        lines += [f"## {section.title}", ""]
        for item in items:
            lines += _md_item(item)
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:72rem;margin:2rem auto;
padding:0 1rem;color:#1b1f24;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.9rem}
th,td{border:1px solid #d0d7de;padding:.25rem .55rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{background:#f6f8fa;padding:.05rem .3rem;border-radius:3px;font-size:.88em}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #d0d7de}
figcaption{font-size:.88rem;color:#57606a}.caption{font-size:.9rem;color:#57606a;margin-bottom:.2rem}
"""

_NUMERIC = re.compile(r"^[+\-−]?[\d,.]+%?( \(.*\))?$|^—$")


def _inline(text: str) -> str:
    out = html.escape(str(text))
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def _html_item(item: Item) -> str:
    if isinstance(item, Text):
        lines = item.body.splitlines()
        if lines and all(line.startswith("- ") for line in lines):
            return "<ul>" + "".join(f"<li>{_inline(line[2:])}</li>" for line in lines) + "</ul>"
        return f"<p>{_inline(' '.join(lines))}</p>"
    if isinstance(item, Table):
        head = "".join(f"<th>{_inline(h)}</th>" for h in item.headers)
        body = []
        for row in item.rows:
            cells = []
            for c in row:
                text = fmt(c)
                cls = ' class="num"' if _NUMERIC.match(text) else ""
                cells.append(f"<td{cls}>{_inline(text)}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        caption = f'<div class="caption">{_inline(item.caption)}</div>' if item.caption else ""
        return f"{caption}<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    if isinstance(item, Figure):
        if item.png is None:
            return f"<p><em>{_inline(item.caption)}</em> (no figure: matplotlib is not installed)</p>"
        data = base64.b64encode(item.png).decode("ascii")
        return (f'<figure><img alt="{html.escape(item.caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{_inline(item.caption)}</figcaption></figure>")
    raise TypeError(item)


def render_html(report: Report) -> str:
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(report.title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{_inline(report.title)}</h1>"]
    if report.command:
        parts.append(f"<p>Command: <code>{html.escape(report.command)}</code></p>")
    parts += [_html_item(i) for i in report.intro]
    for section in report.sections:
        parts.append(f"<h2>{_inline(section.title)}</h2>")
        parts += [_html_item(i) for i in section.items]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(out_dir: Path, report: Report) -> list[Path]:
    """Write report.md, report.html and figures/*.png; return the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    figures = [i for s in [Section("", report.intro), *report.sections] for i in s.items
               if isinstance(i, Figure) and i.png is not None]
    if figures:
        (out_dir / "figures").mkdir(exist_ok=True)
        for fig in figures:
            assert fig.png is not None  # kept above only with a png
            path = out_dir / "figures" / f"{fig.name}.png"
            path.write_bytes(fig.png)
            written.append(path)
    for name, text in (("report.md", render_markdown(report)), ("report.html", render_html(report))):
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# ---------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------
# Any: matplotlib (the ``eval`` extra) may be missing, and then so are its types.
def _canvas(width: float = 6.4, height: float = 4.4) -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure as MplFigure
    except ImportError:
        return None, None
    fig = MplFigure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    # No timestamp or version in the file: the same numbers give the same bytes.
    fig.savefig(buf, format="png", metadata={"Software": None}, bbox_inches="tight")
    return buf.getvalue()


def risk_coverage_png(curves: dict[str, dict[str, Any]], title: str = "Accuracy of the answers shown") -> bytes | None:
    """Accuracy among answers with score ≥ t against the share shown, one line per rule;
    markers are the attainable thresholds (IES Figure 4)."""
    fig, ax = _canvas()
    if fig is None:
        return None
    for name, c in curves.items():
        if c["coverage"]:
            ax.plot(c["coverage"], c["accuracy"], marker="o", markersize=3, linewidth=1.3, label=name)
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("Share of answers shown (coverage)")
    ax.set_ylabel("Accuracy of those shown")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if curves:
        ax.legend(loc="lower left", fontsize=8)
    return _png(fig)


def reliability_png(bins: list[dict[str, Any]], title: str) -> bytes | None:
    """Accuracy per score bin against the bin's mean score; bar widths are the bins, the
    numbers on top are the answers per bin."""
    fig, ax = _canvas(5.2, 4.4)
    if fig is None:
        return None
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1)
    for b in bins:
        if b["n"]:
            ax.bar(b["lo"], b["accuracy"], width=b["hi"] - b["lo"], align="edge", alpha=0.55,
                   edgecolor="black", linewidth=0.5, color="#4878d0")
            ax.plot([b["confidence"]], [b["accuracy"]], marker="o", color="black", markersize=3)
            ax.annotate(str(b["n"]), (b["lo"] + (b["hi"] - b["lo"]) / 2, min(b["accuracy"] + 0.02, 1.02)),
                        ha="center", fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("Score (10 equal-width bins)")
    ax.set_ylabel("Share right")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return _png(fig)


def bars_png(groups: list[str], series: dict[str, list[float | None]], title: str, ylabel: str) -> bytes | None:
    """Grouped bars (e.g. DET per flaw code per prompting setting)."""
    fig, ax = _canvas(7.5, 4.2)
    if fig is None:
        return None
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + i * width for g in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0 for v in values], width=width, label=name)
    ax.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))])
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylim(0, 1.2)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, ncol=max(1, len(series)), loc="upper center", frameon=False)
    return _png(fig)
