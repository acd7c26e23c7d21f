"""OpenCode as an exec backend: `opencode run --pure --format json PROMPT` in the replay's workspace.

The JSON stream is one event a line, each with the `sessionID` and a `part` as OpenCode stores it:
`step_start`, `text` (the model's words), `tool_use` (a `tool` part whose `state` has `status`, `input`,
`output` or `error`, and the shell's exit code in `metadata.exit`), `step_finish` (with `tokens` and the
`reason`: `tool-calls` or `stop`) and `error` (`error.name`, `error.data.message`), after which `opencode`
exits with 1 (checked with OpenCode 1.18.33 against the scripted model server). There is no closing result
event: a run that ends with exit code 0 after a `step_finish` whose reason is `stop` succeeded.

The run's home gets the user's `opencode.json` (providers, models) from their config folder and their
sign-in (`auth.json`, in OpenCode's data folder, the tool's home), nothing else: no plugins (`--pure`), no
auto-update, no model list fetched from models.dev, no language server downloads, no sharing. Replays run
in a throwaway workspace, so shell commands and edits are allowed through `OPENCODE_PERMISSION` (OpenCode
merges it over the config's `permission`); `permission_mode: ask` leaves the user's rules alone. OpenCode has
no turn limit on its command line: `max_turns` stops the run after that many tool calls.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
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

CONFIG_FILES = ("opencode.json", "opencode.jsonc")
AUTH_FILE = "auth.json"
QUIET_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}
ALLOW_ALL = {"bash": "allow", "edit": "allow", "webfetch": "allow", "external_directory": "deny"}


class OpenCodeBackend(CliExecBackend):
    name = "opencode"
    tool = AgentTool.declare("opencode")
    credential_env = (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_GENERATIVE_AI_API_KEY",
        "OPENROUTER_API_KEY",
        "GROQ_API_KEY",
        "OPENCODE_API_KEY",
    )

    def __init__(self, *, user_config: str | Path | None = None, **kw: Any) -> None:
        """`user_config`: the user's OpenCode config folder (default `$XDG_CONFIG_HOME/opencode`, else
        `~/.config/opencode`), whose `opencode.json` the replays use."""
        super().__init__(**kw)
        self.user_config = Path(user_config).expanduser() if user_config else _config_dir(self._env())

    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        config = home / ".config" / "opencode"
        config.mkdir(parents=True, exist_ok=True, mode=0o700)
        for name in CONFIG_FILES:
            copy_private(self.user_config / name, config / name)
        copy_private(self.user_home / AUTH_FILE, home / ".local" / "share" / "opencode" / AUTH_FILE)
        env = {**self.credentials(), **QUIET_ENV}
        if (self.limits.permission_mode or "allow") != "ask":
            env["OPENCODE_PERMISSION"] = json.dumps(ALLOW_ALL)
        return env

    def build_argv(self, exe: str, prompt: str, limits: ExecLimits, cwd: Path) -> list[str]:
        argv = [exe, "run", "--pure", "--format", "json"]
        if limits.model:
            argv += ["--model", limits.model]
        return [*argv, prompt]

    def stop_when(self, limits: ExecLimits) -> Callable[[str], str | None] | None:
        return turn_cap(limits, lambda line: line.startswith('{"type":"tool_use"'))

    def interpret(self, outcome: ProcessOutcome, limits: ExecLimits) -> ExecResult:
        events, bad = parse_json_lines(outcome.lines)
        result = ExecResult(status=ExecStatus.OK, events=events, malformed_lines=bad)
        texts: list[str] = []
        usage = Usage(calls=0)
        finished: str | None = None
        error: dict[str, Any] | None = None
        for ev in events:
            kind = ev.get("type")
            part = as_dict(ev.get("part"))
            if isinstance(ev.get("sessionID"), str) and result.session_id is None:
                result.session_id = ev["sessionID"]
            if kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "tool_use":
                result.tool_calls.append(_call(part))
            elif kind == "step_finish":
                # OpenCode's `input` leaves out the cached part of the prompt, which Usage counts in.
                tokens = as_dict(part.get("tokens"))
                cache = as_dict(tokens.get("cache"))
                read, written = int(cache.get("read") or 0), int(cache.get("write") or 0)
                usage.input_tokens += int(tokens.get("input") or 0) + read + written
                usage.cache_read_tokens += read
                usage.cache_write_tokens += written
                usage.output_tokens += int(tokens.get("output") or 0)
                usage.cost_usd += float(part.get("cost") or 0.0)
                usage.calls += 1
                finished = str(part.get("reason") or "")
            elif kind == "error":
                error = as_dict(ev.get("error"))
        result.usage = usage
        result.final_message = texts[-1] if texts else ""
        denied = [c for c in result.tool_calls if c.denied]
        if error is not None:
            message = as_dict(error.get("data")).get("message") or error.get("name") or "an error"
            result.status = ExecStatus.ERROR
            result.error = f"opencode ended with {excerpt(str(message), 300)}"
        elif outcome.returncode != 0 or finished != "stop":
            result.status, result.error = crashed_or_error(outcome, "its last step finished")
        elif denied:
            result.status = ExecStatus.PERMISSION_DENIED
            result.error = f"{len(denied)} tool call(s) were denied permission ({denied[0].name})"
        return result


def _call(part: Mapping[str, Any]) -> ToolCallRecord:
    """One `tool` part as the replay's record of the call."""
    state = as_dict(part.get("state"))
    call = ToolCallRecord(
        name=str(part.get("tool") or "tool"), input=state.get("input"), id=str(part.get("callID") or "")
    )
    status = state.get("status")
    text = str(state.get("output") if status == "completed" else state.get("error") or "")
    call.output = excerpt(text, 1000)
    call.is_error = status == "error"
    code = as_dict(state.get("metadata")).get("exit")
    if isinstance(code, int) and not isinstance(code, bool):
        call.exit_code = code
    if call.is_error and ("permission" in text.lower() or "rejected" in text.lower()):
        call.denied = True
    return call


def _config_dir(environ: Mapping[str, str]) -> Path:
    xdg = environ.get("XDG_CONFIG_HOME")
    home = environ.get("HOME") or os.path.expanduser("~")
    return (Path(xdg) if xdg else Path(home) / ".config") / "opencode"


def create(cfg: Any, context: dict[str, Any]) -> OpenCodeBackend:
    """Registry factory: see `skillopt_lib.backends.exec_base.create_from_config`."""
    backend = create_from_config(OpenCodeBackend, cfg, context)
    assert isinstance(backend, OpenCodeBackend)
    return backend
