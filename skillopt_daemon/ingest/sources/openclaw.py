"""OpenClaw: `<state dir>/agents/<agent id>/sessions/<session id>.jsonl`.

Lines are a `session` header, settings changes (`model_change`, `thinking_level_change`) and `message`
entries whose `id` / `parentId` form a tree: editing an earlier message starts a new branch and leaves the
old one in the file. The conversation is the branch that ends at the last entry, so the reader is
whole-file: a new line can change which earlier lines belong to the conversation.
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
    as_str,
    decode_json_line,
    exit_code_in,
    summarize_input,
    text_of,
)
from skillopt_lib.agents import AgentTool

KNOWN_TYPES = frozenset(
    {
        "session",
        "message",
        "model_change",
        "thinking_level_change",
        "custom",
        "label",
        "compaction",
        "branch_summary",
        "custom_message",
        "session_info",
    }
)


class OpenClawSource(BaseSource):
    tool = AgentTool.OPENCLAW
    line_oriented = False
    known_version = "3"

    def roots(self) -> list[Path]:
        return [self.home / "agents", *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        return path.suffix == ".jsonl" and path.parent.name == "sessions"

    def session_key_for(self, path: Path) -> str:
        return path.stem

    def file_records(self, ctx: FileContext, data: bytes) -> list[Record]:
        out: list[Record] = []
        header, entries = _read_entries(data, out)
        sid = str(header.get("id") or ctx.session_key)
        ctx.state["sid"] = sid
        cwd = as_str(header.get("cwd"))
        info = SessionInfo(
            session_id=sid,
            project_path=cwd,
            started_at=self.ts(ctx, header.get("timestamp"), out),
            tool_version=str(header["version"]) if header.get("version") is not None else None,
        )
        info.extra["agent_id"] = ctx.path.parent.parent.name
        branch = _branch(entries)
        on_branch = {id(e) for e in branch}
        for e in entries:
            if id(e) not in on_branch and e.get("type") == "message":
                out.append(SkipRecord("abandoned branch", str(e.get("id"))))
        first_user = ""
        last_ts: str | None = None
        prev_key: str | None = None
        for e in branch:
            ts = self.ts(ctx, e.get("timestamp"), out)
            last_ts = ts or last_ts
            if e.get("type") == "model_change":
                model = e.get("modelId") or e.get("model")
                if isinstance(model, str):
                    info.model = model
                continue
            if e.get("type") != "message":
                continue
            msg = as_dict(e.get("message"))
            key = str(e.get("id") or f"entry-{len(out)}")
            if not _message_records(sid, key, msg, ts, prev_key, info, out):
                continue
            if msg.get("role") == "user":
                first_user = first_user or text_of(msg.get("content"))
            prev_key = key
        info.ended_at = last_ts
        self.first_seen(ctx, info, cwd, first_user)
        out.insert(0, info)
        return out


def _read_entries(data: bytes, out: list[Record]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session header and the known entries of a document; what cannot be used is noted in `out`."""
    entries: list[dict[str, Any]] = []
    header: dict[str, Any] = {}
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj, bad = decode_json_line(raw)
        except SourceError as exc:
            out.append(SkipRecord(exc.reason, exc.detail))
            continue
        if bad:
            out.append(SkipRecord("invalid utf-8 (replaced)"))
        if not isinstance(obj, dict):
            out.append(SkipRecord("not a json object"))
            continue
        etype = obj.get("type")
        if etype == "session" and not header:
            header = obj
            continue
        if etype not in KNOWN_TYPES:
            out.append(SkipRecord(f"unknown record type {etype}" if etype else "record without type"))
            continue
        entries.append(obj)
    return header, entries


def _message_records(
    sid: str,
    key: str,
    msg: dict[str, Any],
    ts: str | None,
    prev_key: str | None,
    info: SessionInfo,
    out: list[Record],
) -> bool:
    """Records of one message entry, appended to `out`; False for a role this reader does not know."""
    role = msg.get("role")
    content = msg.get("content")
    if role == "user":
        out.append(TurnRecord(sid, key, "user", text_of(content), timestamp=ts, parent_key=prev_key))
    elif role == "assistant":
        model = as_str(msg.get("model"))
        usage = as_dict(msg.get("usage"))
        turn = TurnRecord(
            sid, key, "assistant", text_of(content), timestamp=ts, parent_key=prev_key, model=model
        )
        turn.input_tokens = usage.get("input") if isinstance(usage.get("input"), int) else None
        turn.output_tokens = usage.get("output") if isinstance(usage.get("output"), int) else None
        out.append(turn)
        if model:
            info.model = model
        for i, block in enumerate(content if isinstance(content, list) else []):
            if isinstance(block, dict) and block.get("type") == "toolCall":
                out.append(
                    ToolCallRecord(
                        sid,
                        str(block.get("id") or f"{key}-call{i}"),
                        key,
                        str(block.get("name") or "?"),
                        summarize_input(block.get("arguments")),
                        timestamp=ts,
                    )
                )
    elif role == "toolResult":
        text = text_of(content)
        is_error = msg.get("isError") if isinstance(msg.get("isError"), bool) else None
        details = as_dict(msg.get("details"))
        code = details.get("exitCode") if isinstance(details.get("exitCode"), int) else exit_code_in(text)
        out.append(
            ToolResultRecord(sid, str(msg.get("toolCallId") or ""), code, is_error, text, timestamp=ts)
        )
        out.append(TurnRecord(sid, key, "tool", "", timestamp=ts, parent_key=prev_key, is_meta=True))
    else:
        out.append(SkipRecord(f"unknown message role {role}"))
        return False
    return True


def _branch(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries on the path from the root to the last entry, in order."""
    with_id = [e for e in entries if isinstance(e.get("id"), str)]
    if not with_id:
        return entries
    by_id = {e["id"]: e for e in with_id}
    chain: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = with_id[-1]
    seen: set[str] = set()
    while cur is not None and cur["id"] not in seen:
        seen.add(cur["id"])
        chain.append(cur)
        parent = cur.get("parentId")
        cur = by_id.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return chain
