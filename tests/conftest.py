"""Shared fixtures; the implementations live in ``tests/harness`` (see docs/testing.md)."""

from __future__ import annotations

import pytest
from harness.fixtures import (  # noqa: F401 - re-exported as fixtures
    agent_clis,
    claude_cli,
    claude_sandbox,
    codex_cli,
    codex_sandbox,
    model_server,
    tmux_bin,
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "model_script(script): the Script (or YAML/JSON path) the model_server fixture serves"
    )
