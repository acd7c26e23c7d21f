"""Shared fixtures; the implementations live in ``testkit`` (see docs/testing.md)."""

from __future__ import annotations

import pytest

from testkit import fixtures

agent_clis = fixtures.agent_clis
claude_cli = fixtures.claude_cli
codex_cli = fixtures.codex_cli
gemini_cli = fixtures.gemini_cli
tmux_bin = fixtures.tmux_bin
model_server = fixtures.model_server
claude_sandbox = fixtures.claude_sandbox
codex_sandbox = fixtures.codex_sandbox


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "model_script(script): the Script (or YAML/JSON path) the model_server fixture serves"
    )
