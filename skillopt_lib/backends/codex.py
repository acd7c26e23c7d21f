"""OpenAI Codex as an exec backend: `codex exec --json` in the workspace-write sandbox, never asking.

Codex's own sandbox confines writes to the workspace (and temp folders); a command it refuses shows up as a
failed `command_execution` ("Read-only file system"), which is reported as a denied tool call. Codex has no
turn limit of its own, so the runner stops it when it starts more tool calls than `max_turns`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import tomli_w

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
from skillopt_lib.process import ProcessOutcome, as_dict, excerpt, parse_json_lines, user_path

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

# Keys of the user's config.toml that say how to reach the model; everything else (skills, MCP servers,
# profiles, notify hooks, project trust) stays behind.
PROVIDER_KEYS = (
    "model",
    "model_provider",
    "model_providers",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "preferred_auth_method",
    "forced_login_method",
    "openai_base_url",
)
_TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search"}
_ROLLOUT_EXIT_RE = re.compile(r"(?:Process exited with code|Exit code:) (-?\d+)")
_SHELL_TOOLS = {"exec_command", "shell", "local_shell", "container.exec"}
_DENIED_RE = re.compile(r"Read-only file system|Operation not permitted|Permission denied", re.IGNORECASE)


class CodexBackend(CliExecBackend):
    name = "codex"
    tool = AgentTool.CODEX
    credential_env = (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "CODEX_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "OPENAI_ORG_ID",
    )

    def __init__(self, *, sandbox: str = "workspace-write", trim_prompt: bool = True, **kwargs: Any) -> None:
        """`trim_prompt`: leave out of every request what a replay cannot use (`trimming`); False sends
        Codex's full set."""
        super().__init__(**kwargs)
        self.sandbox = sandbox
        self.trim_prompt = trim_prompt
        self._provider_env: tuple[str, ...] = ()

    def trimming(self, limits: ExecLimits) -> list[str]:
        """The `-c` overrides (documented config keys) that keep out of Codex's requests what a replay cannot
        use; nothing the agent works with (shell, apply_patch, skills) is touched. `web_search="disabled"`
        when the run's network is confined: Codex's web search runs at the provider, which would bring the
        agent the web the confinement keeps from it. The isolated home names no MCP server
        (`prepare_home`); a project's own `.codex/config.toml` still can, and `-c` cannot override it (it
        overrides the user's layer, which the project's comes after)."""
        if not self.trim_prompt or limits.confine is None:
            return []
        return ["-c", 'web_search="disabled"']

    def user_config(self) -> dict[str, Any]:
        path = self.user_home / "config.toml"
        if not path.is_file():
            return {}
        try:
            return tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def login(self) -> str | None:
        """Codex signs in with a ChatGPT login (`auth.json`), a key in the environment, or a provider of its
        own in `config.toml`."""
        env = self.credentials()
        if env.get("OPENAI_API_KEY") or env.get("CODEX_API_KEY") or env.get("AZURE_OPENAI_API_KEY"):
            return "an OpenAI key in the environment"
        if (self.user_home / "auth.json").is_file():
            return "your Codex login"
        if self.user_config().get("model_providers"):
            return "the provider in your Codex settings"
        return None

    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        """`~/.codex` with the user's provider settings and `auth.json` only, never asking for approval."""
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True, mode=0o700)
        user = self.user_config()
        doc: dict[str, Any] = {k: user[k] for k in PROVIDER_KEYS if k in user}
        doc.update(
            approval_policy="never",
            sandbox_mode=self.sandbox,
            # The workspace and the run's own TMPDIR stay writable; the shared /tmp does not, so an agent
            # cannot reach a user's project that happens to live there.
            sandbox_workspace_write={"exclude_slash_tmp": True, "network_access": False},
            check_for_update_on_startup=False,
            projects={str(workspace.resolve()): {"trust_level": "trusted"}},
            analytics={"enabled": False},
            feedback={"enabled": False},
        )
        write_private(codex_home / "config.toml", tomli_w.dumps(doc))
        copy_private(self.user_home / "auth.json", codex_home / "auth.json")
        # Providers name the variable holding their key; pass exactly those through.
        providers = doc.get("model_providers") or {}
        self._provider_env = tuple(
            str(p["env_key"]) for p in providers.values() if isinstance(p, dict) and p.get("env_key")
        )
        env = {**self.credentials(), "CODEX_HOME": str(codex_home)}
        src = self._env()
        env.update({k: src[k] for k in self._provider_env if src.get(k)})
        # Codex runs commands in a login shell whose profile resets PATH; keep the caller's PATH, without
        # skillopt's own virtual environment (the user's checks need the user's toolchain).
        if src.get("PATH"):
            profile = f"export PATH={shlex.quote(user_path(src['PATH']))}\n"
            for name in (".bash_profile", ".profile"):
                (home / name).write_text(profile, encoding="utf-8")
        return env

    def build_argv(self, exe: str, prompt: str, limits: ExecLimits, cwd: Path) -> list[str]:
        argv = [exe, "exec", "--json", "--skip-git-repo-check", "-s", self.sandbox]
        argv += ["-c", 'approval_policy="never"', *self.trimming(limits)]
        if limits.model:
            argv += ["-m", limits.model]
        argv.append(prompt)
        return argv

    def run(
        self, prompt: str, *, cwd: Path, env: Mapping[str, str], limits: ExecLimits | None = None
    ) -> ExecResult:
        """Run, then complete the tool calls from the rollout file in the isolated home.

        `codex exec --json` (0.171) does not report every command it ran as an item; the rollout it writes
        records each call with its output and exit code, so it is the better source when it exists.
        """
        result = super().run(prompt, cwd=cwd, env=env, limits=limits)
        codex_home = env.get("CODEX_HOME")
        if codex_home and result.session_id:
            found = sorted(Path(codex_home).glob(f"sessions/**/rollout-*{result.session_id}.jsonl"))
            calls = rollout_tool_calls(found[0]) if found else []
            if len(calls) >= len(result.tool_calls):
                result.tool_calls = calls
        denied = [c for c in result.tool_calls if c.denied]
        if result.status is ExecStatus.OK and denied:
            result.status = ExecStatus.PERMISSION_DENIED
            cmd = denied[0].input.get("command") if isinstance(denied[0].input, dict) else denied[0].name
            result.error = f"the sandbox refused {len(denied)} command(s), first: {cmd}"
        return result

    def stop_when(self, limits: ExecLimits) -> Callable[[str], str | None] | None:
        if not limits.max_turns:
            return None
        seen: set[str] = set()
        cap = limits.max_turns

        def watch(line: str) -> str | None:
            if '"item.started"' not in line:
                return None
            events, _ = parse_json_lines([line])
            item = events[0].get("item") if events else None
            if isinstance(item, dict) and item.get("type") in _TOOL_ITEMS:
                seen.add(str(item.get("id")))
                if len(seen) > cap:
                    return f"stopped at the limit of {cap} turns (tool calls)"
            return None

        return watch

    def interpret(self, outcome: ProcessOutcome, limits: ExecLimits) -> ExecResult:
        events, bad = parse_json_lines(outcome.lines)
        calls: dict[str, ToolCallRecord] = {}
        messages: list[str] = []
        thread_id: str | None = None
        completed: dict[str, Any] | None = None
        failure: str | None = None
        for ev in events:
            kind = ev.get("type")
            if kind == "thread.started":
                thread_id = str(ev.get("thread_id") or "") or None
            elif kind in ("item.started", "item.completed", "item.updated"):
                item = ev.get("item") or {}
                if not isinstance(item, dict):
                    continue
                itype = item.get("type")
                iid = str(item.get("id") or len(calls))
                if itype == "agent_message" and kind == "item.completed":
                    messages.append(str(item.get("text") or ""))
                elif itype in _TOOL_ITEMS:
                    call = calls.setdefault(iid, ToolCallRecord(name=str(itype), id=iid))
                    if itype == "command_execution":
                        call.input = {"command": item.get("command")}
                        out = str(item.get("aggregated_output") or "")
                        call.output = excerpt(out, 1000)
                        if item.get("exit_code") is not None:
                            call.exit_code = int(item["exit_code"])
                            call.is_error = call.exit_code != 0
                            call.denied = call.is_error and bool(_DENIED_RE.search(out))
                    elif itype == "file_change":
                        call.input = {"changes": item.get("changes")}
                        call.is_error = item.get("status") == "failed"
                    else:
                        call.input = {k: v for k, v in item.items() if k not in ("id", "type", "status")}
                        call.is_error = item.get("status") == "failed"
            elif kind == "turn.completed":
                completed = ev
            elif kind == "turn.failed":
                err = ev.get("error") or {}
                failure = str(err.get("message") if isinstance(err, dict) else err) or "the turn failed"
            elif kind == "error" and failure is None:
                failure = str(ev.get("message") or "error")
        result = ExecResult(
            status=ExecStatus.OK,
            events=events,
            tool_calls=list(calls.values()),
            final_message=messages[-1] if messages else "",
            session_id=thread_id,
            malformed_lines=bad,
        )
        if completed is not None:
            u = completed.get("usage") or {}
            # `input_tokens` counts the cached ones too (OpenAI's convention, and Usage's). Codex also
            # reports cache writes for providers that bill them; OpenAI reports none, so it is 0 there.
            result.usage = Usage(
                input_tokens=int(u.get("input_tokens") or 0),
                output_tokens=int(u.get("output_tokens") or 0),
                calls=1,
                cache_read_tokens=int(u.get("cached_input_tokens") or 0),
                cache_write_tokens=int(u.get("cache_write_input_tokens") or 0),
            )
        if failure is not None:
            result.status = ExecStatus.ERROR
            result.error = excerpt(failure, 500)
        elif completed is None:
            result.status, result.error = crashed_or_error(outcome, "the turn completed")
        return result


def rollout_tool_calls(path: Path) -> list[ToolCallRecord]:
    """Tool calls with outputs and exit codes from a Codex rollout file (unknown lines are skipped)."""
    calls: dict[str, ToolCallRecord] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    events, _ = parse_json_lines(lines)
    for ev in events:
        if ev.get("type") != "response_item":
            continue
        p = as_dict(ev.get("payload"))
        kind, cid = p.get("type"), str(p.get("call_id") or "")
        if kind == "function_call":
            name = str(p.get("name") or "")
            try:
                args = json.loads(p.get("arguments") or "{}")
            except ValueError:
                args = {"raw": p.get("arguments")}
            if name in _SHELL_TOOLS:
                cmd = args.get("cmd") or args.get("command") if isinstance(args, dict) else None
                if isinstance(cmd, list):
                    cmd = shlex.join(str(c) for c in cmd)
                calls[cid] = ToolCallRecord(name="command_execution", input={"command": cmd}, id=cid)
            else:
                calls[cid] = ToolCallRecord(name=name, input=args, id=cid)
        elif kind == "custom_tool_call":
            name = "file_change" if p.get("name") == "apply_patch" else str(p.get("name") or "")
            calls[cid] = ToolCallRecord(
                name=name, input={"patch": excerpt(str(p.get("input") or ""), 2000)}, id=cid
            )
        elif kind in ("function_call_output", "custom_tool_call_output") and cid in calls:
            call = calls[cid]
            raw = p.get("output")
            text = raw if isinstance(raw, str) else json.dumps(raw)
            m = _ROLLOUT_EXIT_RE.search(text)
            body = text.split("Output:\n", 1)[1] if "Output:\n" in text else text
            call.output = excerpt(body, 1000)
            if m:
                call.exit_code = int(m.group(1))
                call.is_error = call.exit_code != 0
                call.denied = call.is_error and bool(_DENIED_RE.search(body))
    return list(calls.values())


def create(cfg: Any, context: dict[str, Any]) -> CodexBackend:
    """Registry factory: see `skillopt_lib.backends.exec_base.create_from_config`."""
    backend = create_from_config(CodexBackend, cfg, context)
    assert isinstance(backend, CodexBackend)
    return backend
