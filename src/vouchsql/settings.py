"""One settings table feeds the CLI options, ``VOUCH_*`` environment variables and an
optional ``vouch.toml``; the table in docs/configuration.md is generated from it and a test
keeps the two in step.

Precedence, lowest first: the default here, ``vouch.toml`` (``./vouch.toml`` or the file
named by ``VOUCH_CONFIG``), the environment, then an explicit CLI option or keyword argument.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import UserInputError
from .rules import RULE_NAMES


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    parse: Callable[[str], Any]
    # What the setting governs, so each command's --help shows only its own: "engine" (every
    # query), "profile" (measuring tables), "vouch" (the checks and the gate), "model" (vouch ask)
    scope: str = "engine"

    @property
    def env(self) -> str:
        return "VOUCH_" + self.name.upper()

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


def _clip(text: str) -> str:
    text = str(text)
    return text if len(text) <= 40 else text[:37] + "..."


def _bool(text: str) -> bool:
    low = str(text).strip().lower()
    if low in {"1", "true", "yes", "on"}:
        return True
    if low in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"expected true/false, got {_clip(text)!r}")


# Upper bounds: a time limit over a day is no limit (and overflows engines that keep it in
# milliseconds), and counts beyond a 64-bit integer cannot reach SQL (LIMIT, counters).
MAX_SECONDS = 86_400.0
MAX_COUNT = 2**63 - 1


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"must be a number, got {_clip(text)!r}") from None


def _whole(text: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:  # also 1e20, 1.5 and numbers of thousands of digits
        raise ValueError(f"must be a whole number, got {_clip(text)!r}") from None


def _seconds(value: float, text: str) -> float:
    if value > MAX_SECONDS:
        raise ValueError(f"must be at most {MAX_SECONDS:g} seconds (one day), got {_clip(text)!r}")
    return value


def _count(value: int, text: str) -> int:
    if value > MAX_COUNT:
        raise ValueError(f"must be at most {MAX_COUNT}, got {_clip(text)!r}")
    return value


def _positive_float(text: str) -> float:
    value = _number(text)
    if not (0 < value < float("inf")):  # also refuses nan and inf
        raise ValueError(f"must be a number > 0, got {_clip(text)!r}")
    return _seconds(value, text)


def _positive_int(text: str) -> int:
    value = _whole(text)
    if value <= 0:
        raise ValueError(f"must be > 0, got {_clip(text)!r}")
    return _count(value, text)


def _non_negative_int(text: str) -> int:
    value = _whole(text)
    if value < 0:
        raise ValueError(f"must be >= 0, got {_clip(text)!r}")
    return _count(value, text)


def _non_negative_float(text: str) -> float:
    value = _number(text)
    if not (0 <= value < float("inf")):
        raise ValueError(f"must be a number >= 0, got {_clip(text)!r}")
    return _seconds(value, text)


def _temperature(text: str) -> float:
    value = _number(text)
    if not (0 <= value <= 2):
        raise ValueError(f"must be between 0 and 2, got {_clip(text)!r}")
    return value


RULES = RULE_NAMES


def _rule(text: str) -> str:
    value = str(text).strip()
    if value not in RULES:
        raise ValueError(f"expected one of {', '.join(RULES)}, got {_clip(text)!r}")
    return value


def _shown(text: str) -> str:
    value = str(text).strip().lower()
    if value not in ("largest", "first"):
        raise ValueError(f"expected largest or first, got {_clip(text)!r}")
    return value


def _schemas(text: str) -> tuple[str, ...]:
    """``sales, public`` → ("sales", "public"); ``*`` is every schema the role can read."""
    names = tuple(dict.fromkeys(n.strip() for n in str(text).split(",") if n.strip()))
    if not names:
        raise ValueError("expected schema names separated by commas, or *")
    if "*" in names and len(names) > 1:
        raise ValueError(f"* already means every schema; got {_clip(text)!r}")
    return names


def _names(text: str) -> tuple[str, ...]:
    """``public.fmt_money, extension:tablefunc`` → a tuple; ``*`` trusts everything found."""
    names = tuple(dict.fromkeys(n.strip() for n in str(text).split(",") if n.strip()))
    if not names:
        raise ValueError("expected object names (schema.name or extension:NAME) separated by commas, or *")
    return names


def _default_cache_dir() -> str:
    import platformdirs  # 5 ms at start; only when no cache_dir is set

    return platformdirs.user_cache_dir("vouchsql")


SETTINGS: tuple[Setting, ...] = (
    Setting("timeout", 10.0, "Seconds a query may run before it is stopped.", _positive_float),
    Setting("max_rows", 10_000, "Rows fetched per query; more are cut off and the result says truncated.", _positive_int),
    Setting("max_result_bytes", 33_554_432, "Bytes of cell values fetched per query (32 MiB); the fetch stops there, a larger cell is cut, and the result says truncated and why.", _positive_int),
    Setting("profile_timeout", 120.0, "Seconds the profile of one table may take in all: a safety net; a table cut short is marked partial and measured again next time.", _positive_float, scope="profile"),
    Setting("sample_threshold", 200_000, "Tables with more rows get distinct counts and top values from a sample (marked as estimates).", _positive_int, scope="profile"),
    Setting("sample_rows", 100_000, "Rows in that sample.", _positive_int, scope="profile"),
    Setting("scan_threshold", 1_000_000, "Tables with more rows are never read whole: their NULL counts and min/max come from the engine's fresh statistics or the sample too (marked as estimates).", _positive_int, scope="profile"),
    Setting("profile_statements", 200, "Statements the profile of one table may run; columns past it are marked not measured.", _positive_int, scope="profile"),
    Setting("schemas", None, "Schemas (Spark: databases) to read, separated by commas, or * for every schema the role can read (default: the connection's default schema). Tables outside the default schema are named schema.table.", _schemas),
    Setting("trusted_objects", None, "Objects of a PostgreSQL or MariaDB/MySQL database that run code when a query reaches them (user functions, views over them, foreign tables, extensions, domains, policies) and that a person has reviewed, as schema.name or extension:NAME separated by commas; * trusts every one found (the statement policy still applies). Without it Vouch refuses a database where its role can reach such code (docs/security.md#code-the-database-holds; `vouch doctor` prints a role that cannot).", _names),
    Setting("cache_dir", None, "Where profiles and the demo database are cached (default: the user cache directory).", str, scope="profile"),
    Setting("no_cache", False, "Recompute the profile instead of reading the on-disk cache.", _bool, scope="profile"),
    Setting("rule", "agreement_first", "Scoring rule for the gate: " + ", ".join(RULE_NAMES[:-1]) + " or " + RULE_NAMES[-1] + ".", _rule, scope="vouch"),
    Setting("samples", 5, "SQL samples `vouch ask` draws per interpretation (its --k).", _positive_int, scope="model"),
    Setting("base_url", None, "Base URL of the model endpoint, e.g. an OpenAI-compatible server (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the vendor's).", str, scope="model"),
    Setting("model_timeout", 60.0, "Seconds one model request may take before it is retried.", _positive_float, scope="model"),
    Setting("max_retries", 3, "Retries of a model request after a timeout, a 429 or a 5xx.", _non_negative_int, scope="model"),
    Setting("retry_backoff", 1.0, "Seconds before the first retry; each further retry waits twice as long.", _non_negative_float, scope="model"),
    Setting("concurrency", 8, "Model requests in flight at once.", _positive_int, scope="model"),
    Setting("temperature", 0.7, "Sampling temperature of the K generate calls (assess and write use 0).", _temperature, scope="model"),
    Setting("no_model_cache", False, "Send every model request instead of reading the on-disk response cache.", _bool, scope="model"),
    Setting("shown", "largest", "The sample `vouch ask` shows and scores: largest (the first member of the largest result cluster) or first (sample 0, as IES §3.1 scores it).", _shown, scope="model"),
    Setting("judge_claims", False, "`vouch ask` asks the model which claims of the written answer its result does not support, each about the answer or commentary (IES §3.2, TDD-H), one more call per answer; a claim about the answer caps the score (claim_judge).", _bool, scope="model"),
    Setting("judge_complete", False, "`vouch ask` asks the model for COMPLETE (IES §3.2: the share of the question's parts the answer covers), one more call per answer; without it COMPLETE comes from the question–SQL alignment.", _bool, scope="model"),
    Setting("definitions", None, "Recorded definitions: Vouch's TOML/YAML file, a Cortex Analyst semantic model, a dbt project folder or WrenAI MDL. Given to the model; its routing rules checked on the SQL (definition_rule) and its verified queries run beside it (verified_query).", str, scope="vouch"),
    Setting("exact_columns", False, "The answer's columns are its contract (a program reads them, or an evaluation compares them as Spider does): a returned column the question did not ask for (asked_columns) caps the score; without it that is a signal, shown but not withholding.", _bool, scope="vouch"),
    Setting("schema_tokens", 8000, "Estimated tokens of schema text in `vouch ask`'s prompts (one token per 3 characters). A schema that fits is sent whole; a larger one sends the tables the question, the routing rules and their join keys point to, and says how many more there are. 0 sends the whole schema always.", _non_negative_int, scope="model"),
)

_BY_NAME = {s.name: s for s in SETTINGS}
SCOPES = ("engine", "profile", "vouch", "model")


@dataclass(frozen=True)
class Config:
    timeout: float = 10.0
    max_rows: int = 10_000
    max_result_bytes: int = 33_554_432
    profile_timeout: float = 120.0
    sample_threshold: int = 200_000
    sample_rows: int = 100_000
    scan_threshold: int = 1_000_000
    profile_statements: int = 200
    schemas: tuple[str, ...] | None = None
    trusted_objects: tuple[str, ...] | None = None
    cache_dir: str | None = None
    no_cache: bool = False
    rule: str = "agreement_first"
    samples: int = 5
    base_url: str | None = None
    model_timeout: float = 60.0
    max_retries: int = 3
    retry_backoff: float = 1.0
    concurrency: int = 8
    temperature: float = 0.7
    no_model_cache: bool = False
    shown: str = "largest"
    judge_complete: bool = False
    judge_claims: bool = False
    definitions: str | None = None
    schema_tokens: int = 8000
    exact_columns: bool = False
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def cache_path(self) -> Path:
        return Path(self.cache_dir or _default_cache_dir())

    def with_overrides(self, **values: Any) -> "Config":
        clean = {k: v for k, v in values.items() if v is not None}
        for key, value in clean.items():
            if key not in _BY_NAME:
                raise UserInputError(f"unknown setting {key!r}; known: {', '.join(_BY_NAME)}")
            clean[key] = _coerce(_BY_NAME[key], value, "argument")
        return replace(self, **clean)


def _coerce(setting: Setting, value: Any, source: str) -> Any:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):  # a TOML array, or a keyword argument's list
        value = ",".join(map(str, value))
    try:
        return setting.parse(str(value))
    except (TypeError, ValueError) as exc:
        raise UserInputError(f"setting {setting.name} from {source}: {exc}") from None


def _toml_values(path: Path) -> dict[str, Any]:
    import tomllib  # 9 ms at start; only when there is a config file to read

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UserInputError(f"cannot read config file {path}: {exc}") from None
    section = data.get("vouch", data)
    unknown = set(section) - set(_BY_NAME) - {"vouch"}
    if unknown:
        raise UserInputError(
            f"{path}: unknown setting(s) {', '.join(sorted(unknown))}; known: {', '.join(_BY_NAME)}"
        )
    return {k: v for k, v in section.items() if k in _BY_NAME}


def load_config(env: Mapping[str, str] | None = None, cwd: Path | None = None, **overrides: Any) -> Config:
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    config_file = env.get("VOUCH_CONFIG")
    path = Path(config_file) if config_file else Path(cwd or Path.cwd()) / "vouch.toml"
    if config_file and not path.is_file():
        raise UserInputError(f"VOUCH_CONFIG names {path}, which is not a file")
    if path.is_file():
        for key, value in _toml_values(path).items():
            values[key] = _coerce(_BY_NAME[key], value, str(path))
            sources[key] = str(path)
    for setting in SETTINGS:
        if setting.env in env:
            values[setting.name] = _coerce(setting, env[setting.env], setting.env)
            sources[setting.name] = setting.env
    config = Config(**values, sources=sources)
    return config.with_overrides(**overrides)


def settings_markdown() -> str:
    """The configuration table of docs/configuration.md, generated from SETTINGS."""
    lines = [
        "| setting | CLI option | environment | default | what it does |",
        "|---|---|---|---|---|",
    ]
    for s in SETTINGS:
        default = "user cache dir" if s.name == "cache_dir" else f"`{s.default}`"
        lines.append(f"| `{s.name}` | `{s.option}` | `{s.env}` | {default} | {s.help} |")
    return "\n".join(lines)


assert {f.name for f in fields(Config)} - {"sources"} == set(_BY_NAME), "Config and SETTINGS drifted"
