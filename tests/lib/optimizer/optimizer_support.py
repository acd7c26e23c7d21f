"""Constants and helpers shared by the optimizer tests (conftest holds the fixtures)."""

from __future__ import annotations

from skillopt_lib.testing.scripted_server import ScriptedServer

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


class CountingExecEnv:
    """An exec-style environment: it hands each item to the agent object it is given, whatever that is.

    The agent here is any callable `agent(task, skill_text) -> bool`; the trainer must pass it through
    untouched (it never wraps or inspects an exec agent).
    """

    name = "counting-exec"
    agent_kind = "exec"

    def __init__(self, n: int = 6) -> None:
        from skillopt_lib.envs.base import Item, Splits

        def items(prefix: str) -> list[Item]:
            return [Item(id=f"{prefix}-{i}", data={"task": f"count to {i}"}) for i in range(n)]

        self._splits = Splits(train=items("train"), val=items("val"), test=[])

    def splits(self):  # type: ignore[no-untyped-def]
        return self._splits

    def seed_skill(self):  # type: ignore[no-untyped-def]
        from skillopt_lib.skill import SkillBundle, SkillDoc

        return SkillBundle.from_doc(SkillDoc.new("counting", "Counting tasks.", "# Counting\n"))

    def run(self, item, skill, agent):  # type: ignore[no-untyped-def]
        from skillopt_lib.envs.base import ItemResult

        ok = bool(agent(item.data["task"], skill.doc.body))
        return ItemResult(
            item_id=item.id, hard=float(ok), soft=float(ok), feedback="ok" if ok else "miscounted"
        )


class RecordedExecEnv(CountingExecEnv):
    """An exec environment whose train items' failures are on record (like a night's corrected sessions):
    `recorded` returns them, and every run says which split it ran, so a test can tell what was replayed."""

    name = "recorded-exec"

    def __init__(self, n: int = 6) -> None:
        from skillopt_lib.envs.base import Item, Splits

        def items(prefix: str) -> list[Item]:
            return [Item(id=f"{prefix}-{i}", data={"task": f"{prefix}: count to {i}"}) for i in range(n)]

        self._splits = Splits(train=items("train"), val=items("val"), test=[])

    def recorded(self, item):  # type: ignore[no-untyped-def]
        from skillopt_lib.envs.base import ItemResult

        if not item.id.startswith("train"):
            return None
        return ItemResult(item_id=item.id, hard=0.0, soft=0.0, feedback="miscounted (on record)")
