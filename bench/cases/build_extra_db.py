#!/usr/bin/env python
"""Build the "extra" database of bench/cases/correct_pairs.jsonl: a small library + HR schema
in a naming style unlike Chinook/Sakila/Northwind, to test that the checks generalise.

- snake_case plural tables, keys that are not ``*_id`` (``member_no``, ``isbn``, ``dept_code``),
  foreign keys named by role (``borrower``, ``book_isbn``, ``author_ref``, ``boss``, ``dept``);
- the library part declares its foreign keys, the HR part declares none.

Deterministic: the same file every time (seeded).

    python bench/cases/build_extra_db.py /tmp/extra.sqlite
"""

from __future__ import annotations

import random
import sqlite3
import sys
from datetime import date, timedelta
from pathlib import Path

SCHEMA = """
CREATE TABLE authors (
    author_no INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    nationality TEXT,
    born INTEGER
);
CREATE TABLE books (
    isbn TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    author_ref INTEGER REFERENCES authors(author_no),
    genre TEXT,
    pub_year INTEGER,
    pages INTEGER,
    price REAL
);
CREATE TABLE members (
    member_no INTEGER PRIMARY KEY,
    full_name TEXT NOT NULL,
    city TEXT,
    joined_on TEXT,
    membership TEXT
);
CREATE TABLE loans (
    loan_no INTEGER PRIMARY KEY,
    book_isbn TEXT REFERENCES books(isbn),
    borrower INTEGER REFERENCES members(member_no),
    loaned_on TEXT,
    returned_on TEXT,
    fine REAL DEFAULT 0
);
CREATE TABLE departments (
    dept_code TEXT PRIMARY KEY,
    dept_name TEXT,
    location TEXT,
    budget INTEGER
);
CREATE TABLE staff_members (
    emp_no INTEGER PRIMARY KEY,
    name TEXT,
    job_title TEXT,
    dept TEXT,
    boss INTEGER,
    salary INTEGER,
    hired TEXT
);
CREATE TABLE projects (
    project_code TEXT PRIMARY KEY,
    title TEXT,
    owner_dept TEXT,
    started TEXT,
    cost INTEGER
);
CREATE TABLE assignments (
    emp INTEGER,
    project TEXT,
    hours INTEGER,
    PRIMARY KEY (emp, project)
);
"""

FIRST = ["Ada", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivan", "Jun", "Kim", "Lars",
         "Mia", "Noor", "Omar", "Pia", "Quin", "Rosa", "Sam", "Tara", "Uma", "Vik", "Wes", "Xia",
         "Yara", "Zed"]
LAST = ["Stone", "Reed", "Okafor", "Silva", "Novak", "Hughes", "Tanaka", "Berg", "Costa", "Wright"]
CITIES = ["Leeds", "York", "Bristol", "Bath", "Oxford", "Derby"]
GENRES = ["Fiction", "History", "Science", "Poetry", "Travel", "Mystery"]
NATIONS = ["British", "French", "Nigerian", "Japanese", "Brazilian", "Canadian"]
WORDS = ["River", "Night", "Garden", "Stone", "Winter", "Light", "House", "Sea", "Iron", "Song",
         "Map", "Crown", "Glass", "Fire", "Road", "Bird"]


def build(path: str | Path) -> Path:
    path = Path(path)
    if path.exists():
        path.unlink()
    rng = random.Random(20240612)
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    authors = []
    for i in range(1, 21):
        authors.append((i, f"{FIRST[i % 26]} {LAST[(i * 3) % 10]}", NATIONS[i % 6], 1900 + rng.randint(0, 90)))
    con.executemany("INSERT INTO authors VALUES (?,?,?,?)", authors)
    books = []
    titles = set()
    for i in range(1, 81):
        while True:
            t = f"The {rng.choice(WORDS)} of {rng.choice(WORDS)}"
            if t not in titles:
                titles.add(t)
                break
        books.append((f"978{1000000 + i * 7919:07d}", t, rng.randint(1, 18), GENRES[rng.randrange(6)],
                      rng.randint(1950, 2023), rng.randint(90, 900), round(rng.uniform(4, 45), 2)))
    con.executemany("INSERT INTO books VALUES (?,?,?,?,?,?,?)", books)
    members = []
    for i in range(1, 61):
        members.append((100 + i, f"{FIRST[rng.randrange(26)]} {LAST[rng.randrange(10)]}", CITIES[rng.randrange(6)],
                        str(date(2015, 1, 1) + timedelta(days=rng.randint(0, 3000))),
                        rng.choice(["basic", "basic", "premium", "student"])))
    con.executemany("INSERT INTO members VALUES (?,?,?,?,?)", members)
    loans = []
    for i in range(1, 401):
        b = rng.choice(books[:70])  # ten books never lent
        m = rng.choice(members[:55])  # five members never borrow
        d = date(2021, 1, 1) + timedelta(days=rng.randint(0, 1300))
        ret = None if rng.random() < 0.08 else str(d + timedelta(days=rng.randint(3, 40)))
        fine = 0 if ret is None or rng.random() < 0.7 else round(rng.uniform(0.5, 12), 2)
        loans.append((5000 + i, b[0], m[0], str(d), ret, fine))
    con.executemany("INSERT INTO loans VALUES (?,?,?,?,?,?)", loans)
    depts = [("ENG", "Engineering", "Leeds", 900000), ("SAL", "Sales", "York", 400000),
             ("FIN", "Finance", "Leeds", 300000), ("HRM", "Human Resources", "Bath", 150000),
             ("RND", "Research", "Oxford", 700000), ("LEG", "Legal", "Bath", 200000)]
    con.executemany("INSERT INTO departments VALUES (?,?,?,?)", depts)
    staff = [(1, "Olga Marsh", "Director", "ENG", None, 150000, "2010-03-01")]
    titles_by = {"ENG": ["Engineer", "Senior Engineer"], "SAL": ["Sales Rep", "Account Manager"],
                 "FIN": ["Accountant", "Analyst"], "HRM": ["Recruiter", "HR Partner"],
                 "RND": ["Scientist", "Analyst"]}  # nobody in LEG
    managers = {"ENG": 1}
    emp = 2
    for d in ["ENG", "SAL", "FIN", "HRM", "RND"]:
        if d not in managers:
            staff.append((emp, f"{FIRST[emp % 26]} {LAST[emp % 10]}", "Manager", d, 1, rng.randint(90, 120) * 1000,
                          str(date(2011, 1, 1) + timedelta(days=rng.randint(0, 2000)))))
            managers[d] = emp
            emp += 1
        for _ in range(rng.randint(4, 9)):
            staff.append((emp, f"{FIRST[emp % 26]} {LAST[(emp * 7) % 10]}", rng.choice(titles_by[d]), d, managers[d],
                          rng.randint(35, 95) * 1000, str(date(2012, 1, 1) + timedelta(days=rng.randint(0, 4000)))))
            emp += 1
    con.executemany("INSERT INTO staff_members VALUES (?,?,?,?,?,?,?)", staff)
    projects = [("P-ALPHA", "Alpha Platform", "ENG", "2021-02-01", 250000),
                ("P-BETA", "Beta Mobile", "ENG", "2022-06-15", 120000),
                ("P-GAMMA", "Gamma Ledger", "FIN", "2023-01-10", 80000),
                ("P-DELTA", "Delta Outreach", "SAL", "2022-09-01", 60000),
                ("P-OMEGA", "Omega Lab", "RND", "2020-11-20", 400000),
                ("P-SIGMA", "Sigma Hiring", "HRM", "2024-03-05", 30000),
                ("P-IDLE", "Idle Study", "LEG", "2024-05-01", 10000)]
    con.executemany("INSERT INTO projects VALUES (?,?,?,?,?)", projects)
    assigns = set()
    for e in staff:
        for p in rng.sample(projects[:6], rng.randint(0, 3)):
            assigns.add((e[0], p[0], rng.randint(5, 200)))
    con.executemany("INSERT INTO assignments VALUES (?,?,?)", sorted(assigns))
    con.commit()
    con.close()
    return path


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else "extra.sqlite"))
