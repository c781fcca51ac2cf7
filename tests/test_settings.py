"""Settings: default < vouch.toml < VOUCH_* environment < explicit override; bad values and
unknown keys are user errors naming the setting; the configuration table in the docs is generated."""

from __future__ import annotations

import argparse
import re
from dataclasses import fields
from pathlib import Path

import pytest

import vouchsql
from vouchsql.errors import UserInputError
from vouchsql.settings import SETTINGS, Config, load_config, settings_markdown

CONFIG_DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
TABLE_MARKER = "<!-- settings-table -->"
TABLE_END = "<!-- /settings-table -->"


def write_toml(folder: Path, text: str, name: str = "vouch.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults(tmp_path):
    config = load_config(env={}, cwd=tmp_path)
    for s in SETTINGS:
        assert getattr(config, s.name) == s.default, s.name
    assert config.sources == {}
    assert config == Config()
    assert config.cache_path.name == "vouchsql" or "vouchsql" in str(config.cache_path)


def test_precedence_default_toml_env_override(tmp_path):
    write_toml(tmp_path, "timeout = 3\nmax_rows = 50\nsample_rows = 777\nno_cache = true\n")
    env = {"VOUCH_MAX_ROWS": "60", "VOUCH_SAMPLE_ROWS": "888"}

    config = load_config(env=env, cwd=tmp_path, sample_rows=999)
    assert config.profile_timeout == 120.0          # default
    assert config.timeout == 3.0                    # vouch.toml
    assert config.no_cache is True                  # vouch.toml, a TOML boolean
    assert config.max_rows == 60                    # env beats the file
    assert config.sample_rows == 999                # explicit beats env
    assert config.sources["timeout"].endswith("vouch.toml")
    assert config.sources["max_rows"] == "VOUCH_MAX_ROWS"
    assert "profile_timeout" not in config.sources

    # Each layer alone.
    assert load_config(env={}, cwd=tmp_path).max_rows == 50
    assert load_config(env=env, cwd=tmp_path).sample_rows == 888
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert load_config(env={}, cwd=elsewhere).max_rows == 10_000  # no vouch.toml there


def test_explicit_none_keeps_lower_layers(tmp_path):
    config = load_config(env={"VOUCH_TIMEOUT": "4"}, cwd=tmp_path, timeout=None, max_rows=None)
    assert config.timeout == 4.0 and config.max_rows == 10_000


def test_vouch_section_and_vouch_config_file(tmp_path):
    other = tmp_path / "conf"
    other.mkdir()
    path = write_toml(other, "[vouch]\ntimeout = 7.5\nrule = \"v3\"\n", name="settings.toml")
    config = load_config(env={"VOUCH_CONFIG": str(path)}, cwd=tmp_path)
    assert config.timeout == 7.5 and config.rule == "v3"
    assert config.sources["timeout"] == str(path)
    with pytest.raises(UserInputError) as info:
        load_config(env={"VOUCH_CONFIG": str(tmp_path / "nope.toml")}, cwd=tmp_path)
    assert "VOUCH_CONFIG" in info.value.message


def test_env_values_are_parsed(tmp_path):
    config = load_config(env={"VOUCH_TIMEOUT": "2.5", "VOUCH_MAX_ROWS": "12", "VOUCH_NO_CACHE": "yes",
                              "VOUCH_CACHE_DIR": str(tmp_path / "c"), "VOUCH_RULE": "designed"}, cwd=tmp_path)
    assert config.timeout == 2.5 and isinstance(config.max_rows, int) and config.max_rows == 12
    assert config.no_cache is True and config.rule == "designed"
    assert config.cache_path == tmp_path / "c"
    for text, value in [("1", True), ("true", True), ("On", True), ("0", False), ("no", False), ("off", False)]:
        assert load_config(env={"VOUCH_NO_CACHE": text}, cwd=tmp_path).no_cache is value


@pytest.mark.parametrize("env,setting", [
    ({"VOUCH_TIMEOUT": "soon"}, "timeout"),
    ({"VOUCH_TIMEOUT": "-1"}, "timeout"),
    ({"VOUCH_TIMEOUT": "0"}, "timeout"),
    ({"VOUCH_TIMEOUT": "nan"}, "timeout"),
    ({"VOUCH_TIMEOUT": "inf"}, "timeout"),
    ({"VOUCH_PROFILE_TIMEOUT": ""}, "profile_timeout"),
    ({"VOUCH_MAX_ROWS": "1.5"}, "max_rows"),
    ({"VOUCH_MAX_ROWS": "0"}, "max_rows"),
    ({"VOUCH_SAMPLE_THRESHOLD": "-5"}, "sample_threshold"),
    ({"VOUCH_SAMPLE_ROWS": "many"}, "sample_rows"),
    ({"VOUCH_NO_CACHE": "maybe"}, "no_cache"),
    ({"VOUCH_RULE": "bogus"}, "rule"),
])
def test_bad_env_value_names_the_setting(tmp_path, env, setting):
    with pytest.raises(UserInputError) as info:
        load_config(env=env, cwd=tmp_path)
    message = info.value.message
    assert re.search(rf"\b{setting}\b", message), message
    assert next(iter(env)) in message  # and where it came from
    assert info.value.exit_code == 2


def test_bad_toml_value_names_setting_and_file(tmp_path):
    path = write_toml(tmp_path, 'timeout = "soon"\n')
    with pytest.raises(UserInputError) as info:
        load_config(env={}, cwd=tmp_path)
    assert "timeout" in info.value.message and str(path) in info.value.message


def test_bad_override_names_the_setting(tmp_path):
    with pytest.raises(UserInputError) as info:
        load_config(env={}, cwd=tmp_path, max_rows=-2)
    assert "max_rows" in info.value.message
    with pytest.raises(UserInputError) as info:
        vouchsql.connect("whatever.sqlite", cache_dir=str(tmp_path), timeout="x")
    assert "timeout" in info.value.message


def test_unknown_keys_rejected(tmp_path):
    write_toml(tmp_path, "timeut = 3\n")
    with pytest.raises(UserInputError) as info:
        load_config(env={}, cwd=tmp_path)
    assert "timeut" in info.value.message
    write_toml(tmp_path, "[vouch]\nmax_row = 3\n")
    with pytest.raises(UserInputError) as info:
        load_config(env={}, cwd=tmp_path)
    assert "max_row" in info.value.message
    (tmp_path / "vouch.toml").unlink()
    with pytest.raises(UserInputError) as info:
        load_config(env={}, cwd=tmp_path, timeut=3)
    assert "timeut" in info.value.message


def test_unknown_env_variables_are_ignored(tmp_path):
    # VOUCH_* names that are not settings (VOUCH_CONFIG, or a future one) do not fail.
    assert load_config(env={"VOUCH_SOMETHING_ELSE": "1"}, cwd=tmp_path) == Config()


def test_broken_toml_is_a_user_error(tmp_path):
    write_toml(tmp_path, "timeout = = 3\n")
    with pytest.raises(UserInputError) as info:
        load_config(env={}, cwd=tmp_path)
    assert "vouch.toml" in info.value.message


def test_settings_table_matches_config():
    assert {s.name for s in SETTINGS} == {f.name for f in fields(Config)} - {"sources"}
    for s in SETTINGS:
        assert getattr(Config(), s.name) == s.default
        assert s.env == "VOUCH_" + s.name.upper()
        assert s.option == "--" + s.name.replace("_", "-")


def test_settings_markdown_lists_every_setting():
    table = settings_markdown().splitlines()
    assert table[0].startswith("| setting |")
    assert len(table) == 2 + len(SETTINGS)
    for s, line in zip(SETTINGS, table[2:]):
        assert f"`{s.name}`" in line and f"`{s.env}`" in line and f"`{s.option}`" in line


def test_docs_configuration_table_is_generated():
    text = CONFIG_DOC.read_text(encoding="utf-8")
    assert TABLE_MARKER in text, f"docs/configuration.md has no {TABLE_MARKER} marker above its settings table"
    after = text.split(TABLE_MARKER, 1)[1]
    if TABLE_END in after:  # the table runs to the closing marker where there is one
        table = [line.rstrip() for line in after.split(TABLE_END, 1)[0].splitlines() if line.strip()]
    else:  # otherwise to the first line that is not a table row
        lines = after.splitlines()
        while lines and not lines[0].strip():
            lines.pop(0)
        table = []
        for line in lines:
            if not line.startswith("|"):
                break
            table.append(line.rstrip())
    assert "\n".join(table) == settings_markdown(), \
        "docs/configuration.md's settings table is out of date: paste `vouch config --markdown` under the marker"


def _help(command: str) -> str:
    from vouchsql.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command].format_help()


@pytest.mark.parametrize("command, shown, hidden", [
    ("sql", ["--timeout", "--max-result-bytes", "--trusted-objects"], ["--rule", "--sample-rows", "--base-url"]),
    ("profile", ["--timeout", "--sample-rows", "--no-cache"], ["--rule", "--temperature"]),
    ("check", ["--timeout", "--sample-rows", "--rule", "--exact-columns"], ["--base-url", "--temperature", "--samples"]),
    ("ask", ["--timeout", "--rule", "--base-url", "--temperature", "--schema-tokens"], []),
    ("config", [s.option for s in SETTINGS], []),
])
def test_each_command_lists_the_settings_it_reads(command, shown, hidden):
    text = _help(command)
    assert all(option in text for option in shown), [o for o in shown if o not in text]
    assert not [option for option in hidden if option in text]
    assert ("`vouch config` lists the others" in text) is bool(hidden)


def test_a_setting_a_command_does_not_list_is_still_accepted():
    from vouchsql.cli import build_parser

    args = build_parser().parse_args(["check", "--db", "x.sqlite", "-q", "q", "--sql", "SELECT 1",
                                      "--temperature", "0.2", "--base-url", "http://127.0.0.1:9"])
    assert (args.temperature, args.base_url) == ("0.2", "http://127.0.0.1:9")
