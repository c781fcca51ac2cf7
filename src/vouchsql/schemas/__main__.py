"""``python -m vouchsql.schemas`` rewrites answer.schema.json from the pydantic models."""

from . import ANSWER_SCHEMA, render

ANSWER_SCHEMA.write_text(render(), encoding="utf-8")
print(f"wrote {ANSWER_SCHEMA}")
