"""Claude Code as an exec backend: `claude -p` with stream-json output in an isolated config home.

Claude Code exits 0 even when it silently denied a tool (the denials are listed in the final `result`
record), so the outcome is read from the stream, never from the exit code alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from skillopt_lib.agents import AgentTool
from skillopt_lib.backends.base import Usage
from skillopt_lib.backends.exec_base import (
    CliExecBackend,
    copy_private,
    crashed_or_error,
    create_from_config,
)
from skillopt_lib.execution import ExecLimits, ExecResult, ExecStatus, ToolCallRecord
from skillopt_lib.fsio import write_private
from skillopt_lib.process import ProcessOutcome, excerpt, parse_json_lines

# Pinned in the test harness; the range is what this parser was checked against.
DEFAULT_ALLOWED_TOOLS = ("Bash", "Read", "Write", "Edit", "Glob", "Grep", "Skill")

# What a run leaves out of Claude Code's requests, which it resends on every model call, through the CLI's
# documented options (`trim_prompt`, on by default). Nothing the agent works on a task with is touched:
# Bash, Read, Edit, Write, Glob, Grep, the task list, sub-agents and the Skill tool stay.
# - MCP servers: none (`--strict-mcp-config` with an empty `--mcp-config`), so a project's `.mcp.json`
#   neither starts servers in the workspace nor adds their tools to every request.
NO_MCP_SERVERS = '{"mcpServers":{}}'
# - Scheduling: a scheduled prompt lives in the session ("session-only, dies when Claude exits", the CLI
#   answers), and a `-p` run's session ends with its answer, so nothing scheduled ever runs.
SESSION_ONLY_TOOLS = ("CronCreate", "CronDelete", "CronList", "ScheduleWakeup")
# - The web, when the run's network is confined (`ExecLimits.confine`): the confinement refuses WebFetch,
#   and WebSearch runs at the provider, which would bring the agent the web the confinement keeps from it.
WEB_TOOLS = ("WebFetch", "WebSearch")
_EXIT_CODE_RE = re.compile(r"^Exit code (\d+)")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class ClaudeCodeBackend(CliExecBackend):
    name = "claude_code"
    tool = AgentTool.CLAUDE_CODE
    credential_env = (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_MODEL",
        "ANTHROPIC_SMALL_FAST_MODEL",
        "ANTHROPIC_DEFAULT_SONNET_MODEL",
        "ANTHROPIC_DEFAULT_OPUS_MODEL",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL",
        "CLAUDE_CODE_USE_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
        "AWS_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "ANTHROPIC_VERTEX_PROJECT_ID",
        "CLOUD_ML_REGION",
        "GOOGLE_APPLICATION_CREDENTIALS",
    )

    def __init__(
        self,
        *,
        permission_mode: str = "acceptEdits",
        allowed_tools: tuple[str, ...] | None = None,
        trim_prompt: bool = True,
        **kwargs: Any,
    ) -> None:
        """`trim_prompt`: leave out of every request what a replay cannot use (MCP servers, scheduling
        tools, and the web tools when the network is confined); False sends the CLI's full set."""
        super().__init__(**kwargs)
        self.permission_mode = permission_mode
        self.allowed_tools = tuple(allowed_tools) if allowed_tools is not None else DEFAULT_ALLOWED_TOOLS
        self.trim_prompt = trim_prompt

    def left_out(self, limits: ExecLimits) -> tuple[str, ...]:
        """The built-in tools a run with `limits` leaves out of the model's tool list (see `trim_prompt`)."""
        if not self.trim_prompt:
            return ()
        return SESSION_ONLY_TOOLS + (WEB_TOOLS if limits.confine is not None else ())

    def login(self) -> str | None:
        """Claude Code signs in with a subscription login (`.credentials.json`, or the system keychain, which
        leaves `oauthAccount` in `.claude.json`), a key or token in the environment or in its settings
        (`apiKeyHelper`, `env`), or a cloud provider's settings."""
        env = self.credentials()
        if env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"):
            return "an Anthropic key in the environment"
        if env.get("CLAUDE_CODE_USE_BEDROCK") or env.get("CLAUDE_CODE_USE_VERTEX"):
            return "Claude Code's Bedrock or Vertex settings"
        if (self.user_home / ".credentials.json").is_file():
            return "your Claude Code login"
        settings = _read_json(self.user_home / "settings.json")
        given = settings.get("env")
        if settings.get("apiKeyHelper") or (
            isinstance(given, dict) and (given.get("ANTHROPIC_API_KEY") or given.get("ANTHROPIC_AUTH_TOKEN"))
        ):
            return "the key in your Claude Code settings"
        for state in (self.user_home / ".claude.json", self.user_home.parent / ".claude.json"):
            if _read_json(state).get("oauthAccount"):
                return "your Claude Code login"
        return None

    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        """A home holding only what Claude Code needs to authenticate: no user skills, memory or plugins.

        Copies `.credentials.json` (subscription login) and, from the user's settings, only `apiKeyHelper`
        and `env` (how the user reaches the provider). The workspace is marked trusted and onboarded.
        """
        cfg = home / ".claude"
        cfg.mkdir(parents=True, exist_ok=True, mode=0o700)
        copy_private(self.user_home / ".credentials.json", cfg / ".credentials.json")
        settings: dict[str, Any] = {}
        user_settings = self.user_home / "settings.json"
        if user_settings.is_file():
            try:
                data = json.loads(user_settings.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            if isinstance(data, dict):
                settings.update({k: data[k] for k in ("apiKeyHelper", "env") if k in data})
        write_private(cfg / "settings.json", json.dumps(settings, indent=2))
        state = {
            "hasCompletedOnboarding": True,
            "autoUpdates": False,
            "projects": {str(workspace.resolve()): {"hasTrustDialogAccepted": True, "allowedTools": []}},
        }
        write_private(home / ".claude.json", json.dumps(state, indent=2))
        return {
            **self.credentials(),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }

    def build_argv(self, exe: str, prompt: str, limits: ExecLimits, cwd: Path) -> list[str]:
        argv = [exe, "-p", prompt, "--output-format", "stream-json", "--verbose"]
        argv += ["--permission-mode", limits.permission_mode or self.permission_mode]
        allowed = limits.allowed_tools if limits.allowed_tools is not None else self.allowed_tools
        if allowed:
            argv += ["--allowedTools", ",".join(allowed)]
        elif limits.allowed_tools is not None:
            # Explicitly none (the CLI as a chat model): offer the model no tool at all, rather than
            # offering them and denying each call after the model spent a turn on it.
            argv += ["--tools", ""]
        denied = list(dict.fromkeys([*limits.denied_tools, *self.left_out(limits)]))
        if denied:
            argv += ["--disallowedTools", ",".join(denied)]
        if self.trim_prompt:
            argv += ["--strict-mcp-config", "--mcp-config", NO_MCP_SERVERS]
        if limits.max_turns:
            argv += ["--max-turns", str(limits.max_turns)]
        if limits.model:
            argv += ["--model", limits.model]
        return argv

    def interpret(self, outcome: ProcessOutcome, limits: ExecLimits) -> ExecResult:
        events, bad = parse_json_lines(outcome.lines)
        calls: dict[str, ToolCallRecord] = {}
        texts: list[str] = []
        session_id: str | None = None
        message_ids: set[str] = set()
        result_event: dict[str, Any] | None = None
        for ev in events:
            kind = ev.get("type")
            session_id = ev.get("session_id") or session_id
            if kind == "assistant":
                msg = ev.get("message") or {}
                if msg.get("id"):
                    message_ids.add(str(msg["id"]))
                for block in msg.get("content") or []:
                    if not isinstance(block, dict):
                        continue
                    if block.get("type") == "text" and block.get("text"):
                        texts.append(str(block["text"]))
                    elif block.get("type") == "tool_use":
                        cid = str(block.get("id") or len(calls))
                        calls[cid] = ToolCallRecord(
                            name=str(block.get("name", "")), input=block.get("input"), id=cid
                        )
            elif kind == "user":
                content = (ev.get("message") or {}).get("content")
                for block in content if isinstance(content, list) else []:
                    if not isinstance(block, dict) or block.get("type") != "tool_result":
                        continue
                    call = calls.get(str(block.get("tool_use_id")))
                    if call is None:
                        continue
                    text = _result_text(block.get("content"))
                    call.output = excerpt(text, 1000)
                    call.is_error = bool(block.get("is_error"))
                    if call.name == "Bash":
                        m = _EXIT_CODE_RE.match(text)
                        call.exit_code = int(m.group(1)) if m else (None if call.is_error else 0)
            elif kind == "result":
                result_event = ev
        result = ExecResult(
            status=ExecStatus.OK,
            events=events,
            tool_calls=list(calls.values()),
            session_id=session_id,
            malformed_lines=bad,
        )
        if result_event is None:
            result.status, result.error = crashed_or_error(outcome, "its final result")
            result.final_message = texts[-1] if texts else ""
            result.usage = Usage(calls=len(message_ids))
            return result
        result.final_message = str(result_event.get("result") or (texts[-1] if texts else ""))
        result.num_turns = result_event.get("num_turns")
        u = result_event.get("usage") or {}
        # The CLI prices its own calls (`total_cost_usd`, cache reads and writes at their prices); the
        # cached tokens are kept apart so every figure shown says how much of the prompt came from cache.
        cache_read = int(u.get("cache_read_input_tokens") or 0)
        cache_write = int(u.get("cache_creation_input_tokens") or 0)
        result.usage = Usage(
            input_tokens=int(u.get("input_tokens") or 0) + cache_write + cache_read,
            output_tokens=int(u.get("output_tokens") or 0),
            calls=len(message_ids),
            cost_usd=float(result_event.get("total_cost_usd") or 0.0),
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        )
        result.cost_reported = result_event.get("total_cost_usd") is not None
        denials = result_event.get("permission_denials") or []
        for d in denials:
            call = calls.get(str(d.get("tool_use_id"))) if isinstance(d, dict) else None
            if call is not None:
                call.denied = True
                call.is_error = True
        subtype = str(result_event.get("subtype") or "")
        if subtype == "error_max_turns":
            result.status = ExecStatus.MAX_TURNS
            result.error = f"stopped at the limit of {limits.max_turns} turns"
        elif denials:
            names = sorted({str(d.get("tool_name")) for d in denials if isinstance(d, dict)})
            result.status = ExecStatus.PERMISSION_DENIED
            result.error = f"{len(denials)} tool call(s) were denied permission ({', '.join(names)})"
        elif result_event.get("is_error") or subtype != "success":
            result.status = ExecStatus.ERROR
            api = result_event.get("api_error_status")
            result.error = f"the run ended with {subtype or 'an error'}" + (
                f" (API status {api})" if api else ""
            )
            if result.final_message:
                result.error += f": {excerpt(result.final_message, 300)}"
        return result


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def create(cfg: Any, context: dict[str, Any]) -> ClaudeCodeBackend:
    """Registry factory: see `skillopt_lib.backends.exec_base.create_from_config`."""
    backend = create_from_config(ClaudeCodeBackend, cfg, context)
    assert isinstance(backend, ClaudeCodeBackend)
    return backend
