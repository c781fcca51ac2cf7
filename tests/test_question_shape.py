"""The English reading behind the question_shape check (vouchsql.question.shape)."""

from __future__ import annotations

import pytest

from vouchsql.question.shape import read_shape


@pytest.mark.parametrize("question, cls, polarity", [
    ("Which albums have the most tracks?", "size", "high"),
    ("What's the title of the album with the fewest songs?", "size", "low"),
    ("Show the top 3 best selling artists.", "size", "high"),
    ("What are the cheapest tracks?", "size", "low"),
    ("List the 10 most recent invoices", "time", "high"),
    ("When was the first rental made?", "time", "low"),
    ("Which genre has the fewest tracks, and what is its longest track?", "size", None),  # both: not read
    ("Customers with at least 5 orders", "size", None),  # a comparator, not a ranking
    ("Show their first name and last name", "time", None),
])
def test_direction(question, cls, polarity):
    assert read_shape(question).polarity(cls) == polarity


@pytest.mark.parametrize("question, kinds", [
    ("What is the total number of tracks in each playlist?", ["count"]),
    ("Provide a query that shows the total sales per country.", ["sum"]),
    ("What is the average invoice total?", ["avg"]),  # the total is the thing averaged
    ("What is the average number of tracks per album?", ["avg", "count"]),
    ("How much did each customer spend?", ["sum"]),
    ("How many customers are there?", ["count"]),
    ("Who's the customer who has spent the most?", ["accumulated"]),
    ("Show me the genres", []),
])
def test_aggregates(question, kinds):
    assert sorted(c.kind for c in read_shape(question).aggregates) == sorted(kinds)


def test_explicit_order_and_events():
    s = read_shape("Order from the longest to the shortest. Which are the most purchased tracks?")
    assert s.order is not None and s.order.kind == "high"
    assert s.events is not None and "purchased" in s.events.words
    assert read_shape("Sort them in ascending order").order.kind == "low"
    assert read_shape("How many customers bought a laptop?").count_phrases == ["customers bought a laptop"]


@pytest.mark.parametrize("question", [
    "By big spenders we mean customers who spent at least 40. List them.",
    "Give the phone number of the customer with the largest invoice.",
    "What is the ID number of the order with the highest freight?",
    "How many minutes long is the longest track?",
    "How many days did the longest rental last?",
])
def test_not_aggregates(question):
    kinds = {c.kind for c in read_shape(question).aggregates}
    assert not kinds & {"avg", "count"}, kinds


def test_abbreviated_column_names_its_table():
    from types import SimpleNamespace

    from vouchsql.question.shape import names_entity

    departments = SimpleNamespace(name="departments")
    employees = SimpleNamespace(name="employees")
    assert names_entity("dept", departments)
    assert names_entity("owner_dept", departments)
    assert names_entity("dept_code", departments)
    assert names_entity("emp", employees)
    assert not names_entity("dpt", departments)  # not the same first three letters
    assert not names_entity("deposit", departments)
    assert not names_entity("employees_total_count", employees)


@pytest.mark.parametrize("question, kind", [
    ("What are the names of the sections in reverse alphabetical order?", "high"),
    ("List the title of all cartoons in alphabetical order.", "low"),
    ("What are the titles of the cartoons sorted alphabetically?", "low"),
    ("List the names in ascending alphabetical order of name.", "low"),
    ("Show the cities from Z to A.", "high"),
    ("Show the cities from A to Z.", "low"),
    ("Sort the names alphabetically descending.", "high"),
    ("List the section_name in reversed lexicographical order.", "high"),
    ("List all the student details in reversed lexicographical order.", "high"),
    ("What are the names, sorted in lexicographic order?", "low"),
    ("List the names sorted by age.", None),
    ("Which alphabet letters appear?", None),
    # the reversing word anywhere near, in the same clause
    ("List genre names sorted alphabetically in descending order.", "high"),
    ("List genre names in alphabetical order, Z-A.", "high"),
    ("List genre names in decreasing alphabetical order.", "high"),
    ("Show the genres in alphabetical order, but descending.", "high"),
    ("List names in alphabetical order and prices in descending order.", "low"),
    # not an order of the rows
    ("Which track names contain non-alphabetic characters?", None),
    ("Which artist names consist of alphabetic characters only?", None),
    ("List customers whose last name comes alphabetically before 'C'.", None),
    ("Which name comes first in alphabetical order?", None),
    ("List the 5 artists that come last alphabetically.", None),
])
def test_alphabetical_order(question, kind):
    claim = read_shape(question).alphabetical
    assert (claim.kind if claim else None) == kind


@pytest.mark.parametrize("question, key", [
    ("List all employees alphabetically by surname.", "by surname"),
    ("Show customer emails in alphabetical order of their last name.", "of their last name"),
    ("List the title of all cartoons in alphabetical order.", None),
])
def test_alphabetical_order_names_its_key(question, key):
    assert read_shape(question).alphabetical_key == key
