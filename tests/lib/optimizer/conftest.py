"""Fixtures for the optimizer tests: an isolated SKILLOPT_HOME, the house-style environment and a scripted
model server that plays both its agent and its optimizer (see skillopt_lib/testing/house_style.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from optimizer_support import SECRET

from skillopt_lib.envs.toy import HouseStyleEnv
from skillopt_lib.testing.house_style import demo_script
from skillopt_lib.testing.scripted_server import ScriptedServer


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path_factory.mktemp("skillopt-home")))
    monkeypatch.setenv("TOY_KEY", SECRET)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def env() -> HouseStyleEnv:
    return HouseStyleEnv()


@pytest.fixture
def server(env: HouseStyleEnv, tmp_path: Path) -> Iterator[ScriptedServer]:
    with ScriptedServer(demo_script(env), expected_key=SECRET, log_path=tmp_path / "requests.jsonl") as srv:
        yield srv
