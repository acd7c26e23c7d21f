"""Gemini CLI as an exec backend: `gemini -p PROMPT --output-format stream-json --approval-mode yolo`.

The stream is one JSON event a line: `init` (session id, model), `message` (the user's prompt, then the
model's text in `delta` pieces), `tool_use` / `tool_result` (joined by `tool_id`), and a final `result`
with `status` and token `stats` (checked with Gemini CLI 0.61.0 against the scripted model server).

The run's home holds only a `settings.json` saying how to sign in (the user's own choice, or the API key
when one is in the environment) and the login files, with auto-update, telemetry and usage statistics off;
the workspace is trusted through `GEMINI_CLI_TRUST_WORKSPACE`, since an untrusted folder reads no project
skills and turns every approval mode back to asking. Replays run in a throwaway workspace, so tools are
approved (`yolo`) unless `permission_mode` says otherwise (`default`, `auto_edit`). Gemini CLI has no turn
limit of its own on the command line: `max_turns` stops the run after that many tool calls.
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
    write_private,
)
from skillopt_lib.execution import ExecLimits, ExecResult, ExecStatus, ToolCallRecord
from skillopt_lib.process import ProcessOutcome, as_dict, excerpt, parse_json_lines

LOGIN_FILES = ("oauth_creds.json", "google_accounts.json")
SHELL_TOOL = "run_shell_command"
_EXIT_CODE = re.compile(r"Exit Code: (-?\d+)")


class GeminiBackend(CliExecBackend):
    name = "gemini"
    tool = AgentTool.GEMINI
    credential_env = (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_APPLICATION_CREDENTIALS",
    )

    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        cfg = home / ".gemini"
        cfg.mkdir(parents=True, exist_ok=True, mode=0o700)
        creds = self.credentials()
        selected: Any = None
        user_settings = self.user_home / "settings.json"
        if user_settings.is_file():
            try:
                data = json.loads(user_settings.read_text(encoding="utf-8"))
                selected = as_dict(as_dict(as_dict(data).get("security")).get("auth")).get("selectedType")
            except (OSError, ValueError):
                selected = None
        if not isinstance(selected, str) or not selected:
            selected = "gemini-api-key" if creds.get("GEMINI_API_KEY") else "oauth-personal"
        settings = {
            "security": {"auth": {"selectedType": selected}},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
        }
        write_private(cfg / "settings.json", json.dumps(settings, indent=2))
        for name in LOGIN_FILES:
            copy_private(self.user_home / name, cfg / name)
        return {
            **creds,
            "GEMINI_CLI_HOME": str(home),
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }

    def build_argv(self, exe: str, prompt: str, limits: ExecLimits, cwd: Path) -> list[str]:
        argv = [exe, "-p", prompt, "--output-format", "stream-json"]
        argv += ["--approval-mode", limits.permission_mode or "yolo"]
        if limits.model:
            argv += ["--model", limits.model]
        return argv

    def stop_when(self, limits: ExecLimits) -> Callable[[str], str | None] | None:
        return turn_cap(limits, lambda line: '"type":"tool_use"' in line.replace(" ", ""))

    def interpret(self, outcome: ProcessOutcome, limits: ExecLimits) -> ExecResult:
        events, bad = parse_json_lines(outcome.lines)
        calls: dict[str, ToolCallRecord] = {}
        texts: list[str] = []
        current: list[str] = []
        final: dict[str, Any] | None = None
        session_id: str | None = None
        for ev in events:
            kind = ev.get("type")
            if kind == "init":
                session_id = str(ev.get("session_id") or "") or session_id
            elif kind == "message" and ev.get("role") == "assistant":
                current.append(str(ev.get("content") or ""))
            elif kind == "tool_use":
                if current:
                    texts.append("".join(current))
                    current = []
                cid = str(ev.get("tool_id") or len(calls))
                calls[cid] = ToolCallRecord(
                    name=str(ev.get("tool_name") or "tool"), input=ev.get("parameters"), id=cid
                )
            elif kind == "tool_result":
                call = calls.get(str(ev.get("tool_id")))
                if call is None:
                    continue
                error = as_dict(ev.get("error"))
                call.output = excerpt(str(ev.get("output") or error.get("message") or ""), 1000)
                call.is_error = ev.get("status") != "success"
                code = _EXIT_CODE.search(call.output)
                if code is not None:
                    call.exit_code = int(code.group(1))
                elif call.name == SHELL_TOOL and not call.is_error:
                    call.exit_code = 0
                if call.is_error and "denied" in str(error.get("type") or "") + call.output.lower():
                    call.denied = True
            elif kind == "result":
                final = ev
        if current:
            texts.append("".join(current))
        result = ExecResult(
            status=ExecStatus.OK,
            events=events,
            tool_calls=list(calls.values()),
            session_id=session_id,
            malformed_lines=bad,
        )
        result.final_message = texts[-1] if texts else ""
        if final is None:
            result.status, result.error = crashed_or_error(outcome, "its final result")
            return result
        stats = as_dict(final.get("stats"))
        result.usage = Usage(
            input_tokens=int(stats.get("input_tokens") or 0),
            output_tokens=int(stats.get("output_tokens") or 0),
            calls=1,
        )
        denied = [c for c in result.tool_calls if c.denied]
        if final.get("status") != "success":
            message = as_dict(final.get("error")).get("message") or final.get("status") or "an error"
            result.status = ExecStatus.ERROR
            result.error = f"gemini ended with {excerpt(str(message), 300)}"
        elif denied:
            result.status = ExecStatus.PERMISSION_DENIED
            result.error = f"{len(denied)} tool call(s) were denied permission ({denied[0].name})"
        return result


def create(cfg: Any, context: dict[str, Any]) -> GeminiBackend:
    """Registry factory: see `skillopt_lib.backends.exec_base.create_from_config`."""
    backend = create_from_config(GeminiBackend, cfg, context)
    assert isinstance(backend, GeminiBackend)
    return backend
