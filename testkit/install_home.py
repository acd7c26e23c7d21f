"""Fixtures for the integration tests: an isolated home, skillopt home and project, and a CLI runner.

Every test gets its own HOME (so `~/.claude`, `~/.codex`, ... are temporary folders), its own
SKILLOPT_HOME, and none of the tools' own home variables, so nothing reads or writes the real user's files.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from testkit import cli as harness_cli
from testkit.install_helpers import Env

TOOL_VARS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "CURSOR_CONFIG_DIR", "OPENCLAW_STATE_DIR")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    home = tmp_path / "home"
    home.mkdir()
    so_home = tmp_path / "skillopt-home"
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKILLOPT_HOME", str(so_home))
    for var in TOOL_VARS:
        monkeypatch.delenv(var, raising=False)
    return Env(home=home, skillopt_home=so_home, project=project)


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `skillopt ARGS...` in this process (`testkit.cli.here`), with the fixture's environment."""
    return harness_cli.here
