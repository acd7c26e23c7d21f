"""OpenAI Codex CLI: rollouts `<home>/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl` (and
`<home>/archived_sessions/`), one `{timestamp, type, payload}` a line, appended live; `resume` appends to
the same file.

The conversation is read from `response_item`s only. Codex also mirrors user and agent messages as events
(`event_msg.user_message` / `agent_message` in older builds, `event_msg.item_completed` with `UserMessage`
/ `AgentMessage` items in newer ones); those copies are ignored, which is how a user turn appears once.
Events are still used for what the items lack: the exit codes of commands.

Keys: an item's own `id` when the build writes one, else a hash of its content plus its position among the
file's messages, so a history copied into another file (older resume behaviour) maps to the same keys.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from skillopt_daemon.ingest.sources.base import (
    BaseSource,
    FileContext,
    Record,
    SessionInfo,
    SkipRecord,
    SourceError,
    ToolCallRecord,
    ToolResultRecord,
    TurnRecord,
    as_dict,
    as_str,
    exit_code_in,
    loads_json,
    summarize_input,
    text_of,
)
from skillopt_lib.agents import AgentTool

INJECTED_PREFIXES = (
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<skill>",
    "<permissions instructions>",
)
_ROLLOUT_RE = re.compile(r"rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")

IGNORED_TOP = frozenset({"turn_context", "world_state", "token_usage_record", "compacted", "state"})
IGNORED_ITEMS = frozenset(
    {"reasoning", "web_search_call", "image_generation_call", "ghost_snapshot", "compaction", "other"}
)
# Events that only mirror items or report progress; `exec_command_end` and command items feed exit codes.
IGNORED_EVENTS = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_message_delta",
        "agent_reasoning",
        "agent_reasoning_delta",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
        "token_count",
        "task_started",
        "task_complete",
        "turn_started",
        "turn_complete",
        "item_started",
        "item_completed",
        "exec_command_begin",
        "exec_command_output_delta",
        "patch_apply_begin",
        "patch_apply_end",
        "thread_settings_applied",
        "session_configured",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "web_search_begin",
        "web_search_end",
        "background_event",
        "stream_error",
        "error",
        "warning",
        "plan_update",
        "get_history_entry_response",
        "list_skills_response",
        "context_compacted",
        "entered_review_mode",
        "exited_review_mode",
        "view_image_tool_call",
        "turn_diff",
        "shutdown_complete",
        "mcp_startup_update",
        "mcp_startup_complete",
        "raw_response_item",
        "undo_started",
        "undo_completed",
    }
)
_EXIT_MEMORY = 200


def is_injected(text: str) -> bool:
    stripped = text.lstrip()
    return any(stripped.startswith(p) for p in INJECTED_PREFIXES)


class CodexSource(BaseSource):
    tool = AgentTool.CODEX
    line_oriented = True
    known_version = "0.171.0"

    def roots(self) -> list[Path]:
        return [self.home / "sessions", self.home / "archived_sessions", *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        return path.suffix == ".jsonl" and path.name.startswith("rollout-")

    def session_key_for(self, path: Path) -> str:
        m = _ROLLOUT_RE.search(path.stem)
        return m.group(1) if m else path.stem

    def line_records(self, ctx: FileContext, obj: Any) -> list[Record]:
        if not isinstance(obj, dict):
            raise SourceError("not a json object")
        if ctx.state.get("subagent"):
            return []
        out: list[Record] = []
        rtype = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            # The oldest rollouts wrote items bare, without the {timestamp, type, payload} envelope.
            if rtype in ("message", "function_call", "function_call_output", "local_shell_call", "reasoning"):
                payload, rtype = obj, "response_item"
            elif "instructions" in obj and "id" in obj:
                payload, rtype = obj, "session_meta"
            elif obj.get("record_type") == "state":
                return []
            else:
                return [SkipRecord(f"unknown record type {rtype}" if rtype else "record without type")]
        ts = self.ts(ctx, obj.get("timestamp") or payload.get("timestamp"), out)
        if rtype == "session_meta":
            self._meta(ctx, payload, ts, out)
        elif rtype == "response_item":
            self._item(ctx, payload, ts, out)
        elif rtype == "event_msg":
            self._event(ctx, payload, out)
        elif rtype == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model and model != ctx.state.get("model"):
                ctx.state["model"] = model
                out.append(SessionInfo(session_id=self.session_id(ctx), model=model))
        elif rtype in IGNORED_TOP:
            pass
        else:
            out.append(SkipRecord(f"unknown record type {rtype}" if rtype else "record without type"))
        return out

    # ---------------------------------------------------------------- pieces
    def _meta(self, ctx: FileContext, p: dict[str, Any], ts: str | None, out: list[Record]) -> None:
        source = p.get("source")
        if isinstance(source, dict) and ("subagent" in source or "sub_agent" in source):
            ctx.state["subagent"] = True
            out.append(SkipRecord("sub-agent transcript", ctx.path.name))
            return
        sid = p.get("id") or p.get("session_id")
        if isinstance(sid, str) and sid and not ctx.state.get("sid"):
            ctx.state["sid"] = sid
        git = as_dict(p.get("git"))
        cwd = as_str(p.get("cwd"))
        info = SessionInfo(
            session_id=self.session_id(ctx),
            project_path=cwd,
            git_branch=git.get("branch") or None,
            git_commit=git.get("commit_hash") or None,
            tool_version=p.get("cli_version") or None,
            entrypoint=source if isinstance(source, str) else None,
            is_automation=(source == "exec") if isinstance(source, str) else None,
            started_at=ts,
            ended_at=ts,
        )
        if isinstance(p.get("originator"), str):
            info.extra["originator"] = p["originator"]
        if git.get("repository_url"):
            info.extra["repository_url"] = git["repository_url"]
        self.first_seen(ctx, info, cwd)
        out.append(info)

    def _key(self, ctx: FileContext, p: dict[str, Any], kind: str, text: str) -> str:
        pos = int(ctx.state.get("pos", 0)) + 1
        ctx.state["pos"] = pos
        if isinstance(p.get("id"), str) and p["id"]:
            return str(p["id"])
        digest = hashlib.sha1(f"{kind}\0{text}".encode("utf-8", "replace")).hexdigest()[:16]
        return f"{kind}-{digest}-{pos}"

    def _item(self, ctx: FileContext, p: dict[str, Any], ts: str | None, out: list[Record]) -> None:
        sid = self.session_id(ctx)
        itype = p.get("type")
        if itype == "message":
            role = p.get("role")
            text = text_of(p.get("content"))
            if role == "user":
                meta = is_injected(text)
                key = self._key(ctx, p, "user", text)
                out.append(TurnRecord(sid, key, "user", text, timestamp=ts, is_meta=meta))
                ctx.state["asst"] = None
                if not meta:
                    self.check_replay_text(ctx, sid, text, out)
            elif role == "assistant":
                key = self._key(ctx, p, "assistant", text)
                out.append(
                    TurnRecord(sid, key, "assistant", text, timestamp=ts, model=ctx.state.get("model"))
                )
                ctx.state["asst"] = key
            # developer/system messages are the harness's instructions: not stored.
            return
        if itype in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = str(p.get("call_id") or p.get("id") or f"call-line-{ctx.state.get('line', 0)}")
            turn_key = ctx.state.get("asst")
            if not turn_key:
                # A call with no text before it still belongs to an assistant turn: make an empty one.
                turn_key = f"turn-{call_id}"
                out.append(
                    TurnRecord(sid, turn_key, "assistant", "", timestamp=ts, model=ctx.state.get("model"))
                )
                ctx.state["asst"] = turn_key
            if itype == "function_call":
                raw = p.get("arguments")
                try:
                    args = loads_json(raw) if isinstance(raw, str) else raw
                except ValueError:
                    args = raw
                summary = summarize_input(args)
            elif itype == "custom_tool_call":
                summary = str(p.get("input") or "")
            else:
                action = as_dict(p.get("action"))
                summary = summarize_input(action)
            name = str(p.get("name") or ("local_shell" if itype == "local_shell_call" else "?"))
            out.append(ToolCallRecord(sid, call_id, turn_key, name, summary, timestamp=ts))
            return
        if itype in ("function_call_output", "custom_tool_call_output"):
            ctx.state["asst"] = None
            call_id = str(p.get("call_id") or "")
            output, exit_code = _output(p.get("output"))
            remembered = ctx.state.get("exit", {}).pop(call_id, None)
            if exit_code is None:
                exit_code = remembered
            is_error = None if exit_code is None else exit_code != 0
            out.append(ToolResultRecord(sid, call_id, exit_code, is_error, output, timestamp=ts))
            return
        if itype in IGNORED_ITEMS:
            return
        out.append(SkipRecord(f"unknown record type response_item.{itype}"))

    def _event(self, ctx: FileContext, p: dict[str, Any], out: list[Record]) -> None:
        etype = p.get("type")
        if etype == "exec_command_end":
            self._remember_exit(ctx, p.get("call_id"), p.get("exit_code"))
        elif etype == "item_completed":
            item = as_dict(p.get("item"))
            if item.get("type") == "CommandExecution":
                self._remember_exit(ctx, item.get("id"), item.get("exit_code"))
        elif etype == "turn_aborted":
            key = f"aborted-{ctx.state.get('line', 0)}"
            reason = str(p.get("reason") or "aborted")
            out.append(
                TurnRecord(self.session_id(ctx), key, "system", f"turn aborted: {reason}", is_meta=True)
            )
        elif etype in IGNORED_EVENTS:
            pass
        else:
            out.append(SkipRecord(f"unknown record type event_msg.{etype}"))

    def _remember_exit(self, ctx: FileContext, call_id: Any, code: Any) -> None:
        if not isinstance(call_id, str) or not isinstance(code, int) or isinstance(code, bool):
            return
        exits: dict[str, int] = ctx.state.setdefault("exit", {})
        exits[call_id] = code
        while len(exits) > _EXIT_MEMORY:
            del exits[next(iter(exits))]


def _output(raw: Any) -> tuple[str, int | None]:
    """A call output's text and exit code: plain text ("Process exited with code 3", "Exit code: 0"), or
    the older JSON `{"output": ..., "metadata": {"exit_code": N}}`, or a list of content items."""
    if isinstance(raw, list):
        return text_of(raw, block_types=("input_text", "output_text", "text")), None
    if isinstance(raw, dict):
        text = raw.get("output") or raw.get("content") or ""
        meta = as_dict(raw.get("metadata"))
        code = meta.get("exit_code")
        return (text if isinstance(text, str) else json.dumps(text)), code if isinstance(code, int) else None
    if not isinstance(raw, str):
        return "", None
    if raw.startswith("{") and '"metadata"' in raw[:4000] or raw.startswith('{"output"'):
        try:
            parsed = loads_json(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return _output(parsed)
    code = exit_code_in(raw)
    # Newer builds put a header (chunk id, wall time, exit code) before the command's own output.
    marker = raw.find("\nOutput:\n", 0, 400)
    if marker >= 0 and code is not None:
        return raw[marker + len("\nOutput:\n") :], code
    return raw, code
