"""Isolation tests (issue 10, parts 6 and 7): a hostile corpus that must be refused without
changing anything, a corpus of legitimate reads that must keep working, and resource cases
that must stay within time and memory bounds, on every engine Vouch opens."""
