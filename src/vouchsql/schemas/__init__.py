"""JSON Schema of the Answer contract. ``python -m vouchsql.schemas`` rewrites the file from
the pydantic models; a test fails when the two drift apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ANSWER_SCHEMA = Path(__file__).with_name("answer.schema.json")


def answer_schema() -> dict[str, Any]:
    from ..answer import Answer

    schema = Answer.model_json_schema(mode="serialization")
    _type_evidence(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://vouchsql.dev/schemas/answer.schema.json"
    schema["title"] = "Vouch Answer"
    schema["description"] = ("The JSON printed by `vouch check --json` (and, extended, `vouch ask --json`). "
                             "Stable contract: fields are only ever added.")
    return schema


def _type_evidence(schema: dict[str, Any]) -> None:
    """Each check's ``evidence`` typed by its own model: a ``CheckResult`` whose ``name`` is a
    check's is held to that check's Evidence model (JSON Schema ``if``/``then`` on the name);
    another name (a paper's check set) keeps a free object."""
    from ..checks import CHECKS

    defs = schema.setdefault("$defs", {})
    rules = []
    for check in CHECKS:
        model = check.Evidence
        sub = model.model_json_schema(mode="serialization", ref_template="#/$defs/{model}")
        name = model.__name__
        for key, value in [*sub.pop("$defs", {}).items(), (name, sub)]:
            # two models of one name would share a $defs entry: a schema that lies
            if defs.setdefault(key, value) != value:
                raise ValueError(f"two models named {key} in the Answer schema; rename one")
        rules.append({"if": {"properties": {"name": {"const": check.name}}, "required": ["name"]},
                      "then": {"properties": {"evidence": {"$ref": f"#/$defs/{name}"}}}})
    defs["CheckResult"]["allOf"] = rules


def render() -> str:
    return json.dumps(answer_schema(), indent=2, sort_keys=True) + "\n"

