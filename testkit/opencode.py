"""OpenCode's plugin in tests: registered as its entry point does, and the pinned `opencode` located.

A source checkout's tests may run with a skillopt installed from another checkout, whose entry points do not
name this plugin; `opencode_plugin` then registers the module itself, as the entry point would, and takes it
out again afterwards.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillopt_lib import plugins
from skillopt_lib.agents import AgentTool
from testkit import agent_clis as ac

from .fixtures import require

PLUGIN = "skillopt_daemon.plugins.opencode"


@pytest.fixture
def opencode_plugin() -> Iterator[AgentTool]:
    """The plugin loaded (by its entry point, or registered here); yields the `opencode` tool."""
    if "opencode" not in AgentTool:
        plugins.register(importlib.import_module(PLUGIN), name="opencode")
        try:
            yield AgentTool.parse("opencode")
        finally:
            plugins.unregister("opencode")
        return
    yield AgentTool.parse("opencode")


@pytest.fixture
def opencode_cli() -> Path:
    """The pinned `opencode` (skips locally when it is missing, fails in CI)."""
    clis = ac.locate_agent_clis()
    path = clis.root / "node_modules" / ".bin" / "opencode"
    require(path.exists(), clis.why_missing("opencode"))
    return path
