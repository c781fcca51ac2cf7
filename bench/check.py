#!/usr/bin/env python
"""Benchmark: what one ``vouch check`` costs once the database profile is cached.

Not a test. For each database (the shared ``../shared/datasets/{sakila,chinook,northwind}.sqlite``
relative to the repository root, each skipped with a message where absent, and the demo
database built by ``vouchsql.demo.build_demo`` into a temporary folder) it takes 8 realistic
questions, each with K = 5 candidate SQL statements (a mix of identical and slightly different
SQL: other joins, DISTINCT, LEFT JOIN, other LIMITs, cosmetic rewrites), and

1. opens the database once with ``vouchsql.connect(path, cache_dir=<temporary folder>)`` and
   warms the profile (one ``check``), so every measured check finds the profile in memory;
2. runs ``vouchsql.pipeline.check_candidates(db, question, sqls, timings=Timings())``
   ``--repeat`` times per question (after ``--warmup`` unmeasured calls) and reports medians.

The issue's target: with a cached profile, checking one answer with K = 5 candidates on Sakila
costs at most 50 ms of Vouch's own time beyond executing the SQL.

Columns (milliseconds, medians over the repeats):

* ``wall``    ``time.perf_counter`` around ``check_candidates`` (includes building the Answer);
* ``total``   ``Timings.total_ms`` (stops before the pydantic ``Answer`` is built);
* ``exec``    ``Timings.execute_ms``: ``db.execute`` of the K candidates; split into
  ``engine`` (time inside the engine, ``Database._run``: SQLite running and fetching) and
  ``gate+`` (the rest: the sqlglot gate parse, value conversion, the ``Result`` model);
* ``chk_sql`` ``Timings.check_sql_ms``: the checks' own probe queries in the engine;
* ``chk_py``  ``checks_ms - check_sql_ms``: the checks' Python (incl. building/gating probes);
* ``ch_sql``  engine time of the choice detectors' alternatives and counts (``detect_choices``);
* ``ch_py``   ``stages["choices_ms"] - ch_sql``: the detectors' Python;
* ``prep``    ``total - profile - exec - checks - choices``: clustering, agreement, parsing
  and inspecting the shown SQL (sqlglot ``qualify`` + scopes), scoring;
* ``answer``  ``wall - total``: building the ``Answer`` model after ``total_ms`` stops;
* ``own``     the brief's definition, ``total - execute - check_sql - profile`` (it counts
  the choice detectors' SQL as Vouch's own time);
* ``own*``    Vouch's own Python time, strictly: ``wall - profile - every engine call``
  (candidates, checks and choices), so the gate parse of each candidate, the choice
  detectors' Python and the Answer count as Vouch's; **the target is judged on this**;
* ``beyond``  everything Vouch adds to running the K candidates: ``wall - profile -
  engine(candidates)``, i.e. ``own*`` plus the checks' and detectors' own SQL;
* ``min own*`` the fastest repeat (least disturbed on a shared machine);
* ``own*/wall`` the share of the wall time that is Vouch's own; ``q chk`` / ``q ch`` the
  queries the checks / the choice detectors ran.

The split into engine and gate time comes from wrapping ``_run``, ``parse`` and ``execute`` on
the opened ``Database`` instance and the stage functions ``inspect_sql``, ``run_checks`` and
``detect_choices`` in ``vouchsql.pipeline.checking``'s namespace, in this process only (a few
microseconds per call); no library file is changed.

Also reported per database: loading the cached profile from disk (a fresh ``connect`` +
``profile()``, what every CLI invocation pays), and, with ``--cli N``, the end-to-end wall time
of the ``vouch check`` command as a subprocess (interpreter start and imports included).

``--what-if`` measures proposed library changes, simulated from outside on the opened
instance (see ``WHAT_IF``), against an unpatched baseline, round-robin, and checks that the
verdicts, scores, agreement and fired checks stay the same.

Medians are taken per column, so the columns of one row need not add up exactly. The machine
may be shared: the load average is printed, and ``min own*`` is the least disturbed figure.

``--cprofile`` (automatic when the target is missed) runs the Sakila questions under cProfile
and prints where Vouch's Python time goes, grouped by library and by function.

Examples::

    python bench/check.py                     # all databases, --repeat 20
    python bench/check.py --db sakila --repeat 50 --what-if --cprofile
    python bench/check.py --json > check.json
"""

from __future__ import annotations

import os
import sys

# bench/profile.py sits beside this file: drop this folder from the import path so that the
# standard library's ``profile`` module (which cProfile imports) is not shadowed by it.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "datasets"
SHARED_NAMES = ("sakila", "chinook", "northwind")
TARGET_MS = 50.0
TARGET_DB = "sakila"
K = 5


# -- the workload ------------------------------------------------------------------------

@dataclass(frozen=True)
class Q:
    """One question. ``variants[0]`` is the shown SQL; ``pattern`` picks the K = 5 candidates
    by index into ``variants`` (``"00102"``: shown, shown, variant 1, shown, variant 2)."""

    id: str
    question: str
    variants: tuple[str, ...]
    pattern: str = "00102"
    answer_text: str | None = None

    @property
    def candidates(self) -> list[str]:
        return [self.variants[int(c)] for c in self.pattern]


SAKILA = [
    Q("top_categories", "Which 5 film categories have the most films?", (
        "SELECT c.name, COUNT(*) AS films FROM film f "
        "JOIN film_category fc ON fc.film_id = f.film_id "
        "JOIN category c ON c.category_id = fc.category_id "
        "GROUP BY c.name ORDER BY films DESC LIMIT 5",
        "SELECT c.name, COUNT(fc.film_id) AS n FROM category c "
        "JOIN film_category fc ON c.category_id = fc.category_id "
        "GROUP BY c.category_id ORDER BY n DESC LIMIT 5",
        "SELECT name, (SELECT COUNT(*) FROM film_category fc WHERE fc.category_id = c.category_id) AS films "
        "FROM category c ORDER BY films DESC LIMIT 5",
    ), answer_text="Sports leads with 74 films, then Foreign with 73."),
    Q("revenue_per_store", "How much revenue has each store taken?", (
        "SELECT s.store_id, ROUND(SUM(p.amount), 2) AS revenue FROM payment p "
        "JOIN staff st ON st.staff_id = p.staff_id JOIN store s ON s.store_id = st.store_id "
        "GROUP BY s.store_id ORDER BY s.store_id",
        "SELECT c.store_id, ROUND(SUM(p.amount), 2) AS revenue FROM payment p "
        "JOIN customer c ON c.customer_id = p.customer_id GROUP BY c.store_id ORDER BY c.store_id",
        "SELECT st.store_id, ROUND(SUM(p.amount), 2) FROM staff st "
        "JOIN payment p ON p.staff_id = st.staff_id GROUP BY st.store_id",
    ), pattern="00102"),
    Q("top_customers", "Who are the 10 customers who paid the most?", (
        "SELECT c.first_name, c.last_name, SUM(p.amount) AS total FROM customer c "
        "JOIN payment p ON p.customer_id = c.customer_id "
        "GROUP BY c.customer_id ORDER BY total DESC LIMIT 10",
        "SELECT c.first_name, c.last_name, ROUND(SUM(p.amount), 2) AS total_paid FROM payment p "
        "JOIN customer c ON c.customer_id = p.customer_id "
        "GROUP BY c.customer_id, c.first_name, c.last_name ORDER BY total_paid DESC LIMIT 10",
        "SELECT c.first_name, c.last_name, SUM(p.amount) AS total FROM customer c "
        "JOIN payment p ON p.customer_id = c.customer_id "
        "GROUP BY c.customer_id ORDER BY total DESC LIMIT 11",
    )),
    Q("avg_length_by_rating", "What is the average film length for each rating?", (
        "SELECT rating, ROUND(AVG(length), 1) AS avg_length FROM film GROUP BY rating ORDER BY rating",
        "SELECT rating, AVG(length) FROM film GROUP BY rating",
        "SELECT f.rating, ROUND(AVG(f.length), 1) AS avg_len FROM film f "
        "JOIN film_category fc ON fc.film_id = f.film_id GROUP BY f.rating",
    ), pattern="01002"),
    Q("busiest_actor", "Which actor has appeared in the most films?", (
        "SELECT a.first_name, a.last_name, COUNT(*) AS films FROM actor a "
        "JOIN film_actor fa ON fa.actor_id = a.actor_id "
        "GROUP BY a.actor_id ORDER BY films DESC LIMIT 1",
        "WITH n AS (SELECT actor_id, COUNT(*) AS films FROM film_actor GROUP BY actor_id) "
        "SELECT a.first_name, a.last_name, n.films FROM n JOIN actor a ON a.actor_id = n.actor_id "
        "WHERE n.films = (SELECT MAX(films) FROM n)",
    ), pattern="00101"),
    Q("rentals_per_month", "How many rentals were made each month?", (
        "SELECT strftime('%Y-%m', rental_date) AS month, COUNT(*) AS rentals FROM rental "
        "GROUP BY month ORDER BY month",
        "SELECT substr(rental_date, 1, 7) AS month, COUNT(rental_id) AS rentals FROM rental "
        "GROUP BY 1 ORDER BY 1",
    ), pattern="01010"),
    Q("never_rented", "How many films have never been rented?", (
        "SELECT COUNT(*) FROM film f WHERE f.film_id NOT IN "
        "(SELECT i.film_id FROM inventory i JOIN rental r ON r.inventory_id = i.inventory_id)",
        "SELECT COUNT(*) FROM film f LEFT JOIN inventory i ON i.film_id = f.film_id "
        "LEFT JOIN rental r ON r.inventory_id = i.inventory_id WHERE r.rental_id IS NULL",
        "SELECT COUNT(DISTINCT f.film_id) FROM film f LEFT JOIN inventory i ON i.film_id = f.film_id "
        "LEFT JOIN rental r ON r.inventory_id = i.inventory_id WHERE r.rental_id IS NULL",
    ), answer_text="42 films have never been rented."),
    Q("customers_per_country", "Which 10 countries have the most customers?", (
        "SELECT co.country, COUNT(*) AS customers FROM customer cu "
        "JOIN address a ON a.address_id = cu.address_id JOIN city ci ON ci.city_id = a.city_id "
        "JOIN country co ON co.country_id = ci.country_id "
        "GROUP BY co.country ORDER BY customers DESC LIMIT 10",
        "SELECT co.country, COUNT(cu.customer_id) AS n FROM country co "
        "JOIN city ci ON ci.country_id = co.country_id JOIN address a ON a.city_id = ci.city_id "
        "JOIN customer cu ON cu.address_id = a.address_id "
        "GROUP BY co.country_id ORDER BY n DESC LIMIT 10",
        "SELECT co.country, COUNT(DISTINCT cu.customer_id) AS customers FROM customer cu "
        "JOIN address a ON a.address_id = cu.address_id JOIN city ci ON ci.city_id = a.city_id "
        "JOIN country co ON co.country_id = ci.country_id "
        "GROUP BY co.country ORDER BY customers DESC, co.country LIMIT 10",
    ), pattern="01002"),
]

CHINOOK = [
    Q("top_genres", "Which 5 genres have the most tracks?", (
        "SELECT g.Name, COUNT(*) AS tracks FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
        "GROUP BY g.GenreId ORDER BY tracks DESC LIMIT 5",
        "SELECT g.Name, COUNT(t.TrackId) AS n FROM Genre g JOIN Track t ON t.GenreId = g.GenreId "
        "GROUP BY g.Name ORDER BY n DESC LIMIT 5",
    ), pattern="00101"),
    Q("sales_by_country", "Which 10 countries bring in the most sales?", (
        "SELECT BillingCountry, ROUND(SUM(Total), 2) AS sales FROM Invoice "
        "GROUP BY BillingCountry ORDER BY sales DESC LIMIT 10",
        "SELECT c.Country, ROUND(SUM(i.Total), 2) AS sales FROM Invoice i "
        "JOIN Customer c ON c.CustomerId = i.CustomerId GROUP BY c.Country ORDER BY sales DESC LIMIT 10",
        "SELECT BillingCountry, SUM(Total) AS sales FROM Invoice "
        "GROUP BY BillingCountry ORDER BY sales DESC LIMIT 10",
    ), answer_text="The USA leads with 523.06, then Canada with 303.96."),
    Q("artists_most_albums", "Which 5 artists have released the most albums?", (
        "SELECT ar.Name, COUNT(*) AS albums FROM Album al JOIN Artist ar ON ar.ArtistId = al.ArtistId "
        "GROUP BY ar.ArtistId ORDER BY albums DESC LIMIT 5",
        "SELECT ar.Name, COUNT(al.AlbumId) AS albums FROM Artist ar "
        "LEFT JOIN Album al ON al.ArtistId = ar.ArtistId GROUP BY ar.ArtistId ORDER BY albums DESC LIMIT 5",
    ), pattern="01010"),
    Q("best_selling_track", "Which track has sold the most units?", (
        "SELECT t.Name, SUM(il.Quantity) AS units FROM InvoiceLine il "
        "JOIN Track t ON t.TrackId = il.TrackId GROUP BY t.TrackId ORDER BY units DESC LIMIT 1",
        "SELECT t.Name, COUNT(*) AS units FROM InvoiceLine il "
        "JOIN Track t ON t.TrackId = il.TrackId GROUP BY t.TrackId ORDER BY units DESC, t.Name LIMIT 1",
    ), pattern="00101"),
    Q("avg_length_media", "What is the average track length in minutes per media type?", (
        "SELECT m.Name, ROUND(AVG(t.Milliseconds) / 60000.0, 2) AS minutes FROM Track t "
        "JOIN MediaType m ON m.MediaTypeId = t.MediaTypeId GROUP BY m.MediaTypeId ORDER BY minutes DESC",
        "SELECT m.Name, AVG(t.Milliseconds) / 60000.0 AS minutes FROM MediaType m "
        "JOIN Track t ON t.MediaTypeId = m.MediaTypeId GROUP BY m.Name",
    ), pattern="00110"),
    Q("top_spender", "Which customer has spent the most?", (
        "SELECT c.FirstName, c.LastName, SUM(i.Total) AS spent FROM Customer c "
        "JOIN Invoice i ON i.CustomerId = c.CustomerId GROUP BY c.CustomerId ORDER BY spent DESC LIMIT 1",
        "SELECT c.FirstName, c.LastName, ROUND(SUM(il.UnitPrice * il.Quantity), 2) AS spent FROM Customer c "
        "JOIN Invoice i ON i.CustomerId = c.CustomerId JOIN InvoiceLine il ON il.InvoiceId = i.InvoiceId "
        "GROUP BY c.CustomerId ORDER BY spent DESC LIMIT 1",
        "SELECT c.FirstName, c.LastName, SUM(i.Total) AS spent FROM Customer c "
        "JOIN Invoice i ON i.CustomerId = c.CustomerId JOIN InvoiceLine il ON il.InvoiceId = i.InvoiceId "
        "GROUP BY c.CustomerId ORDER BY spent DESC LIMIT 1",
    )),
    Q("customers_per_rep", "How many customers does each support rep look after?", (
        "SELECT e.FirstName, e.LastName, COUNT(c.CustomerId) AS customers FROM Employee e "
        "LEFT JOIN Customer c ON c.SupportRepId = e.EmployeeId GROUP BY e.EmployeeId ORDER BY customers DESC",
        "SELECT e.FirstName, e.LastName, COUNT(*) AS customers FROM Employee e "
        "JOIN Customer c ON c.SupportRepId = e.EmployeeId GROUP BY e.EmployeeId ORDER BY customers DESC",
    ), pattern="01010"),
    Q("invoices_per_year", "How many invoices were issued each year?", (
        "SELECT strftime('%Y', InvoiceDate) AS year, COUNT(*) AS invoices FROM Invoice "
        "GROUP BY year ORDER BY year",
        "SELECT substr(InvoiceDate, 1, 4) AS year, COUNT(InvoiceId) FROM Invoice GROUP BY 1",
    ), pattern="00101"),
]

NORTHWIND = [
    Q("products_per_category", "How many products are in each category?", (
        "SELECT c.CategoryName, COUNT(*) AS products FROM Products p "
        "JOIN Categories c ON c.CategoryID = p.CategoryID GROUP BY c.CategoryID ORDER BY products DESC",
        "SELECT c.CategoryName, COUNT(p.ProductID) AS n FROM Categories c "
        "LEFT JOIN Products p ON p.CategoryID = c.CategoryID GROUP BY c.CategoryName",
    ), pattern="00101"),
    Q("top_customers_orders", "Which 5 customers placed the most orders?", (
        "SELECT c.CompanyName, COUNT(*) AS orders FROM Orders o "
        "JOIN Customers c ON c.CustomerID = o.CustomerID GROUP BY c.CustomerID ORDER BY orders DESC LIMIT 5",
        "SELECT CustomerID, COUNT(OrderID) AS n FROM Orders GROUP BY CustomerID ORDER BY n DESC LIMIT 5",
        "SELECT c.CompanyName, COUNT(o.OrderID) AS orders FROM Customers c "
        "JOIN Orders o ON o.CustomerID = c.CustomerID GROUP BY c.CompanyName ORDER BY orders DESC LIMIT 5",
    ), pattern="00200"),
    Q("revenue_per_employee", "How much revenue has each employee generated?", (
        "SELECT e.FirstName, e.LastName, ROUND(SUM(od.UnitPrice * od.Quantity * (1 - od.Discount)), 2) AS revenue "
        "FROM Employees e JOIN Orders o ON o.EmployeeID = e.EmployeeID "
        "JOIN \"Order Details\" od ON od.OrderID = o.OrderID GROUP BY e.EmployeeID ORDER BY revenue DESC",
        "SELECT e.FirstName, e.LastName, ROUND(SUM(od.UnitPrice * od.Quantity), 2) AS revenue "
        "FROM Employees e JOIN Orders o ON o.EmployeeID = e.EmployeeID "
        "JOIN \"Order Details\" od ON od.OrderID = o.OrderID GROUP BY e.EmployeeID ORDER BY revenue DESC",
    ), pattern="00100", answer_text="Margaret Peacock generated the most revenue."),
    Q("most_expensive_product", "What is the most expensive product?", (
        "SELECT ProductName, UnitPrice FROM Products ORDER BY UnitPrice DESC LIMIT 1",
        "SELECT ProductName, UnitPrice FROM Products WHERE UnitPrice = (SELECT MAX(UnitPrice) FROM Products)",
    ), pattern="00101"),
    Q("orders_per_shipper", "How many orders has each shipper carried?", (
        "SELECT s.CompanyName, COUNT(*) AS orders FROM Orders o JOIN Shippers s ON s.ShipperID = o.ShipVia "
        "GROUP BY s.ShipperID ORDER BY orders DESC",
        "SELECT s.CompanyName, COUNT(o.OrderID) AS orders FROM Shippers s "
        "LEFT JOIN Orders o ON o.ShipVia = s.ShipperID GROUP BY s.CompanyName ORDER BY orders DESC",
    ), pattern="01010"),
    Q("avg_freight_country", "What is the average freight per ship country, highest first (top 10)?", (
        "SELECT ShipCountry, ROUND(AVG(Freight), 2) AS avg_freight FROM Orders "
        "GROUP BY ShipCountry ORDER BY avg_freight DESC LIMIT 10",
        "SELECT ShipCountry, AVG(Freight) AS f FROM Orders GROUP BY ShipCountry ORDER BY f DESC LIMIT 10",
    ), pattern="00110"),
    Q("top_supplier", "Which supplier provides the most products?", (
        "SELECT s.CompanyName, COUNT(*) AS products FROM Products p "
        "JOIN Suppliers s ON s.SupplierID = p.SupplierID GROUP BY s.SupplierID ORDER BY products DESC LIMIT 1",
        "SELECT s.CompanyName, COUNT(p.ProductID) AS products FROM Suppliers s "
        "JOIN Products p ON p.SupplierID = s.SupplierID GROUP BY s.SupplierID "
        "ORDER BY products DESC, s.CompanyName LIMIT 1",
    ), pattern="00101"),
    Q("orders_per_year", "How many orders were placed each year?", (
        "SELECT strftime('%Y', OrderDate) AS year, COUNT(*) AS orders FROM Orders GROUP BY year ORDER BY year",
        "SELECT substr(OrderDate, 1, 4) AS year, COUNT(OrderID) AS orders FROM Orders GROUP BY 1 ORDER BY 1",
    ), pattern="01010"),
]


def demo_questions() -> list[Q]:
    """The demo's own worked examples that have an alternative SQL (8 of them)."""
    from vouchsql.demo import EXAMPLES

    out = []
    for i, ex in enumerate(EXAMPLES):
        if not ex.get("alt_sql"):
            continue
        out.append(Q(f"demo{i}_" + ex["title"].lower().replace(" ", "_").replace("-", "")[:18],
                     ex["question"], (ex["sql"], ex["alt_sql"]), pattern="00101"))
    return out[:8]


# -- instrumentation ---------------------------------------------------------------------

_CURRENT: list = [None]  # the Probe of the check being measured (pipeline stages report to it)


def _install_stage_hooks() -> None:
    """Wrap the pipeline's stage functions, looked up in ``vouchsql.pipeline.checking``'s globals at
    call time, so the engine and gate time inside each stage is told apart: the candidates,
    ``inspect_sql``, ``run_checks`` and ``detect_choices``. Library files are not changed."""
    import vouchsql.pipeline.checking as pipeline

    if getattr(pipeline, "_bench_hooked", False):
        return
    for name, phase in (("inspect_sql", "inspect"), ("run_checks", "checks"), ("detect_choices", "choices")):
        fn = getattr(pipeline, name, None)
        if fn is None:
            continue

        def wrapped(*args, _fn=fn, _phase=phase, **kwargs):
            probe = _CURRENT[0]
            if probe is None:
                return _fn(*args, **kwargs)
            prev, probe.phase = probe.phase, _phase
            try:
                return _fn(*args, **kwargs)
            finally:
                probe.phase = prev

        setattr(pipeline, name, wrapped)
    pipeline._bench_hooked = True


class Probe:
    """Wraps ``_run``, ``parse`` and ``execute`` on one Database instance to split engine time
    (SQLite running and fetching) from gate time (sqlglot parse), by pipeline stage: the K
    candidates (``execute`` outside any other stage), ``checks``, ``choices``, ``inspect``."""

    def __init__(self, db) -> None:
        _install_stage_hooks()
        self.phase = "other"
        self.engine: dict[str, float] = defaultdict(float)
        self.gate: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.on_reset: list = []  # callables run before each measured check (what-if memos)
        run, parse, execute = db._run, db.parse, db.execute
        clock = time.perf_counter

        def _run(sql, max_rows, timeout):
            start = clock()
            try:
                return run(sql, max_rows, timeout)
            finally:
                self.engine[self.phase] += (clock() - start) * 1000
                self.calls[self.phase] += 1

        def _parse(sql):
            start = clock()
            try:
                return parse(sql)
            finally:
                self.gate[self.phase] += (clock() - start) * 1000

        def _execute(*args, **kwargs):
            if self.phase != "other":  # a stage's own alternative query (choices)
                return execute(*args, **kwargs)
            self.phase = "candidates"
            try:
                return execute(*args, **kwargs)
            finally:
                self.phase = "other"

        db._run, db.parse, db.execute = _run, _parse, _execute

    def reset(self) -> None:
        self.engine.clear()
        self.gate.clear()
        self.calls.clear()
        for hook in self.on_reset:
            hook()


# -- what-if: proposed library changes, simulated on the instance ------------------------

def _patch_parse_memo(db, hooks: list) -> None:
    """Proposal: parse each distinct SQL text once per check (the gate parses every candidate,
    then the pipeline parses the shown SQL again; duplicates among the K are common)."""
    parse, memo = db.parse, {}

    def parse_once(sql):
        tree = memo.get(sql)
        if tree is None:
            tree = memo[sql] = parse(sql)
        return tree

    db.parse = parse_once
    hooks.append(memo.clear)


def _patch_exec_dedupe(db, hooks: list) -> None:
    """Proposal: run each distinct candidate SQL text once per check and share the Result
    (identical samples are common; agreement already short-cuts ``a.result is b.result``)."""
    execute, memo = db.execute, {}

    def execute_once(sql, **kwargs):
        if kwargs:
            return execute(sql, **kwargs)
        result = memo.get(sql)
        if result is None:
            result = memo[sql] = execute(sql)
        return result

    db.execute = execute_once
    hooks.append(memo.clear)


def _patch_probe_no_gate(db, hooks: list) -> None:
    """Proposal: Vouch's own probe SQL (built from an already-gated tree) skips the second
    sqlglot parse in ``Database.query``; the engine's read-only layers still apply."""
    def query(sql, *, timeout=None, max_rows=1_000_000):
        start = time.perf_counter()
        try:
            _, rows, _ = db._run(sql, max_rows, timeout or db.config.profile_timeout)
        finally:
            db.query_ms += (time.perf_counter() - start) * 1000
        return rows

    db.query = query


_SCHEMA_MEMO: dict[int, object] = {}


def _patch_schema_memo(db, hooks: list) -> None:
    """Proposal: build sqlglot's ``MappingSchema`` once per profile and hand that to
    ``qualify``; ``inspect_sql`` passes a plain dict, which ``qualify`` turns into a
    ``MappingSchema`` (normalising every table and column name) on every check. Simulated by
    wrapping ``vouchsql.sql.inspect.schema_mapping`` for this database's profile only."""
    from sqlglot.schema import MappingSchema

    from vouchsql.sql import inspect as insp

    if not getattr(insp.schema_mapping, "_bench_wrapped", False):
        original = insp.schema_mapping

        def schema_mapping(profile):
            hit = _SCHEMA_MEMO.get(id(profile))
            return hit if hit is not None else original(profile)

        schema_mapping._bench_wrapped = True
        insp.schema_mapping = schema_mapping
    profile = db.profile()
    _SCHEMA_MEMO[id(profile)] = MappingSchema(
        {t.name: {c.name: (c.type or "TEXT") for c in t.columns} for t in profile.tables}, dialect=db.dialect)


WHAT_IF = {
    "schema_memo": (_patch_schema_memo,),
    "parse_memo": (_patch_parse_memo,),
    "exec_dedupe": (_patch_exec_dedupe,),
    "probe_no_gate": (_patch_probe_no_gate,),
    "all four": (_patch_schema_memo, _patch_parse_memo, _patch_exec_dedupe, _patch_probe_no_gate),
}


FIELDS = ("wall", "total", "exec", "engine", "gate_plus", "chk_sql", "chk_py", "prep", "answer",
          "own", "own_strict", "gate_all", "probes")


def measure_once(db, probe: Probe, q: Q) -> dict:
    from vouchsql.pipeline import Timings, check_candidates

    t = Timings()
    probe.reset()
    _CURRENT[0] = probe
    try:
        start = time.perf_counter()
        answer = check_candidates(db, q.question, q.candidates, answer_text=q.answer_text, timings=t)
        wall = (time.perf_counter() - start) * 1000
    finally:
        _CURRENT[0] = None
    engine = probe.engine["candidates"]
    engine_all = sum(probe.engine.values())
    choices_ms = float(t.stages.get("choices_ms", 0.0))
    ch_sql = probe.engine["choices"]
    row = {
        "wall": wall,
        "total": t.total_ms,
        "exec": t.execute_ms,
        "engine": engine,
        "gate_plus": t.execute_ms - engine,
        "chk_sql": t.check_sql_ms,
        "chk_py": t.checks_ms - t.check_sql_ms,
        "ch_sql": ch_sql,
        "ch_py": choices_ms - ch_sql,
        "prep": t.total_ms - t.profile_ms - t.execute_ms - t.checks_ms - choices_ms,
        "answer": wall - t.total_ms,
        "own": t.total_ms - t.execute_ms - t.check_sql_ms - t.profile_ms,
        "own_strict": wall - engine_all - t.profile_ms,
        "beyond": wall - engine - t.profile_ms,
        "profile": t.profile_ms,
        "gate_all": sum(probe.gate.values()),
        "probes": probe.calls["checks"],
        "ch_queries": float(t.stages.get("choices_queries", probe.calls["choices"])),
    }
    return {"row": row, "answer": answer}


def median_row(rows: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def bench_db(name: str, path: Path, questions: list[Q], repeat: int, warmup: int, cache_dir: Path,
             patches: tuple = (), with_disk: bool = True) -> dict:
    import vouchsql

    db = vouchsql.connect(path, cache_dir=str(cache_dir))
    try:
        hooks: list = []
        for patch in patches:
            patch(db, hooks)
        probe = Probe(db)
        probe.on_reset.extend(hooks)
        t0 = time.perf_counter()
        first = measure_once(db, probe, questions[0])  # builds and caches the profile
        warm_ms = (time.perf_counter() - t0) * 1000
        out_q = []
        for q in questions:
            for _ in range(warmup):
                measure_once(db, probe, q)
            runs = [measure_once(db, probe, q) for _ in range(repeat)]
            ans = runs[-1]["answer"]
            errors = [c.result.error.message for c in ans.candidates if c.result.error is not None]
            out_q.append({
                "id": q.id, "question": q.question, "pattern": q.pattern,
                "median": median_row([r["row"] for r in runs]),
                "p90_own_strict": _quantile([r["row"]["own_strict"] for r in runs], 0.9),
                "min_own_strict": min(r["row"]["own_strict"] for r in runs),
                "min_wall": min(r["row"]["wall"] for r in runs),
                "max_own_strict": max(r["row"]["own_strict"] for r in runs),
                "agreement": ans.agreement, "clusters": [c.cluster for c in ans.candidates],
                "rows": ans.shown.result.row_count, "gate": ans.verdict.gate,
                "fired": [c.name for c in ans.checks if c.fired], "errors": errors,
                "choices": [c.type for c in getattr(ans, "choices", [])],
                "verdict": [ans.verdict.gate, ans.verdict.score, ans.agreement,
                            [(c.name, c.fired) for c in ans.checks],
                            [(c.type, c.differs) for c in getattr(ans, "choices", [])]],
            })
        del first
    finally:
        db.close()
    disk = profile_load_ms(path, cache_dir, n=max(3, min(repeat, 10))) if with_disk else None
    per_q = [q["median"] for q in out_q]
    overall = {k: statistics.median(r[k] for r in per_q) for k in per_q[0]}
    return {"db": name, "path": str(path), "warm_first_check_ms": warm_ms, "questions": out_q,
            "overall_median_of_medians": overall,
            "worst_median_own_strict": max(r["own_strict"] for r in per_q),
            "worst_median_own": max(r["own"] for r in per_q),
            "worst_median_beyond": max(r["beyond"] for r in per_q),
            "profile_load_from_disk_ms": disk}


def profile_load_ms(path: Path, cache_dir: Path, n: int) -> float:
    """A fresh connection reading the cached profile from disk: what each CLI call pays."""
    import vouchsql

    times = []
    for _ in range(n):
        start = time.perf_counter()
        db = vouchsql.connect(path, cache_dir=str(cache_dir))
        db.profile()
        times.append((time.perf_counter() - start) * 1000)
        db.close()
    return statistics.median(times)


def cli_ms(path: Path, q: Q, cache_dir: Path, n: int) -> dict:
    """End-to-end ``vouch check`` in a subprocess (interpreter start, imports, disk profile)."""
    exe = shutil.which("vouch", path=os.path.dirname(sys.executable)) or shutil.which("vouch")
    base = [exe] if exe else [sys.executable, "-m", "vouchsql.cli"]
    cmd = base + ["check", "--db", str(path), "--cache-dir", str(cache_dir), "-q", q.question, "--json"]
    for sql in q.candidates:
        cmd += ["--sql", sql]
    runs: dict[str, list[float]] = {"check": [], "imports": [], "bare": []}
    commands = {"check": cmd, "imports": [sys.executable, "-c", "import vouchsql.cli, vouchsql.pipeline"],
                "bare": [sys.executable, "-c", "pass"]}
    code = 0
    for _ in range(n):  # interleaved, so a busy spell hits all three alike
        for key, command in commands.items():
            start = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, text=True)
            runs[key].append((time.perf_counter() - start) * 1000)
            if key == "check":
                code = proc.returncode
    return {"question": q.id, "command": " ".join(cmd[:6]) + " …", "exit_code": code, "runs": n,
            "median_ms": statistics.median(runs["check"]), "min_ms": min(runs["check"]),
            "python_start_ms": min(runs["bare"]),
            "python_start_and_imports_ms": min(runs["imports"]),
            "python_start_and_imports_median_ms": statistics.median(runs["imports"])}


def cold_child(path: str, cache_dir: str) -> None:
    """In a fresh interpreter: import, connect (profile cached on disk) and time the first
    check and a second one; prints one JSON line. Run by :func:`cold_ms`."""
    start = time.perf_counter()
    import vouchsql  # noqa: F401
    from vouchsql.pipeline import check_candidates  # noqa: F401
    imported = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    db = vouchsql.connect(path, cache_dir=cache_dir)
    db.profile()
    connect = (time.perf_counter() - start) * 1000
    probe = Probe(db)
    first = measure_once(db, probe, SAKILA[0])["row"]
    second = measure_once(db, probe, SAKILA[0])["row"]
    db.close()
    print(json.dumps({"import_ms": imported, "connect_and_profile_ms": connect, "first": first, "second": second}))


def cold_ms(path: Path, cache_dir: Path, n: int) -> dict:
    """The first check in a fresh process (what every CLI call pays: first-use costs such as
    compiling regexes and sqlglot's lazy set-up), against the second check in that process."""
    rows = []
    for _ in range(n):
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--cold-child", str(path), str(cache_dir)],
                              capture_output=True, text=True, check=True)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    med = lambda key, sub=None: statistics.median(r[key][sub] if sub else r[key] for r in rows)  # noqa: E731
    return {"question": SAKILA[0].id, "runs": n, "import_ms": med("import_ms"),
            "connect_and_profile_ms": med("connect_and_profile_ms"),
            "first_wall_ms": med("first", "wall"), "first_own_strict_ms": med("first", "own_strict"),
            "first_choices_py_ms": med("first", "ch_py"), "first_gate_plus_ms": med("first", "gate_plus"),
            "second_wall_ms": med("second", "wall"), "second_own_strict_ms": med("second", "own_strict")}


def _quantile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]


# -- cProfile ----------------------------------------------------------------------------

_BUCKETS = (
    ("sqlglot/optimizer", "sqlglot optimizer (qualify, scope)"),
    ("sqlglot/parser", "sqlglot parser"),
    ("sqlglot/tok", "sqlglot tokenizer"),
    ("sqlglot/generator", "sqlglot generator (tree -> SQL)"),
    ("sqlglot/expressions", "sqlglot expressions (walk, copy, build)"),
    ("sqlglot/", "sqlglot other (dialects, schema, helpers)"),
    ("/copy.py", "copy.deepcopy (sqlglot tree copies)"),
    ("pydantic", "pydantic"),
    ("vouchsql/agreement", "vouchsql.agreement"),
    ("vouchsql/checks", "vouchsql.checks"),
    ("vouchsql/sql", "vouchsql.sql (gate, inspect, edit)"),
    ("vouchsql/db", "vouchsql.db (execute, jsonable)"),
    ("vouchsql/", "vouchsql other (pipeline, score)"),
    ("bench/check", "benchmark harness"),
)

# Entry points whose cumulative time (overlapping) says which step of a check costs what.
_STAGES = (
    ("sqlite3 Cursor.execute + fetchmany (engine)", (("~", "<method 'execute' of 'sqlite3.Cursor' objects>"),
                                                     ("~", "<method 'fetchmany' of 'sqlite3.Cursor' objects>"))),
    ("gate: sql/gate.py parse_one_select (all calls)", (("vouchsql/sql/gate.py", "parse_one_select"),)),
    ("inspect_sql (qualify + scopes + tracing)", (("vouchsql/sql/inspect.py", "inspect_sql"),)),
    ("  of which sqlglot qualify", (("sqlglot/optimizer/qualify.py", "qualify"),)),
    ("run_checks (incl. probe SQL)", (("vouchsql/checks/__init__.py", "run_checks"),)),
    ("detect_choices (incl. alternative SQL)", (("vouchsql/choices/__init__.py", "detect_choices"),)),
    ("cluster + agreement + strict_clusters", (("vouchsql/agreement.py", "cluster"), ("vouchsql/agreement.py", "agreement"),
                                               ("vouchsql/agreement.py", "strict_clusters"))),
    ("score", (("vouchsql/score.py", "score"),)),
    ("sqlglot Expression.copy (deepcopy)", (("sqlglot/expressions/core.py", "copy"),)),
    ("sqlglot generator .sql() (probe SQL text)", (("sqlglot/expressions/core.py", "sql"),)),
    ("row conversion (jsonable list comprehensions)", (("vouchsql/db/base.py", "<listcomp>"),)),
    ("pydantic validation (Result, CheckResult, Answer, …)", (("~", "<method 'validate_python' of 'pydantic_core._pydantic_core.SchemaValidator' objects>"),)),
)


def _bucket(filename: str, func: str) -> str:
    if filename == "~":
        if "sqlite3" in func:
            return "sqlite3 (engine)"
        if "pydantic" in func:
            return "pydantic"
        return "builtins (isinstance, dict.get, …)"
    f = filename.replace(os.sep, "/")
    for key, label in _BUCKETS:
        if key in f:
            return label
    return "python stdlib"


def run_cprofile(path: Path, questions: list[Q], repeat: int, cache_dir: Path, top: int) -> dict:
    import vouchsql
    from vouchsql.pipeline import Timings, check_candidates

    db = vouchsql.connect(path, cache_dir=str(cache_dir))
    try:
        for q in questions:  # warm: profile in memory, imports done, caches filled
            check_candidates(db, q.question, q.candidates, answer_text=q.answer_text, timings=Timings())
        prof = cProfile.Profile()
        start = time.perf_counter()
        prof.enable()
        for _ in range(repeat):
            for q in questions:
                check_candidates(db, q.question, q.candidates, answer_text=q.answer_text, timings=Timings())
        prof.disable()
        elapsed = (time.perf_counter() - start) * 1000
    finally:
        db.close()
    n_checks = repeat * len(questions)
    stats = pstats.Stats(prof)
    buckets: dict[str, float] = defaultdict(float)
    for (filename, _line, func), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():
        buckets[_bucket(filename, func)] += tt * 1000 / n_checks
    by_bucket = sorted(buckets.items(), key=lambda kv: -kv[1])
    stages = []
    for label, keys in _STAGES:
        ct_sum, calls = 0.0, 0
        for (filename, _line, func), (_cc, nc, _tt, ct, _callers) in stats.stats.items():
            f = filename.replace(os.sep, "/")
            if any(func == name and (f == where or f.endswith(where)) for where, name in keys):
                ct_sum += ct
                calls += nc
        stages.append((label, ct_sum * 1000 / n_checks, calls / n_checks))

    def _top(sort_key: str) -> str:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(sort_key).print_stats(top)
        return buf.getvalue()

    cum = []
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():
        cum.append({"function": f"{_short(filename)}:{line}({func})", "calls_per_check": nc / n_checks,
                    "cum_ms_per_check": ct * 1000 / n_checks, "own_ms_per_check": tt * 1000 / n_checks})
    cum = [r for r in cum if "bench/check" not in r["function"].replace(os.sep, "/")]
    cum.sort(key=lambda r: -r["cum_ms_per_check"])
    return {"checks": n_checks, "ms_per_check_under_cprofile": elapsed / n_checks,
            "self_time_by_library_ms_per_check": by_bucket, "stages_cumulative_ms_per_check": stages,
            "top_cumulative": cum[:top],
            "text_tottime": _top("tottime"), "text_cumulative": _top("cumulative")}


def _short(filename: str) -> str:
    f = filename.replace(os.sep, "/")
    for marker in ("site-packages/", "src/"):
        if marker in f:
            return f.split(marker, 1)[1]
    return f


# -- output ------------------------------------------------------------------------------

def machine_info() -> dict:
    import pydantic
    import sqlglot

    import vouchsql

    return {"cpus": os.cpu_count(), "machine": platform.machine(), "platform": platform.platform(),
            "processor": platform.processor() or "?", "python": platform.python_version(),
            "python_impl": platform.python_implementation(), "sqlite": sqlite3.sqlite_version,
            "sqlglot": getattr(sqlglot, "__version__", "?"), "pydantic": pydantic.VERSION,
            "vouchsql": getattr(vouchsql, "__version__", "?"), "loadavg_start": _loadavg()}


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


COLS = (("wall", "wall"), ("total", "total"), ("exec", "exec"), ("engine", "engine"),
        ("gate_plus", "gate+"), ("chk_sql", "chk_sql"), ("chk_py", "chk_py"), ("ch_sql", "ch_sql"),
        ("ch_py", "ch_py"), ("prep", "prep"), ("answer", "answer"), ("own", "own"),
        ("own_strict", "own*"), ("beyond", "beyond"))


def print_db(res: dict) -> None:
    print(f"\n## {res['db']}  ({res['path']})")
    print(f"first check (builds + caches the profile): {res['warm_first_check_ms']:.0f} ms; "
          f"cached profile from disk (fresh connect + profile()): {res['profile_load_from_disk_ms']:.1f} ms")
    head = (f"{'question':<26}" + "".join(f"{label:>8}" for _, label in COLS)
            + f"{'min own*':>9}{'own*/wall':>10}{'q chk':>6}{'q ch':>5}  agree  gate")
    print(head)
    print("-" * len(head))
    for q in res["questions"]:
        m = q["median"]
        line = f"{q['id'][:26]:<26}" + "".join(f"{m[k]:>8.2f}" for k, _ in COLS)
        line += (f"{q['min_own_strict']:>9.2f}{m['own_strict'] / m['wall']:>10.0%}{m['probes']:>6.0f}"
                 f"{m['ch_queries']:>5.0f}"
                 f"  {q['agreement']:.1f}    {q['gate']}")
        if q["fired"]:
            line += "  fired: " + ",".join(q["fired"])
        if q["choices"]:
            line += "  choices: " + ",".join(q["choices"])
        if q["errors"]:
            line += "  ERRORS: " + "; ".join(q["errors"])
        print(line)
    o = res["overall_median_of_medians"]
    print("-" * len(head))
    print(f"{'median of medians':<26}" + "".join(f"{o[k]:>8.2f}" for k, _ in COLS)
          + f"{statistics.median(q['min_own_strict'] for q in res['questions']):>9.2f}"
          + f"{o['own_strict'] / o['wall']:>10.0%}")
    print(f"worst question: own = {res['worst_median_own']:.2f} ms, own* = {res['worst_median_own_strict']:.2f} ms")


def what_if(path: Path, args, cache_dir: Path) -> list[dict]:
    """Each proposal alone and all together, against an unpatched baseline. One connection per
    variant; the variants take turns check by check (round-robin), so drift in machine speed
    hits them all alike. Verdicts, scores, agreement and fired checks are compared too."""
    import vouchsql

    variants = [("baseline", ())] + list(WHAT_IF.items())
    dbs, probes = [], []
    try:
        for _name, patches in variants:
            db = vouchsql.connect(path, cache_dir=str(cache_dir))
            hooks: list = []
            for patch in patches:
                patch(db, hooks)
            probe = Probe(db)
            probe.on_reset.extend(hooks)
            dbs.append(db)
            probes.append(probe)
        runs = [[[] for _ in SAKILA] for _ in variants]
        verdicts = [[None for _ in SAKILA] for _ in variants]
        for rnd in range(args.warmup + args.repeat):
            for qi, q in enumerate(SAKILA):
                for vi in range(len(variants)):
                    got = measure_once(dbs[vi], probes[vi], q)
                    if rnd >= args.warmup:
                        runs[vi][qi].append(got["row"])
                    ans = got["answer"]
                    verdicts[vi][qi] = [ans.verdict.gate, ans.verdict.score, ans.agreement,
                                        [(c.name, c.fired) for c in ans.checks],
                                        [(c.type, c.differs) for c in getattr(ans, "choices", [])]]
    finally:
        for db in dbs:
            db.close()
        _SCHEMA_MEMO.clear()
    out = []
    for vi, (name, _patches) in enumerate(variants):
        per_q = [median_row(r) for r in runs[vi]]
        out.append({"variant": name, **_summary(per_q), "same_verdicts": verdicts[vi] == verdicts[0]})
    return out


def _summary(per_q: list[dict]) -> dict:
    return {"wall_ms_sum_over_questions": sum(r["wall"] for r in per_q),
            "own_strict_ms_sum_over_questions": sum(r["own_strict"] for r in per_q),
            "median_wall_ms": statistics.median(r["wall"] for r in per_q),
            "median_own_strict_ms": statistics.median(r["own_strict"] for r in per_q),
            "worst_own_strict_ms": max(r["own_strict"] for r in per_q),
            "median_gate_ms": statistics.median(r["gate_all"] for r in per_q)}


def print_what_if(rows: list[dict]) -> None:
    print("\n## what-if on Sakila: proposed changes simulated on the Database instance "
          "(ms; sums are over the 8 questions' medians)")
    base = rows[0]
    print(f"{'variant':<16}{'Σwall':>9}{'Σown*':>9}{'med own*':>10}{'worst own*':>12}{'med gate':>10}"
          f"{'Δ Σwall':>10}{'Δ Σown*':>10}  same verdicts")
    for r in rows:
        print(f"{r['variant']:<16}{r['wall_ms_sum_over_questions']:>9.2f}{r['own_strict_ms_sum_over_questions']:>9.2f}"
              f"{r['median_own_strict_ms']:>10.2f}{r['worst_own_strict_ms']:>12.2f}{r['median_gate_ms']:>10.2f}"
              f"{r['wall_ms_sum_over_questions'] - base['wall_ms_sum_over_questions']:>+10.2f}"
              f"{r['own_strict_ms_sum_over_questions'] - base['own_strict_ms_sum_over_questions']:>+10.2f}"
              f"  {'yes' if r['same_verdicts'] else 'NO'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=20, help="measured checks per question (default 20)")
    ap.add_argument("--warmup", type=int, default=2, help="unmeasured checks per question first (default 2)")
    ap.add_argument("--db", action="append", choices=SHARED_NAMES + ("demo",),
                    help="only these databases (repeatable; default all)")
    ap.add_argument("--datasets", type=Path, default=SHARED, help=f"folder of the shared databases (default {SHARED})")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    ap.add_argument("--cprofile", action="store_true", help="profile the Sakila questions with cProfile "
                    "(automatic when the target is missed)")
    ap.add_argument("--cprofile-repeat", type=int, default=10, help="rounds of all questions under cProfile")
    ap.add_argument("--top", type=int, default=25, help="functions listed from cProfile")
    ap.add_argument("--what-if", action="store_true",
                    help="on Sakila, also measure proposed library changes simulated on the instance "
                         "(MappingSchema memo, parse memo, identical-candidate dedupe, no gate for probe SQL)")
    ap.add_argument("--cli", type=int, default=5, metavar="N",
                    help="also time, N times on the target DB, the first check in a fresh process and the "
                         "`vouch check` command end to end (0: off; default 5)")
    ap.add_argument("--cold-child", nargs=2, metavar=("DB", "CACHE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.cold_child:
        cold_child(*args.cold_child)
        return 0
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    import vouchsql  # noqa: F401  (import cost kept out of the measurements)
    from vouchsql.pipeline import check_candidates  # noqa: F401

    wanted = args.db or list(SHARED_NAMES) + ["demo"]
    tmp = Path(tempfile.mkdtemp(prefix="vouch-bench-check-"))
    report = {"machine": machine_info(), "k": K, "repeat": args.repeat, "warmup": args.warmup,
              "target_ms": TARGET_MS, "target_db": TARGET_DB, "databases": [], "skipped": []}
    say = (lambda *a, **k: print(*a, file=sys.stderr, **k)) if args.json else print
    if not args.json:
        m = report["machine"]
        print(f"# vouch check with a cached profile: K = {K}, {args.repeat} repeats per question (medians, ms)")
        print(f"machine: {m['cpus']} CPUs, {m['machine']}, {m['platform']}; Python {m['python']}; "
              f"SQLite {m['sqlite']}; sqlglot {m['sqlglot']}; pydantic {m['pydantic']}; "
              f"load average {m['loadavg_start']}")
    try:
        for name in wanted:
            if name == "demo":
                from vouchsql.demo import build_demo
                path, questions = build_demo(tmp / "demo.sqlite"), demo_questions()
            else:
                path, questions = args.datasets / f"{name}.sqlite", {
                    "sakila": SAKILA, "chinook": CHINOOK, "northwind": NORTHWIND}[name]
                if not path.is_file():
                    msg = f"skipped {name}: {path} not found (the shared datasets live in ../shared/datasets)"
                    say(msg)
                    report["skipped"].append(msg)
                    continue
            res = bench_db(name, path, questions, args.repeat, args.warmup, tmp / "cache")
            report["databases"].append(res)
            if not args.json:
                print_db(res)

        target = next((d for d in report["databases"] if d["db"] == TARGET_DB), None)
        if target is not None:
            worst = target["worst_median_own_strict"]
            overall = target["overall_median_of_medians"]["own_strict"]
            met = worst <= TARGET_MS
            report["target"] = {"met": met, "worst_question_own_strict_ms": worst,
                                "worst_question_beyond_ms": target["worst_median_beyond"],
                                "median_own_strict_ms": overall,
                                "worst_question_own_ms": target["worst_median_own"]}
            if args.cli:
                report["cold"] = cold_ms(Path(target["path"]), tmp / "cache", args.cli)
                report["cli"] = cli_ms(Path(target["path"]), SAKILA[0], tmp / "cache", args.cli)
            if not args.json:
                print(f"\n## target: ≤ {TARGET_MS:.0f} ms of Vouch's own time per check on Sakila (K = {K})")
                print(f"{'MET' if met else 'MISSED'}: worst question own* = {worst:.2f} ms, "
                      f"median over questions own* = {overall:.2f} ms "
                      f"(brief's own = total − execute − check_sql − profile: worst {target['worst_median_own']:.2f} ms; "
                      f"beyond, incl. the checks' and detectors' SQL: worst {target['worst_median_beyond']:.2f} ms)")
                if "cold" in report:
                    c = report["cold"]
                    print(f"first check in a fresh process ({c['question']}, median of {c['runs']}): wall "
                          f"{c['first_wall_ms']:.1f} ms, own* {c['first_own_strict_ms']:.1f} ms (choices' Python "
                          f"{c['first_choices_py_ms']:.1f}, gate+ {c['first_gate_plus_ms']:.1f}); the second check: "
                          f"wall {c['second_wall_ms']:.1f}, own* {c['second_own_strict_ms']:.1f} ms; before it: "
                          f"imports {c['import_ms']:.0f} ms, connect + profile from disk {c['connect_and_profile_ms']:.1f} ms")
                if "cli" in report:
                    c = report["cli"]
                    print(f"`vouch check --json` end to end ({c['question']}, subprocess, {args.cli} runs): "
                          f"min {c['min_ms']:.0f} ms (median {c['median_ms']:.0f}), of which Python start "
                          f"{c['python_start_ms']:.0f} ms and start + importing vouchsql {c['python_start_and_imports_ms']:.0f} ms "
                          f"(min; median {c['python_start_and_imports_median_ms']:.0f}) (exit {c['exit_code']})")
            if args.what_if:
                report["what_if"] = what_if(Path(target["path"]), args, tmp / "cache")
                if not args.json:
                    print_what_if(report["what_if"])
            if args.cprofile or not met:
                prof = run_cprofile(Path(target["path"]), SAKILA, args.cprofile_repeat, tmp / "cache", args.top)
                report["cprofile"] = {k: v for k, v in prof.items() if not k.startswith("text_")}
                if not args.json:
                    print(f"\n## cProfile: Sakila, {prof['checks']} checks, "
                          f"{prof['ms_per_check_under_cprofile']:.1f} ms per check under the profiler")
                    print("self time by library (ms per check):")
                    for label, ms in prof["self_time_by_library_ms_per_check"]:
                        print(f"  {label:<40}{ms:>8.2f}")
                    print("\nsteps, cumulative (they overlap: the gate runs inside execute and query, "
                          "copies inside inspect and checks) (ms per check, calls per check):")
                    for label, ms, calls in prof["stages_cumulative_ms_per_check"]:
                        print(f"  {label:<52}{ms:>8.2f}{calls:>8.1f}")
                    print("\ntop functions by cumulative time (ms per check):")
                    for r in prof["top_cumulative"]:
                        print(f"  {r['cum_ms_per_check']:>8.2f} cum {r['own_ms_per_check']:>7.2f} self "
                              f"{r['calls_per_check']:>8.1f} calls  {r['function']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report["machine"]["loadavg_end"] = _loadavg()
    busy = [x for x in (report["machine"]["loadavg_start"] or [])[:1] + (report["machine"]["loadavg_end"] or [])[:1]
            if x > 0.5 * (os.cpu_count() or 1)]
    if busy:
        say(f"\nnote: other processes were busy (1-minute load average up to {max(busy)} on "
            f"{os.cpu_count()} CPUs); medians are inflated, the 'min own*' column is the least affected")
    if args.json:
        json.dump(report, sys.stdout, indent=2, default=str)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
