"""OpenClaw: the `transcript_events` table of `<state dir>/agents/<agent id>/agent/openclaw-agent.sqlite`
(2026.x; transcript format version 4), and the older `<state dir>/agents/<agent id>/sessions/<id>.jsonl`.

Both hold the same records: a `session` header, settings changes (`model_change`, `thinking_level_change`)
and `message` entries whose `id` / `parentId` form a tree: editing an earlier message starts a new branch
and leaves the old one stored. The conversation is the branch that ends at the last entry, so a new entry
can change which earlier ones belong to it; both forms are therefore read as whole documents.

The database is opened read-only through SQLite (`mode=ro`), never copied or locked for writing, so what
OpenClaw has committed to its write-ahead log is seen too. A database OpenClaw holds locked is left for the
next rescan rather than recorded as read; one that is damaged or not a database is a file problem naming
it (in `skillopt status` and `skillopt doctor`), and what was read from it before is kept. Rows are read in `(session_id, seq)` order; a
large event is stored zstd-compressed in `event_zstd` instead of `event_json`. How the daemon follows the
database (it changes in place) is described in docs/sources.md.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skillopt_daemon.ingest.sources.base import (
    BaseSource,
    FileBusy,
    FileContext,
    FileUnusable,
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
from skillopt_daemon.ingest.sources.sqlite_store import connect_readonly, is_locked
from skillopt_lib.agents import AgentTool

if sys.version_info >= (3, 14):
    from compression.zstd import ZstdError
    from compression.zstd import decompress as _unzstd
else:
    from backports.zstd import ZstdError
    from backports.zstd import decompress as _unzstd

DATABASE_NAME = "openclaw-agent.sqlite"
# OpenClaw refuses events above 4 MiB; a row claiming more is not trusted with memory.
MAX_EVENT_BYTES = 4 << 20

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
    known_version = "4"

    def roots(self) -> list[Path]:
        return [self.home / "agents", *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        if path.name == DATABASE_NAME:
            return path.parent.name == "agent"
        return path.suffix == ".jsonl" and path.parent.name == "sessions"

    def session_key_for(self, path: Path) -> str:
        return path.parent.parent.name if path.name == DATABASE_NAME else path.stem

    def companions(self, path: Path) -> list[Path]:
        # The database's new events wait in its write-ahead log until SQLite's next checkpoint.
        return [path.with_name(path.name + "-wal")] if path.name == DATABASE_NAME else []

    def unusable(self, path: Path) -> str | None:
        problem = database_problem(path) if path.name == DATABASE_NAME else None
        return problem.short if problem is not None else None

    def file_records(self, ctx: FileContext, data: bytes) -> list[Record]:
        agent_id = ctx.path.parent.parent.name
        if ctx.path.name != DATABASE_NAME:
            out: list[Record] = []
            header, entries = _read_entries(_json_lines(data, out), out)
            return out + self._session(ctx, header, entries, agent_id, ctx.session_key)
        out = []
        for sid, events in _database_sessions(ctx.path, out):
            header, entries = _read_entries(events, out)
            # Pinning and replay marks are kept per session: one database holds many.
            sub = FileContext(
                ctx.path, ctx.tool, sid, ctx.state.setdefault("sessions", {}).setdefault(sid, {})
            )
            out.extend(self._session(sub, header, entries, agent_id, sid))
        return out

    def _session(
        self,
        ctx: FileContext,
        header: dict[str, Any],
        entries: list[dict[str, Any]],
        agent_id: str,
        fallback_id: str,
    ) -> list[Record]:
        """Records of one session: its info first, then the conversation on the current branch."""
        out: list[Record] = []
        sid = str(header.get("id") or fallback_id)
        ctx.state["sid"] = sid
        cwd = as_str(header.get("cwd"))
        info = SessionInfo(
            session_id=sid,
            project_path=cwd,
            started_at=self.ts(ctx, header.get("timestamp"), out),
            tool_version=str(header["version"]) if header.get("version") is not None else None,
        )
        info.extra["agent_id"] = agent_id
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


def _json_lines(data: bytes, out: list[Record]) -> Iterator[Any]:
    """The JSON values of a JSONL document; lines that are not JSON are noted in `out`."""
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
        yield obj


def _unusable(path: Path, exc: sqlite3.Error) -> FileUnusable:
    text = str(exc)
    if "no such table" in text:
        what = "an SQLite database without OpenClaw's transcript_events table"
    elif "not a database" in text:
        what = "not an SQLite database"
    else:
        what = f"a damaged SQLite database ({text})"
    short = f"the OpenClaw database {path} is {what}"
    return FileUnusable(
        "unreadable-database",
        f"{short}; its sessions cannot be ingested (what was read from it before is kept): check it with "
        f"`sqlite3 {path} 'PRAGMA integrity_check'`",
        short=short,
    )


def database_problem(path: Path) -> FileUnusable | None:
    """Why the database cannot be read at all (damaged, not SQLite, not OpenClaw's), or None; a lock held
    by OpenClaw is no problem (read later). Reads every row's key, none of the events."""
    try:
        conn = connect_readonly(path)
    except sqlite3.Error as exc:
        return None if is_locked(exc) else _unusable(path, exc)
    try:
        conn.execute("SELECT COUNT(*) FROM transcript_events").fetchone()
    except sqlite3.Error as exc:
        return None if is_locked(exc) else _unusable(path, exc)
    finally:
        conn.close()
    return None


def _database_sessions(path: Path, out: list[Record]) -> list[tuple[str, list[Any]]]:
    """(session id, its decoded events in `seq` order) for every session in an OpenClaw database.

    All or nothing: a database OpenClaw holds locked raises `FileBusy` (it is read again later, as it was
    when the lock is gone), and one that cannot be read raises `FileUnusable`, so that a partial reading
    never replaces what the store holds. An unusable row is noted in `out` and skipped.
    """
    try:
        conn = connect_readonly(path)
    except sqlite3.Error as exc:
        raise (FileBusy(str(path)) if is_locked(exc) else _unusable(path, exc)) from None
    sessions: list[tuple[str, list[Any]]] = []
    try:
        rows = conn.execute(
            "SELECT session_id, seq, event_json, event_zstd FROM transcript_events ORDER BY session_id, seq"
        )
        current: str | None = None
        events: list[Any] = []
        for sid, seq, text, packed in rows:
            if sid != current:
                if current is not None:
                    sessions.append((current, events))
                current, events = str(sid), []
            event = _decode_event(text, packed, f"{sid}#{seq}", out)
            if event is not None:
                events.append(event)
        if current is not None:
            sessions.append((current, events))
    except sqlite3.Error as exc:
        raise (FileBusy(str(path)) if is_locked(exc) else _unusable(path, exc)) from None
    finally:
        conn.close()
    return sessions


def _decode_event(text: Any, packed: Any, where: str, out: list[Record]) -> Any:
    """One row's event: `event_json` as stored, or `event_zstd` decompressed; None when unusable."""
    if isinstance(packed, bytes):
        try:
            raw = _unzstd(packed)
        except (ZstdError, ValueError, MemoryError) as exc:
            out.append(SkipRecord("undecodable compressed event", f"{where}: {exc}"[:200]))
            return None
        if len(raw) > MAX_EVENT_BYTES:
            out.append(SkipRecord("compressed event too large", where))
            return None
        text = raw.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        out.append(SkipRecord("event without content", where))
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        out.append(SkipRecord("invalid json", where))
        return None


def _read_entries(
    objects: Iterator[Any] | list[Any], out: list[Record]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session header and the known entries of one session; what cannot be used is noted in `out`."""
    entries: list[dict[str, Any]] = []
    header: dict[str, Any] = {}
    for obj in objects:
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
