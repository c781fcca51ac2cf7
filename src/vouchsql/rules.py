"""The names of the scoring rules and of the check sets, in the order reports list them:
defined once here (the settings, the scorer and the harnesses read them; importing this
loads nothing else)."""

# designed, v2, agreement_first and v3 as IES §3.2/§3.4 froze them; agreement_alone is the
# paper's comparison rule (s = A); v3_extended is Vouch's v3 that caps on every signal.
RULE_NAMES = ("designed", "v2", "agreement_alone", "agreement_first", "v3", "v3_extended")

# Which checks a rule's vetoes and caps read: ``vouch`` every check by its kind (the product),
# ``paper`` only the IES checks (missing table, bad join, stand-in; uncited number, COMPLETE
# < 0.5, thin evidence as IES §3.2 defines it), for reproducing the paper's tables.
CHECK_SETS = ("vouch", "paper")

# bad_join vetoes an equi-join whose keys overlap less than this in both directions (IES
# eq. 2); `vouch profile` marks the same pairs.
RHO_MIN = 0.85
