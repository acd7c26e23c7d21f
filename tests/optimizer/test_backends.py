"""Chat backends through the official SDKs against the scripted server: answers, usage, retries, errors."""

from __future__ import annotations

import socket

import pytest
from optimizer_support import SECRET

from skillopt_lib.backends import backend_names, create_backend, resolve_api_key, resolve_preset
from skillopt_lib.backends.base import BackendUnavailable, ChatMessage, cost_usd, price_for
from skillopt_lib.config import BackendConfig
from skillopt_lib.errors import BackendError, ConfigError
from skillopt_lib.testing import Fault, Match, Rule, Script, Step
from skillopt_lib.testing.scripted_server import ScriptedServer

SCRIPT = Script(
    rules=[
        Rule(
            name="flaky",
            match=Match(user="flaky"),
            steps=[Step(text="recovered", fault=Fault(status=429, times=2, retry_after=0.05))],
        ),
        Rule(
            name="broken",
            match=Match(user="broken"),
            steps=[Step(text="x", fault=Fault(status=500, retry_after=0.05))],
        ),
        Rule(name="hello", match=Match(user="hello"), steps=[Step(text="hi there")]),
    ]
)


def cfg(server: ScriptedServer, backend: str, **kw: object) -> BackendConfig:
    url = server.base_url_openai if backend == "openai" else server.url
    data = {"backend": backend, "model": "claude-sonnet-4-test", "base_url": url, "api_key_env": "TOY_KEY"}
    data.update(kw)
    return BackendConfig.model_validate(data)


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_answers_usage_and_cost(backend: str) -> None:
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        b = create_backend(cfg(server, backend, max_retries=0), "agent")
        resp = b.complete([ChatMessage("user", "hello")], system="be brief")
        assert resp.text == "hi there"
        assert resp.usage.calls == 1 and resp.usage.input_tokens > 0 and resp.usage.output_tokens > 0
        assert resp.usage.cost_usd == pytest.approx(
            cost_usd("claude-sonnet-4-test", resp.usage.input_tokens, resp.usage.output_tokens)
        )
        assert resp.usage.cost_usd > 0
        req = server.requests[-1]
        assert req.api == ("chat" if backend == "openai" else "anthropic")
        assert "be brief" in req.text()


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_retries_429_then_succeeds_and_gives_up_on_persistent_5xx(backend: str) -> None:
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        b = create_backend(cfg(server, backend, max_retries=3, timeout_s=10), "agent")
        assert b.complete([ChatMessage("user", "flaky")]).text == "recovered"
        assert [r.status for r in server.requests_matching(rule="flaky")] == [429, 429, 200]
        with pytest.raises(BackendError) as err:
            b.complete([ChatMessage("user", "broken")])
        assert "500" in err.value.message
        assert len(server.requests_matching(rule="broken")) == 4


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_wrong_key_and_unreachable_endpoint_are_plain_errors(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedServer(SCRIPT, expected_key="another-key-entirely") as server:
        b = create_backend(cfg(server, backend, max_retries=0), "agent")
        with pytest.raises(BackendUnavailable) as err:
            b.complete([ChatMessage("user", "hello")])
        assert "refused the API key" in err.value.message and SECRET not in str(err.value)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    url = f"http://127.0.0.1:{port}" + ("/v1" if backend == "openai" else "")
    unreachable = BackendConfig(
        backend=backend, model="m", base_url=url, api_key_env="TOY_KEY", max_retries=0, timeout_s=2
    )
    b = create_backend(unreachable)
    with pytest.raises(BackendUnavailable) as err:
        b.complete([ChatMessage("user", "hello")])
    assert "cannot reach" in err.value.message and err.value.hint


def test_missing_key_is_a_config_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_KEY", raising=False)
    with pytest.raises(ConfigError) as err:
        create_backend(BackendConfig(backend="openai", model="gpt-5.5", api_key_env="NOPE_KEY"), "optimizer")
    assert "NOPE_KEY" in err.value.message and "export NOPE_KEY" in (err.value.hint or "")
    with pytest.raises(ConfigError) as err:
        create_backend(BackendConfig(backend="anthropic", model="claude-sonnet-4-test"), "agent")
    assert "ANTHROPIC_API_KEY" in (err.value.hint or "")
    with pytest.raises(ConfigError):
        create_backend(BackendConfig(backend="openai", model=""), "agent")
    with pytest.raises(ConfigError) as err:
        create_backend(BackendConfig(backend="no-such-backend", model="m"), "agent")
    assert "openai" in (err.value.hint or "")


def test_presets_fill_base_url_and_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-000000000000")
    resolved = resolve_preset(BackendConfig(backend="deepseek", model="deepseek-chat"))
    assert resolved.backend == "openai" and resolved.base_url == "https://api.deepseek.com/v1"
    assert resolve_api_key(resolved) == "sk-deepseek-000000000000"
    ollama = resolve_preset(BackendConfig(backend="ollama", model="qwen3"))
    assert ollama.base_url == "http://127.0.0.1:11434/v1" and resolve_api_key(ollama) is None
    expected = {"openai", "azure", "anthropic", "qwen", "minimax", "deepseek", "ollama", "vllm"}
    assert expected <= set(backend_names())
    with pytest.raises(ConfigError):
        create_backend(BackendConfig(backend="azure", model="deploy", api_key_env="TOY_KEY"))


def test_prices_match_by_prefix_and_can_be_overridden() -> None:
    assert price_for("claude-sonnet-4-5-20250929") == price_for("claude-sonnet-4")
    assert price_for("my-local-model") == (0.0, 0.0)
    assert price_for("my-local-model", {"my-local": {"input": 1.0, "output": 2.0}}) == (1.0, 2.0)
    assert cost_usd("my-local-model", 1_000_000, 500_000, {"my-local": {"input": 1.0, "output": 2.0}}) == 2.0
