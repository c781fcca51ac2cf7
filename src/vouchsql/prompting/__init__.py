"""What a model is shown for a question: the schema retrieved for it (:mod:`.retrieval`), the
schema, definitions, template and result texts of the prompts (:mod:`.context`) and the
fenced data blocks they are written in (:mod:`.data_text`). The ask stage
(:mod:`vouchsql.pipeline.asking`), the judges and the evaluation harnesses build their prompts
from here; :mod:`vouchsql.llm` only sends them to a provider."""
