"""The plugin manager: built-ins through the same hooks as a package, clashes and broken packages reported
without stopping the rest, and what a plugin adds usable everywhere a built-in is."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillopt_lib import plugins
from skillopt_lib.agents import TOOLS, AgentTool, ToolSpec, plugin_of, spec
from skillopt_lib.backends import backend_names, create_backend
from skillopt_lib.config import BackendConfig
from skillopt_lib.envs import load_env


@pytest.fixture(autouse=True)
def fresh_plugins() -> Iterator[None]:
    plugins.reset()
    yield
    plugins.reset()


def _row(name: str, **kw: Any) -> ToolSpec:
    base: dict[str, Any] = dict(
        tool=name,
        executables=(name,),
        tested_versions=None,
        install_hint="",
        home_env=None,
        home_default=f".{name}",
        user_skill_dir="skills",
        project_skill_dirs=(f".{name}/skills",),
        scopes=("user",),
        source="pkg.source:Reader",
        installer="pkg.installer:Installer",
        backend=None,
    )
    base.update(kw)
    return ToolSpec(**base)


def _plugin(name: str, **hooks: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook, value in hooks.items():
        setattr(module, hook, plugins.hookimpl(lambda value=value: value))
    return module


def test_builtins_come_through_the_hooks_and_a_plugin_tool_joins_them() -> None:
    loaded = {p.name: p for p in plugins.loaded()}
    assert loaded["skillopt_lib.agents"].provides["agent tools"][:2] == ["claude-code", "codex"]
    assert "gemini" in loaded["skillopt_lib.backends"].provides["backends"]

    plugins.register(_plugin("toy", skillopt_agent_tools=[_row("toy-agent", aliases=("toy",))]), name="toy")
    tool = AgentTool("toy-agent")
    assert tool in AgentTool and tool in TOOLS and list(AgentTool)[-1] is tool
    assert AgentTool.parse("TOY") is tool and plugin_of(tool) == "toy"
    assert spec(tool).home_default == ".toy-agent"
    plugins.unregister("toy")
    assert "toy-agent" not in AgentTool
    with pytest.raises(ValueError, match="not a known agent tool"):
        AgentTool("toy-agent")


def test_a_plugin_cannot_take_over_a_builtin_tool_and_the_clash_is_reported() -> None:
    plugins.register(_plugin("evil", skillopt_agent_tools=[_row("codex")]), name="evil")
    assert spec(AgentTool.CODEX).source == "codex"  # the built-in row, not the plugin's
    assert plugin_of(AgentTool.CODEX) == "skillopt_lib.agents"
    (problem,) = plugins.problems()
    assert "'evil' adds the agent tool 'codex'" in problem


def test_a_plugin_backend_and_environment_are_used_by_name() -> None:
    made: list[BackendConfig] = []

    def factory(cfg: BackendConfig, context: dict[str, Any]) -> str:
        made.append(cfg)
        return f"backend for {context['role']}"

    plugins.register(
        _plugin(
            "extras",
            skillopt_backends=[("echo-model", factory)],
            skillopt_environments=[("house", "skillopt_lib.envs.toy:HouseStyleEnv")],
        ),
        name="extras",
    )
    assert "echo-model" in backend_names()
    assert create_backend(BackendConfig(backend="echo-model"), "judge") == "backend for judge"
    assert made[0].backend == "echo-model"
    assert type(load_env("house")).__name__ == "HouseStyleEnv"


def test_a_broken_installed_package_is_reported_and_the_builtins_still_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tmp_path / "broken_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[skillopt]\nbroken = broken_skillopt_plugin\n")
    (tmp_path / "broken_skillopt_plugin.py").write_text("raise RuntimeError('this plugin is broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "broken_skillopt_plugin", raising=False)
    plugins.reset()
    assert AgentTool.CLAUDE_CODE in AgentTool
    (problem,) = plugins.problems()
    assert "plugin 'broken'" in problem and "this plugin is broken" in problem
    assert "fix or uninstall the package" in problem

    monkeypatch.setenv(plugins.NO_PLUGINS_ENV, "1")
    plugins.reset()
    assert plugins.problems() == []


def test_reading_tool_rows_loads_no_backend_and_importing_loads_no_pluggy() -> None:
    """Agent hooks run `skillopt notify` after every session: importing the tools' module must stay cheap,
    and a command that needs only the rows must not import the backends or the benchmarks."""
    import subprocess

    code = (
        "import sys\n"
        "import skillopt_lib.agents as a\n"
        "assert 'pluggy' not in sys.modules and 'importlib.metadata' not in sys.modules\n"
        "assert a.AgentTool.GEMINI in a.AgentTool\n"
        "assert 'skillopt_lib.backends' not in sys.modules and 'skillopt_lib.envs' not in sys.modules\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


def test_a_plugin_registers_through_the_callback_and_one_mechanism_checks_every_hook() -> None:
    module = types.ModuleType("callbacks")

    def skillopt_agent_tools(register: plugins.Register) -> None:
        register(_row("cb-agent"))
        register("not a row")

    def skillopt_backends(register: plugins.Register) -> None:
        register("cb-model", lambda cfg, context: "made")
        register("gemini", "elsewhere:create")  # a built-in's name: the built-in keeps it

    def skillopt_environments(register: plugins.Register) -> None:
        register("cb-env", "skillopt_lib.envs.toy:HouseStyleEnv")
        register(("no", "pair", "here"))

    for name, hook in (
        ("skillopt_agent_tools", skillopt_agent_tools),
        ("skillopt_backends", skillopt_backends),
        ("skillopt_environments", skillopt_environments),
    ):
        setattr(module, name, plugins.hookimpl(hook))
    plugins.register(module, name="callbacks")

    assert plugin_of(AgentTool("cb-agent")) == "callbacks"
    assert create_backend(BackendConfig(backend="cb-model"), "judge") == "made"
    assert type(load_env("cb-env")).__name__ == "HouseStyleEnv"
    problems = plugins.problems()
    assert any("'callbacks' registered 'not a row' through skillopt_agent_tools" in p for p in problems)
    assert any("'callbacks' adds the backend 'gemini', which 'skillopt_lib.backends'" in p for p in problems)
    assert any("through skillopt_environments; register (name" in p for p in problems)
    provides = {p.name: p.provides for p in plugins.loaded()}["callbacks"]
    assert "cb-agent" in provides["agent tools"] and "cb-model" in provides["backends"]
