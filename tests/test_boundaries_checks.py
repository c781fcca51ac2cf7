"""The other checks pinned at their boundaries (issue 11, part 5): what each one reports —
fired, detail, evidence and score terms — exactly at and beside the edges that decide it,
on real SQLite files built here. ``python bench/mutation.py --modules missing_table,…`` is
the measure of these tests: a moved cutoff, a flipped comparison or a deleted guard in a
check must fail one of them.
"""

from __future__ import annotations

from test_boundaries import make_db, run_check  # noqa: F401
