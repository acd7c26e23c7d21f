"""An agent CLI used as a plain chat model, so a user with only a Claude Code or Codex login (and no API key)
can still run the optimizer and the judge.

Each call runs the CLI headless in an empty throwaway workspace with tools withheld (Claude Code: no tool is
allowed and one turn; Codex: the read-only sandbox), and returns the final message. The conversation is
rendered into one prompt: these CLIs take a prompt, not a message list.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from skillopt_lib.backends import claude_code as claude_mod
from skillopt_lib.backends import codex as codex_mod
from skillopt_lib.backends.base import ChatMessage, ChatResponse
from skillopt_lib.backends.exec_base import CliExecBackend, create_from_config
from skillopt_lib.errors import BackendError
from skillopt_lib.execution import ExecStatus
from skillopt_lib.sandbox import ReplayTask, SandboxConfig, replay

JSON_REMINDER = "Answer with the JSON object only: no prose, no code fences, no tool use."
# How a run ends when the model spent its one turn on a tool call instead of an answer.
STRAY_TOOL_STATUSES = (ExecStatus.MAX_TURNS, ExecStatus.PERMISSION_DENIED, ExecStatus.ERROR)


def render_prompt(messages: list[ChatMessage], system: str | None, json_mode: bool) -> str:
    parts: list[str] = []
    if system:
        parts.append(f"<instructions>\n{system}\n</instructions>")
    for m in messages:
        if m.role == "system":
            parts.append(f"<instructions>\n{m.text()}\n</instructions>")
        elif len(messages) == 1:
            parts.append(m.text())
        else:
            parts.append(f"<{m.role}>\n{m.text()}\n</{m.role}>")
    if json_mode:
        parts.append(JSON_REMINDER)
    return "\n\n".join(parts)


class CliChatBackend:
    """Adapts an exec backend (claude-code, codex) to the ChatBackend protocol."""

    def __init__(
        self, agent: CliExecBackend, *, workspaces_root: str | Path | None = None, model: str = ""
    ) -> None:
        self.agent = agent
        self.name = f"{agent.tool.value}-chat"
        self.model = model or (agent.limits.model or agent.tool.value)
        self._root = (
            Path(workspaces_root) if workspaces_root else Path(tempfile.gettempdir()) / "skillopt-chat"
        )

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResponse:
        prompt = render_prompt(messages, system, json_mode)
        limits = self.agent.limits.with_(max_turns=1, allowed_tools=(), model=self.agent.limits.model)
        result = replay(
            ReplayTask(prompt=prompt, id="chat"), self.agent, SandboxConfig(root=self._root), limits=limits
        )
        if result.tool_calls and result.status in STRAY_TOOL_STATUSES:
            # The model tried to use a tool it was not given: a bad reply, like one that is not JSON. The
            # caller's retry policy asks again; a whole night must not fail on one stray call.
            return ChatResponse(
                text=result.final_message or "",
                usage=result.usage,
                model=self.model,
                finish_reason="tool_use",
            )
        if result.status is not ExecStatus.OK or not result.final_message:
            raise BackendError(
                f"the {self.agent.tool.value} CLI used as a chat model failed: {result.error or result.status.value}",
                hint="run `skillopt doctor` to check the CLI and its login",
            )
        return ChatResponse(
            text=result.final_message, usage=result.usage, model=self.model, finish_reason="stop"
        )


def _create(
    backend: type[Any], cfg: Any, context: dict[str, Any], defaults: dict[str, Any] | None = None
) -> CliChatBackend:
    """The chat backend over `backend` (the tool's exec backend), with `defaults` under the user's options.

    A price table among the options (`prices`, which the night hands every chat backend for its estimates)
    is not the CLI's to take: the CLI reports what each call cost itself."""
    options = {k: v for k, v in dict(getattr(cfg, "options", {}) or {}).items() if k != "prices"}
    cfg = cfg.model_copy(update={"options": {**(defaults or {}), **options}})
    agent = create_from_config(backend, cfg, context)
    return CliChatBackend(
        agent, workspaces_root=context.get("workspaces_root"), model=getattr(cfg, "model", "")
    )


def create_claude_code_chat(cfg: Any, context: dict[str, Any]) -> CliChatBackend:
    return _create(claude_mod.ClaudeCodeBackend, cfg, context)


def create_codex_chat(cfg: Any, context: dict[str, Any]) -> CliChatBackend:
    # an answer needs no writes: Codex runs it in its read-only sandbox unless the user says otherwise
    return _create(codex_mod.CodexBackend, cfg, context, {"sandbox": "read-only"})
