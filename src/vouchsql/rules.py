"""The names of the scoring rules, in the order reports list them: defined once here (the
settings, the scorer and the harnesses read them; importing this loads nothing else)."""

RULE_NAMES = ("designed", "v2", "agreement_first", "v3")
