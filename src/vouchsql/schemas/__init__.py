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
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://vouchsql.dev/schemas/answer.schema.json"
    schema["title"] = "Vouch Answer"
    schema["description"] = ("The JSON printed by `vouch check --json` (and, extended, `vouch ask --json`). "
                             "Stable contract: fields are only ever added.")
    return schema


def render() -> str:
    return json.dumps(answer_schema(), indent=2, sort_keys=True) + "\n"

