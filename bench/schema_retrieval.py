#!/usr/bin/env python
"""Benchmark: schema retrieval for ``vouch ask`` on a 2,000-table database (issue 16, part 6).

Not a test. Builds once (cached under ``--data-dir``, default ``bench/.data``, deterministic
from ``--seed``) a SQLite database holding every table of Chinook, Sakila, Northwind and the
demo database, hidden among generated distractor tables with business-like names, columns,
keys and a few rows each (ledgers, audit logs, staging copies, snapshots; many share words
with the real tables, and some of their ``*_id`` columns name real tables). A table whose
name another already took (case-blind: Chinook's ``Customer`` and Sakila's ``customer``) gets
its database's name as a prefix (``sakila_customer``), and the reference SQL's tables are
mapped the same way. Views are copied as tables (their rows, not their SQL).

Then, for every case of the shipped request sets, the generated request sets, the planted
cases and ``../shared/cases/external_dev.jsonl``, it ranks the tables with
:func:`vouchsql.prompting.retrieval.rank_tables` and reports recall@k (k = 5, 10, 20, and 40: what the default budget shows): the share of
cases whose reference SQL's tables (every table it reads, by sqlglot) are all among the first
k, per source and overall, and the time to build the index and to rank. A request set counts
once: its open question, against the tables of both its SQL statements.

    python bench/schema_retrieval.py                 # build if needed, measure, print
    python bench/schema_retrieval.py --misses        # also each case not in the top 10
    python bench/schema_retrieval.py --json > r.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = REPO.parent / "shared"
DATA = REPO / "src" / "vouchsql" / "data"
SOURCES = ("chinook", "sakila", "northwind", "demo")
FORMAT = 3
KS = (5, 10, 20, 40)  # 40: as many tables as the default budget shows (MAX_SHOWN)
PROMPT_CASES = 10

# -- distractor vocabulary: business words, many shared with the real databases -------------------

DOMAINS = ["crm", "erp", "fin", "hr", "ops", "mkt", "sales", "billing", "logistics", "wh", "support", "payroll",
           "procurement", "web", "mobile", "media", "catalog", "retail", "loyalty", "tax", "risk", "legal",
           "partner", "content", "studio", "music", "streaming", "rental", "store", "pos", "ecom", "analytics"]
PREFIXES = ["stg", "raw", "dim", "fact", "tmp", "bak", "archive", "audit", "etl", "src", "rpt", "int", "mart",
            "legacy", "hist", "ods", "lnd", "snap"]
ENTITIES = ["customer", "order", "invoice", "payment", "product", "employee", "supplier", "vendor", "shipment",
            "account", "ledger", "journal", "budget", "campaign", "lead", "contact", "ticket", "contract", "asset",
            "region", "territory", "store", "warehouse", "inventory", "stock", "price", "discount", "tax",
            "currency", "exchange_rate", "category", "tag", "review", "rating", "session", "event", "click",
            "subscription", "plan", "license", "device", "user", "role", "permission", "department", "project",
            "task", "timesheet", "expense", "refund", "return", "claim", "policy", "quote", "opportunity",
            "partner", "channel", "media", "track", "album", "artist", "film", "actor", "rental", "playlist",
            "genre", "language", "country", "city", "address", "staff", "shipper", "carrier", "line_item",
            "order_line", "sku", "promotion", "coupon", "gift_card", "cart", "wishlist", "visit", "page",
            "survey", "feedback", "complaint", "case", "note", "attachment", "document", "report", "kpi",
            "forecast", "target", "quota", "commission", "bonus", "salary", "benefit", "leave", "shift",
            "schedule", "route", "vehicle", "driver", "delivery", "pickup", "batch", "lot", "serial", "bin",
            "location", "site", "branch", "office", "team", "member", "group", "organisation", "company"]
SUFFIXES = ["history", "log", "snapshot", "daily", "monthly", "weekly", "summary", "archive", "backup", "changes",
            "staging", "detail", "lines", "items", "map", "xref", "stats", "agg", "v2", "v3", "old", "new",
            "import", "export", "queue", "errors", "dedup", "current", "totals", "balances", "entries", "events",
            "2019", "2020", "2021", "2022", "2023", "2024", "q1", "q2", "q3", "q4"]
GENERIC_COLUMNS = ["name", "description", "status", "created_at", "updated_at", "amount", "quantity",
                   "unit_price", "total", "currency", "country", "city", "region", "email", "phone", "first_name",
                   "last_name", "title", "category", "type", "code", "notes", "start_date", "end_date",
                   "is_active", "score", "rating", "source", "batch_id", "loaded_at", "valid_from", "valid_to",
                   "comment", "reference", "balance", "debit", "credit", "posted_on", "period", "year", "month",
                   "owner", "priority", "channel", "reason", "version", "checksum", "row_hash", "country_code",
                   "postal_code", "address", "state", "company", "discount", "tax_amount", "net_amount",
                   "gross_amount", "duration", "length", "weight", "cost", "revenue", "margin", "label"]
META_COLUMNS = ["created_at", "updated_at", "loaded_at", "batch_id", "row_hash", "source", "valid_from", "valid_to",
                "version", "checksum", "is_active", "status"]
_PERSON = ["first_name", "last_name", "email", "phone", "address", "city", "country", "postal_code", "region"]
_MONEY = ["amount", "currency", "tax_amount", "net_amount", "gross_amount", "discount", "total"]
_DATED = ["start_date", "end_date", "period", "year", "month"]
ENTITY_COLUMNS = {
    "customer": _PERSON + ["company", "segment", "signup_date"], "contact": _PERSON + ["title", "company"],
    "employee": _PERSON + ["title", "hire_date", "department_id", "salary"], "staff": _PERSON + ["title", "store_id"],
    "member": _PERSON + ["joined_on", "tier"], "user": ["email", "name", "role", "last_login"],
    "driver": _PERSON + ["license_number"], "artist": ["name", "country", "genre"], "actor": ["first_name", "last_name"],
    "order": ["customer_id", "order_date", "status", "total", "ship_country", "freight"],
    "invoice": ["customer_id", "invoice_date", "total", "billing_country", "billing_city"],
    "payment": ["amount", "paid_on", "method", "currency", "customer_id"], "refund": ["amount", "reason", "refunded_on"],
    "line_item": ["quantity", "unit_price", "product_id", "discount"], "order_line": ["quantity", "unit_price", "product_id"],
    "product": ["name", "sku", "unit_price", "category", "weight"], "sku": ["code", "name", "unit_price"],
    "price": ["unit_price", "currency", "valid_from", "valid_to"], "discount": ["code", "discount", "valid_from"],
    "coupon": ["code", "discount", "expires_on"], "promotion": ["name", "discount", "start_date", "end_date"],
    "ledger": ["account_id", "debit", "credit", "balance", "posted_on"], "journal": ["account_id", "debit", "credit", "posted_on"],
    "account": ["name", "balance", "currency", "opened_on"], "budget": ["amount", "period", "department_id"],
    "expense": ["amount", "category", "employee_id", "spent_on"], "salary": ["employee_id", "amount", "period"],
    "commission": ["employee_id", "amount", "rate"], "tax": ["rate", "amount", "country_code"],
    "shipment": ["carrier", "shipped_on", "delivered_on", "weight", "freight"], "shipper": ["name", "phone"],
    "carrier": ["name", "phone", "country"], "delivery": ["delivered_on", "address", "driver_id"],
    "inventory": ["product_id", "quantity", "warehouse_id"], "stock": ["product_id", "quantity", "bin"],
    "warehouse": ["name", "city", "country"], "store": ["name", "city", "region", "opened_on"],
    "track": ["name", "duration", "album_id", "genre", "unit_price"], "album": ["title", "artist_id", "released_on"],
    "film": ["title", "length", "rating", "release_year"], "rental": ["rented_on", "returned_on", "customer_id"],
    "playlist": ["name", "owner"], "genre": ["name"], "category": ["name", "parent_id"], "tag": ["name"],
    "review": ["rating", "comment", "product_id"], "rating": ["score", "comment"], "ticket": ["subject", "priority", "status"],
    "campaign": ["name", "channel", "budget", "start_date"], "lead": ["email", "source", "score"],
    "subscription": ["plan", "start_date", "end_date", "amount"], "contract": ["start_date", "end_date", "amount"],
    "region": ["name", "country"], "territory": ["name", "region"], "country": ["name", "country_code"],
    "city": ["name", "country"], "address": ["address", "city", "postal_code", "country"],
    "session": ["started_at", "duration", "device"], "event": ["name", "occurred_at", "source"],
    "click": ["page", "occurred_at"], "visit": ["page", "duration"], "department": ["name", "manager_id"],
    "project": ["name", "start_date", "end_date", "budget"], "task": ["title", "priority", "due_on"],
    "timesheet": ["employee_id", "hours", "worked_on"], "shift": ["employee_id", "start_time", "end_time"],
    "vehicle": ["plate", "model", "year"], "route": ["origin", "destination", "distance"],
    "supplier": ["name", "country", "phone", "contact_name"], "vendor": ["name", "country", "email"],
}
WORDS = {
    "status": ["active", "pending", "closed", "cancelled", "shipped", "open", "archived", "failed", "draft"],
    "country": ["Germany", "France", "Canada", "Brazil", "Spain", "India", "Japan", "Mexico", "Norway", "Italy"],
    "city": ["Lyon", "Toronto", "Osaka", "Madrid", "Oslo", "Porto", "Leeds", "Denver", "Austin", "Turin"],
    "region": ["North", "South", "East", "West", "EMEA", "APAC", "LATAM"],
    "category": ["Hardware", "Services", "Travel", "Office", "Software", "Training", "Consulting", "Freight"],
    "type": ["standard", "premium", "internal", "external", "manual", "automatic"],
    "channel": ["email", "web", "phone", "partner", "retail", "social"],
    "currency": ["EUR", "USD", "GBP", "JPY", "CAD", "BRL"],
    "first_name": ["Anna", "Luis", "Mei", "Omar", "Sara", "Tom", "Ines", "Raj", "Olga", "Ken"],
    "last_name": ["Novak", "Silva", "Chen", "Haddad", "Berg", "Kowalski", "Moreau", "Tanaka", "Okafor"],
    "reason": ["duplicate", "late", "damaged", "policy", "request", "correction", "migration"],
    "priority": ["low", "medium", "high", "urgent"],
}


ADJECTIVES = ["Blue", "Rapid", "Prime", "Silver", "North", "Bright", "Quiet", "Golden", "Urban", "Nova", "Delta"]
NOUNS = ["Kit", "Pack", "Unit", "Set", "Box", "Line", "Works", "Labs", "Point", "Group", "Bay", "Field"]


def _distractor_names(rng: random.Random, n: int, taken: set[str]) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        parts = []
        if rng.random() < 0.45:
            parts.append(rng.choice(PREFIXES))
        if rng.random() < 0.6:
            parts.append(rng.choice(DOMAINS))
        parts.append(rng.choice(ENTITIES))
        if rng.random() < 0.3:
            parts.append(rng.choice(ENTITIES))
        if rng.random() < 0.55:
            parts.append(rng.choice(SUFFIXES))
        style = rng.random()
        if style < 0.8:
            name = "_".join(parts)
        elif style < 0.95:  # CamelCase, as Chinook names its tables
            name = "".join(w.capitalize() for p in parts for w in p.split("_"))
        else:  # spaces, as Northwind's views
            name = " ".join(w.capitalize() for p in parts for w in p.split("_"))
        if name.lower() not in taken:
            taken.add(name.lower())
            names.append(name)
    return names


def _value(rng: random.Random, column: str, row: int):
    base = column.split("_")[-1] if column not in WORDS else column
    if column in WORDS or base in WORDS:
        return rng.choice(WORDS.get(column) or WORDS[base])
    if column.endswith(("_at", "_on", "date", "_from", "_to")):
        return f"20{rng.randint(18, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if column in ("name", "title", "label", "description", "notes", "comment", "owner", "company"):
        # What such a column holds: a name or a short phrase, not the table's own words.
        return f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {row}"
    if column == "email":
        return f"{rng.choice(WORDS['first_name']).lower()}.{row}@example.com"
    if column.endswith("id") or column in ("quantity", "year", "month", "version", "period"):
        return rng.randint(1, 500)
    return round(rng.uniform(0, 1000), 2)


def _sql_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def build(data_dir: Path, tables: int, seed: int, log=print) -> tuple[Path, dict]:
    """The haystack database and the name map ``{db: {table (lower case): name in it}}``."""
    path = data_dir / f"haystack_{tables}_{seed}_v{FORMAT}.sqlite"
    names_path = path.with_suffix(".names.json")
    if path.is_file() and names_path.is_file():
        return path, json.loads(names_path.read_text())
    from vouchsql.demo import build_demo

    data_dir.mkdir(parents=True, exist_ok=True)
    ignore = data_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# generated benchmark databases (bench/*.py)\n*\n")
    sources = {name: SHARED / "datasets" / f"{name}.sqlite" for name in SOURCES[:3]}
    sources["demo"] = build_demo(data_dir / "demo.sqlite", force=True)
    for src in sources.values():
        if not Path(src).is_file():
            raise SystemExit(f"{src} is missing: the benchmark needs the shared datasets beside the repository")
    start = time.perf_counter()
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    taken: set[str] = set()
    mapping: dict[str, dict[str, str]] = {}
    real: list[str] = []
    for db, src in sources.items():
        conn.execute("ATTACH DATABASE ? AS src", (str(src),))
        objects = conn.execute("SELECT name, type FROM src.sqlite_master WHERE type IN ('table', 'view') "
                               "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
        names = {}
        for name, _ in objects:
            new = name if name.lower() not in taken else f"{db}_{name}"
            taken.add(new.lower())
            names[name.lower()] = new
        for name, kind in objects:
            new = names[name.lower()]
            cols = conn.execute(f"PRAGMA src.table_info({_sql_name(name)})").fetchall()
            if kind == "view":
                conn.execute(f"CREATE TABLE main.{_sql_name(new)} AS SELECT * FROM src.{_sql_name(name)}")
                continue
            defs = [f"{_sql_name(c[1])} {c[2] or ''}{' NOT NULL' if c[3] else ''}" for c in cols]
            pk = [c[1] for c in sorted((c for c in cols if c[5]), key=lambda c: c[5])]
            if pk:
                defs.append(f"PRIMARY KEY ({', '.join(map(_sql_name, pk))})")
            fks: dict[int, list] = {}
            for fk in conn.execute(f"PRAGMA src.foreign_key_list({_sql_name(name)})").fetchall():
                fks.setdefault(fk[0], []).append(fk)
            for rows in fks.values():
                ref = names.get(rows[0][2].lower(), rows[0][2])
                src_cols = ", ".join(_sql_name(r[3]) for r in rows)
                ref_cols = ", ".join(_sql_name(r[4]) for r in rows if r[4])
                defs.append(f"FOREIGN KEY ({src_cols}) REFERENCES {_sql_name(ref)}" + (f" ({ref_cols})" if ref_cols else ""))
            conn.execute(f"CREATE TABLE main.{_sql_name(new)} ({', '.join(defs)})")
            conn.execute(f"INSERT INTO main.{_sql_name(new)} SELECT * FROM src.{_sql_name(name)}")
        real += list(names.values())
        mapping[db] = names
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE src")
        conn.execute("BEGIN")
    rng = random.Random(seed)
    distractors = _distractor_names(rng, tables - len(real), set(taken))
    # Keys: a table's own id, and *_id columns naming other tables (distractors and real ones
    # alike), some declared as foreign keys, as a warehouse's staging and audit tables have.
    pk_of: dict[str, str] = {}
    for name in distractors:
        entity = name.lower().replace(" ", "_")
        style = rng.random()
        pk_of[name] = "id" if style < 0.5 else (f"{entity.split('_')[-1]}_id" if style < 0.9 else "Id")
    key_names = [e for e in ENTITIES if "_" not in e] + ["customer", "film", "track", "album", "employee", "product"]
    for name in distractors:
        pk = pk_of[name]
        # Columns follow the table's entity, as they do in a real schema (a payment table has
        # an amount and a date), plus load metadata and a few others.
        entity = next((e for e in reversed(ENTITIES) if e in name.lower().replace(" ", "_")
                       or e.replace("_", "") in name.lower().replace(" ", "")), None)
        own = ENTITY_COLUMNS.get(entity, []) or rng.sample(GENERIC_COLUMNS, 4)
        cols = ([pk] + rng.sample(own, min(len(own), rng.randint(2, 6))) + rng.sample(META_COLUMNS, rng.randint(0, 3))
                + rng.sample(GENERIC_COLUMNS, rng.randint(0, 2)))
        refs = []
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            ref = f"{rng.choice(key_names)}_id"
            if ref not in cols:
                cols.append(ref)
                refs.append(ref)
        cols = list(dict.fromkeys(cols))
        defs = [f"{_sql_name(c)} {'INTEGER' if c.endswith('id') or c in ('quantity', 'year', 'month') else 'TEXT' if not c.endswith(('amount', 'price', 'total', 'balance', 'cost', 'revenue', 'margin', 'score', 'rating', 'debit', 'credit', 'weight', 'length', 'duration', 'discount')) else 'REAL'}"
                + (" PRIMARY KEY" if c == pk else "") for c in cols]
        if refs and rng.random() < 0.3:
            target = rng.choice(distractors)
            defs.append(f"FOREIGN KEY ({_sql_name(refs[0])}) REFERENCES {_sql_name(target)} ({_sql_name(pk_of[target])})")
        conn.execute(f"CREATE TABLE {_sql_name(name)} ({', '.join(defs)})")
        rows = [[i + 1 if c == pk else _value(rng, c, i + 1) for c in cols] for i in range(rng.randint(2, 8))]
        conn.executemany(f"INSERT INTO {_sql_name(name)} VALUES ({', '.join('?' * len(cols))})", rows)
    conn.execute("COMMIT")
    count = conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchone()[0]
    conn.close()
    os.replace(tmp, path)
    names_path.write_text(json.dumps(mapping, indent=1))
    log(f"built {path.name}: {count} tables ({len(real)} real, {len(distractors)} generated) in "
        f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return path, mapping


# -- cases -------------------------------------------------------------------------------------------

def _tables_read(sql: str) -> set[str]:
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, read="sqlite")
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    return {t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes}


def cases() -> list[dict]:
    out = []

    def jsonl(path: Path):
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    for source, file in (("request_sets", DATA / "request_sets.jsonl"),
                         ("request_sets_generated", DATA / "request_sets_generated.jsonl")):
        for r in jsonl(file):
            out.append({"source": source, "id": r["id"], "db": r["db"], "question": r["open"],
                        "sql": [r[k] for k in ("sql_a", "sql_b") if r.get(k)]})
    for r in jsonl(DATA / "planted_cases.jsonl"):
        out.append({"source": "planted_cases", "id": r["id"], "db": r["db"], "question": r["question"],
                    "sql": [r["sql"]]})
    external = SHARED / "cases" / "external_dev.jsonl"
    if external.is_file():
        for r in jsonl(external):
            out.append({"source": "external_dev", "id": r["id"], "db": r["db"], "question": r["question"],
                        "sql": [r["reference_sql"]]})
    return out


# -- measuring ---------------------------------------------------------------------------------------

def measure(path: Path, mapping: dict, show_misses: bool = False) -> dict:
    import vouchsql
    from vouchsql.prompting import retrieval

    with tempfile.TemporaryDirectory() as cache, vouchsql.connect(path, cache_dir=cache) as db:
        t0 = time.perf_counter()
        db.schema()
        t1 = time.perf_counter()
        index = retrieval.schema_index(db)
        t2 = time.perf_counter()
        with vouchsql.connect(path, cache_dir=cache) as again:  # the value sample from the cache
            again.schema()
            t3 = time.perf_counter()
            retrieval.schema_index(again)
            t4 = time.perf_counter()
        results, times, misses = [], [], []
        for case in cases():
            names = mapping[case["db"]]
            want = sorted({names.get(t, t) for sql in case["sql"] for t in _tables_read(sql)})
            start = time.perf_counter()
            ranking = retrieval.rank_tables(index, case["question"])
            times.append(time.perf_counter() - start)
            pos = {k.lower(): i for i, k in enumerate(ranking.order)}
            ranks = [pos.get(t.lower(), len(pos)) + 1 for t in want]
            worst = max(ranks) if ranks else 0
            results.append({"source": case["source"], "worst": worst, "ranks": ranks})
            if worst > 10:
                misses.append({"source": case["source"], "id": case["id"], "question": case["question"],
                               "want": dict(zip(want, ranks)), "top": ranking.order[:10]})
        # The prompt's schema text for a few questions, end to end: ranking, then the shown
        # tables profiled on first use (a fresh cache: each is measured here) and rendered.
        from vouchsql.settings import Config

        budget = Config().schema_tokens
        prompt_times, shown = [], []
        for case in cases()[:PROMPT_CASES]:
            start = time.perf_counter()
            ctx = retrieval.schema_for_prompt(db, case["question"], budget=budget)
            prompt_times.append(time.perf_counter() - start)
            shown.append((len(ctx.tables), len(ctx.listed), ctx.tokens))
    by_source: dict[str, dict] = {}
    for name in [*dict.fromkeys(r["source"] for r in results), "shipped", "overall"]:
        # "shipped": the request sets and planted cases, the target population.
        rows = [r for r in results if name in ("overall", r["source"])
                or (name == "shipped" and r["source"] != "external_dev")]
        by_source[name] = {"cases": len(rows), **{f"recall@{k}": round(sum(r["worst"] <= k for r in rows) / len(rows), 4)
                                                 for k in KS},
                           **{f"table_recall@{k}": round(sum(x <= k for r in rows for x in r["ranks"])
                                                         / sum(len(r["ranks"]) for r in rows), 4) for k in KS}}
    return {"database": {"path": str(path), "tables": len(index.infos), "fts": index.engine},
            "timing_s": {"schema": round(t1 - t0, 3), "index_cold": round(t2 - t1, 3),
                         "index_cached_values": round(t4 - t3, 3),
                         "rank_median": round(statistics.median(times), 4), "rank_max": round(max(times), 4),
                         "prompt_cases": len(prompt_times), "prompt_budget": budget,
                         "prompt_median": round(statistics.median(prompt_times), 3),
                         "prompt_max": round(max(prompt_times), 3),
                         "prompt_tables_median": statistics.median(n for n, _, _ in shown),
                         "prompt_listed_median": statistics.median(n for _, n, _ in shown),
                         "prompt_tokens_max": max(t for _, _, t in shown)},
            "recall": by_source,
            "shipped_recall@10": by_source["shipped"]["recall@10"],
            "misses": misses if show_misses else len(misses)}


def machine() -> dict:
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version, "load": load}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=2000, help="tables in the database, real ones included")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", type=Path, default=HERE / ".data")
    ap.add_argument("--misses", action="store_true", help="list each case whose tables are not all in the top 10")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    path, mapping = build(args.data_dir, args.tables, args.seed)
    report = {"machine": machine(), "command": " ".join(["python", "bench/schema_retrieval.py", *(argv or sys.argv[1:])]),
              **measure(path, mapping, args.misses)}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    m, t = report["machine"], report["timing_s"]
    print(f"machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}, SQLite {m['sqlite']}, load {m['load']}")
    print(f"database: {report['database']['tables']} tables; BM25 by {report['database']['fts']}")
    print(f"catalogue (db.schema) {t['schema']} s; index: {t['index_cold']} s sampling values, "
          f"{t['index_cached_values']} s from the cached sample; rank median {t['rank_median'] * 1000:.1f} ms, "
          f"max {t['rank_max'] * 1000:.1f} ms")
    print(f"prompt schema ({t['prompt_cases']} questions, budget {t['prompt_budget']}, tables profiled on first use): "
          f"median {t['prompt_median']} s, max {t['prompt_max']} s; {t['prompt_tables_median']} tables shown, "
          f"{t['prompt_listed_median']} named (medians), at most {t['prompt_tokens_max']} tokens")
    print(f"{'source':24} {'cases':>5} " + " ".join(f"{'R@' + str(k):>6}" for k in KS)
          + "   " + " ".join(f"{'tR@' + str(k):>6}" for k in KS))
    for name, row in report["recall"].items():
        print(f"{name:24} {row['cases']:>5} " + " ".join(f"{row[f'recall@{k}']:>6.1%}" for k in KS)
              + "   " + " ".join(f"{row[f'table_recall@{k}']:>6.1%}" for k in KS))
    print(f"shipped sets and planted cases, recall@10: {report['shipped_recall@10']:.1%}")
    if args.misses:
        for miss in report["misses"]:
            print(f"- {miss['source']} {miss['id']}: {miss['question']}\n    want {miss['want']}\n    top {miss['top']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
