"""``vouch eval exec``: execution accuracy of predicted SQL against gold SQL, two ways, stated.

- **strict** (BIRD's rule): both run, and the *sets* of result rows are equal — row order and
  duplicate rows ignored, column order significant, values compared as the engine returns them;
- **relaxed** (IES §3.3, Vouch's matching): same row count, and the narrower result equals a
  projection of the wider one onto an injective choice of its columns as a multiset of rows,
  after normalising values (floats to four places, numeric strings to numbers).

Neither is contained in the other: a prediction that repeats rows can be strict-right and
relaxed-wrong; one that returns names as well as ids can be relaxed-right and strict-wrong. A
result cut off at ``max_rows`` cannot settle either rule; such pairs count as matching when
the row counts agree and are reported as undetermined.

Input: a JSONL of predictions ``{"id", "db", "question", "sql", "gold_sql"}``, or a Spider/BIRD
split (``--dataset``) with a predictions file (Spider text, BIRD JSON) or ``--model``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, cast

from ..agreement import results_match
from ..answer import Result
from ..errors import UserInputError
from ..settings import Config
from . import metrics as M
from .cases import DatabaseResolver, read_items
from .progress import NoProgress, ProgressSink
from .report import Item, Report, Section, Table, Text, manifest_section, pct, pct_ci
from .runs import build_manifest, load_records, read_manifest, run_items, write_json

if TYPE_CHECKING:
    from ..db import Database

HARNESS = "exec"
RECORDS = "exec.jsonl"


def strict_equal(pred: Result, gold: Result) -> bool | None:
    """BIRD: ``set(pred_rows) == set(gold_rows)``; ``None`` when a cut-off result leaves it open."""
    if pred.error is not None or gold.error is not None:
        return False
    a = {tuple(r) for r in pred.rows}
    b = {tuple(r) for r in gold.rows}
    if pred.truncated or gold.truncated:
        return None if a <= b or b <= a else False
    return a == b


# Column orders tried at most when columns share their values (a result of ten identical
# columns would otherwise try 10! orders); past it the pair is compared by position.
MAX_COLUMN_ORDERS = 5040
MAX_REORDERED_COLUMNS = 64  # wider results are compared column by column, in place


def orders_rows(sql: str, dialect: str | None = "sqlite") -> bool:
    """Whether the outermost query sorts its rows (Spider's rule: then row order counts)."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:  # noqa: BLE001 - sqlglot raises several kinds; unreadable gold: rows as a multiset
        return " order by " in f" {' '.join(sql.lower().split())} "
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    return tree is not None and tree.args.get("order") is not None


def spider_equal(pred: Result, gold: Result, ordered: bool) -> bool | None:
    """Spider's test-suite rule: both ran, the same number of columns, and for some order of
    the predicted columns the rows equal the gold's — as a list when the gold sorts its rows
    (``ordered``), else as a multiset; values normalised as everywhere in Vouch (numbers to
    four decimals, numeric text as numbers). ``None`` when a cut-off result leaves it open."""
    from collections import Counter
    from itertools import islice

    from ..agreement import normalise_rows

    if pred.error is not None or gold.error is not None:
        return False
    if len(pred.columns) != len(gold.columns):
        return False
    if pred.truncated or gold.truncated:
        return None if pred.row_count == gold.row_count else False
    a, b = normalise_rows(pred), normalise_rows(gold)
    if len(a) != len(b):
        return False
    width = len(gold.columns)
    if width == 0:
        return True
    # Only orders that put a column holding the same values under each gold column.
    col_a = [Counter(r[i] for r in a) for i in range(width)]
    col_b = [Counter(r[i] for r in b) for i in range(width)]
    if width > MAX_REORDERED_COLUMNS:
        fits = [[j] if col_a[j] == col_b[j] else [] for j in range(width)]
    else:
        fits = [[i for i in range(width) if col_a[i] == col_b[j]] for j in range(width)]
    if any(not f for f in fits):
        return False
    target = b if ordered else Counter(b)

    def orders(j: int = 0, used: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
        if j == width:
            yield used
            return
        for i in fits[j]:
            if i not in used:
                yield from orders(j + 1, used + (i,))

    for order in islice(orders(), MAX_COLUMN_ORDERS):
        rows = [tuple(r[i] for i in order) for r in a]
        if (rows if ordered else Counter(rows)) == target:
            return True
    return False


def _items_from_jsonl(path: Path) -> list[dict[str, Any]]:
    items = read_items(path, ("db", "gold_sql"))
    for item in items:
        if "sql" not in item:
            raise UserInputError(f"{path}: item {item['id']!r} has no sql (the prediction; null for none)")
    return items


def _items_from_dataset(dataset: Path, split: str | None, db_root: Path | None,
                        predictions: Path | None) -> list[dict[str, Any]]:
    from .datasets import load_spider_bird, read_predictions

    questions = load_spider_bird(dataset, split=split, db_root=db_root)
    preds = read_predictions(predictions, len(questions)) if predictions else [None] * len(questions)
    return [{"id": q.id, "db": str(q.db_path) if q.db_path else q.db_id, "db_id": q.db_id, "question": q.question,
             "hint": q.hint, "sql": p, "gold_sql": q.gold_sql, "difficulty": q.difficulty}
            for q, p in zip(questions, preds)]


def evaluate_item(db: Database, item: dict[str, Any], index: int) -> dict[str, Any]:
    base = {"key": item["id"], "index": index, "id": item["id"], "db": item.get("db_id") or item["db"],
            "question": item.get("question"), "difficulty": item.get("difficulty"),
            "sql": item.get("sql"), "gold_sql": item["gold_sql"]}
    gold = db.execute(item["gold_sql"])
    if gold.error is not None:
        return {**base, "skipped": f"gold SQL does not run ({gold.error.message})"}
    sql = item.get("sql")
    if not sql or not str(sql).strip():
        return {**base, "pred_error": "no prediction", "strict": False, "relaxed": False, "determined": True,
                "pred_rows": None, "gold_rows": gold.row_count}
    pred = db.execute(sql)
    m = results_match(pred, gold)
    strict = strict_equal(pred, gold)
    return {**base, "pred_error": pred.error.message if pred.error else None,
            "strict": True if strict is None else strict, "relaxed": bool(m.matched),
            "determined": bool(m.determined) and strict is not None,
            "pred_rows": pred.row_count if pred.error is None else None, "gold_rows": gold.row_count}


def run_exec(config: Config, out_dir: Path, *, input_path: Path | None = None, dataset: Path | None = None,
             split: str | None = None, db_root: Path | None = None, predictions: Path | None = None,
             model: str | None = None, datasets: Path | None = None, command: str = "",
             parameters: dict[str, Any] | None = None,
             progress: ProgressSink | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    progress = progress or NoProgress()
    if input_path is not None:
        items = _items_from_jsonl(Path(input_path))
        source = Path(input_path)
    elif dataset is not None:
        from .datasets import find_questions

        items = _items_from_dataset(Path(dataset), split, db_root, predictions)
        source = find_questions(Path(dataset), split)
    else:
        raise UserInputError("give --input PREDICTIONS.jsonl or --dataset")
    predictor: Callable[[Database, dict[str, Any]], str | None] | None = None
    if model is not None:
        from .model import sample_candidates

        draw = sample_candidates(model)

        def predictor(db: Database, item: dict[str, Any]) -> str | None:
            got = draw(db, item)["candidates"]
            return got[0] if got else None  # the shown answer
    # One of the two was given (else the error above).
    base_file = Path(input_path) if input_path is not None else Path(cast(Path, dataset)) / "_"
    resolver = DatabaseResolver(base_file, config, datasets)
    paths = {name: resolver.resolve(name) for name in sorted({str(i["db"]) for i in items})}
    files = {"input": Path(input_path)} if input_path is not None else {}
    if source is not None and input_path is None:
        files["questions"] = source
    if predictions is not None:
        files["predictions"] = Path(predictions)
    manifest = build_manifest(HARNESS, command=command, datasets=files,
                              databases={Path(n).stem if "/" in n else n: p for n, p in paths.items() if p is not None},
                              model=model if model is None or isinstance(model, str) else repr(model),
                              parameters={"samples": config.samples if model else None, "max_rows": config.max_rows, "timeout": config.timeout,
                                                       **(parameters or {})},
                              seed=(parameters or {}).get("seed"), record_keys=("max_rows", "timeout"))

    def evaluate(db: Database, index: int, item: dict[str, Any]) -> dict[str, Any]:
        if predictor is not None:
            item = {**item, "sql": predictor(db, item)}
        return evaluate_item(db, item, index)

    records = run_items(out_dir, manifest, RECORDS, items, key=lambda item: item["id"],
                        path_of=lambda item: paths.get(str(item["db"])), evaluate=evaluate,
                        missing=lambda index, item: {"key": item["id"], "index": index, "id": item["id"],
                                                     "db": item.get("db_id") or item["db"],
                                                     "skipped": f"database {item['db']!r} not found"},
                        config=config, progress=progress)
    return records, manifest


def analyse(records: list[dict[str, Any]], *, replicates: int = M.DEFAULT_REPLICATES,
            seed: int = M.DEFAULT_SEED) -> dict[str, Any]:
    kept = [r for r in records if not r.get("skipped")]
    strict = [bool(r["strict"]) for r in kept]
    relaxed = [bool(r["relaxed"]) for r in kept]
    per_db: dict[str, dict[str, Any]] = {}
    for r in kept:
        d = per_db.setdefault(str(r["db"]), {"n": 0, "strict": 0, "relaxed": 0, "errors": 0})
        d["n"] += 1
        d["strict"] += bool(r["strict"])
        d["relaxed"] += bool(r["relaxed"])
        d["errors"] += r.get("pred_error") is not None
    for d in per_db.values():
        d["strict_rate"] = d["strict"] / d["n"]
        d["relaxed_rate"] = d["relaxed"] / d["n"]
    by_difficulty: dict[str, dict[str, Any]] = {}
    for r in kept:
        if r.get("difficulty"):
            d = by_difficulty.setdefault(r["difficulty"], {"n": 0, "strict": 0, "relaxed": 0})
            d["n"] += 1
            d["strict"] += bool(r["strict"])
            d["relaxed"] += bool(r["relaxed"])
    boot = M.bootstrap({"strict": M.mean_stat(strict), "relaxed": M.mean_stat(relaxed)}, len(kept),
                       replicates=replicates, seed=seed)
    n = len(kept)
    return cast("dict[str, Any]", M.jsonable({
        "n": n, "skipped": len(records) - n,
        "strict": {**M.proportion(strict), "bootstrap_ci": boot.interval("strict")},
        "relaxed": {**M.proportion(relaxed), "bootstrap_ci": boot.interval("relaxed")},
        "relaxed_minus_strict": {"diff": (sum(relaxed) - sum(strict)) / n if n else float("nan"),
                                 "ci": boot.paired("relaxed", "strict"),
                                 "mcnemar": M.mcnemar_exact(strict, relaxed)},
        "agreement": {"both": sum(a and b for a, b in zip(strict, relaxed)),
                      "strict_only": sum(a and not b for a, b in zip(strict, relaxed)),
                      "relaxed_only": sum(b and not a for a, b in zip(strict, relaxed)),
                      "neither": sum(not a and not b for a, b in zip(strict, relaxed))},
        "prediction_errors": sum(r.get("pred_error") is not None for r in kept),
        "undetermined": sum(not r.get("determined", True) for r in kept),
        "per_db": dict(sorted(per_db.items())),
        "by_difficulty": by_difficulty,
        "bootstrap": {"replicates": replicates, "seed": seed},
    }))


def build_report(metrics: dict[str, Any], records: list[dict[str, Any]], manifest: dict[str, Any], *,
                 replay_of: str | None = None) -> Report:
    s, r = metrics["strict"], metrics["relaxed"]
    a = metrics["agreement"]
    intro: list[Item]
    intro = [Text(f"{metrics['n']} predictions scored, {metrics['skipped']} skipped; "
                  f"{metrics['prediction_errors']} predictions did not run; "
                  f"{metrics['undetermined']} pairs were cut off at max_rows (counted as matching).")]
    if replay_of:
        intro.append(Text(f"Replayed from `{replay_of}` (no SQL run)."))
    rmd = metrics["relaxed_minus_strict"]
    sections = [
        Section("Execution accuracy", [
            Table(["rule", "accuracy (Wilson 95% CI)", "right / n"],
                  [["strict (BIRD: set equality of rows)", pct_ci(s["rate"], s["ci"]), f"{s['k']} / {s['n']}"],
                   ["relaxed (IES matching)", pct_ci(r["rate"], r["ci"]), f"{r['k']} / {r['n']}"]]),
            Text(f"Relaxed − strict: {pct(rmd['diff'])} (paired bootstrap 95% CI {pct(rmd['ci'][0])} to "
                 f"{pct(rmd['ci'][1])}; exact McNemar p = {rmd['mcnemar']['p']:.3g}). Both right {a['both']}, "
                 f"strict only {a['strict_only']}, relaxed only {a['relaxed_only']}, neither {a['neither']}."),
        ]),
        Section("Per database", [Table(["database", "n", "strict", "relaxed", "errors"],
                                       [[db, d["n"], pct(d["strict_rate"]), pct(d["relaxed_rate"]), d["errors"]]
                                        for db, d in metrics["per_db"].items()])]),
    ]
    if metrics["by_difficulty"]:
        sections.append(Section("Per difficulty", [Table(["difficulty", "n", "strict", "relaxed"],
                                                         [[k, d["n"], pct(d["strict"] / d["n"]), pct(d["relaxed"] / d["n"])]
                                                          for k, d in metrics["by_difficulty"].items()])]))
    skipped = [x for x in records if x.get("skipped")]
    if skipped:
        sections.append(Section("Skipped", [Text("\n".join(f"- {x['id']}: {x['skipped']}" for x in skipped[:50]))]))
    sections.append(manifest_section(manifest))
    return Report(title="Execution accuracy", command=manifest.get("command"), intro=intro, sections=sections,
                  manifest=manifest)


def finish(out_dir: Path, records: list[dict[str, Any]], manifest: dict[str, Any], *, replicates: int | None = None,
           seed: int | None = None, replay_of: str | None = None) -> tuple[dict[str, Any], Report]:
    """Write metrics.json and the reports; ``replicates`` and ``seed`` default to the run's own."""
    from .report import write_report

    params = manifest.get("parameters", {})
    if seed is None:
        seed = params.get("seed")
    metrics = analyse(records, replicates=replicates or params.get("bootstrap") or M.DEFAULT_REPLICATES,
                      seed=M.DEFAULT_SEED if seed is None else seed)
    write_json(Path(out_dir) / "metrics.json", metrics)
    report = build_report(metrics, records, manifest, replay_of=replay_of)
    write_report(out_dir, report)
    return metrics, report


def replay(run_dir: Path, out_dir: Path, *, replicates: int | None = None,
           seed: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    manifest = read_manifest(run_dir, HARNESS)
    records = load_records(run_dir, RECORDS)
    return manifest, finish(out_dir, records, manifest, replicates=replicates, seed=seed, replay_of=str(run_dir))[0]
