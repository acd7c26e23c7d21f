"""Cursor's agent CLI as an exec backend: `cursor-agent -p --output-format json`.

The JSON format is one final `result` object (text, session id, duration). Builds that stream events
(`--output-format stream-json`: `system`, `assistant`, `tool_call` started/completed, `result`) are read too,
which is the only way to see tool calls. Permissions come from a `cli-config.json` in the isolated home.
"""

from __future__ import annotations

import json
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

DEFAULT_ALLOWED = ("Read(**)", "Write(**)", "Shell(*)")
DEFAULT_DENIED = ("Shell(git push)", "Shell(sudo)")


class CursorBackend(CliExecBackend):
    name = "cursor"
    tool = AgentTool.CURSOR
    credential_env = ("CURSOR_API_KEY",)

    def __init__(self, *, output_format: str = "json", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output_format = output_format

    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        """`~/.cursor/cli-config.json` with the permissions of this run; the login file is copied alone."""
        cfg = home / ".cursor"
        cfg.mkdir(parents=True, exist_ok=True, mode=0o700)
        allowed = self.limits.allowed_tools if self.limits.allowed_tools is not None else DEFAULT_ALLOWED
        config = {
            "version": 1,
            "permissions": {"allow": list(allowed), "deny": [*DEFAULT_DENIED, *self.limits.denied_tools]},
        }
        write_private(cfg / "cli-config.json", json.dumps(config, indent=2))
        auth_src = self.user_home.parent / ".config" / "cursor" / "auth.json"
        copy_private(auth_src, home / ".config" / "cursor" / "auth.json")
        return {**self.credentials(), "CURSOR_CONFIG_DIR": str(cfg)}

    def build_argv(self, exe: str, prompt: str, limits: ExecLimits, cwd: Path) -> list[str]:
        argv = [exe, "-p", "--output-format", self.output_format]
        if limits.model:
            argv += ["--model", limits.model]
        argv.append(prompt)
        return argv

    def stop_when(self, limits: ExecLimits) -> Callable[[str], str | None] | None:
        return turn_cap(limits, lambda line: '"tool_call"' in line and '"started"' in line)

    def interpret(self, outcome: ProcessOutcome, limits: ExecLimits) -> ExecResult:
        events, bad = parse_json_lines(outcome.lines)
        calls: dict[str, ToolCallRecord] = {}
        texts: list[str] = []
        final: dict[str, Any] | None = None
        session_id: str | None = None
        for ev in events:
            kind = ev.get("type")
            session_id = str(ev.get("session_id") or "") or session_id
            if kind == "assistant":
                content = (ev.get("message") or {}).get("content")
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                        texts.append(str(block["text"]))
            elif kind == "tool_call":
                cid = str(ev.get("call_id") or len(calls))
                payload = as_dict(ev.get("tool_call"))
                name, body = next(iter(payload.items()), ("tool", {}))
                body = body if isinstance(body, dict) else {}
                call = calls.setdefault(cid, ToolCallRecord(name=str(name), input=body.get("args"), id=cid))
                if ev.get("subtype") == "completed":
                    res = as_dict(body.get("result"))
                    if "success" in res:
                        ok = res["success"] if isinstance(res["success"], dict) else {}
                        call.exit_code = ok.get("exitCode", 0 if "shell" in call.name.lower() else None)
                        call.output = excerpt(str(ok.get("stdout") or ok.get("content") or ""), 1000)
                        call.is_error = bool(call.exit_code)
                    elif "rejected" in res or "permissionDenied" in res:
                        call.denied = call.is_error = True
                        call.output = excerpt(
                            json.dumps(res.get("rejected") or res.get("permissionDenied")), 500
                        )
                    elif "failure" in res or "error" in res:
                        fail = res.get("failure") or res.get("error")
                        call.is_error = True
                        if isinstance(fail, dict):
                            call.exit_code = fail.get("exitCode")
                            call.output = excerpt(str(fail.get("stderr") or fail.get("message") or ""), 1000)
            elif kind == "result":
                final = ev
        result = ExecResult(
            status=ExecStatus.OK,
            events=events,
            tool_calls=list(calls.values()),
            session_id=session_id,
            malformed_lines=bad,
        )
        if final is None:
            result.final_message = texts[-1] if texts else ""
            result.status, result.error = crashed_or_error(outcome, "its final result")
            return result
        result.final_message = str(final.get("result") or (texts[-1] if texts else ""))
        u = as_dict(final.get("usage"))
        result.usage = Usage(
            input_tokens=int(u.get("inputTokens") or u.get("input_tokens") or 0),
            output_tokens=int(u.get("outputTokens") or u.get("output_tokens") or 0),
            calls=1,
        )
        denied = [c for c in result.tool_calls if c.denied]
        if final.get("is_error") or final.get("subtype") not in (None, "success"):
            result.status = ExecStatus.ERROR
            ending = final.get("subtype") or "an error"
            result.error = f"cursor-agent ended with {ending}: {excerpt(result.final_message, 300)}"
        elif denied:
            result.status = ExecStatus.PERMISSION_DENIED
            result.error = f"{len(denied)} tool call(s) were denied permission ({denied[0].name})"
        return result


def create(cfg: Any, context: dict[str, Any]) -> CursorBackend:
    """Registry factory: see `skillopt_lib.backends.exec_base.create_from_config`."""
    backend = create_from_config(CursorBackend, cfg, context)
    assert isinstance(backend, CursorBackend)
    return backend
