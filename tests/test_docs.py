"""The docs: README.md stays the front door (at most 200 lines, the two set-up commands as CI
runs them, links that lead somewhere), docs/ builds with ``mkdocs build --strict``, and every
code block marked to run in README.md and docs/**/*.md runs as written.

A block is marked by an HTML comment that starts a line with ``<!-- run`` just before its
fence (blank lines may sit between). Each further line of the comment is ``key: value``:

- ``expect: TEXT``: TEXT appears in the block's output (stdout and stderr together), the
  expects of a block in order. Runs of whitespace, line breaks included, count as one space,
  so table padding and terminal wrapping do not matter.
- ``exit: N``: the exit code the block must end with (default 0).
- ``needs: A, B``: the block is skipped, saying why, unless each is present: ``chinook``,
  ``sakila``, ``northwind`` (../shared/datasets); ``postgresql``, ``mariadb`` (the local test
  servers, whose URLs the block gets as ``$PG_URL`` and ``$MARIADB_URL``); ``python:MODULE``;
  ``command:NAME``.
- ``after: previous``: the previous marked block of the same file runs first, in the same
  folder (its own expectations are checked by its own test).
- ``file: NAME``: the block is not run; it is written to NAME in the folder of every later
  block of the same file (a ``toml`` block must parse).
- ``timeout: SECONDS`` (default 180) and ``note: TEXT`` (for the reader only).

``bash``/``sh`` blocks run with ``bash -e -o pipefail``; ``console`` blocks run their ``$ ``
lines (with ``\\`` continuations) and every other line but ``...`` is expected output, in
order; ``python`` blocks run with this interpreter. Every block runs in a fresh folder holding
``shop.sqlite``, a copy of the demo database, with ``VOUCH_CACHE_DIR`` set to a cache shared by
the session (so ``vouch demo --no-examples`` builds the demo database once) and no other
``VOUCH_*`` variable or ``vouch.toml`` from the caller.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
DATASETS = ROOT.parent / "shared" / "datasets"
README_MAX_LINES = 200
SETUP_COMMANDS = ("pip install -e . && vouch demo", "pip install -e '.[dev]' && pytest")
PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
MARIADB_URL = "mysql+pymysql://root@127.0.0.1:3306/test"
KEYS = {"expect", "exit", "needs", "after", "file", "timeout", "note"}
RUNNABLE = {"bash", "sh", "console", "python"}
DEFAULT_TIMEOUT = 180


@dataclass
class Block:
    path: Path
    line: int  # of the marker comment, 1-based
    lang: str
    code: str
    expects: list[str] = field(default_factory=list)
    exit: int = 0
    needs: list[str] = field(default_factory=list)
    after: str | None = None
    file: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


_MARKER = re.compile(r"^<!-- run(?P<rest>.*?)$")
_FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")


def parse(path: Path) -> tuple[list[Block], list[str]]:
    """The marked blocks of one Markdown file, and what is wrong with its markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    errors: list[str] = []
    in_fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:  # markers inside a code block are text, not markers
            if in_fence is None:
                in_fence = fence.group("fence")
            elif line.strip() == in_fence:
                in_fence = None
            i += 1
            continue
        m = _MARKER.match(line) if in_fence is None else None
        if not m:
            i += 1
            continue
        where = f"{path.relative_to(ROOT)}:{i + 1}"
        start = i
        body = [m.group("rest")]
        while "-->" not in body[-1]:
            i += 1
            if i == len(lines):
                errors.append(f"{where}: the run marker is never closed with -->")
                return blocks, errors
            body.append(lines[i])
        body[-1] = body[-1].split("-->", 1)[0]
        first = body[0].strip()
        settings: list[tuple[str, str]] = []
        if first.startswith(":"):
            settings.append(("note", first[1:].strip()))
        elif first:
            errors.append(f"{where}: write '<!-- run' alone on its line, or '<!-- run: note'")
        for entry in body[1:]:
            if not entry.strip():
                continue
            key, sep, value = entry.partition(":")
            if not sep or key.strip() not in KEYS:
                errors.append(f"{where}: unknown line in the run marker: {entry.strip()!r} "
                              f"(keys: {', '.join(sorted(KEYS))})")
                continue
            settings.append((key.strip(), value.strip()))
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        fence = _FENCE.match(lines[i]) if i < len(lines) else None
        if not fence:
            errors.append(f"{where}: a run marker must stand just before a fenced code block")
            continue
        close, lang = fence.group("fence"), fence.group("lang").lower()
        code: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != close:
            code.append(lines[i])
            i += 1
        i += 1
        block = Block(path, start + 1, lang, "\n".join(code) + "\n")
        for key, value in settings:
            if key == "expect":
                block.expects.append(value)
            elif key == "exit":
                block.exit = int(value)
            elif key == "needs":
                block.needs += [n.strip() for n in value.split(",") if n.strip()]
            elif key == "after":
                if value != "previous":
                    errors.append(f"{where}: 'after' takes only 'previous'")
                block.after = value
            elif key == "file":
                block.file = value
            elif key == "timeout":
                block.timeout = float(value)
        if block.file is None and lang not in RUNNABLE:
            errors.append(f"{where}: cannot run a ```{lang} block (runnable: {', '.join(sorted(RUNNABLE))}; "
                          f"or give 'file: NAME')")
        if block.file is not None and (block.expects or block.after or block.exit):
            errors.append(f"{where}: a 'file:' block is written, not run: it takes no expect, exit or after")
        blocks.append(block)
    return blocks, errors


def documents() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


ALL_BLOCKS: list[Block] = []
MARKER_ERRORS: list[str] = []
for _doc in documents():
    _blocks, _errors = parse(_doc)
    ALL_BLOCKS += _blocks
    MARKER_ERRORS += _errors
RUN_BLOCKS = [b for b in ALL_BLOCKS if b.file is None]


def previous_block(block: Block) -> Block:
    earlier = [b for b in RUN_BLOCKS if b.path == block.path and b.line < block.line]
    assert earlier, f"{block.id}: 'after: previous' but no marked block comes before it"
    return earlier[-1]


def files_before(block: Block) -> list[Block]:
    return [b for b in ALL_BLOCKS if b.path == block.path and b.file and b.line < block.line]


# -- running ---------------------------------------------------------------------------------

def _reachable(kind: str) -> str | None:
    """None when the local test server answers, else why not."""
    try:
        if kind == "postgresql":
            import psycopg

            psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", connect_timeout=3).close()
        else:
            import pymysql

            pymysql.connect(host="127.0.0.1", port=3306, user="root", database="test", connect_timeout=3).close()
    except Exception as exc:  # noqa: BLE001 - any failure to connect means "skip"
        return f"{kind} is not reachable: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
    return None


def missing(need: str) -> str | None:
    """Why ``need`` is absent, or None."""
    if need in ("chinook", "sakila", "northwind"):
        path = DATASETS / f"{need}.sqlite"
        return None if path.is_file() else f"sample database {path} is absent"
    if need in ("postgresql", "mariadb"):
        return _reachable(need)
    kind, _, name = need.partition(":")
    if kind == "python":
        return None if importlib.util.find_spec(name) else f"Python module {name} is not installed"
    if kind == "command":
        return None if shutil.which(name) else f"command {name} is not on PATH"
    raise AssertionError(f"unknown need {need!r}")


def console_script(code: str) -> tuple[str, list[str]]:
    """The commands of a console block, and the output lines it shows."""
    commands: list[str] = []
    shown: list[str] = []
    continuing = False
    for line in code.splitlines():
        if continuing:
            commands.append(line)
            continuing = line.rstrip().endswith("\\")
        elif line.startswith("$ "):
            commands.append(line[2:])
            continuing = line.rstrip().endswith("\\")
        elif line.strip() and line.strip() != "...":
            shown.append(line.strip())
    return "\n".join(commands) + "\n", shown


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="session")
def docs_env(tmp_path_factory) -> dict[str, str]:
    cache = tmp_path_factory.mktemp("docs-cache")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VOUCH_") and k not in ("FORCE_COLOR", "CLICOLOR_FORCE")}
    env.update(VOUCH_CACHE_DIR=str(cache), COLUMNS="200", PYTHONUNBUFFERED="1", NO_COLOR="1",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
               PG_URL=PG_URL, MARIADB_URL=MARIADB_URL, NO_MKDOCS_2_WARNING="1")
    return env


@pytest.fixture(scope="session")
def demo_db(docs_env) -> Path:
    done = subprocess.run(["vouch", "demo", "--no-examples"], env=docs_env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    path = Path(done.stdout.split("Demo database ready: ", 1)[1].splitlines()[0].strip())
    assert path.is_file(), path
    return path


def run_block(block: Block, folder: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run one block in ``folder``; its exit code and its output."""
    if block.lang == "python":
        script = folder / f"_block_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        argv = [sys.executable, script.name]
    else:
        code = console_script(block.code)[0] if block.lang == "console" else block.code
        script = folder / f"_block_{block.line}.sh"
        script.write_text(code, encoding="utf-8")
        argv = ["bash", "-e", "-o", "pipefail", script.name]
    proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=block.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{block.id}: still running after {block.timeout:g} s; output so far:\n"
                    f"{out.decode('utf-8', 'replace')[-4000:]}")
    finally:
        try:  # a server the block started in the background goes with it
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.returncode, out.decode("utf-8", "replace")


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[b.id for b in RUN_BLOCKS])
def test_marked_block_runs(block: Block, tmp_path, docs_env, demo_db):
    for need in block.needs:
        why = missing(need)
        if why:
            pytest.skip(f"{block.id} needs {need}: {why}")
    shutil.copyfile(demo_db, tmp_path / "shop.sqlite")
    for written in files_before(block):
        (tmp_path / written.file).write_text(written.code, encoding="utf-8")
    chain = []
    step = block
    while step.after:
        step = previous_block(step)
        chain.insert(0, step)
    for earlier in chain:
        code, out = run_block(earlier, tmp_path, docs_env)
        assert code == earlier.exit, f"{block.id}: the block it runs after ({earlier.id}) exited {code}:\n{out[-4000:]}"
    code, out = run_block(block, tmp_path, docs_env)
    assert code == block.exit, (f"{block.id}: exit code {code}, expected {block.exit}\n--- script\n{block.code}"
                                f"--- output (end)\n{out[-4000:]}")
    expected = list(block.expects)
    if block.lang == "console":
        expected = console_script(block.code)[1] + expected
    assert expected or block.exit or block.lang == "python", \
        f"{block.id}: a marked block should say what it shows (expect: …) or how it exits (exit: …)"
    flat, at = squash(out), 0
    for text in expected:
        found = flat.find(squash(text), at)
        assert found >= 0, (f"{block.id}: expected, after what was matched before it:\n  {text}\n"
                            f"--- output (end)\n{out[-4000:]}")
        at = found + len(squash(text))


def test_run_markers_are_well_formed():
    assert not MARKER_ERRORS, "\n".join(MARKER_ERRORS)


def test_written_files_parse():
    for block in ALL_BLOCKS:
        if block.file and block.lang == "toml":
            tomllib.loads(block.code)


def test_readme_and_docs_have_blocks_that_run():
    in_readme = [b for b in RUN_BLOCKS if b.path == README]
    assert len(in_readme) >= 2, "the README's first check and Python example should be marked to run"
    pages = {b.path for b in RUN_BLOCKS if b.path != README}
    assert len(pages) >= 10, sorted(str(p) for p in pages)


# -- the README and the site -------------------------------------------------------------------

def test_readme_is_the_front_door():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES, \
        f"README.md has {len(text.splitlines())} lines; it is the front door (at most {README_MAX_LINES}): move detail to docs/"
    for command in SETUP_COMMANDS:
        assert command in text, f"README.md lost the set-up command {command!r}"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert SETUP_COMMANDS[1] in ci, ".ci/run must run the README's test command verbatim"


def slug(heading: str) -> str:
    """The anchor of a heading, as Python-Markdown's toc extension (MkDocs) writes it."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = unicodedata.normalize("NFKD", text)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    found, in_fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            found.add(slug(line.lstrip("#").strip()))
    return found


def test_readme_links_lead_somewhere():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    for target in targets:
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        file, _, anchor = target.partition("#")
        path = (ROOT / file) if file else README
        assert path.exists(), f"README.md links to {target}, which does not exist"
        if anchor:
            assert anchor in anchors(path), f"README.md links to {target}: {file} has no heading with that anchor"


def test_mkdocs_build_strict(tmp_path, docs_env):
    for module in ("mkdocs", "material"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[dev]' installs mkdocs-material)")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=docs_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    for page in DOCS.rglob("*.md"):
        built = tmp_path / "site" / page.relative_to(DOCS).with_suffix("")
        if page.name == "index.md":
            built = built.parent
        assert (built / "index.html").is_file() or built.with_suffix(".html").is_file(), f"{page} was not built"
