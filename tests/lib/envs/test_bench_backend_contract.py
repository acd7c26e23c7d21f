"""What every chat backend must do for the benchmarks, checked against the scripted model server.

A new chat backend adds one entry to CHAT_BACKENDS (its registered name and which server URL it talks to);
docs/backends.md explains the rest.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import answer_rule

from skillopt_lib.backends import create_backend
from skillopt_lib.backends.base import ChatBackend, ChatMessage, ImagePart
from skillopt_lib.config import BackendConfig
from skillopt_lib.envs import load_env
from skillopt_lib.errors import BackendError
from skillopt_lib.testing import Fault, Match, Rule, Script, Step
from skillopt_lib.testing.scripted_server import ScriptedServer

CHAT_BACKENDS: dict[str, Callable[[ScriptedServer], str]] = {
    "openai": lambda server: server.base_url_openai,
    "anthropic": lambda server: server.url,
}
PNG = (
    Path(__file__).resolve().parents[3] / "skillopt_lib/envs/docvqa/sample/documents/invc0001_1.png"
).read_bytes()


def make(name: str, server: ScriptedServer) -> Any:
    cfg = BackendConfig(
        backend=name, model="scripted-model", base_url=CHAT_BACKENDS[name](server), max_retries=0
    )
    return create_backend(cfg, role="agent")


@pytest.mark.parametrize("name", CHAT_BACKENDS)
def test_reply_system_prompt_and_usage(name: str) -> None:
    script = Script(rules=[answer_rule("hi", "hello there", "Answer: general Kenobi")])
    with ScriptedServer(script) as server:
        backend = make(name, server)
        assert isinstance(backend, ChatBackend)
        resp = backend.complete([ChatMessage("user", "hello there")], system="SYSTEM-MARKER-42")
        body = json.dumps(server.requests[0].body)
    assert resp.text == "Answer: general Kenobi"
    assert resp.usage.calls == 1 and resp.usage.input_tokens > 0 and resp.usage.output_tokens > 0
    assert "SYSTEM-MARKER-42" in body


@pytest.mark.parametrize("name", CHAT_BACKENDS)
def test_images_reach_the_model(name: str) -> None:
    with ScriptedServer(Script(rules=[])) as server:
        make(name, server).complete([ChatMessage("user", [ImagePart(PNG), "what is it?"])])
        body = json.dumps(server.requests[0].body)
    assert base64.b64encode(PNG).decode() in body and "what is it?" in body


@pytest.mark.parametrize("name", CHAT_BACKENDS)
def test_failures_are_backend_errors(name: str) -> None:
    failing = Script(rules=[Rule(name="boom", match=Match(user="."), steps=[Step(fault=Fault(status=500))])])
    with ScriptedServer(failing) as server:
        backend = make(name, server)
        with pytest.raises(BackendError):
            backend.complete([ChatMessage("user", "x")])
    with pytest.raises(BackendError):  # the server is gone: unreachable
        backend.complete([ChatMessage("user", "x")])


@pytest.mark.parametrize("name", CHAT_BACKENDS)
def test_a_benchmark_item_scores_through_the_backend(name: str) -> None:
    env = load_env("searchqa", sample=True)
    item = next(i for i in env.splits().val if i.id == "sqa-005")
    with ScriptedServer(
        Script(rules=[answer_rule("q", item.data["question"], "Answer: blue whale")])
    ) as server:
        result = env.run(item, env.seed_skill(), make(name, server))
    assert (result.hard, result.soft) == (1.0, 1.0) and result.usage.calls == 1
