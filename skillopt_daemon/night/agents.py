"""The night's model backends from the user's settings: the optimizer, the judge and the replayed agent.

Settings name backends the way a user writes them (`optimizer.backend`, `replay.max_turns`, a tool's own
CLI and home); the library wants a `BackendConfig`. This module is the one translation between them, and
says what stops replays from running before a night spends anything.
"""

from __future__ import annotations

from typing import Any

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import BackendSettings, Settings, tool_home
from skillopt_daemon.night.budgets import BudgetedChat, NightBudget
from skillopt_lib.agents import AgentTool
from skillopt_lib.backends import create_backend
from skillopt_lib.config import BackendConfig
from skillopt_lib.errors import ConfigError, SkillOptError
from skillopt_lib.net import is_loopback_url


def _library_config(b: BackendSettings) -> BackendConfig:
    # The settings section is a BackendConfig already; only its class differs (an unset role stays "").
    return BackendConfig.model_validate(b.model_dump())


_CHAT_CLI = {"claude-code-chat": AgentTool.CLAUDE_CODE, "codex-chat": AgentTool.CODEX}


def _chat_config(settings: Settings, b: BackendSettings) -> BackendConfig:
    cfg = _library_config(b)
    tool = _CHAT_CLI.get(b.backend)
    if tool is not None:
        opts: dict[str, Any] = {**b.options, "home": str(tool_home(tool, settings))}
        if settings.tool(tool).cli:
            opts["cli"] = settings.tool(tool).cli
        cfg = cfg.model_copy(update={"options": opts})
    return cfg


def missing_for_replays(settings: Settings, tools: list[AgentTool]) -> list[str]:
    """What stops replays from running, each with how to fix it (shown by `skillopt status`)."""
    from skillopt_lib.backends import resolve_api_key
    from skillopt_lib.net import is_loopback_url

    missing: list[str] = []
    opt = settings.optimizer
    if not opt.backend:
        missing.append(
            "no optimizer backend is configured: set one with `skillopt config set optimizer.backend openai` "
            "(plus optimizer.model and an API key variable), or use your agent login with "
            "`skillopt config set optimizer.backend claude-code-chat` (or codex-chat)"
        )
    elif opt.backend not in _CHAT_CLI:
        try:
            resolve_api_key(_library_config(opt), "optimizer")
        except ConfigError as exc:
            missing.append(f"{exc.message} ({exc.hint})" if exc.hint else exc.message)
        if settings.night.local_only and not is_loopback_url(opt.base_url):
            missing.append(
                f"night.local_only is on but the optimizer endpoint {opt.base_url or opt.backend!r} is not on "
                "this machine: point optimizer.base_url at a local server or turn local_only off"
            )
    missing.extend(why for tool in tools if (why := replay_missing(settings, tool)) is not None)
    return missing


def replay_missing(settings: Settings, tool: AgentTool) -> str | None:
    """Why `tool`'s sessions cannot be replayed on this machine (with how to fix it), or None when they can."""
    if tool not in (AgentTool.CLAUDE_CODE, AgentTool.CODEX, AgentTool.COPILOT, AgentTool.CURSOR):
        return f"{tool.value} sessions cannot be replayed: skillopt has no headless runner for it"
    try:
        make_agent(settings, tool).executable()
    except SkillOptError as exc:
        return f"{exc.message} ({exc.hint})" if exc.hint else exc.message
    return None


def make_agent(settings: Settings, tool: AgentTool) -> Any:
    r = settings.replay
    opts: dict[str, Any] = {
        "home": str(tool_home(tool, settings)),
        "max_turns": r.max_turns,
        "timeout_s": r.timeout_s,
        "max_output_bytes": r.max_output_bytes,
    }
    if settings.tool(tool).cli:
        opts["cli"] = settings.tool(tool).cli
    if tool is AgentTool.CLAUDE_CODE:
        opts["permission_mode"] = r.claude_permission_mode
        opts["allowed_tools"] = list(r.claude_allowed_tools)
    cfg = BackendConfig(
        backend=tool.value,
        model=settings.agent.model if settings.agent.backend == tool.value else "",
        options=opts,
    )
    return create_backend(cfg, "agent", workspaces_root=str(paths.workspaces_dir()))


def mining_chat(settings: Settings, budget: NightBudget) -> tuple[BudgetedChat | None, str | None]:
    """The chat backend mining labels requests with (counted in the night's budget), or None and why not.

    Any configured optimizer backend will do, `claude-code-chat` and `codex-chat` included; `night.local_only`
    allows only an endpoint on this machine.
    """
    opt = settings.optimizer
    if not settings.night.label_with_model or not opt.backend:
        return None, None
    if settings.night.local_only and not is_loopback_url(opt.base_url):
        return None, "requests were mined without a model: night.local_only allows no remote endpoint"
    try:
        inner = create_backend(
            _chat_config(settings, opt), "optimizer", workspaces_root=str(paths.workspaces_dir())
        )
    except SkillOptError as exc:
        return None, f"requests were mined without a model: {exc.message}"
    return BudgetedChat(inner, budget), None
