"""What every evaluation run leaves behind, and how a run is resumed or replayed.

A run folder holds:

- ``manifest.json``: vouchsql version, git commit (if the package runs from a checkout), Python
  and platform, the command, sha256 of every dataset and database file read, sha256 of every
  prompt sent, the model, the parameters and the seed;
- ``<harness>.jsonl``: one record per item, appended and flushed as each item finishes. A record
  holds everything the numbers are computed from (per-answer checks and agreement, raw model
  responses, match outcomes), so ``--replay`` recomputes every number with no SQL and no
  model call. Rerunning with the same ``--out`` skips the ids already recorded (items that were
  skipped, for example because their database was missing, are tried again);
- ``metrics.json``, ``report.md``, ``report.html`` and ``figures/``: written by the harness.

Resuming into a folder whose manifest names other inputs (dataset hashes, model, or the
parameters that shape the records) is refused: the records would mix two runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..errors import UserInputError

if TYPE_CHECKING:
    from ..settings import Config
    from .progress import ProgressSink
    from .report import Report

MANIFEST = "manifest.json"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def git_state(start: Path | None = None) -> dict[str, Any]:
    """The commit of the checkout the package runs from, and whether it has local changes;
    ``None`` for both when the package is not in a git checkout (an installed wheel)."""
    here = Path(start or Path(__file__).resolve().parent)
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=5)
        if commit.returncode != 0:
            return {"commit": None, "dirty": None}
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                                capture_output=True, text=True, timeout=5)
        return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def build_manifest(harness: str, *, command: str, datasets: dict[str, Path] | None = None,
                   databases: dict[str, Path] | None = None, prompts: dict[str, str] | None = None,
                   model: str | None = None, parameters: dict[str, Any] | None = None, seed: int | None = None,
                   record_keys: Iterable[str] = ()) -> dict[str, Any]:
    """``record_keys`` names the parameters that shape the records (not only the analysis):
    a resumed run must match them."""
    from .. import __version__

    return {
        "harness": harness,
        "vouchsql_version": __version__,
        "git": git_state(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command,
        "datasets": {name: {"path": str(p), "sha256": sha256_file(p)} for name, p in (datasets or {}).items()},
        "databases": {name: {"path": str(p), "sha256": sha256_file(p)} for name, p in (databases or {}).items()
                      if p is not None and Path(p).is_file()},
        "prompts": {name: sha256_text(text) for name, text in (prompts or {}).items()},
        "model": model,
        "parameters": dict(parameters or {}),
        "seed": seed,
        "record_keys": sorted(record_keys),
    }


def _identity(manifest: dict[str, Any]) -> dict[str, Any]:
    params = manifest.get("parameters", {})
    return {
        "harness": manifest.get("harness"),
        "datasets": {k: v.get("sha256") for k, v in manifest.get("datasets", {}).items()},
        "model": manifest.get("model"),
        "prompts": manifest.get("prompts", {}),
        "record_parameters": {k: params.get(k) for k in manifest.get("record_keys", [])},
    }


def read_manifest(run_dir: Path, harness: str | None = None) -> dict[str, Any]:
    """The run's manifest; with ``harness``, refused unless the run is that harness's."""
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        raise UserInputError(f"{run_dir}: no {MANIFEST}; is this the --out folder of a vouch eval run?")
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{path}: not valid JSON ({exc.msg})") from None
    if harness is not None and manifest.get("harness") != harness:
        article = "an" if harness[0] in "aeiou" else "a"
        raise UserInputError(f"{run_dir} holds a {manifest.get('harness')!r} run, not {article} {harness} run")
    return manifest


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def prepare_run_dir(out_dir: Path, manifest: dict[str, Any], records_name: str) -> None:
    """Create the folder and write the manifest; refuse to resume another run's records. A
    resumed run keeps the first manifest's creation time and lists every resume."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / MANIFEST
    if path.is_file() and (out_dir / records_name).is_file():
        old = read_manifest(out_dir)
        if _identity(old) != _identity(manifest):
            mine, theirs = _identity(manifest), _identity(old)
            diff = [k for k in mine if mine[k] != theirs[k]]
            raise UserInputError(
                f"{out_dir} holds a run of other inputs ({', '.join(diff)} differ); "
                f"give another --out, or delete the folder to start again")
        manifest["created"] = old.get("created", manifest["created"])
        manifest["resumed"] = old.get("resumed", []) + [time.strftime("%Y-%m-%dT%H:%M:%S%z")]
    write_json(path, manifest)


class RecordLog:
    """The append-only JSONL of a run. The latest record of an id wins, so an item skipped
    once and done on a resume counts once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._by_id: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    # A run killed mid-write leaves a partial last line: that item is redone.
                    continue
                self._by_id[str(rec["key"])] = rec

    def done(self, key: str) -> bool:
        rec = self._by_id.get(str(key))
        return rec is not None and not rec.get("skipped")

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # NaN stays NaN (a check's evidence may hold one): the record must replay exactly.
        line = json.dumps(record, ensure_ascii=False)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
        self._by_id[str(record["key"])] = record

    def records(self) -> list[dict[str, Any]]:
        """Every kept record, in input order (``index``), so a resumed run and a fresh one
        resample the same items in the same order."""
        return sorted(self._by_id.values(), key=lambda r: (r.get("index", 0), str(r["key"])))


def run_items(out_dir: Path, manifest: dict[str, Any], records_name: str, items: list[Any], *,
              key: Callable[[Any], str], path_of: Callable[[Any], "Path | None"],
              evaluate: Callable[[Any, int, Any], dict[str, Any]], missing: Callable[[int, Any], dict[str, Any]],
              config: Config | None, progress: ProgressSink) -> list[dict[str, Any]]:
    """Write the manifest into ``out_dir``, then record every item not done there yet:
    ``evaluate(db, index, item)`` on its database (each opened once, all closed at the end),
    or ``missing(index, item)`` when its database file is not there. Returns the records of
    ``items`` (an earlier run's other items left out), in input order."""
    from ..db import connect

    out_dir = Path(out_dir)
    prepare_run_dir(out_dir, manifest, records_name)
    log = RecordLog(out_dir / records_name)
    todo = [(i, item) for i, item in enumerate(items) if not log.done(key(item))]
    progress.start(len(items), len(items) - len(todo))
    open_dbs: dict[Path, Any] = {}
    try:
        for index, item in todo:
            path = path_of(item)
            if path is None or not Path(path).exists():
                log.append(missing(index, item))
            else:
                db = open_dbs.get(path) or open_dbs.setdefault(path, connect(path, config=config))
                log.append(evaluate(db, index, item))
            progress.advance(key(item))
    finally:
        for db in open_dbs.values():
            db.close()
    keep = {key(i) for i in items}
    return [r for r in log.records() if r["key"] in keep]


def replay_bootstrap(manifest: dict[str, Any], replicates: int | None, seed: int | None) -> tuple[int, int]:
    """A replay's bootstrap replicates and seed: as asked, else the stored run's, else the defaults."""
    from .metrics import DEFAULT_REPLICATES, DEFAULT_SEED

    params = manifest.get("parameters", {})
    return (replicates or params.get("bootstrap") or DEFAULT_REPLICATES,
            params.get("seed", DEFAULT_SEED) if seed is None else seed)


def load_records(run_dir: Path, records_name: str) -> list[dict[str, Any]]:
    path = Path(run_dir) / records_name
    if not path.is_file():
        raise UserInputError(f"{run_dir}: no {records_name}; nothing to replay")
    return RecordLog(path).records()


def compare_metrics(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two metrics documents differ (empty when identical)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'replay' if k in a else 'stored'}")
            else:
                out.extend(compare_metrics(a[k], b[k], f"{path}/{k}"))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(compare_metrics(x, y, f"{path}/{i}"))
        return out
    return [] if a == b else [f"{path}: {b!r} stored, {a!r} replayed"]


def default_out(harness: str) -> Path:
    return Path("vouch-eval") / harness


def finish_run(out_dir: Path, records: list[dict[str, Any]], manifest: dict[str, Any],
               analyse: Callable[[list[dict[str, Any]], dict[str, Any]], dict[str, Any]],
               build_report: Callable[..., Report], *, replay_of: str | None = None) -> dict[str, Any]:
    """metrics.json and the reports of a run whose analysis reads only its records and manifest."""
    from .report import write_report

    metrics = analyse(records, manifest)
    write_json(Path(out_dir) / "metrics.json", metrics)
    write_report(out_dir, build_report(metrics, manifest, replay_of=replay_of))
    return metrics
