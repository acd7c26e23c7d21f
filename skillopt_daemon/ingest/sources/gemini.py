"""Gemini CLI: `<home>/tmp/<project>/chats/session-<time>-<id>.jsonl`, one record a line, appended as the
session goes (checked with Gemini CLI 0.61.0, files recorded offline against the scripted model server).

The first line is the session's header `{sessionId, projectHash, startTime, lastUpdated, kind}`. A line with
an `id` is a message `{id, timestamp, type, content, toolCalls, tokens, model}`: `type` is `user` or
`gemini` (the model), or `info` / `warning` / `error` notices. The same message is written again when it
changes (a model turn once with its text, again with its `toolCalls` and their results), so records are
keyed by the message id and a later line replaces an earlier one. `{"$set": {...}}` updates the header
(and may carry the whole `messages` list, as the first context message is written); `{"$rewindTo": id}`
drops the messages from `id` on when the user rewinds, which a reader that only adds keeps as history.

A user message whose parts are `functionResponse`s is the tools' answers, not the user's words; the first
user message is Gemini's own `<session_context>` (injected context). The project folder is in the
`.project_root` file beside `chats/`. Older releases wrote one whole `session-*.json` document per session;
those are not read.
"""

from __future__ import annotations

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
    as_list,
    as_str,
    exit_code_in,
    summarize_input,
)
from skillopt_lib.agents import AgentTool

INJECTED_PREFIXES = ("<session_context>", "<system-reminder>", "<untrusted_context>")
NOTICE_TYPES = frozenset({"info", "warning", "error"})
PROJECT_ROOT_FILE = ".project_root"
MAX_ROOT_BYTES = 4096


def _parts_text(content: Any) -> str:
    """The text of a message's `content`: a string, or a list of parts of which only `text` ones count."""
    if isinstance(content, str):
        return content
    texts = [p["text"] for p in as_list(content) if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return "\n".join(texts)


def _is_tool_answer(content: Any) -> bool:
    parts = [p for p in as_list(content) if isinstance(p, dict)]
    return bool(parts) and all("functionResponse" in p for p in parts)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class GeminiSource(BaseSource):
    tool = AgentTool.GEMINI
    line_oriented = True
    known_version = "0.61.0"

    def roots(self) -> list[Path]:
        return [self.home / "tmp", *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        return path.suffix == ".jsonl" and path.name.startswith("session-") and path.parent.name == "chats"

    def line_records(self, ctx: FileContext, obj: Any) -> list[Record]:
        if not isinstance(obj, dict):
            raise SourceError("not a json object")
        out: list[Record] = []
        if isinstance(obj.get("sessionId"), str) and "projectHash" in obj:
            return self._header(ctx, obj, out)
        if "$rewindTo" in obj:
            return [SkipRecord("rewind (earlier messages kept)")]
        if isinstance(obj.get("$set"), dict):
            update = obj["$set"]
            for msg in as_list(update.get("messages")):
                if isinstance(msg, dict) and isinstance(msg.get("id"), str):
                    out.extend(self._message(ctx, msg))
            ended = self.ts(ctx, update.get("lastUpdated"), out)
            if ended:
                out.append(SessionInfo(session_id=self.session_id(ctx), ended_at=ended))
            return out
        if isinstance(obj.get("id"), str):
            return self._message(ctx, obj)
        return [SkipRecord("record without id or type")]

    def _header(self, ctx: FileContext, obj: dict[str, Any], out: list[Record]) -> list[Record]:
        if not ctx.state.get("sid"):
            ctx.state["sid"] = obj["sessionId"]
        sid = self.session_id(ctx)
        cwd = self._project_root(ctx)
        info = SessionInfo(
            session_id=sid,
            project_path=cwd,
            started_at=self.ts(ctx, obj.get("startTime"), out),
            ended_at=self.ts(ctx, obj.get("lastUpdated"), out),
        )
        if as_str(obj.get("kind")) not in (None, "main"):
            info.is_automation = True  # a subagent's own chat, started by the model, not by the user
        self.first_seen(ctx, info, cwd)
        out.append(info)
        return out

    def _message(self, ctx: FileContext, msg: dict[str, Any]) -> list[Record]:
        out: list[Record] = []
        sid = self.session_id(ctx)
        key = str(msg["id"])
        ts = self.ts(ctx, msg.get("timestamp"), out)
        mtype = msg.get("type")
        content = msg.get("content")
        if mtype == "user":
            if _is_tool_answer(content):
                return out  # the results are on the model turn's toolCalls, with their status
            text = _parts_text(content)
            meta = text.lstrip().startswith(INJECTED_PREFIXES)
            out.append(TurnRecord(sid, key, "user", text, timestamp=ts, is_meta=meta))
            if not meta:
                self.check_replay_text(ctx, sid, text, out)
        elif mtype == "gemini":
            tokens = as_dict(msg.get("tokens"))
            model = as_str(msg.get("model"))
            out.append(
                TurnRecord(
                    sid,
                    key,
                    "assistant",
                    _parts_text(content),
                    timestamp=ts,
                    model=model,
                    input_tokens=_int(tokens.get("input")),
                    output_tokens=_int(tokens.get("output")),
                )
            )
            for call in as_list(msg.get("toolCalls")):
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    out.extend(self._call(ctx, sid, key, call, ts))
            if model:
                out.append(SessionInfo(session_id=sid, model=model))
        elif mtype in NOTICE_TYPES:
            text = _parts_text(content)
            out.append(TurnRecord(sid, key, "system", text, timestamp=ts, is_meta=True))
        else:
            out.append(SkipRecord(f"unknown record type {mtype}" if mtype else "message without type"))
        if ts:
            out.append(SessionInfo(session_id=sid, ended_at=ts))
        return out

    def _call(
        self, ctx: FileContext, sid: str, turn_key: str, call: dict[str, Any], ts: str | None
    ) -> list[Record]:
        call_key = str(call["id"])
        out: list[Record] = []
        called_at = self.ts(ctx, call.get("timestamp"), out) or ts
        out.append(
            ToolCallRecord(
                session_id=sid,
                key=call_key,
                turn_key=turn_key,
                name=str(call.get("name") or "?"),
                input_summary=summarize_input(call.get("args")),
                timestamp=called_at,
            )
        )
        status = as_str(call.get("status"))
        if status in (None, "executing", "scheduled", "validating", "awaiting_approval"):
            return out  # no outcome yet: the line is written again when the call finishes
        texts: list[str] = []
        for part in as_list(call.get("result")):
            response = as_dict(as_dict(as_dict(part).get("functionResponse")).get("response"))
            for field in ("output", "error", "llmContent"):
                if isinstance(response.get(field), str):
                    texts.append(response[field])
        display = call.get("resultDisplay")
        if not texts and isinstance(display, str):
            texts.append(display)
        text = "\n".join(texts)
        for marker in ("<untrusted_context>\n", "\n</untrusted_context>"):
            text = text.replace(marker, "")
        out.append(
            ToolResultRecord(
                sid,
                call_key,
                exit_code_in(text),
                status != "success",
                text,
                timestamp=ts,
            )
        )
        return out

    def _project_root(self, ctx: FileContext) -> str | None:
        """The project folder Gemini CLI wrote beside the session's `chats/` folder."""
        try:
            with open(ctx.path.parent.parent / PROJECT_ROOT_FILE, "rb") as f:
                raw = f.read(MAX_ROOT_BYTES)
        except OSError:
            return None
        text = raw.decode("utf-8", "replace").strip()
        return text or None
