"""GitHub Copilot CLI: `<home>/session-state/<session id>/events.jsonl` (older builds:
`<home>/session-state/<session id>.jsonl`), one event `{type, id, timestamp, parentId, data}` a line.

`user.message` / `assistant.message` are the turns (an assistant message lists its `toolRequests`);
`tool.execution_start` / `tool.execution_complete` carry the calls and their outcome (a shell call's exit
code in `shellExecution.exitCode`). A `session.usage_record` precedes the assistant message of the same
model call and gives its model and tokens. Headless `copilot -p` runs are told so in their
`system.message`; the session's title is in the `workspace.yaml` beside `events.jsonl`. The global
`session-store.db` index is not needed: every fact used here is in the session folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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
    summarize_input,
    text_of,
)
from skillopt_lib.agents import AgentTool

IGNORED_EVENTS = frozenset(
    {
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.reasoning",
        "assistant.message_delta",
        "assistant.usage",
        "assistant.intent",
        "session.info",
        "session.error",
        "session.truncation",
        "session.resume",
        "session.idle",
        "session.usage_info",
        "session.compaction_start",
        "session.compaction_complete",
        "session.shutdown",
        "tool.execution_partial_result",
        "tool.user_requested",
        "hook.start",
        "hook.end",
        "abort",
    }
)
INJECTED_PREFIXES = ("<current_datetime>", "<reminder>", "<system-reminder>", "<environment_context>")
# What Copilot's system prompt says in `copilot -p` runs (interactive sessions are told about the user).
HEADLESS_TEXT = "running in non-interactive mode"
WORKSPACE_FILE = "workspace.yaml"
MAX_WORKSPACE_BYTES = 64 << 10


class CopilotSource(BaseSource):
    tool = AgentTool.COPILOT
    line_oriented = True
    known_version = "1.0.102"

    def roots(self) -> list[Path]:
        return [self.home / "session-state", *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        if path.suffix != ".jsonl":
            return False
        return path.name == "events.jsonl" or path.parent.name == "session-state"

    def session_key_for(self, path: Path) -> str:
        return path.parent.name if path.name == "events.jsonl" else path.stem

    def line_records(self, ctx: FileContext, obj: Any) -> list[Record]:
        if not isinstance(obj, dict):
            raise SourceError("not a json object")
        etype = obj.get("type")
        data = as_dict(obj.get("data"))
        out: list[Record] = []
        ts = self.ts(ctx, obj.get("timestamp"), out)
        sid = self.session_id(ctx)
        key = str(obj.get("id") or f"line-{ctx.state.get('line', 0)}")
        if etype == "session.start":
            if isinstance(data.get("sessionId"), str) and not ctx.state.get("sid"):
                ctx.state["sid"] = data["sessionId"]
                sid = self.session_id(ctx)
            context = as_dict(data.get("context"))
            cwd = context.get("cwd") or context.get("gitRoot")
            info = SessionInfo(
                session_id=sid,
                project_path=cwd if isinstance(cwd, str) else None,
                git_branch=as_str(context.get("branch")),
                tool_version=str(data.get("copilotVersion") or data.get("version") or "") or None,
                model=as_str(data.get("selectedModel")),
                entrypoint=as_str(data.get("producer")),
                started_at=self.ts(ctx, data.get("startTime"), out) or ts,
                ended_at=ts,
            )
            info.title = self._title(ctx)
            self.first_seen(ctx, info, info.project_path)
            out.append(info)
        elif etype == "session.model_change":
            model = data.get("newModel") or data.get("model")
            if isinstance(model, str):
                out.append(SessionInfo(session_id=sid, model=model))
        elif etype == "system.message":
            if HEADLESS_TEXT in text_of(data.get("content")) and not ctx.state.get("headless"):
                ctx.state["headless"] = True
                out.append(SessionInfo(session_id=sid, is_automation=True))
        elif etype == "session.usage_record":
            usage = as_dict(data.get("usage"))
            ctx.state["usage"] = {
                "model": as_str(usage.get("model")),
                "in": _int(usage.get("inputTokens")),
                "out": _int(usage.get("outputTokens")),
                "call": as_str(usage.get("apiCallId")),
            }
        elif etype == "user.message":
            text = text_of(data.get("content"))
            meta = text.lstrip().startswith(INJECTED_PREFIXES) or data.get("source") == "system"
            out.append(
                TurnRecord(sid, key, "user", text, timestamp=ts, parent_key=_parent(obj), is_meta=meta)
            )
            if not meta:
                self.check_replay_text(ctx, sid, text, out)
            out.append(SessionInfo(session_id=sid, ended_at=ts, title=self._title(ctx)))
        elif etype == "assistant.message":
            text = text_of(data.get("content"))
            turn_key = str(data.get("messageId") or key)
            turn = TurnRecord(sid, turn_key, "assistant", text, timestamp=ts, parent_key=_parent(obj))
            _apply_usage(turn, data, ctx.state.pop("usage", None))
            out.append(turn)
            ctx.state["asst"] = turn_key
            for req in data.get("toolRequests") or []:
                if isinstance(req, dict) and req.get("toolCallId"):
                    out.append(self._call(sid, req, turn_key, ts))
            if ts:
                out.append(SessionInfo(session_id=sid, ended_at=ts))
        elif etype == "tool.execution_start":
            if data.get("toolCallId") and ctx.state.get("asst"):
                out.append(self._call(sid, data, str(ctx.state["asst"]), ts))
        elif etype == "tool.execution_complete":
            out.append(self._result(sid, data, ts))
        elif etype in IGNORED_EVENTS:
            pass
        else:
            out.append(SkipRecord(f"unknown record type {etype}" if etype else "record without type"))
        return out

    def _call(self, sid: str, data: dict[str, Any], turn_key: str, ts: str | None) -> ToolCallRecord:
        return ToolCallRecord(
            session_id=sid,
            key=str(data["toolCallId"]),
            turn_key=turn_key,
            name=str(data.get("name") or data.get("toolName") or "?"),
            input_summary=summarize_input(data.get("arguments")),
            timestamp=ts,
        )

    def _result(self, sid: str, data: dict[str, Any], ts: str | None) -> ToolResultRecord:
        result = as_dict(data.get("result"))
        error = data.get("error")
        text = text_of(result.get("content")) or text_of(result.get("detailedContent"))
        if isinstance(error, dict):
            text = text or str(error.get("message") or "")
        elif isinstance(error, str):
            text = text or error
        success = data.get("success")
        is_error = (not success) if isinstance(success, bool) else (True if error else None)
        shell = as_dict(data.get("shellExecution"))
        code = _int(shell.get("exitCode")) if "exitCode" in shell else exit_code_in(text)
        return ToolResultRecord(sid, str(data.get("toolCallId") or ""), code, is_error, text, timestamp=ts)

    def _title(self, ctx: FileContext) -> str | None:
        """The session's title from `workspace.yaml` (Copilot rewrites it as the session is renamed)."""
        if ctx.path.name != "events.jsonl":
            return None
        try:
            with open(ctx.path.parent / WORKSPACE_FILE, "rb") as f:
                raw = f.read(MAX_WORKSPACE_BYTES)
            doc = yaml.safe_load(raw)
        except (OSError, yaml.YAMLError):
            return None
        doc = as_dict(doc)
        title = doc.get("name") or doc.get("summary") or doc.get("title")
        return title.strip() or None if isinstance(title, str) else None


def _apply_usage(turn: TurnRecord, data: dict[str, Any], usage: dict[str, Any] | None) -> None:
    """The model and tokens of the model call that produced this message (its preceding usage record)."""
    turn.model = as_str(data.get("model"))
    if usage is None:
        return
    call = as_str(data.get("apiCallId"))
    if call and usage.get("call") and call != usage["call"]:
        return  # the record belongs to another call
    turn.model = turn.model or usage.get("model")
    turn.input_tokens, turn.output_tokens = usage.get("in"), usage.get("out")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _parent(obj: dict[str, Any]) -> str | None:
    parent = obj.get("parentId")
    return parent if isinstance(parent, str) else None
