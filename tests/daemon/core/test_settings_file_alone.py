"""`load_settings()` reads the config file without pydantic-settings when no variable of skillopt's names a
setting (`core/config.py`): each file here gives the settings, or the error, that pydantic-settings gives
for it, and a variable still wins over the file."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from skillopt_daemon.core import config, paths
from skillopt_daemon.core.config import load_settings
from skillopt_lib.errors import ConfigError


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.upper().startswith("SKILLOPT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = paths.config_file()
    path.parent.mkdir(parents=True)
    return path


FILES = [
    None,  # no config file
    "",
    '[night]\nmax_cost_usd = 5\nschedule = "0 1 * * *"\n[night.exclude]\nprojects = ["/tmp/*"]\n',
    '[tools.claude-code]\nhome = "~/elsewhere"\nextra_dirs = ["/a"]\n[tools.codex]\nenabled = false\n',
    '[optimizer]\nbackend = "openai"\nmodel = "m"\napi_key_env = "K"\nconsent = "yes"\n',
    "[prices.my-model]\ninput = 1.5\noutput = 3\n",
    '[replay]\nclaude_permission_mode = "plan"\n[night]\nsplit_ratios = [0.5, 0.5]\n',  # retired keys
    "[NIGHT]\nmin_tasks = 3\n",  # pydantic-settings matches a setting's name in any case
    "[nightt]\nmin_tasks = 3\n",
    "[night]\nmax_tokens = 'many'\n",
    '[optimizer]\nbackend = "openia"\n',
    "not toml [",
]


def _shape(value: Any) -> Any:
    """Every value and which keys were set explicitly (the night reads that of `max_cost_usd`)."""
    if isinstance(value, BaseModel):
        fields = {k: _shape(getattr(value, k)) for k in type(value).model_fields}
        return {"set": sorted(value.model_fields_set), **fields}
    if isinstance(value, dict):
        return {str(k): _shape(v) for k, v in value.items()}
    return repr(value)


def _read(reader: Any, caplog: pytest.LogCaptureFixture) -> tuple[Any, list[str]]:
    caplog.clear()
    try:
        got: Any = _shape(reader())
    except ConfigError as exc:
        got = (exc.message, exc.hint)
    return got, [r.getMessage() for r in caplog.records]


def _with_pydantic_settings() -> Any:
    """The settings as pydantic-settings reads them, whatever the file holds."""
    original = config._file_alone
    config._file_alone = lambda _path: None  # type: ignore[assignment]
    try:
        return load_settings()
    finally:
        config._file_alone = original  # type: ignore[assignment]


@pytest.mark.parametrize("text", FILES)
def test_a_config_file_gives_what_pydantic_settings_gives(
    config_file: Path, text: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    if text is not None:
        config_file.write_text(text)
    caplog.set_level(logging.WARNING, logger="skillopt.config")
    assert _read(load_settings, caplog) == _read(_with_pydantic_settings, caplog)


def test_a_setting_named_in_capitals_is_read(config_file: Path) -> None:
    config_file.write_text("[NIGHT]\nmin_tasks = 3\n")
    assert load_settings().night.min_tasks == 3


def test_a_variable_wins_over_the_file(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config_file.write_text('[night]\nschedule = "0 1 * * *"\nmin_tasks = 3\n')
    monkeypatch.setenv("SKILLOPT_NIGHT__SCHEDULE", "0 4 * * *")
    settings = load_settings()
    assert (settings.night.schedule, settings.night.min_tasks) == ("0 4 * * *", 3)
    assert type(settings) is config.Settings


def test_variables_that_are_not_settings_leave_the_file_alone(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file.write_text("[ui]\nport = 9\n")
    monkeypatch.setenv("SKILLOPT_AGENT_CLI_DIR", "/nowhere")
    monkeypatch.setenv("SKILLOPT_NO_DESKTOP_NOTIFY", "1")
    assert config._file_alone(config_file) == {"ui": {"port": 9}}
    monkeypatch.setenv("skillopt_ui__port", "7")
    assert config._file_alone(config_file) is None
