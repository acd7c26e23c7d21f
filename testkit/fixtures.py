"""Pytest fixtures for tests that need a model: a scripted server and the real agent CLIs.

``model_server`` gives each test a fresh :class:`ScriptedServer` that requires
``SCRIPTED_API_KEY``. Choose its script with ``@pytest.mark.model_script(script_or_path)`` or with
``server.set_script(...)`` inside the test. ``claude_cli`` / ``codex_cli`` / ``tmux_bin`` locate the
pinned tools: locally a missing tool skips the test with the fix in the reason, while under ``CI=true``
it fails, so CI can never go green by skipping the tests that matter.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillopt_lib.testing import Script, load_script
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac

from .agents import SCRIPTED_API_KEY, AgentSandbox, claude_env, codex_env


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip locally, fail in CI."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def _script_for(request: pytest.FixtureRequest) -> Script:
    param = getattr(request, "param", None)
    marker = request.node.get_closest_marker("model_script")
    source = param if param is not None else (marker.args[0] if marker is not None else None)
    if source is None:
        return Script()
    if isinstance(source, Script):
        return source
    return load_script(Path(source))


@pytest.fixture
def model_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ScriptedServer]:
    """A fresh scripted model server for this test; requests are also logged to ``model-requests.jsonl``."""
    server = ScriptedServer(
        _script_for(request), expected_key=SCRIPTED_API_KEY, log_path=tmp_path / "model-requests.jsonl"
    )
    with server:
        yield server


@pytest.fixture(scope="session")
def agent_clis() -> ac.AgentCLIs:
    """Where the pinned CLIs are (``SKILLOPT_AGENT_CLI_DIR`` or ``.cache/agent-clis``); may hold ``None``s."""
    return ac.locate_agent_clis()


@pytest.fixture
def claude_cli(agent_clis: ac.AgentCLIs) -> Path:
    require(agent_clis.claude is not None, agent_clis.why_missing("claude"))
    assert agent_clis.claude is not None
    return agent_clis.claude


@pytest.fixture
def codex_cli(agent_clis: ac.AgentCLIs) -> Path:
    require(agent_clis.codex is not None, agent_clis.why_missing("codex"))
    require(shutil.which("node") is not None, "the codex CLI needs Node.js on PATH")
    assert agent_clis.codex is not None
    return agent_clis.codex


@pytest.fixture
def gemini_cli(agent_clis: ac.AgentCLIs) -> Path:
    require(agent_clis.gemini is not None, agent_clis.why_missing("gemini"))
    assert agent_clis.gemini is not None
    return agent_clis.gemini


@pytest.fixture
def tmux_bin() -> str:
    path = shutil.which("tmux")
    require(path is not None, "tmux is not installed (apt-get install -y tmux)")
    assert path is not None
    return path


def _sandbox(kind: str, cli: Path, server: ScriptedServer, tmp_path: Path) -> AgentSandbox:
    home, project = tmp_path / f"{kind}-home", tmp_path / f"{kind}-project"
    project.mkdir(parents=True)
    build = claude_env if kind == "claude" else codex_env
    env = build(home, server, trusted_dirs=[project])
    return AgentSandbox(kind=kind, cli=cli, server=server, home=home, project=project, env=env)


@pytest.fixture
def claude_sandbox(claude_cli: Path, model_server: ScriptedServer, tmp_path: Path) -> AgentSandbox:
    """Claude Code with an isolated HOME, an empty trusted project, talking to ``model_server``."""
    return _sandbox("claude", claude_cli, model_server, tmp_path)


@pytest.fixture
def codex_sandbox(codex_cli: Path, model_server: ScriptedServer, tmp_path: Path) -> AgentSandbox:
    """Codex with an isolated HOME, an empty trusted project, talking to ``model_server``."""
    return _sandbox("codex", codex_cli, model_server, tmp_path)
