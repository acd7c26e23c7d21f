"""Helpers shared by the benchmark tests (imported by module name; pytest puts this folder on sys.path)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skillopt_lib.testing import Match, Rule, Script, Step
from skillopt_lib.testing.scripted_server import ScriptedServer

CHAT_ENVS = ("searchqa", "livemath", "docvqa", "officeqa", "spreadsheetbench", "alfworld")


def answer_rule(name: str, user_text: str, reply: str) -> Rule:
    """Reply `reply` to the request whose latest user text contains `user_text` (a literal)."""
    return Rule(name=name, match=Match(user=re.escape(user_text)), steps=[Step(text=reply)])


def chat_backend(server: ScriptedServer, model: str = "scripted-model") -> Any:
    """The project's real OpenAI chat backend (official SDK) pointed at the scripted server."""
    from skillopt_lib.backends import create_backend
    from skillopt_lib.config import BackendConfig

    cfg = BackendConfig(backend="openai", model=model, base_url=server.base_url_openai, max_retries=0)
    return create_backend(cfg, role="agent")


@contextmanager
def scripted_chat(
    rules: list[Rule], default_text: str = "I do not know."
) -> Iterator[tuple[ScriptedServer, Any]]:
    with ScriptedServer(Script(rules=rules, default_text=default_text)) as server:
        yield server, chat_backend(server)
