"""Mutation testing of the core modules (issue 11, part 5): a benchmark, not a CI job.

For each target module this runs **mutmut** (3.x, ``pip install mutmut``) in a throw-away copy
of the working tree with only that module's own test files, then prints killed / timeout /
survived / no-tests per module, the kill rate, the rate over the mutants not judged
equivalent (:data:`EQUIVALENT`, one reason each), and the diff of every survivor.

mutmut 3 reads its settings from ``[tool.mutmut]`` in ``pyproject.toml`` and writes its
mutated tree to ``mutants/`` in the working directory. The repository's own
``pyproject.toml`` is left alone: the script copies ``src/``, ``tests/`` and
``pyproject.toml`` into ``<workdir>/<module>/``, appends the documented settings there
(``source_paths``, ``only_mutate``, ``pytest_add_cli_args_test_selection``) and runs
``python -m mutmut run`` in that copy; mutmut runs, for each mutant, only the selected tests
that call the mutated function, and stops at the first failure.

mutmut mutates only code inside functions and methods. The module-level constants
(``PASS_AT``, ``RHO_MIN``, ``Z95`` …) are the cutoffs the issue names, so a small AST pass of
this script (on by default; ``--no-constants``) nudges each numeric literal of a module-level
assignment (a float in (0, 1] by ±0.01, another float by ±10%, an int by ±1) and runs the
same selection against each nudged copy (``pytest -x``).

    pip install mutmut
    python bench/mutation.py                              # every module: many hours on 2 CPUs
    python bench/mutation.py --modules missing_table,definition_rule --keep --workdir /tmp/vouch-mutation
    python bench/mutation.py --modules bad_join,metrics --max-children 2
    python bench/mutation.py --before-without tests/test_boundaries.py --keep --workdir /tmp/vouch-mutation
    python bench/mutation.py --rerun --workdir /tmp/vouch-mutation   # after editing tests
    python bench/mutation.py --report --workdir /tmp/vouch-mutation  # print what is kept there
    python bench/mutation.py --json mutation.json

``--before REV`` measures twice in one go: first with ``tests/`` as of git revision ``REV``
(a selected test file it lacks is an empty placeholder; ``--before-without FILES`` instead
takes the working tree's tests less those files), then, with the working tree's tests,
only the mutants that survived are run again (the tests only grow, so a killed mutant stays
killed). ``--rerun`` does that second step alone in a kept ``--workdir``; ``--report`` prints
the measurements kept there, judged by today's :data:`EQUIVALENT` list. The source is
always the working tree's ``src/`` at the time of the first run.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

# Golden cases in tests/test_checks.py: keep every other test of the selected files, and of
# the golden cases those of the check itself and the ones on which nothing may fire.
_GOLDEN = "not test_golden_case or nothing_fires or {}"
_CHECK_TESTS = ["tests/test_checks.py", "tests/test_check_protocol.py", "tests/test_boundaries.py",
                "tests/test_boundaries_checks.py"]


@dataclass
class Target:
    path: str
    tests: list[str]
    k: str | None = None
    name: str = ""
    # One profile cache for every mutant's tests (see _SHARED_PROFILES): only for modules the
    # profile does not depend on.
    shared_profiles: bool = False

    @property
    def module(self) -> str:
        return self.path.removeprefix("src/").removesuffix(".py").replace("/", ".")


TARGETS = {
    "score": Target("src/vouchsql/score.py",
                    ["tests/test_score.py", "tests/test_check_protocol.py", "tests/test_boundaries.py",
                     "tests/test_boundaries_score.py"]),
    "agreement": Target("src/vouchsql/agreement.py", ["tests/test_agreement.py", "tests/test_boundaries.py"]),
    "stand_in": Target("src/vouchsql/checks/stand_in.py", _CHECK_TESTS,
                       "(test_golden_case and (nothing_fires or stand_in)) or "
                       "(not test_golden_case and (test_check_protocol or stand_in or dialect))", shared_profiles=True),
    "bad_join": Target("src/vouchsql/checks/bad_join.py", _CHECK_TESTS, _GOLDEN.format("bad_join")),
    "uncited_number": Target("src/vouchsql/checks/uncited_number.py", _CHECK_TESTS,
                             _GOLDEN.format("uncited_number")),
    "metrics": Target("src/vouchsql/evals/metrics.py", ["tests/test_metrics.py", "tests/test_boundaries.py"]),
}


def _check(module: str, *fixtures: str, words: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> Target:
    """A check module with its golden cases (of ``fixtures``, default the module's name) and
    the ones on which nothing may fire, the protocol tests, and the tests of
    tests/test_boundaries_checks.py (and ``extra``) whose names hold one of ``words``. Every
    test that runs the pipeline runs every check, so mutmut would otherwise run every other
    check's boundary tests (and tests/test_boundaries.py's) for each mutant before reaching
    the module's own; ``words=()`` keeps every test of the files (base, evidence, the registry)."""
    golden = " or ".join(fixtures or (module,))
    k = _GOLDEN.format(golden) if not words else \
        f"(test_golden_case and (nothing_fires or {golden})) or " \
        f"(not test_golden_case and (test_check_protocol or {' or '.join(words)}))"
    return Target(f"src/vouchsql/checks/{module}.py",
                  ["tests/test_checks.py", "tests/test_check_protocol.py", "tests/test_boundaries_checks.py",
                   *extra], k, shared_profiles=True)


# The other check modules (each check's golden file is named after the check).
TARGETS.update({
    "missing_table": _check("missing_table", words=("missing_table",)),
    "reads_no_table": _check("reads_no_table", words=("reads_something", "reads_no_table")),
    "complete_judge": _check("complete_judge", words=("complete_judge", "judged_parts")),
    "definition_rule": _check("definition_rule", words=("definition_rule",)),
    "result_shape": _check("result_shape", "no_result", "thin_evidence", "empty_result", "truncated_result",
                           words=("result_shape",)),
    "merged_entities": _check("merged_entities", words=("merged_entities", "label_asked", "dialect")),
    "join_fanout": _check("join_fanout", words=("join_fanout",)),
    "join_drop": _check("join_drop", words=("join_drop",)),
    "join_key_meaning": _check("join_key_meaning", words=("join_key",), extra=("tests/test_join_keys.py",)),
    "joins": _check("_joins", "join_fanout", "join_drop", "merged_entities",
                    words=("alias_for", "tables_by_alias", "inner_equalities", "group_keys", "driving_alias",
                           "outer_select", "dialect", "join_fanout", "join_drop", "merged_entities")),
    "question_filters": _check("question_filters", words=("question_filters",),
                               extra=("tests/test_boundaries_question_filters.py",)),
    "question_shape": _check("question_shape", words=("question_shape",),
                             extra=("tests/test_boundaries_question_shape.py",)),
    "date_only_bound": _check("date_only_bound", words=("date_only_bound",),
                              extra=("tests/test_date_only_bound.py",)),
    "unmatched_literal": _check("unmatched_literal", words=("unmatched_literal",),
                                extra=("tests/test_unmatched_literal.py",)),
    # Every check reports through base.report and names its evidence model: the cases on
    # which nothing may fire and the protocol tests reach every line of these.
    "base": _check("base", "missing_table"),
    "evidence": _check("evidence", "missing_table"),
    "checks_init": _check("__init__", "missing_table"),
})

# mutmut runs each mutant's tests in a fresh pytest session, so the module-scoped
# ``cache_dir`` fixture of tests/conftest.py is a new folder each time and Chinook, Sakila and
# Northwind are profiled again for every mutant (about 7 of a survivor's 20 s). For a
# module the profile does not read (a check), the copy's conftest gets a ``cache_dir`` that
# is one folder for the whole run: the cache holds only profiles (settings.cache_dir).
_SHARED_PROFILES = """

# Added by bench/mutation.py in its throw-away copy: one profile cache for every mutant.
@pytest.fixture(scope="module")
def cache_dir() -> str:
    return {path!r}
"""

# Survivors judged equivalent, each with the reason no test can tell it from the original:
# (module, function as mutmut names it (fnmatch), a regex found in the mutated line, reason
# [, a regex that must also be found in the diff with its context]).
# Matched by content, not by mutmut's numbering, so that an edit elsewhere in a module does
# not shift the list; a rule only applies to a mutant that was not killed. The constant
# pass names its function "<module level>". Reviewed by hand against each survivor's diff.
_NAN = ("*", "*", r'float\("NAN"\)', "float() reads 'NAN' as it reads 'nan'")
_ASTYPE = ("metrics", "*", r"\.astype\(None\)", "astype(None) is astype(float64)")
_DIVIDE = "no division by zero can happen here (a 0 denominator comes with a 0 numerator: 0/0 is "\
          "'invalid', not 'divide'), so silencing 'divide' or not changes nothing"
_INT32 = "the int64 switch only matters past 2³¹ − 1 items, which no test can hold in memory"
EQUIVALENT: list[tuple[str, ...]] = [
    _NAN, _ASTYPE,
    # score
    ("score", "x_v3_extended", r'signal_caps="(XXallXX|ALL)"\)',
     "agreement_first reads signal_caps only as truthy and as == 'frozen': any other non-empty text "
     "caps on every signal, as 'all' does"),
    ("score", "x_designed", r'mode = opts\.get\("safety", (None|"XXminXX"|"MIN")?\)',
     "the last branch takes min(L1, L2) for any mode that is not l1, l2 or mean, so the default's "
     "text is never compared"),
    ("score", "x__thin", r"or '(XXno termXX|NO TERM)'",
     "unreachable: both callers pass SAFETY among the terms, and designed returns before _thin when "
     "every term is dropped"),
    ("score", "x_agreement_first", r'"safety": 2\.0\}',
     "the paper's terms here are only counted and searched for GROUNDED by _thin; SAFETY's value is never read"),
    # agreement
    ("agreement", "<module level>", r"^_QUANTUM = Decimal\((0|2)\)\.scaleb",
     "Decimal.quantize reads only the quantum's exponent, not its digits"),
    ("agreement", "xǁ_NaNTypeǁ__hash__", r"return 5136719", "any constant hash serves a singleton"),
    ("agreement", "x__norm_decimal", r"ctx\.prec = d\.adjusted\(\) \+ _DECIMALS \+ 3",
     "one more digit of precision than the quantize needs changes nothing"),
    ("agreement", "x__norm_decimal", r"rounding=None\)|d\.quantize\(_QUANTUM, \)",
     "the default context already rounds half-even"),
    ("agreement", "x__norm_decimal", r"return _norm_float\((None|float\(None\))\)",
     "the InvalidOperation fallback is unreachable: the precision is set to fit the quantize"),
    ("agreement", "x_agreement", r"Agreement\(value=None, truncated_pairs=0\)|lower_bound=(None|0\.0), \)",
     "the dropped argument equals Agreement's default"),
    ("agreement", "x__cluster_prepared", r"cid = -2", "any negative id means 'no cluster yet'"),
    ("agreement", "x__match", r"\(pa, pb\) if pa\.width < pb\.width else",
     "with equal widths either result may be the narrow one: the choice is then a permutation"),
    ("agreement", "x__norm_str", r'if ("XX\.XX" not in s|"\." not in s or "e" not in s|'
     r'"\." not in s and "e" not in s or "E" not in s|"\." not in s and "XXeXX"|'
     r'"\." not in s and "E" not in s and "E"|"\." not in s and "e" not in s and "(XXEXX|e)" not in s)',
     "more strings tried as int first: int() refuses every non-integer text, which then goes to float()"),
    ("agreement", "x__normalise_column", r"for v in set\(None\)",
     "the TypeError is caught and the column normalised value by value, to the same values"),
    ("agreement", "x__normalise_column", r"if types < _(UNCHANGED|MEMO)_TYPES:",
     "the other branch normalises the same values (the memo is only a speed-up)"),
    ("agreement", "x__normalise_columns", r"width = None$|if any\(len\(r\) == width",
     "the widths are then recomputed from every row, which pads nothing when no row is short"),
    ("agreement", "x__prepare_all", r"p = None$|seen\.get\((None|id\(None\))\)|seen\[id\(None\)\]",
     "preparing the same result twice gives equal prepared results (a speed-up only)"),
    ("agreement", "x__search", r"zeros = \[1\] \* n", "both sides start from the same class labels"),
    ("agreement", "x__search", r"used\[taken\] = None|advanced = None|used\[h\] = (None|False)",
     "None is as false as False; and a wide group used twice never passes the joint check "
     "(two distinct narrow columns cannot both equal one wide column)"),
    ("agreement", "x__search", r"frame\[5\] = (None|\+1|-2)$|cls_b, 0, (\+1|-2)\]",
     "the frame's 'taken' slot is rewritten before it is read again, and a wide group freed twice "
     "never passes the joint check"),
    ("agreement", "x__search", r"need = Counter\(None\)",
     "the pigeonhole test is a shortcut: without it the search finds no injective choice all the same"),
    ("agreement", "x__search", r"^return True$",
     "unreachable: two narrow groups with one candidate each share it only if they share a "
     "signature, which the pigeonhole test already refused", r"if len\(set\(chosen\)\) < len\(chosen\):\n-\s+return False\n\+"),
    ("agreement", "x__search", r"idx = \[1\] \* narrow\.width", "every entry is overwritten just below"),
    ("agreement", "x__search", r"order = sorted\(range\(len\(a_groups\)\), (key=None)?\)",
     "the depth-first search is complete in any order (the order only prunes sooner)"),
    ("agreement", "x__search", r"MAX_SEARCH_CELLS / max\(n, 1\)|MAX_SEARCH_CELLS // max\(n, 2\)",
     "steps are integers, so a fractional budget counts the same; and a one-row pair never "
     "reaches the cap"),
    ("agreement", "x__strict", r"if pa is pb and pa\.result is pb\.result",
     "the identity shortcut: the full comparison that follows gives the same answer"),
    ("agreement", "x_normalise_rows", r"_normalise_columns\(result\.rows, None\)",
     "the hint is used only for a result without rows, which returns [] before reading it"),
    ("agreement", "x_normalise_value", r"^return int\(None\)$",
     "unreachable: bool cannot be subclassed and exact bools return above", r"if isinstance\(v, bool\):\n-"),
    ("agreement", "xǁ_Missingǁ__repr__", r'return "(XX<missing>XX|<MISSING>)"',
     "the padding's repr is only for debugging: normalised rows are compared, never shown"),
    ("agreement", "xǁ_Preparedǁ__init__", r'self\._width: int \| None = ""',
     "the width is read only after _load() sets it"),
    ("agreement", "x__match", r"if narrow\.width != wide\.width and _same_counts",
     "the identity shortcut: rows of different widths never compare equal, and the search that "
     "follows finds the identity itself"),
    ("agreement", "x_normalise_value", r"t = (None|type\(None\))$",
     "the exact-type fast paths are skipped and the isinstance branches below give the same values"),
    # bad_join
    ("bad_join", "x_join_overlaps", r'"XXjoin_overlapsXX"|"JOIN_OVERLAPS"|ctx\.cache\["join_overlaps"\] = None',
     "join_overlaps is called once per run (by BadJoin.run only), so its cache entry is never read back"),
    ("bad_join", "x_join_overlaps", r"if \(ctx\.inspection\) or True else",
     "BadJoin.run returns before calling join_overlaps when there is no inspection"),
    # stand_in
    ("stand_in", "x__code_rows", r"copy=(None|True)\)|, \)$",
     "the probe is built fresh, so editing it in place or a copy of it ends the same"),
    ("stand_in", "x__code_rows", r"isinstance\(argument, exp\.Expression\) or not isinstance\(argument, exp\.Star\)",
     "the aggregates probed (sum, avg, min, max, stddev, variance) always have an expression argument, never *"),
    ("stand_in", "x__code_rows", r"timeout=None, from_tree=True|dialect\), from_tree=True\)",
     "only a probe slower than the check timeout could tell"),
    ("stand_in", "x__code_rows", r"from_tree=(None|False)\)|timeout=ctx\.db\.config\.timeout, \)",
     "from_tree only skips re-parsing Vouch's own probe through the gate, which accepts it"),
    ("stand_in", "xǁStandInValueǁrun", r"col\.stand_ins if \(col\) or True else",
     "the inspection traces an output only to columns the profile holds (sql/inspect.py, "
     "_Tracer.resolve), so the profile's column is never None here"),
    # reads_no_table
    ("reads_no_table", "xǁReadsNoTableǁrun", r"if ctx\.tree is None and ctx\.inspection is None:",
     "the pipeline inspects exactly the trees that parsed, so the tree and the inspection are None together"),
    ("reads_no_table", "x_reads_something",
     r'getattr\(None, "key", ""\)|getattr\(func, "key", (None|"XXXX")?\)|getattr\(func, "(XXkeyXX|KEY)", ""\)',
     "no sqlglot class but Unnest (matched by isinstance first) has a key in _GENERATORS, so a table "
     "function that is not Anonymous is a source whatever name is read off it"),
    # merged_entities
    ("merged_entities", "x__label_columns", r"grouped_names = \{\(e\.table\.upper\(\)|"
     r"\(col\.table\.upper\(\), key\.lower\(\)\) in grouped_names|\(col\.table\.lower\(\), key\.upper\(\)\) in",
     "the second test (a grouped column named as the key, of any table) holds whenever the first (this "
     "table's key) does, so a first test that never holds changes nothing"),
    ("merged_entities", "x__merged", r"from_tree=(None|False)\)|max_rows=_PROBE_ROWS, \)",
     "from_tree only skips re-parsing Vouch's own probe through the gate, which accepts it"),
    ("merged_entities", "x__label_asked", r'question or "XXXX"', "'XXXX' holds no label word, as '' does not"),
    ("merged_entities", "x__label_asked", r"endswith\(w\)\), \)",
     "unreachable: _label_columns keeps only labels ending in name or title (the profile spells the "
     "column as the SQL does, in any case), so a word is always found"),
    ("merged_entities", "x__label_columns", r"aliases = tables_by_alias\(select, (None)?\)",
     "the table is only looked up in the profile (table, entity_key, column: all case-blind) and "
     "reported by the profile's own spelling, so the table as the SQL spells it finds the same"),
    # join_key_meaning
    ("join_key_meaning", "x_judge", r'"reason": _same_root\((None, right|left, None), dl, dr\)',
     "_same_root reads only the two domains, never the columns passed beside them"),
    ("join_key_meaning", "x_judge", r"joins \{_holds\(None, dl\)\}|to \{_holds\(None, dr\)\}",
     "_holds reads only the domain, never the column passed beside it"),
    ("join_key_meaning", "x_suggestions", r"if left\.table\.(upper\(\) == right\.table\.lower\(\)|lower\(\) == right\.table\.upper\(\)) or",
     "for one table the path search that follows finds nothing either (KeyMap.path returns None from a table to "
     "itself), and for two tables an upper-cased name equals a lower-cased one only when neither has a cased letter, "
     "when the lower-cased names are equal too"),
    # join_drop
    ("join_drop", "x__has_inner_join", r'\(join\.side or "XXXX"\)',
     "a join without a side is then 'XXXX', no more LEFT, RIGHT or FULL than ''"),
    ("join_drop", "x__has_inner_join", r'join\.args\.get\((None|"XXusingXX"|"USING")\)\)',
     "the check reads the qualified tree (outer_select), and sqlglot's qualify rewrites every JOIN ... USING "
     "into ON equalities, so a join there never has a 'using' argument"),
    ("join_drop", "x__kept", r'where=(None|"XXdropXX"|"DROP")\)',
     "sql.edit.reshape keeps the WHERE only for 'keep' and its join equalities only for 'joins': any "
     "other value drops it, as 'drop' does"),
    ("join_drop", "x__ranks_groups_by_joined_rows", r'question or "XXXX"', "'XXXX' holds no top word, as '' does not"),
    ("join_drop", "xǁJoinDropǁ_in_scope", r"scope = _count_rows\(ctx, drive, own \+ \[where\]\) if \(own or table\.sampled\) or True",
     "without filters of its own, on a table the profile read in full (not sampled), the value's count "
     "among the profile's top values (every value of the column, or named_values returns none) is the "
     "COUNT(*) the probe would read"),
    ("join_drop", "xǁJoinDropǁ_in_scope", r"if inside is None and not scope:",
     "inside counts a subset of scope's rows, so with scope 0 inside is 0, never kept (> 0 here: "
     "_in_scope returned above otherwise), and inside None never equals kept: the test below is False either way"),
    ("join_drop", "xǁJoinDropǁ*", r"(1 - inside / scope|share) <= DROP_SHARE",
     "1 - x is the double 0.30 for no double x (0.3's double is an odd multiple of 2**-54, every double "
     "in [0.5, 1) a multiple of 2**-53; 1 - 70/100 is 0.30000000000000004), so < and <= agree"),
    # joins (_joins.py)
    ("joins", "x_inner_equalities", r'\(join\.side or "XXXX"\)',
     "a join without a side is then 'XXXX', no more LEFT, RIGHT or FULL than ''"),
    ("joins", "x_grouped_entities", r"tables = tables_by_alias\(select, (None)?\)",
     "the profile's lookups (entity_key, is_unique) ignore case, so the table as the SQL spells it "
     "finds the same key and the same uniqueness"),
    ("joins", "x_grouped_entities", r"key = None$|\(key is None and key\.lower\(\) == col\)|key\.upper\(\) == col",
     "is_unique holds for a table's single-column primary key, so the key test before it is a shortcut"),
    ("joins", "x_group_keys", r"^changed = None$", "None is as false as False",
     r"-\s+changed = False\n\+\s+changed = None"),
    ("joins", "x_run_counts", r"timeout=None, from_tree=True|dialect\), from_tree=True\)",
     "only a probe slower than the check timeout could tell"),
    ("joins", "x_run_counts", r"from_tree=(None|False)\)|timeout=ctx\.db\.config\.timeout, \)$",
     "from_tree only skips re-parsing Vouch's own probe through the gate, which accepts it"),
    # uncited_number
    ("uncited_number", "x_numbers_in", r'finditer\(text or "XXXX"\)', "'XXXX' holds no number, as '' does not"),
    ("uncited_number", "x_numbers_in", r"start = m\.start\(1\) if \(sign\) or True else",
     "start is read only when there is a sign"),
    ("uncited_number", "x_numbers_in", r'in "XX\(\[=:\$€£XX"',
     "the pattern's look-behind already refuses a sign after a word character such as X"),
    ("uncited_number", "x_numbers_in", r'sign = ""$', "'' is as false as None"),
    ("uncited_number", "x_numbers_in", r"float\(digits\) / \(-1 if sign else 1\)", "x / -1 == x * -1"),
    ("uncited_number", "x__cited", r"cells\[i\] < x\.value \+ tol$",
     "the tolerance carries a 1e-9 slack, so a cell exactly at x + tol is a float coincidence"),
    # metrics
    ("metrics", "x__average_ranks", r'np\.argsort\(s, (kind=None|kind="MERGESORT"|)\)',
     "tied scores get their average rank, so a sort that is not stable gives the same ranks "
     "(and numpy reads the kind case-insensitively)"),
    ("metrics", "x_auroc_stat", r"chunk_cells: int = 1000001", "the chunk size never changes the values"),
    ("metrics", "x_auroc_stat", r"step = max\(2, |step = max\(1, chunk_cells // \(3 \* u\)\)|range\(0, b, \)",
     "the chunk size never changes the values"),
    ("metrics", "x_auroc_stat", r"u = int\(dense\.max\(\)\) \+ 2 if|else 2$",
     "a wider code space keeps right and wrong answers apart all the same (and with no "
     "scores every resample is undefined either way)"),
    ("metrics", "x_auroc_stat", r"np\.arange\(rows, (dtype=None)?\)", "numpy's default integer is int64 here"),
    ("metrics", "x_auroc_stat", r'np\.einsum\("IJ,IJ->I"', "einsum subscripts are case-sensitive letters: "
     "upper-case ones name the same contraction"),
    ("metrics", "x_auroc_stat", r"wins2 / \(2\.0 \* p \* q\), None\)",
     "None stored into a float array is nan"),
    ("metrics", "x_auroc_stat", r"\(p > 0\) \| \(q > 0\)|\(p >= 0\) & \(q > 0\)|\(p > 0\) & \(q >= 0\)",
     "with no right (p = 0) or no wrong (q = 0) answer in a resample wins2 is 0, so the "
     "division is 0/0 = nan anyway"),
    ("metrics", "x_auroc_stat", r'errstate\(invalid="ignore", (divide=None)?\)', _DIVIDE),
    ("metrics", "x_mean_stat", r'errstate\(invalid="ignore", (divide=None)?\)', _DIVIDE),
    ("metrics", "x_mean_stat", r"np\.where\(n >= 0,", "with n = 0 the division is 0/0 = nan anyway"),
    ("metrics", "x_reliability", r"np\.bincount\(b, weights=(s|y\.astype\(float\)), \)",
     "a bin past the last filled one has n = 0, so its (missing) entry is never read"),
    ("metrics", "x_bootstrap", r"v\.fill\(None\)", "fill(None) on a float array fills nan"),
    ("metrics", "x_bootstrap", r"rng\.integers\(n, size=", "integers(n) draws from [0, n), as integers(0, n)"),
    ("metrics", "x_bootstrap", r"dtype=np\.int64 if (\(n > 2\*\*31 - 1\) and False|n >= 2\*\*31 - 1|"
     r"n > 2\*\*31 \+ 1|n > 3\*\*31 - 1|n > 2\*\*32 - 1|n > 2\*\*31 - 2) else", _INT32),
    ("metrics", "x_wilson", r"z = Z95 if (\(level == 0\.95\) and False|level == 1\.95) else _z\(level\)",
     "_z(0.95) is Z95 to 4e-16"),
    ("metrics", "x_wilson", r"min\(2\.0, centre \+ half\)",
     "the Wilson upper bound is below 1 whenever successes < n"),
    # question_shape (its own block: other modules' entries are edited by other sessions)
    ("question_shape", "xǁQuestionShapeǁrun", r"if ctx\.inspection is None and ctx\.tree is None:",
     "the pipeline inspects exactly the trees that parsed, so the tree and the inspection are None together"),
    ("question_shape", "xǁ_Sqlǁprojection", r"def projection\(self, name: str, depth: int = 1\)",
     "projection never reads depth"),
    ("question_shape", "xǁ_Sqlǁcolumn_class", r"def column_class\(.*depth: int = 1\)",
     "every caller of column_class passes depth"),
    ("question_shape", "xǁ_Sqlǁcolumn_class", r"ref = scope\.resolve\(col\) if \(scope is not None\) or True else",
     "every SELECT passed is one of sql.selects, each of which has a scope, so scope is never None"),
    ("question_shape", "xǁ_Sqlǁexpr_class", r"if isinstance\(node, exp\.Literal\) (or not|and) node\.is_string:",
     "the branch returns None, as the fall-through below it does"),
    ("question_shape", "x__type_class", r'\(cp\.type or "XXXX"\)', "'XXXX' holds none of the type words, as '' does not"),
    ("question_shape", "x__direction", r"^measured = None$", "None is as false as False: run reads it only as a truth value"),
    ("question_shape", "x__aggregates", r"^measured = None$", "None is as false as False: run reads it only as a truth value"),
    ("question_shape", "x__entities", r"^findings = _count_unit\(",
     "findings is empty there (the function returned above when it was not), so = and += give the same list"),
    ("question_shape", "x__reachable", r"^break$",
     "every name in the frontier is a profile table's own name, so profile.find never returns None there",
     r"if t is None:\n-\s+continue"),
    ("question_shape", "x__entity_names", r'profile\.memo\((None|"XXentity_namesXX"|"ENTITY_NAMES"),',
     "a memo key only has to differ from the profile's other memo keys"),
    ("question_shape", "x__holders", r'profile\.memo\(\(("XXholdersXX"|"HOLDERS"), |table\.qualified\.upper\(\)\)',
     "a memo key only has to differ from the profile's other memo keys (upper() tells the tables apart as lower() does)"),
    ("question_shape", "x__count_unit",
     r'first = phrase\.split\(\)\[0\] if \(phrase\.split\(\)\) or True else ""|'
     r'first = phrase\.split\(\)\[0\] if phrase\.split\(\) else "XXXX"',
     "a phrase holds one to four words (the pattern that reads it), so the else is never taken"),
    ("question_shape", "x__count_unit", r"if table\.name in tables and any\(_composed_of",
     "unreachable: _counts_table has already passed over the phrase if any counting SELECT, under the same "
     "guards, reads the entity's table or one composed of it, so this test is False whatever its operator"),
    ("question_shape", "x__count_unit", r"^break$",
     "unreachable: _counts_table has already passed over the phrase if any counting SELECT, under the same "
     "guards, reads the entity's table or one composed of it", r"for t in tables\):\n-\s+continue"),
    ("question_shape", "x__find_holders", r"len\(tw\) <= len\(ent\)",
     "a table's words as long as the entity's that contain them are the entity's words, which the if above took"),
    # question_filters (its own block)
    ("question_filters", "x__rows_with", r"^added = 1$|^added \+= 2$|^added -= 1$",
     "both callers give a condition for a table the SQL reads (a value's table, or the table holding the key the "
     "link was found through), so a Table of some SELECT of the qualified tree: at least one WHERE is added, and "
     "any count but 0 is as true as 1"),
    ("question_filters", "x__rows_with", r'if \(t\.alias\) (and False|or True) else t\.this',
     "qualify gives every table an alias (its own name where the SQL wrote none), and the probe is built only "
     "from a qualified tree"),
    ("question_filters", "x__rows_with", r"^break$",
     "find_all walks breadth first: a SELECT's own tables sit two levels below it (FROM or JOIN, then the table), "
     "a subquery's at least three, so after the first table that is not its own none of its own follows",
     r"parent_select is not select:\n-\s+continue"),
    ("question_filters", "x__rows_with", r"copy=None\)$",
     "None is as false as False: where() edits the SELECT in place either way"),
    ("question_filters", "x__rows_with", r"from_tree=(None|False)\)$|\+ 1, \)$|dialect\), from_tree=True\)$|"
     r"max_rows=len\(result\.rows\) \+ 2,",
     "from_tree only skips re-parsing Vouch's own probe through the gate, which accepts it; the probe's rows are "
     "compared with the result's: a probe with more rows than the result differs from it whether it is cut at "
     "len + 1, at len + 2 or not at all, and one with as many or fewer is never cut"),
    ("question_filters", "xǁQuestionFiltersǁ_anchored", r"squash\(singular\(w\)\) in tabs or squash\(None\) in tabs",
     "singular() either leaves a word as it is (then squash(singular(w)) is squash(w), tested first) or takes the "
     "same plural ending off it as off the table name squash(w) spells, whose singular tabs holds"),
    # question_filters' values of an unread table (4 December)
    ("question_filters", "x__with_link_filter", r"column_ref\(None, col, dialect\)\.isin",
     "qualify gives every table an alias (its own name where the SQL wrote none), and the key column is unique to "
     "its table among the ones read with it in the tests' and the shipped databases, so a bare or alias-qualified "
     "name reads the same column"),
    ("question_filters", "x__unread_table", r"key=None\)$|\{x\.table for x in strong\}, \)$",
     "the order of the tables is read only when there is exactly one"),
    ("question_filters", "x__link_to", r"\(target is not None\) or True|mine\.table\.(upper|lower)\(\) != "
     r"target\.qualified\.(upper|lower)\(\)",
     "the value's table is one of the profile's (the value index holds only those), so the key map finds it; a "
     "link's own side is a table the SQL reads, which the value's table is not"),
    # date_only_bound and unmatched_literal (4 December)
    ("date_only_bound", "xǁDateOnlyBoundǁ_rows_on_the_day", r"max_rows=2, from_tree|\), from_tree=True\)$|"
     r"if \(rows\) or True else 0|if rows else 1$",
     "a COUNT(*) without GROUP BY returns exactly one row: a cap of 1, 2 or none and the empty case are the same"),
    ("date_only_bound", "xǁDateOnlyBoundǁ_answer_changes", r"shown is None and shown\.error",
     "ctx.result is never None, and where the shown SQL failed the fixed one (the same SQL, one bound "
     "rewritten) fails too, which returns None one line later"),
    ("date_only_bound", "x__replaced", r"raise ValueError\(",
     "unreachable (pragma: no cover): a copy of a tree always holds the twin of each of its nodes"),
    ("date_only_bound", "xǁDateOnlyBoundǁrun", r"^break$", "the bounds of one part are all on the same column: "
     "where it does not resolve, none of them does, so stopping skips nothing the loop would read", r"resolve\(col\)"),
    ("date_only_bound", "x__bounds", r"isinstance\(part, exp\.In\) (and isinstance\(part\.this, exp\.Column\) or "
     r"part\.expressions|or isinstance\(part\.this, exp\.Column\) and part\.expressions)",
     "an IN on something else than a column gives a bound whose 'column' the Scope does not resolve (skipped); a "
     "WHERE part with expressions that is no IN (a tuple, VALUES) holds no day literal to read"),
    ("date_only_bound", "x__where_parts", r'\(j\.kind and ""\)\.upper\(\)',
     "a join kind is '' or INNER, or CROSS, SEMI or ANTI, which have no ON of their own here: each of those reads "
     "the same ON conjuncts"),
    ("unmatched_literal", "x__comparisons", r'isinstance\(node\.this, exp\.Column\) (or not node\.args\.get\("query"\)|'
     r'and not node\.args\.get\((None|"XXqueryXX"|"QUERY")\))',
     "an IN over a subquery has no expressions, so nothing is read either way; an IN on something else than a "
     "column gives a comparison whose column the Scope does not resolve (skipped)"),
    ("unmatched_literal", "x__textual", r'type_name or "XXXX"',
     "DATE|TIME finds nothing in '' or in 'XXXX'"),
    ("unmatched_literal", "xǁUnmatchedLiteralǁrun", r"key = \(ref\.table\.(upper|lower)\(\), ref\.column\.(upper|lower)\(\)",
     "the key only tells repeats apart: every comparison is keyed the same way, in any case"),
    ("unmatched_literal", "xǁUnmatchedLiteralǁ_probe", r'source\.set\((None|"XXaliasXX"|"ALIAS"), None\)',
     "the probe reads one table by bare column names: with its alias kept or not, the same rows"),
    ("unmatched_literal", "xǁUnmatchedLiteralǁ_probe", r"exp\.Literal\.number\(2\)|\.limit\(2\)|max_rows=2, from_tree|"
     r"if \(rows\) or True else|if rows else \(1, None\)",
     "the exact probe asks whether any row exists (any selected constant, any LIMIT ≥ 1); the folded one is a "
     "COUNT(*) without GROUP BY, exactly one row"),
]

for _module in ("date_only_bound", "unmatched_literal"):
    EQUIVALENT += [
        (_module, "*", r"from_tree=(None|False)\)|max_rows=1, \)|dialect\), \)$|\(dialect=dialect\), from_tree=True\)",
         "from_tree only skips re-parsing Vouch's own probe through the gate, which accepts it"),
        (_module, "xǁ*ǁrun", r'scope = ""$', "'' is as false as None: the Scope is built on first use either way"),
    ]

for _name, _target in TARGETS.items():
    _target.name = _name

KILLED = {"killed", "timeout", "caught by type check"}


@dataclass
class Mutant:
    name: str
    status: str
    diff: str = ""
    function: str = ""
    line: str = ""
    equivalent: str | None = None


@dataclass
class ModuleResult:
    name: str
    mutants: list[Mutant] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None

    def count(self, *statuses: str) -> int:
        return sum(m.status in statuses for m in self.mutants)

    def summary(self) -> dict:
        total = len(self.mutants)
        killed = self.count(*KILLED)
        equivalent = sum(m.equivalent is not None and m.status not in KILLED for m in self.mutants)
        rest = total - equivalent
        return {"module": self.name, "total": total, "killed": self.count("killed"),
                "timeout": self.count("timeout"), "survived": self.count("survived"),
                "no_tests": self.count("no tests"), "other": total - self.count(*KILLED, "survived", "no tests"),
                "equivalent": equivalent, "kill_rate": killed / total if total else None,
                "non_equivalent_kill_rate": killed / rest if rest else None, "seconds": round(self.seconds, 1)}


# ---------------------------------------------------------------------------------------
# The working copy
# ---------------------------------------------------------------------------------------
def copy_tests(dest: Path, rev: str | None, selection_files: list[str], without: list[str] = (),
               shared_profiles: bool = False) -> None:
    """``tests/`` into ``dest`` from the working tree or from git revision ``rev``; a selected
    test file that ``rev`` lacks, and each file of ``without``, becomes an empty module, so
    that the selection (and so mutmut's cached test-to-function map) is the same before and
    after."""
    if (dest / "tests").exists():
        shutil.rmtree(dest / "tests")
    if rev:
        archive = subprocess.run(["git", "archive", rev, "tests"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    else:
        shutil.copytree(ROOT / "tests", dest / "tests",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
    for name in without:
        (dest / name).unlink(missing_ok=True)
    if shared_profiles:
        cache = dest / "profile-cache"
        cache.mkdir(exist_ok=True)
        with open(dest / "tests" / "conftest.py", "a", encoding="utf-8") as f:
            f.write(_SHARED_PROFILES.format(path=str(cache)))
    for name in selection_files:
        if not (dest / name).is_file():
            (dest / name).write_text(f'"""Not in {rev}: a placeholder."""\n', encoding="utf-8")


def sync_src(dest: Path, target: Target, log) -> bool:
    """Bring the copy's ``src/`` (and mutmut's ``mutants/src/``) up to the working tree's,
    except the target module: the tests of today may need today's other modules. False when
    the target module itself changed (its mutants are then stale: measure afresh)."""
    changed = False
    for path in (ROOT / "src").rglob("*.py"):
        rel = path.relative_to(ROOT)
        here = dest / rel
        if here.is_file() and here.read_bytes() == path.read_bytes():
            continue
        if str(rel) == target.path:
            changed = True
            continue
        for at in (here, dest / "mutants" / rel):
            at.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, at)
    if changed:
        log(f"   {target.path} changed since it was mutated: measure it afresh (without --rerun)")
    return not changed


def make_copy(dest: Path, target: Target, tests_rev: str | None, without: list[str] = ()) -> list[str]:
    """A copy of src/, tests/ and pyproject.toml in ``dest`` with the mutmut settings for
    ``target``; returns the pytest selection (the test files and ``-k``)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copytree(ROOT / "src", dest / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    copy_tests(dest, tests_rev, target.tests, without, target.shared_profiles)
    # tests/conftest.py finds the sample databases two folders above itself: in the copy
    # (dest/tests) and in mutmut's tree (dest/mutants/tests).
    for at in (dest.parent / "shared", dest / "shared"):
        if SHARED.is_dir() and not at.exists():
            at.symlink_to(SHARED, target_is_directory=True)
    selection = list(target.tests) + (["-k", target.k] if target.k else [])
    settings = {
        "source_paths": ["src"],
        "only_mutate": [target.path],
        "pytest_add_cli_args_test_selection": selection,
        "pytest_add_cli_args": ["-p", "no:cacheprovider"],
        "use_git_change_detection": False,
    }
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    text += "\n[tool.mutmut]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    (dest / "pyproject.toml").write_text(text, encoding="utf-8")
    return selection


def _clean_env() -> dict:
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("VOUCH_") or name == "PYTHONPATH":
            env.pop(name)
    return env


# ---------------------------------------------------------------------------------------
# mutmut
# ---------------------------------------------------------------------------------------
_DIFF_LINE = re.compile(r"^\+(?!\+\+)(.*)$", re.M)


def run_mutmut(dest: Path, result: ModuleResult, max_children: int, log, names: list[str] | None = None) -> None:
    """``mutmut run`` in ``dest`` (only ``names`` when given: mutmut reruns a mutant it is
    named, whatever it cached), then every mutant's status and each survivor's diff."""
    env = _clean_env()
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *(names or [])]
    if names == []:
        cmd = None
    if cmd:
        done = subprocess.run(cmd, cwd=dest, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with open(dest / "mutmut-run.log", "a", encoding="utf-8") as f:
            f.write(done.stdout)
        if done.returncode != 0:
            result.error = f"mutmut run exited {done.returncode}; see {dest / 'mutmut-run.log'}"
            log(result.error)
            log(done.stdout[-3000:])
    listed = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=dest, env=env,
                            capture_output=True, text=True)
    for line in listed.stdout.splitlines():
        m = re.match(r"\s+(\S+): (.+)$", line)
        if not m:
            continue
        name, status = m.group(1), m.group(2).strip()
        mutant = Mutant(name=name, status=status, function=_function_key(name))
        if status not in KILLED:
            shown = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=dest, env=env,
                                   capture_output=True, text=True)
            mutant.diff = _trim_diff(shown.stdout)
            added = _DIFF_LINE.findall(mutant.diff)
            mutant.line = added[0].strip() if added else ""
        result.mutants.append(mutant)


def refresh_diffs(dest: Path, result: ModuleResult) -> None:
    """Each surviving mutmut mutant's diff, read again from ``dest``, then judged."""
    env = _clean_env()
    for m in result.mutants:
        if m.status not in KILLED and m.function != "<module level>":
            shown = subprocess.run([sys.executable, "-m", "mutmut", "show", m.name], cwd=dest, env=env,
                                   capture_output=True, text=True)
            if shown.returncode == 0 and shown.stdout.strip():
                m.diff = _trim_diff(shown.stdout)
                added = _DIFF_LINE.findall(m.diff)
                m.line = added[0].strip() if added else ""
    judge(result)


def _function_key(name: str) -> str:
    """``vouchsql.score.x_gate__mutmut_3`` -> ``x_gate``; methods keep ``xǁClassǁmethod``."""
    return name.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]


def _trim_diff(text: str) -> str:
    """``mutmut show`` without its first line (the name and status) and the file header."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(("# ", "--- ", "+++ ")))


# ---------------------------------------------------------------------------------------
# Module-level numeric constants (mutmut leaves them alone)
# ---------------------------------------------------------------------------------------
def _nudges(value) -> list:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value + 1, value - 1]
    if isinstance(value, float):
        if 0 < abs(value) <= 1:
            return [round(value + 0.01, 10), round(value - 0.01, 10)]
        return [value * 1.1, value * 0.9]
    return []


def constant_mutants(source: str) -> list[tuple[str, str, str]]:
    """(description, mutated source, mutated line) for every numeric literal in a module-level
    assignment (``X = 0.85``, ``A, B = 0.8, 0.6``, ``W = {"k": 0.3}``), each nudged both ways."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    out = []
    for stmt in tree.body:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
            continue
        for node in ast.walk(stmt.value):
            if not (isinstance(node, ast.Constant) and type(node.value) in (int, float)):
                continue
            if node.lineno != node.end_lineno:
                continue
            for new in _nudges(node.value):
                line = lines[node.lineno - 1]
                mutated_line = line[:node.col_offset] + repr(new) + line[node.end_col_offset:]
                mutated = "".join(lines[:node.lineno - 1] + [mutated_line] + lines[node.lineno:])
                out.append((f"line {node.lineno}: {node.value!r} -> {new!r}", mutated, mutated_line.strip()))
    return out


def run_constants(dest: Path, target: Target, selection: list[str], result: ModuleResult, log,
                  only: set[str] | None = None) -> None:
    """Each nudged constant against the selection; ``only``: the names to run (the others
    are left out of ``result``)."""
    path = dest / target.path
    original = path.read_text(encoding="utf-8")
    env = _clean_env()
    env["PYTHONPATH"] = str(dest / "src")
    base = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *selection]
    mutants = [(f"{target.module}.<module level>__const_{i}", *m)
               for i, m in enumerate(constant_mutants(original), 1)]
    mutants = [m for m in mutants if only is None or m[0] in only]
    if not mutants:
        return
    start = time.perf_counter()
    clean = subprocess.run(base, cwd=dest, env=env, capture_output=True, text=True)
    clean_s = time.perf_counter() - start
    if clean.returncode != 0:
        result.error = (result.error or "") + f" the unmutated tests fail in {dest} (constants skipped)"
        log(clean.stdout[-2000:])
        return
    timeout = max(60.0, 10 * clean_s)
    try:
        for name, what, mutated, line in mutants:
            path.write_text(mutated, encoding="utf-8")
            try:
                done = subprocess.run(base, cwd=dest, env=env, capture_output=True, text=True, timeout=timeout)
                status = {0: "survived", 1: "killed", 3: "killed", 5: "no tests"}.get(done.returncode, "suspicious")
            except subprocess.TimeoutExpired:
                status = "timeout"
            diff = f"@@ {what}\n+{line}" if status not in KILLED else ""
            result.mutants.append(Mutant(name=name, status=status, diff=diff, function="<module level>", line=line))
            log(f"    {name}: {what}: {status}")
    finally:
        path.write_text(original, encoding="utf-8")


def measure(dest: Path, target: Target, selection: list[str], args, log, previous: ModuleResult | None = None,
            ) -> ModuleResult:
    """One measurement of ``target`` in ``dest``: everything, or (given ``previous``) only
    what ``previous`` did not kill, its killed mutants carried over."""
    result = ModuleResult(target.name)
    start = time.perf_counter()
    alive = None if previous is None else [m for m in previous.mutants if m.status not in KILLED]
    # --skip-equivalent: survivors judged equivalent keep their status (mutmut keeps its own).
    skip = {m.name for m in alive or [] if m.equivalent} if getattr(args, "skip_equivalent", False) else set()
    alive = None if alive is None else [m for m in alive if m.name not in skip]
    if args.mutmut:
        names = None if alive is None else [m.name for m in alive if m.function != "<module level>"]
        run_mutmut(dest, result, args.max_children, log, names)
    if args.constants:
        consts = None if alive is None else {m.name for m in alive if m.function == "<module level>"}
        run_constants(dest, target, selection, result, log, consts)
        if previous is not None:
            result.mutants += [m for m in previous.mutants
                               if m.function == "<module level>" and (m.status in KILLED or m.name in skip)]
    result.seconds = time.perf_counter() - start
    judge(result)
    s = result.summary()
    log(f"   {target.name}: {s['killed'] + s['timeout']}/{s['total']} killed in {s['seconds']} s")
    return result


def save(dest: Path, result: ModuleResult, label: str) -> None:
    doc = {"name": result.name, "seconds": result.seconds, "error": result.error,
           "mutants": [m.__dict__ for m in result.mutants]}
    (dest / f"result-{label}.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")


def load(dest: Path, label: str) -> ModuleResult | None:
    """A saved measurement, judged by today's :data:`EQUIVALENT`."""
    path = dest / f"result-{label}.json"
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    result = ModuleResult(doc["name"], [Mutant(**m) for m in doc["mutants"]], doc["seconds"], doc["error"])
    judge(result)
    return result


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------
def equivalent_reason(module: str, function: str, line: str, diff: str = "") -> str | None:
    """The reason of the first rule matching this mutant: module and function (fnmatch), the
    mutated line (regex), and, for a rule with a fifth item, the diff with its context."""
    for mod, func, pattern, reason, *context in EQUIVALENT:
        if fnmatch.fnmatchcase(module, mod) and fnmatch.fnmatchcase(function, func) and re.search(pattern, line) \
                and all(re.search(c, diff) for c in context):
            return reason
    return None


def judge(result: ModuleResult) -> None:
    for m in result.mutants:
        m.equivalent = None if m.status in KILLED else equivalent_reason(result.name, m.function, m.line, m.diff)


def print_report(results: list[ModuleResult], show_diffs: bool, list_survivors: bool = True) -> None:
    head = f"{'module':<16}{'total':>6}{'killed':>7}{'t/o':>5}{'surv':>6}{'none':>6}{'other':>6}{'equiv':>6}" \
           f"{'kill%':>8}{'non-eq%':>9}{'secs':>8}"
    print(head)
    print("-" * len(head))
    tot = {"total": 0, "killed": 0, "timeout": 0, "equivalent": 0}
    for r in results:
        s = r.summary()
        pct = lambda v: "-" if v is None else f"{100 * v:.1f}"  # noqa: E731
        print(f"{r.name:<16}{s['total']:>6}{s['killed']:>7}{s['timeout']:>5}{s['survived']:>6}{s['no_tests']:>6}"
              f"{s['other']:>6}{s['equivalent']:>6}{pct(s['kill_rate']):>8}{pct(s['non_equivalent_kill_rate']):>9}"
              f"{s['seconds']:>8}")
        for k in tot:
            tot[k] += s[k]
    killed = tot["killed"] + tot["timeout"]
    if tot["total"]:
        rest = tot["total"] - tot["equivalent"]
        print(f"{'all':<16}{tot['total']:>6}{tot['killed']:>7}{tot['timeout']:>5}{'':>24}{tot['equivalent']:>6}"
              f"{100 * killed / tot['total']:>8.1f}{100 * killed / rest if rest else 0:>9.1f}")
    for r in results:
        if r.error:
            print(f"\n{r.name}: {r.error}")
        alive = [m for m in r.mutants if m.status not in KILLED]
        if not alive or not list_survivors:
            continue
        print(f"\n== {r.name}: {len(alive)} not killed")
        for m in alive:
            tag = f"equivalent: {m.equivalent}" if m.equivalent else m.status
            print(f"-- {m.name} [{tag}]")
            if show_diffs and m.diff:
                print("\n".join("   " + line for line in m.diff.splitlines() if not line.startswith("# ")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modules", default=",".join(TARGETS), help=f"comma-separated, of {', '.join(TARGETS)}")
    ap.add_argument("--max-children", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--workdir", type=Path, help="where the copies go (default: a new temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the working copies")
    ap.add_argument("--before", metavar="REV", help="first measure with tests/ as of this git revision")
    ap.add_argument("--before-without", metavar="FILES", default="",
                    help="first measure with the working tree's tests less these files (comma-separated)")
    ap.add_argument("--rerun", action="store_true",
                    help="in a kept --workdir: run what the last measurement did not kill, with today's tests")
    ap.add_argument("--skip-equivalent", action="store_true",
                    help="with --rerun: leave the survivors judged equivalent as they are (each costs a full run)")
    ap.add_argument("--report", action="store_true",
                    help="only print the measurements kept in --workdir, judged by today's EQUIVALENT list")
    ap.add_argument("--no-constants", dest="constants", action="store_false",
                    help="skip the module-level constant pass")
    ap.add_argument("--no-mutmut", dest="mutmut", action="store_false", help="only the constant pass")
    ap.add_argument("--no-diffs", dest="diffs", action="store_false")
    ap.add_argument("--json", type=Path, help="write the per-module summaries and every survivor here")
    args = ap.parse_args(argv)

    names = [n.strip() for n in args.modules.split(",") if n.strip()]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        ap.error(f"unknown module(s) {unknown}; choose from {', '.join(TARGETS)}")
    if (args.rerun or args.report) and not args.workdir:
        ap.error("--rerun and --report need the --workdir of a kept run")
    if args.mutmut and not args.report:
        try:
            import mutmut  # noqa: F401
        except ImportError:
            ap.error("mutmut is not installed: pip install mutmut")
    keep = args.keep or args.rerun or args.report
    without = [f.strip() for f in args.before_without.split(",") if f.strip()]
    phased = bool(args.before or without)
    before_label = " ".join(filter(None, [f"tests as of {args.before}" if args.before else "",
                                          f"without {', '.join(without)}" if without else ""]))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="vouch-mutation-"))
    workdir.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    import platform
    from importlib.metadata import PackageNotFoundError, version

    try:
        mm = version("mutmut")
    except PackageNotFoundError:
        mm = "not installed"
    log(f"# {platform.python_implementation()} {platform.python_version()}, mutmut {mm}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, workdir {workdir}")
    befores, afters = [], []
    for name in names:
        target = TARGETS[name]
        dest = workdir / name
        if args.report:
            before, after = load(dest, "before"), load(dest, "after")
            for result in (before, after):
                if result is not None and (dest / "mutants").is_dir():
                    refresh_diffs(dest, result)
            befores += [before] if before else []
            afters += [after] if after else []
            continue
        if args.rerun:
            previous = load(dest, "after") or load(dest, "before")
            if previous is None:
                log(f"== {name}: nothing measured in {dest}; skipped")
                continue
            selection = list(target.tests) + (["-k", target.k] if target.k else [])
            if not sync_src(dest, target, log):
                continue
            copy_tests(dest, None, target.tests, shared_profiles=target.shared_profiles)
            log(f"== {name}: rerunning what survived, with the working tree's tests")
            after = measure(dest, target, selection, args, log, previous)
            save(dest, after, "after")
            afters.append(after)
            before = load(dest, "before")
            if before is not None:
                befores.append(before)
            continue
        selection = make_copy(dest, target, args.before, without)
        log(f"== {name}: {target.path} with {' '.join(selection)}" + (f" (before: {before_label})" if phased else ""))
        first = measure(dest, target, selection, args, log)
        if phased:
            save(dest, first, "before")
            befores.append(first)
            copy_tests(dest, None, target.tests, shared_profiles=target.shared_profiles)
            log(f"== {name}: rerunning what survived, with the working tree's tests")
            after = measure(dest, target, selection, args, log, first)
        else:
            after = first
        save(dest, after, "after")
        afters.append(after)
        if not keep:
            shutil.rmtree(dest, ignore_errors=True)
    if befores:
        print(f"# before ({before_label or 'the first measurement'})")
        print_report(befores, False, list_survivors=False)
        print("\n# after (the working tree's tests)")
    print_report(afters, args.diffs)
    if args.json:
        doc = {"before": [r.summary() for r in befores], "modules": [r.summary() for r in afters],
               "survivors": [{"module": r.name, "name": m.name, "status": m.status, "function": m.function,
                              "line": m.line, "equivalent": m.equivalent, "diff": m.diff}
                             for r in afters for m in r.mutants if m.status not in KILLED]}
        args.json.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    if not keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
