"""GitHub Copilot CLI as an exec backend: `copilot -p` with tools allowed and denied one by one.

Copilot asks before any tool that changes the system; headless it cannot ask, so every tool the task needs is
granted with `--allow-tool` and dangerous ones are refused with `--deny-tool`. `--allow-all` is never used:
a replay must not be able to push code or fetch arbitrary URLs. The JSON-lines output carries the same event
types as Copilot's session files (`assistant.message`, `tool.execution_start` / `_complete`, `result`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillopt_lib.agents import AgentTool
from skillopt_lib.backends.base import Usage
from skillopt_lib.backends.exec_base import (
    CliExecBackend,
    copy_private,
    crashed_or_error,
    create_from_config,
    turn_cap,
)
from skillopt_lib.execution import ExecLimits, ExecResult, ExecStatus, ToolCallRecord
from skillopt_lib.process import ProcessOutcome, as_dict, excerpt, parse_json_lines

DEFAULT_ALLOWED_TOOLS = ("write", "shell")
DEFAULT_DENIED_TOOLS = ("shell(git push)", "shell(git push:*)", "shell(sudo:*)", "url")
_DENIED_RE = re.compile(r"permission denied|denied by|not allowed|was denied", re.IGNORECASE)
_EXIT_RE = re.compile(r"exit(?:ed with)? code:? (\d+)", re.IGNORECASE)


class CopilotBackend(CliExecBackend):
    name = "copilot"
    tool = AgentTool.COPILOT
    # A GitHub login, or a bring-your-own-provider setup (which needs no login at all).
    credential_env = (
        "COPILOT_GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "GH_HOST",
        "COPILOT_PROVIDER_BASE_URL",
        "COPILOT_PROVIDER_TYPE",
        "COPILOT_PROVIDER_API_KEY",
        "COPILOT_MODEL",
        "COPILOT_OFFLINE",
    )

    def __init__(
        self,
        *,
        allowed_tools: tuple[str, ...] | None = None,
        denied_tools: tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.allowed_tools = tuple(allowed_tools) if allowed_tools is not None else DEFAULT_ALLOWED_TOOLS
        self.denied_tools = tuple(denied_tools) if denied_tools is not None else DEFAULT_DENIED_TOOLS
        for t in self.allowed_tools:
            if t.strip().lower() in ("all", "*", "--allow-all"):
                raise ValueError("Copilot replays grant tools one by one; 'allow all' is not accepted")

    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        """`~/.copilot` with only the login (config.json holds the signed-in account and its token)."""
        cfg = home / ".copilot"
        cfg.mkdir(parents=True, exist_ok=True, mode=0o700)
        src = self.user_home / "config.json"
        if src.is_file():
            try:
                data = json.loads(src.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            if isinstance(data, dict):
                keep = {
                    k: v
                    for k, v in data.items()
                    if k
                    in ("logged_in_users", "last_logged_in_user", "store_token_plaintext", "copilot_tokens")
                }
                keep["trusted_folders"] = [str(workspace.resolve())]
                (cfg / "config.json").write_text(json.dumps(keep), encoding="utf-8")
                (cfg / "config.json").chmod(0o600)
            else:
                copy_private(src, cfg / "config.json")
        return {**self.credentials(), "COPILOT_HOME": str(cfg)}

    def build_argv(self, exe: str, prompt: str, limits: ExecLimits, cwd: Path) -> list[str]:
        argv = [exe, "-p", prompt, "--output-format", "json", "--no-ask-user", "--no-color"]
        allowed = limits.allowed_tools if limits.allowed_tools is not None else self.allowed_tools
        for t in allowed:
            argv += ["--allow-tool", t]
        for t in (*self.denied_tools, *limits.denied_tools):
            argv += ["--deny-tool", t]
        if limits.model:
            argv += ["--model", limits.model]
        return argv

    def stop_when(self, limits: ExecLimits) -> Callable[[str], str | None] | None:
        return turn_cap(limits, lambda line: '"tool.execution_start"' in line)

    def interpret(self, outcome: ProcessOutcome, limits: ExecLimits) -> ExecResult:
        events, bad = parse_json_lines(outcome.lines)
        calls: dict[str, ToolCallRecord] = {}
        messages: list[str] = []
        session_id: str | None = None
        final: dict[str, Any] | None = None
        error: str | None = None
        out_tokens = 0
        metered = Usage()  # summed over `session.usage_record` events, one per model call
        for ev in events:
            kind = str(ev.get("type") or "")
            data = as_dict(ev.get("data"))
            if kind == "session.start":
                session_id = str(data.get("sessionId") or "") or session_id
            elif kind == "assistant.message":
                if data.get("content"):
                    messages.append(str(data["content"]))
                out_tokens += int(data.get("outputTokens") or 0)
            elif kind == "session.usage_record":
                rec = as_dict(data.get("usage"))
                metered.input_tokens += int(rec.get("inputTokens") or 0)
                metered.output_tokens += int(rec.get("outputTokens") or 0)
                metered.cache_read_tokens += int(rec.get("cacheReadTokens") or 0)
                metered.cache_write_tokens += int(rec.get("cacheWriteTokens") or 0)
                metered.calls += 1
            elif kind == "tool.execution_start":
                cid = str(data.get("toolCallId") or len(calls))
                calls[cid] = ToolCallRecord(
                    name=str(data.get("toolName") or ""), input=data.get("arguments"), id=cid
                )
            elif kind == "tool.execution_complete":
                cid = str(data.get("toolCallId") or "")
                call = calls.setdefault(cid, ToolCallRecord(name=str(data.get("toolName") or ""), id=cid))
                res = as_dict(data.get("result"))
                err = as_dict(data.get("error"))
                text = str(res.get("content") or err.get("message") or "")
                call.output = excerpt(text, 1000)
                call.is_error = data.get("success") is False
                shell = as_dict(data.get("shellExecution"))
                if isinstance(shell.get("exitCode"), int):
                    call.exit_code = shell["exitCode"]
                elif "exitCode" in res:
                    call.exit_code = int(res["exitCode"])
                elif call.name in ("shell", "bash") and (m := _EXIT_RE.search(text)):
                    call.exit_code = int(m.group(1))
                elif call.name in ("shell", "bash") and not call.is_error:
                    call.exit_code = 0
                call.denied = call.is_error and bool(_DENIED_RE.search(text))
            elif kind == "session.error":
                error = str(data.get("message") or "session error")
            elif kind == "result":
                final = ev
                session_id = str(ev.get("sessionId") or "") or session_id
        plain = not events and any(line.strip() for line in outcome.lines)
        result = ExecResult(
            status=ExecStatus.OK,
            events=events,
            tool_calls=list(calls.values()),
            final_message=messages[-1] if messages else ("\n".join(outcome.lines).strip() if plain else ""),
            session_id=session_id,
            malformed_lines=0 if plain else bad,
        )
        usage = as_dict((final or {}).get("usage"))
        result.usage = (
            metered
            if metered.calls
            else Usage(
                input_tokens=int(usage.get("inputTokens") or 0),
                output_tokens=int(usage.get("outputTokens") or out_tokens),
                calls=len(messages),
            )
        )
        denied = [c for c in result.tool_calls if c.denied]
        exit_code = (final or {}).get("exitCode", outcome.returncode)
        if error is not None:
            result.status, result.error = ExecStatus.ERROR, excerpt(error, 500)
        elif final is None and not plain:
            result.status, result.error = crashed_or_error(outcome, "its final result")
        elif plain and outcome.returncode not in (0, None):
            result.status, result.error = crashed_or_error(outcome, "finishing")
        elif denied:
            result.status = ExecStatus.PERMISSION_DENIED
            result.error = f"{len(denied)} tool call(s) were denied permission ({denied[0].name})"
        elif exit_code not in (0, None):
            result.status, result.error = ExecStatus.ERROR, f"copilot reported exit code {exit_code}"
        if plain:
            result.warnings.append(
                "copilot printed plain text instead of JSON events; tool calls are unknown"
            )
        return result


def create(cfg: Any, context: dict[str, Any]) -> CopilotBackend:
    """Registry factory: see `skillopt_lib.backends.exec_base.create_from_config`."""
    backend = create_from_config(CopilotBackend, cfg, context)
    assert isinstance(backend, CopilotBackend)
    return backend
