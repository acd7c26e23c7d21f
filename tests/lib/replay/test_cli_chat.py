"""An agent CLI as the optimizer's chat model: the model is offered no tools at all."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillopt_lib.backends.base import ChatMessage
from skillopt_lib.backends.claude_code import ClaudeCodeBackend
from skillopt_lib.backends.cli_chat import CliChatBackend
from skillopt_lib.testing import Match, Rule, Script
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.agents import SCRIPTED_API_KEY

pytestmark = pytest.mark.agent_cli


def _chat(cli: Path, server: ScriptedServer, tmp_path: Path) -> CliChatBackend:
    env = {
        "PATH": os.environ["PATH"],
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": SCRIPTED_API_KEY,
    }
    agent = ClaudeCodeBackend(cli=str(cli), base_env=env, user_home=tmp_path / "user")
    return CliChatBackend(agent, workspaces_root=tmp_path / "chat")


def test_claude_as_a_chat_model_is_offered_no_tools(
    claude_cli: Path, model_server: ScriptedServer, tmp_path: Path
) -> None:
    model_server.set_script(
        Script(rules=[Rule(name="answer", match=Match(user="grade"), done_text='{"ok": true}')])
    )
    resp = _chat(claude_cli, model_server, tmp_path).complete([ChatMessage("user", "grade this diff")])
    assert json.loads(resp.text) == {"ok": True}
    asked = model_server.requests_matching(api="anthropic", user="grade")
    assert asked, "the CLI never asked the model"
    assert all(not (r.body or {}).get("tools") for r in asked), "a chat model must be offered no tools"


def test_a_price_table_among_the_options_does_not_stop_the_cli_from_being_built(tmp_path: Path) -> None:
    """The night hands every chat backend the user's price table; an agent CLI used as the chat model (the
    login default) reports its own costs and must still be built, not fail on an option it has no use for."""
    from skillopt_lib.backends import create_backend
    from skillopt_lib.config import BackendConfig

    prices = {"opt": {"input": 5.0, "output": 25.0}}
    cfg = BackendConfig(backend="claude-code-chat", options={"prices": prices, "home": str(tmp_path)})
    chat = create_backend(cfg, "optimizer", workspaces_root=str(tmp_path / "chat"))
    assert isinstance(chat, CliChatBackend) and isinstance(chat.agent, ClaudeCodeBackend)
