"""Constants and helpers shared by the optimizer tests (conftest holds the fixtures)."""

from __future__ import annotations

from skillopt.testing.scripted_server import ScriptedServer

SECRET = "sk-optimizer-test-SECRET-0123456789abcdef"
ODD_SECRET = "zq-custom-credential-77aa99bb11"


def overrides(server: ScriptedServer, agent: str = "openai", optimizer: str = "anthropic") -> list[str]:
    """Config overrides pointing both roles at the scripted server through the named SDKs."""

    def url(backend: str) -> str:
        return server.base_url_openai if backend == "openai" else server.url

    return [
        "env=house-style",
        f"agent.backend={agent}",
        f"agent.base_url={url(agent)}",
        "agent.model=house-agent",
        "agent.api_key_env=TOY_KEY",
        "agent.max_retries=2",
        f"optimizer.backend={optimizer}",
        f"optimizer.base_url={url(optimizer)}",
        "optimizer.model=house-optimizer",
        "optimizer.api_key_env=TOY_KEY",
        "optimizer.max_retries=2",
        "epochs=2",
        "batch_size=6",
        "gate.repeats=2",
        f"agent.options.sso_credential={ODD_SECRET}",
    ]
