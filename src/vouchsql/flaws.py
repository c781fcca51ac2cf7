"""The premise flaw taxonomy (PremiseSQL Table 1) as data: the codes, their names and
categories. A leaf module (it imports nothing of the package), so the renderers and the
assess step read one table."""

from __future__ import annotations

# PremiseSQL Table 1, word for word: code -> (subcategory name, description). The E1–E4
# categories are CATEGORIES; a code's category is its first two characters.
TAXONOMY: dict[str, tuple[str, str]] = {
    "E1.1": ("Ambiguity", "Query contains ambiguous references, scopes, or targets that admit multiple plausible "
                          "SQL interpretations."),
    "E1.2": ("Unclear Intent", "Query intent or operation type is underspecified, making the SQL structure "
                               "indeterminate."),
    "E2.1": ("Internal Text Contradiction", "Multiple query conditions cannot logically hold simultaneously."),
    "E2.2": ("Question–Schema Contradiction", "Required schema elements or relations are absent or incompatible "
                                              "with the database schema."),
    "E3.1": ("Missing Constraint", "Essential filtering conditions or target specifications are omitted."),
    "E3.2": ("Missing Schema Premise", "Required tables, columns, or relations are not provided in the schema."),
    "E3.3": ("Semantic Gap", "Query concepts cannot be semantically mapped to schema elements."),
    "E4.1": ("Inexpressible in SQL", "Query intent cannot be precisely represented using standard SQL."),
    "E4.2": ("External Knowledge Required", "Correct answering requires knowledge absent from the database."),
}
CATEGORIES: dict[str, str] = {
    "E1": "Expression Error",
    "E2": "Premise Contradiction",
    "E3": "Missing Premise",
    "E4": "Beyond Ability",
}


def flaw_name(code: str | None) -> str:
    return TAXONOMY[code][0] if code in TAXONOMY else "unknown flaw"


def category_name(code: str | None) -> str:
    """The E1–E4 category of a subcategory code (``E2.1`` → ``Premise Contradiction``)."""
    return CATEGORIES.get((code or "")[:2], "unknown category")


def normalise_code(value: object) -> str | None:
    """``E2.1``, ``e2.1: …`` or ``E2.1 Internal Text Contradiction`` → ``E2.1``; other text upper-cased."""
    if value is None:
        return None
    text = str(value).strip().upper()
    for code in TAXONOMY:
        if text == code or text.startswith(code + " ") or text.startswith(code + ":"):
            return code
    return text or None
