"""Chat backends through the official SDKs against the scripted server: answers, usage, retries, errors."""

from __future__ import annotations

import socket

import pytest
from optimizer_support import SECRET

from skillopt_lib.backends import backend_names, create_backend, resolve_api_key, resolve_preset
from skillopt_lib.backends.base import (
    PRICES_AS_OF,
    PRICES_SOURCE,
    BackendUnavailable,
    ChatMessage,
    cost_usd,
    price_for,
    price_of,
)
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


# A skill long enough to be cached (the providers cache prompts of at least 1024 tokens).
LONG_SKILL = "Follow the house style. " + " ".join(
    f"Rule {i}: check the units of every figure." for i in range(300)
)


def test_anthropic_marks_the_skill_cacheable_and_charges_cache_reads_less() -> None:
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        b = create_backend(cfg(server, "anthropic", max_retries=0), "agent")
        first = b.complete([ChatMessage("user", "hello")], system=LONG_SKILL)
        second = b.complete([ChatMessage("user", "hello again")], system=LONG_SKILL)
        system = server.requests[0].body["system"]
    assert system[0]["text"] == LONG_SKILL and system[0]["cache_control"] == {"type": "ephemeral"}
    assert first.usage.cache_write_tokens > 1000 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert second.usage.input_tokens > second.usage.cache_read_tokens  # input counts cached tokens too
    # reads cost 0.1x and writes 1.25x the input price (Sonnet 4: $3 per million input tokens)
    plain = cost_usd("claude-sonnet-4-test", second.usage.input_tokens, second.usage.output_tokens)
    assert second.usage.cost_usd == pytest.approx(
        plain - second.usage.cache_read_tokens * (3.0 - 0.3) / 1_000_000
    )
    assert first.usage.cost_usd > plain > second.usage.cost_usd
    assert b.usage.cache_read_tokens == second.usage.cache_read_tokens
    assert second.usage.to_dict()["cache_read_tokens"] == second.usage.cache_read_tokens


def test_anthropic_prompt_caching_can_be_switched_off_and_short_prompts_are_not_cached() -> None:
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        off = create_backend(cfg(server, "anthropic", options={"prompt_caching": False}), "agent")
        off.complete([ChatMessage("user", "hello")], system=LONG_SKILL)
        again = off.complete([ChatMessage("user", "hello")], system=LONG_SKILL)
        assert "cache_control" not in server.requests[-1].body["system"][0]
        assert again.usage.cache_read_tokens == again.usage.cache_write_tokens == 0
        on = create_backend(cfg(server, "anthropic"), "agent")
        short = on.complete([ChatMessage("user", "hello")], system="be brief")
        assert short.usage.cache_write_tokens == 0  # under the provider's minimum


def test_openai_reports_cached_prompt_tokens() -> None:
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        b = create_backend(cfg(server, "openai", model="gpt-4.1-mini"), "agent")
        first = b.complete([ChatMessage("user", "hello")], system=LONG_SKILL)
        second = b.complete([ChatMessage("user", "hello")], system=LONG_SKILL)
    assert first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens >= 1024 and second.usage.cache_read_tokens % 128 == 0
    # gpt-4.1-mini: $0.40 per million input tokens, $0.10 cached
    assert second.usage.cost_usd == pytest.approx(
        (
            (second.usage.input_tokens - second.usage.cache_read_tokens) * 0.4
            + second.usage.cache_read_tokens * 0.1
            + second.usage.output_tokens * 1.6
        )
        / 1_000_000
    )


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_long_outputs_are_streamed(backend: str) -> None:
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        b = create_backend(cfg(server, backend, max_tokens=32_000), "agent")
        resp = b.complete([ChatMessage("user", "hello")], system=LONG_SKILL)
        streamed = server.requests[-1]
        short = create_backend(cfg(server, backend, max_tokens=1000), "agent")
        short.complete([ChatMessage("user", "hello")])
        plain = server.requests[-1]
        forced = create_backend(cfg(server, backend, max_tokens=1000, options={"stream": True}), "agent")
        forced_resp = forced.complete([ChatMessage("user", "hello")])
    assert streamed.stream and not plain.stream and server.requests[-1].stream
    assert resp.text == "hi there" == forced_resp.text
    assert resp.usage.input_tokens > 1000 and resp.usage.output_tokens > 0 and resp.usage.cost_usd > 0
    if backend == "anthropic":
        assert resp.usage.cache_write_tokens > 1000  # the cache fields arrive through the stream too


def test_reasoning_models_get_max_completion_tokens() -> None:
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        for model in ("o4-mini", "gpt-5-mini", "o3"):
            create_backend(cfg(server, "openai", model=model, max_tokens=500), "agent").complete(
                [ChatMessage("user", "hello")]
            )
            body = server.requests[-1].body
            assert body["max_completion_tokens"] == 500 and "max_tokens" not in body, model
        create_backend(cfg(server, "openai", model="gpt-4o", max_tokens=500), "agent").complete(
            [ChatMessage("user", "hello")]
        )
        assert server.requests[-1].body["max_tokens"] == 500
        forced = cfg(
            server,
            "openai",
            model="qwen3",
            max_tokens=7,
            options={"max_tokens_param": "max_completion_tokens"},
        )
        create_backend(forced, "agent").complete([ChatMessage("user", "hello")])
        assert server.requests[-1].body == {**server.requests[-1].body, "max_completion_tokens": 7}
        assert "max_tokens" not in server.requests[-1].body


def test_price_table_is_dated_and_opus_4_5_costs_a_third_of_opus_4() -> None:
    assert PRICES_AS_OF == "2026-12-03" and "Anthropic" in PRICES_SOURCE and "OpenAI" in PRICES_SOURCE
    assert price_for("claude-opus-4-5-20251101") == (5.0, 25.0)
    assert price_for("claude-opus-4-6") == (5.0, 25.0)
    # The pinned Claude Code replays with Opus 4.8: priced as Opus 4.5 and later, never as Opus 4 by prefix.
    assert price_for("claude-opus-4-8") == (5.0, 25.0)
    assert price_for("claude-opus-4-1-20250805") == (15.0, 75.0)
    assert price_for("claude-opus-4-20250514") == (15.0, 75.0)
    assert price_for("claude-haiku-4-5") == (1.0, 5.0)
    opus = price_of("claude-opus-4-5")
    assert (opus.cache_read, opus.cache_write) == (0.5, 6.25)
    # an override without cache prices keeps the model's cache ratios; one with them uses them
    cheaper = price_of("claude-opus-4-5", {"claude-opus-4-5": {"input": 4.0, "output": 20.0}})
    assert (cheaper.cache_read, cheaper.cache_write) == (0.4, 5.0)
    explicit = {"my-model": {"input": 1.0, "output": 2.0, "cache_read": 0.25}}
    assert cost_usd("my-model-7b", 2_000_000, 0, explicit, cache_read_tokens=1_000_000) == 1.25


def test_prices_in_the_config_reach_the_backend() -> None:
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        run_prices = {"claude-sonnet-4": {"input": 100.0, "output": 0.0}}
        b = create_backend(cfg(server, "anthropic"), "agent", prices=run_prices)
        resp = b.complete([ChatMessage("user", "hello")])
        assert resp.usage.cost_usd == pytest.approx(resp.usage.input_tokens * 100.0 / 1_000_000)
        own = {"prices": {"claude-sonnet-4": {"input": 0.0, "output": 1000.0}}}
        b = create_backend(cfg(server, "anthropic", options=own), "agent", prices=run_prices)
        resp = b.complete([ChatMessage("user", "hello")])
        assert resp.usage.cost_usd == pytest.approx(resp.usage.output_tokens * 1000.0 / 1_000_000)


def test_azure_routes_by_deployment_with_api_version_and_api_key_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WRONG_KEY", "sk-not-the-right-one")
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        az = cfg(server, "azure", model="my-gpt-deployment", azure_api_version="2024-10-21")
        b = create_backend(az, "agent")
        resp = b.complete([ChatMessage("user", "hello")], system="be brief")
        req = server.requests[-1]
        assert resp.text == "hi there" and resp.usage.input_tokens > 0
        assert b.name == "azure"
        assert req.deployment == "my-gpt-deployment" and "api-version=2024-10-21" in req.query
        assert req.api == "chat" and req.headers.get("api-key") == "<redacted>"
        # the key travels in Azure's api-key header, and a wrong key is refused like elsewhere
        wrong = create_backend(az.model_copy(update={"api_key_env": "WRONG_KEY"}), "agent")
        with pytest.raises(BackendUnavailable, match="refused the API key"):
            wrong.complete([ChatMessage("user", "hello")])
        # streaming and the token-limit parameter go through the deployment URL too
        long = create_backend(az.model_copy(update={"max_tokens": 32_000}), "agent")
        assert long.complete([ChatMessage("user", "hello")]).text == "hi there"
        assert server.requests[-1].stream and server.requests[-1].deployment == "my-gpt-deployment"
        # Azure answers 404 without an api-version
        import httpx

        url = f"{server.url}/openai/deployments/my-gpt-deployment/chat/completions"
        r = httpx.post(
            url, json={"messages": [{"role": "user", "content": "hello"}]}, headers={"api-key": SECRET}
        )
        assert r.status_code == 404


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_key_stored_with_keys_set_reaches_the_backend_when_its_variable_is_unset(
    backend: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon started as a service has no shell's variables: the keys file gives it the key, the
    environment still wins where it is set, and run files mask the stored key like any other."""
    from skillopt_lib import keys
    from skillopt_lib.config import TrainConfig, config_secrets

    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path))
    monkeypatch.delenv("STORED_KEY", raising=False)
    keys.set_key("STORED_KEY", SECRET)
    with ScriptedServer(SCRIPT, expected_key=SECRET) as server:
        b = create_backend(cfg(server, backend, api_key_env="STORED_KEY", max_retries=0), "optimizer")
        assert b.complete([ChatMessage("user", "hello")]).text == "hi there"
        assert server.requests[-1].auth_ok
        monkeypatch.setenv("STORED_KEY", "sk-wrong-key-from-the-env-0000")
        wrong = create_backend(cfg(server, backend, api_key_env="STORED_KEY", max_retries=0), "optimizer")
        with pytest.raises(BackendUnavailable):
            wrong.complete([ChatMessage("user", "hello")])
    monkeypatch.delenv("STORED_KEY")
    train = TrainConfig(env="searchqa", optimizer=BackendConfig(backend=backend, api_key_env="STORED_KEY"))
    assert SECRET in config_secrets(train)


def test_costs_are_shown_as_estimates_to_the_cent() -> None:
    from skillopt_lib.usage import format_cost

    assert format_cost(0.4237) == "≈ $0.42 est."
    assert format_cost(12.5) == "≈ $12.50 est."
    assert format_cost(1234.5) == "≈ $1,234.50 est."
    assert format_cost(0.0004) == "≈ <$0.01 est."
    assert format_cost(0) == "≈ $0.00 est."
    assert format_cost(None) == "-"
