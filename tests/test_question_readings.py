"""Readings of the question that real model output showed misread (issue 26, item 4), each a
general rule tested on two databases of different shapes: a negated comparison bounds the other
way; "the maximum number of X" is the extreme of a number, not a COUNT; words that write a
column's own name are not a value of it; a table keyed on an entity's key counts that entity."""

from __future__ import annotations

import pytest

from test_boundaries import make_db, run_check


def silent(path, check: str, question: str, sql: str) -> None:
    got = run_check(path, check, sql, question=question)
    assert not got.fired, got.detail


def fires(path, check: str, question: str, sql: str, field: str, value: str):
    """The check fires and its first finding's ``field`` is ``value``; the result, for more."""
    got = run_check(path, check, sql, question=question)
    assert got.fired and got.evidence["findings"][0][field] == value, got.detail
    return got


@pytest.fixture(scope="module")
def clubs(tmp_path_factory):
    d = tmp_path_factory.mktemp("clubs")
    return make_db(d / "clubs.sqlite", {
        "member": ("id INTEGER PRIMARY KEY, name TEXT, level INTEGER, age INTEGER, member_type TEXT, sport TEXT",
                   [(i, f"m{i}", i % 7, 20 + i, ["Type", "Gold", "Basic"][i % 3], ["tennis", "golf", "chess"][i % 3])
                    for i in range(1, 31)]),
        "club": ("club_id INTEGER PRIMARY KEY, name TEXT, trophies INTEGER, founded_year INTEGER",
                 [(i, f"c{i}", 10 * i, 1880 + 7 * i) for i in range(1, 6)]),
        # tables named like the verbs that open a request
        "show": ("show_id INTEGER PRIMARY KEY, title TEXT", [(i, f"s{i}") for i in range(1, 4)]),
        "list": ("list_id INTEGER PRIMARY KEY, label TEXT", [(1, "a")]),
        # a short code that is also the first word of another column's values
        "sponsor": ("sponsor_id INTEGER PRIMARY KEY, country_code TEXT, tier TEXT",
                    [(i, ["US", "UK", "FR"][i % 3], ["US Partner", "Local"][i % 2]) for i in range(1, 13)]),
        # a place in an order: rank 1 is the best
        "ladder": ("member_id INTEGER PRIMARY KEY REFERENCES member(id), ladder_rank INTEGER, ranking_points INTEGER",
                   [(i, i, 1000 - 10 * i) for i in range(1, 31)]),
        # one row per member: keyed on the member's key
        "enrolment": ("member_id INTEGER PRIMARY KEY REFERENCES member(id), club_id INTEGER REFERENCES club(club_id)",
                      [(i, 1 + i % 5) for i in range(1, 31)]),
    })


@pytest.fixture(scope="module")
def shops(tmp_path_factory):
    d = tmp_path_factory.mktemp("shops")
    return make_db(d / "shops.sqlite", {
        "product": ("product_id INTEGER PRIMARY KEY, title TEXT, price REAL, stock_level INTEGER, "
                    "shelf_label TEXT", [(i, f"p{i}", 2.5 * i, i % 9, ["Label", "Top", "Low"][i % 3])
                                         for i in range(1, 41)]),
        "store": ("store_id INTEGER PRIMARY KEY, city TEXT", [(i, f"city{i}") for i in range(1, 5)]),
        "assignment": ("product_id INTEGER PRIMARY KEY REFERENCES product(product_id), "
                       "store_id INTEGER REFERENCES store(store_id)", [(i, 1 + i % 4) for i in range(1, 41)]),
        "report": ("report_id INTEGER PRIMARY KEY, body TEXT", [(1, "x")]),
        # an age declared as text, as some schemas do
        "driver": ("driver_id INTEGER PRIMARY KEY, name TEXT, age TEXT", [(i, f"d{i}", str(20 + i)) for i in range(1, 9)]),
        "outlet": ("outlet_id INTEGER PRIMARY KEY, state TEXT, kind TEXT",
                   [(i, ["NY", "CA"][i % 2], ["NY Flagship", "Mall", "Kiosk"][i % 3]) for i in range(1, 13)]),
        "seller": ("seller_id INTEGER PRIMARY KEY, name TEXT, sales_position INTEGER",
                   [(i, f"v{i}", i) for i in range(1, 11)]),
        "clerk": ("clerk_id INTEGER PRIMARY KEY, name TEXT, born DATE",
                  [(i, f"k{i}", f"19{60 + i}-0{1 + i % 9}-1{i % 10}") for i in range(1, 21)]),
    })


@pytest.mark.parametrize("db, question, good, bad", [
    ("clubs", "What is the average age of members whose level is not higher than 4?",
     "SELECT AVG(age) FROM member WHERE level <= 4", "SELECT AVG(age) FROM member WHERE level > 4"),
    ("shops", "List the titles of products whose stock level is not below 3.",
     "SELECT title FROM product WHERE stock_level >= 3", "SELECT title FROM product WHERE stock_level < 3"),
])
def test_a_negated_comparison_bounds_the_other_way(request, db, question, good, bad):
    path = request.getfixturevalue(db)
    silent(path, "question_filters", question, good)
    wrong = fires(path, "question_filters", question, bad, "kind", "comparison")
    assert wrong.evidence["findings"][0]["expected"].startswith("<=" if "higher" in question else ">=")


@pytest.mark.parametrize("db, question, sql", [
    ("clubs", "What is the maximum number of trophies won by a club?", "SELECT MAX(trophies) FROM club"),
    ("shops", "Find the minimum stock number of products priced over 10.",
     "SELECT MIN(stock_level) FROM product WHERE price > 10"),
])
def test_the_extreme_number_of_is_a_max_or_min_not_a_count(request, db, question, sql):
    silent(request.getfixturevalue(db), "question_shape", question, sql)


@pytest.mark.parametrize("db, question, sql", [
    ("clubs", "What is the Member Type of the member named m4?", "SELECT member_type FROM member WHERE name = 'm4'"),
    ("shops", "Show the Shelf Label of the product titled p7.", "SELECT shelf_label FROM product WHERE title = 'p7'"),
])
def test_words_that_write_a_column_name_are_not_its_value(request, db, question, sql):
    # 'Type' and 'Label' are values of those columns too; here the words name the column
    silent(request.getfixturevalue(db), "question_filters", question, sql)


@pytest.mark.parametrize("db, question, sql", [
    ("clubs", "Find the number of members enrolled in each club; show the club name.",
     "SELECT c.name, COUNT(*) FROM club c JOIN enrolment e ON c.club_id = e.club_id GROUP BY c.name"),
    ("shops", "How many products are assigned to each store city?",
     "SELECT s.city, COUNT(*) FROM store s JOIN assignment a ON s.store_id = a.store_id GROUP BY s.city"),
])
def test_a_table_keyed_on_the_entity_counts_it(request, db, question, sql):
    silent(request.getfixturevalue(db), "question_shape", question, sql)


@pytest.mark.parametrize("db, question, right, wrong", [
    # an age: the old first is a high age
    ("clubs", "List the member names sorted by age from old to young.",
     "SELECT name FROM member ORDER BY age DESC", "SELECT name FROM member ORDER BY age"),
    # a birth date: the old first is an early date
    ("shops", "List the clerk names by birth date from oldest to youngest.",
     "SELECT name FROM clerk ORDER BY born", "SELECT name FROM clerk ORDER BY born DESC"),
    # the superlatives read the same way on either key
    ("clubs", "Show the member names ordered by age from the oldest to the youngest.",
     "SELECT name FROM member ORDER BY age DESC", "SELECT name FROM member ORDER BY age"),
    ("shops", "List the drivers' names ordered by age from the youngest to the oldest.",
     "SELECT name FROM driver ORDER BY age", "SELECT name FROM driver ORDER BY age DESC"),
    ("shops", "List the clerk names from the oldest to the youngest.",
     "SELECT name FROM clerk ORDER BY born", "SELECT name FROM clerk ORDER BY born DESC"),
    # a year is a date: the oldest first is the earliest year
    ("clubs", "List the clubs from the oldest to the youngest.",
     "SELECT name FROM club ORDER BY founded_year", "SELECT name FROM club ORDER BY founded_year DESC"),
])
def test_from_old_to_young_follows_what_the_key_measures(request, db, question, right, wrong):
    path = request.getfixturevalue(db)
    silent(path, "question_shape", question, right)
    fires(path, "question_shape", question, wrong, "part", "direction")


@pytest.mark.parametrize("db, question, sql", [
    ("clubs", "Show the names of members older than 40.", "SELECT name FROM member WHERE age > 40"),
    ("clubs", "List all the member names. Show them sorted by name.", "SELECT name FROM member ORDER BY name"),
    ("shops", "Report the names of clerks born before 1970.", "SELECT name FROM clerk WHERE born < '1970-01-01'"),
    # after a courtesy, and a verb of asking with no article after it
    ("clubs", "Please show the names of members older than 40.", "SELECT name FROM member WHERE age > 40"),
    ("clubs", "Can you list the member names?", "SELECT name FROM member"),
    ("clubs", "Show names of members older than 40.", "SELECT name FROM member WHERE age > 40"),
    ("shops", "Please report the names of clerks born before 1970.",
     "SELECT name FROM clerk WHERE born < '1970-01-01'"),
])
def test_the_verb_that_opens_a_request_names_no_table(request, db, question, sql):
    silent(request.getfixturevalue(db), "question_shape", question, sql)


@pytest.mark.parametrize("db, question, sql", [
    ("clubs", "What is on the list?", "SELECT name FROM member"),
    ("shops", "Which report is the longest?", "SELECT name FROM clerk"),
])
def test_the_same_word_as_a_noun_still_names_its_table(request, db, question, sql):
    fires(request.getfixturevalue(db), "question_shape", question, sql, "part", "entity")


@pytest.mark.parametrize("db, question, right, wrong", [
    ("clubs", "What is the name of the youngest member?",
     "SELECT name FROM member ORDER BY age LIMIT 1", "SELECT name FROM member ORDER BY age DESC LIMIT 1"),
    ("shops", "Who is the oldest driver?",
     "SELECT name FROM driver ORDER BY age DESC LIMIT 1", "SELECT name FROM driver ORDER BY age LIMIT 1"),
    ("shops", "How old is the oldest driver?", "SELECT MAX(age) FROM driver", "SELECT MIN(age) FROM driver"),
])
def test_youngest_and_oldest_rank_an_age_low_and_high(request, db, question, right, wrong):
    path = request.getfixturevalue(db)
    silent(path, "question_shape", question, right)
    fires(path, "question_shape", question, wrong, "part", "direction")


@pytest.mark.parametrize("db, question, wrong, right", [
    ("clubs", "How many members play tennis or golf?",
     "SELECT COUNT(*) FROM member WHERE sport = 'tennis'", "SELECT COUNT(*) FROM member WHERE sport IN ('tennis', 'golf')"),
    ("clubs", "How many golf members are older than 30?",
     "SELECT COUNT(*) FROM member WHERE sport = 'chess' AND age > 30",
     "SELECT COUNT(*) FROM member WHERE sport = 'golf' AND age > 30"),
    ("shops", "List the titles of products on the low shelf.",
     "SELECT title FROM product WHERE shelf_label = 'Top'", "SELECT title FROM product WHERE shelf_label = 'Low'"),
])
def test_another_value_of_a_filtered_column_named_in_lower_case(request, db, question, wrong, right):
    path = request.getfixturevalue(db)
    fires(path, "question_filters", question, wrong, "kind", "value")
    silent(path, "question_filters", question, right)


@pytest.mark.parametrize("db, question, min_sql, points_question, wrong_points", [
    ("clubs", "What is the highest ladder rank of any member?", "SELECT MIN(ladder_rank) FROM ladder",
     "Which member has the most ranking points?",
     "SELECT member_id FROM ladder ORDER BY ranking_points ASC LIMIT 1"),
    ("shops", "Which seller has the top sales position?", "SELECT name FROM seller ORDER BY sales_position LIMIT 1",
     "Which seller has the top sales position?", None),
])
def test_a_place_in_an_order_is_not_judged_by_highest_or_top(request, db, question, min_sql, points_question,
                                                              wrong_points):
    """"The highest rank" is rank 1 (the smallest number) to one reader and the largest to another,
    so a rank, position, place or seed column is not judged by a superlative; a column that
    only contains such a word ("ranking points") still is."""
    path = request.getfixturevalue(db)
    silent(path, "question_shape", question, min_sql)
    silent(path, "question_shape", question, min_sql.replace("MIN(", "MAX(").replace("LIMIT 1", "DESC LIMIT 1"))
    if wrong_points:
        fires(path, "question_shape", points_question, wrong_points, "part", "direction")


@pytest.mark.parametrize("db, question, covered, missing", [
    ("clubs", "How many sponsors have the tier US Partner?", "SELECT COUNT(*) FROM sponsor WHERE tier = 'US Partner'",
     "SELECT COUNT(*) FROM sponsor WHERE tier = 'Local'"),
    ("shops", "List the outlets whose kind is NY flagship.", "SELECT outlet_id FROM outlet WHERE kind = 'NY Flagship'",
     "SELECT outlet_id FROM outlet WHERE kind = 'Mall'"),
])
def test_a_short_value_inside_a_filtered_literal_is_that_literal(request, db, question, covered, missing):
    """'US' is a country code and the first word of the tier 'US Partner': where the question's
    words are the literal the SQL filters on, the code is part of it, not a filter of its own.
    A filter on another tier leaves 'US' (and 'US Partner') unfiltered, and that still fires."""
    path = request.getfixturevalue(db)
    silent(path, "question_filters", question, covered)
    fires(path, "question_filters", question, missing, "kind", "value")
