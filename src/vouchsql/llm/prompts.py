"""Prompts are Markdown files shipped in ``vouchsql/prompts/``, identified by a hash of their
content (the first 12 hex digits of its sha256), which every Answer's ``usage.prompts``
records. ``vouch prompts`` lists them.

A file holds the system message, then a line ``<!-- user -->``, then the user message.
``{{name}}`` marks a value filled in at run time; filling in a name the file does not use,
or leaving one unfilled, is a programming error and raises.

Whatever Vouch read from the database, the definitions file or an earlier model reply sits
between a line ``<data name="…">`` and the next line ``</data>``, and the system message says
that a data block holds data, never instructions. The values for the slots inside a block are
written by :mod:`vouchsql.prompting.data_text`, which escapes every ``<``; a value that still holds
a block tag is refused, so a builder that skipped the escaping fails loudly instead of letting
the data close its block.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

PROMPT_NAMES = ("assess", "decide", "generate", "write", "judge_complete", "judge_claims", "plain", "interpretations",
                "missing", "judge_named", "paraphrase")
USER_MARK = "<!-- user -->"
_SLOT = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
_DATA_BLOCK = re.compile(r'^<data name="[a-z_]+">$(.*?)^</data>$', re.M | re.S)
_DATA_TAG = re.compile(r"</?data\b", re.I)


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str
    hash: str
    path: str

    @property
    def title(self) -> str:
        first = self.text.lstrip().splitlines()[0] if self.text.strip() else ""
        return first.lstrip("# ").strip()

    @property
    def slots(self) -> list[str]:
        return list(dict.fromkeys(_SLOT.findall(self.text)))

    @property
    def data_slots(self) -> list[str]:
        """The slots inside ``<data>`` blocks."""
        return list(dict.fromkeys(s for block in _DATA_BLOCK.findall(self.text) for s in _SLOT.findall(block)))

    def messages(self, **values: str) -> list[dict[str, str]]:
        system, sep, user = self.text.partition(USER_MARK)
        if not sep:
            raise ValueError(f"prompt {self.name} has no {USER_MARK} line")
        unknown = set(values) - set(self.slots)
        if unknown:
            raise KeyError(f"prompt {self.name} has no slot(s) {sorted(unknown)}")
        for slot in self.data_slots:
            if slot in values and _DATA_TAG.search(str(values[slot])):
                raise ValueError(f"prompt {self.name}: the value for {{{{{slot}}}}} holds a data-block tag; "
                                 f"write it with vouchsql.prompting.data_text")

        def fill(part: str) -> str:
            def one(m: re.Match[str]) -> str:
                if m.group(1) not in values:
                    raise KeyError(f"prompt {self.name}: no value for {{{{{m.group(1)}}}}}")
                return str(values[m.group(1)])
            return _SLOT.sub(one, part).strip()

        return [{"role": "system", "content": fill(system)}, {"role": "user", "content": fill(user)}]


@lru_cache(maxsize=None)
def load_prompt(name: str) -> Prompt:
    if name not in PROMPT_NAMES:
        raise KeyError(f"no prompt named {name!r}; prompts: {', '.join(PROMPT_NAMES)}")
    ref = resources.files("vouchsql").joinpath("prompts", f"{name}.md")
    data = ref.read_bytes()
    return Prompt(name=name, text=data.decode("utf-8"), hash=hashlib.sha256(data).hexdigest()[:12], path=str(ref))


def list_prompts() -> list[Prompt]:
    return [load_prompt(n) for n in PROMPT_NAMES]


def prompt_hashes(*names: str) -> dict[str, str]:
    return {n: load_prompt(n).hash for n in (names or PROMPT_NAMES)}
