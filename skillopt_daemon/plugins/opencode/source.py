"""OpenCode's sessions: the SQLite database `<data dir>/opencode.db` (`~/.local/share/opencode`; checked with
OpenCode 1.18.33, recorded offline against the scripted model server).

Three tables hold a conversation. `session` has one row per session: `directory` (the folder it ran in),
`parent_id` (set for a subagent's session, which a `task` tool call starts), `permission` (the rules `opencode
run` creates its sessions with deny `question`, `plan_enter` and `plan_exit`, as no one is there to answer;
the TUI's sessions have none, so a session with those rules is headless work), `title`, `version` (the
OpenCode release that created it), `model` and times in epoch milliseconds. `message` rows (`data`: JSON with
`role` `user` or `assistant`, `parentID`, `modelID`, `tokens`, `time`) belong to a session, and `part` rows
(`data`: JSON with a `type`) to a message: `text` parts are what was said (`synthetic` ones were added by
OpenCode, not typed), `tool` parts a call with its `state` (`status`, `input`, `output` or `error`, and for
the shell the exit code in `metadata.exit`); `step-start`, `step-finish`, `reasoning`, `snapshot` and `patch`
parts are bookkeeping. The schema's version is the newest id in OpenCode's `migration` table.

The database is opened read-only (`mode=ro`), never locked for writing; what OpenCode committed to its
write-ahead log is seen as well. It changes in place, so it is read as one whole document and every session
in it is read again when the file or its write-ahead log (`companions`) changes; records are keyed by OpenCode's ids, so nothing is duplicated.
A database OpenCode holds locked is left for the next rescan; one that is damaged, cut short or lacks
OpenCode's tables is a file problem naming it, and what was read from it before is kept. A row whose JSON is
cut short is noted and the rest of its session is read.
"""

from __future__ import annotations

import json
import sqlite3
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
    ToolCallRecord,
    ToolResultRecord,
    TurnRecord,
    as_dict,
    as_str,
    exit_code_in,
    summarize_input,
)
from skillopt_daemon.ingest.sources.sqlite_store import connect_readonly, is_locked
from skillopt_lib.agents import AgentTool

DATABASE_NAME = "opencode.db"
# The newest schema migration of the release the reader was checked with; a newer one is read, and noted.
KNOWN_MIGRATION = "20260622202450_simplify_session_input"
# The columns the reader needs: a schema without them cannot be read at all.
NEEDED_COLUMNS = {
    "session": ("id", "parent_id", "directory", "title", "version", "time_created", "time_updated"),
    "message": ("id", "session_id", "time_created", "data"),
    "part": ("id", "message_id", "session_id", "time_created", "data"),
}
BOOKKEEPING_PARTS = frozenset(
    {"step-start", "step-finish", "reasoning", "snapshot", "patch", "file", "agent", "subtask", "compaction"}
)


class OpenCodeSource(BaseSource):
    tool = AgentTool.declare("opencode")
    line_oriented = False
    known_version = "1.18.33"

    def roots(self) -> list[Path]:
        return [self.home, *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        return path.name == DATABASE_NAME

    def session_key_for(self, path: Path) -> str:
        return path.parent.name

    def companions(self, path: Path) -> list[Path]:
        # OpenCode's rows reach `opencode.db` only at SQLite's checkpoints; until then they are in the log.
        # Not `-shm`: every reader writes to it, this one included, so it would always look changed.
        return [path.with_name(path.name + "-wal")]

    def unusable(self, path: Path) -> str | None:
        try:
            conn = connect_readonly(path)
        except sqlite3.Error as exc:
            return None if is_locked(exc) else _unusable(path, exc).short
        try:
            _storage_version(path, conn)
        except sqlite3.Error as exc:
            return None if is_locked(exc) else _unusable(path, exc).short
        except FileUnusable as exc:
            return exc.short
        finally:
            conn.close()
        return None

    def file_records(self, ctx: FileContext, data: bytes) -> list[Record]:
        # The database is read through SQLite at its path, not from `data`: a file of another name was not
        # chosen by `is_transcript` and holds nothing of OpenCode's, and one gone since it was opened (OpenCode
        # replaced it) is left for the next rescan rather than read as empty, which would drop its sessions.
        if ctx.path.name != DATABASE_NAME:
            return [SkipRecord("not OpenCode's database", ctx.path.name)]
        if not ctx.path.exists():
            raise FileBusy(str(ctx.path))
        out: list[Record] = []
        try:
            conn = connect_readonly(ctx.path)
        except sqlite3.Error as exc:
            raise (FileBusy(str(ctx.path)) if is_locked(exc) else _unusable(ctx.path, exc)) from None
        try:
            version = _storage_version(ctx.path, conn)
            if version > KNOWN_MIGRATION:
                out.append(
                    SkipRecord(
                        "newer OpenCode storage version (read as the known one)",
                        f"{version}; checked with {KNOWN_MIGRATION}",
                    )
                )
            # `permission` (rules a session was created with) tells `opencode run` from the TUI; a schema
            # without it is read as the TUI's.
            have = {row[1] for row in conn.execute("PRAGMA table_info(session)")}
            permission = "permission" if "permission" in have else "NULL"
            sessions = conn.execute(
                "SELECT id, parent_id, directory, title, version, time_created, time_updated, "
                f"{permission} FROM session ORDER BY time_created, id"
            ).fetchall()
            messages = _rows_by_session(conn, "message", "id, session_id, time_created, data")
            parts = _parts_by_message(conn)
        except sqlite3.Error as exc:
            raise (FileBusy(str(ctx.path)) if is_locked(exc) else _unusable(ctx.path, exc)) from None
        finally:
            conn.close()
        for row in sessions:
            sid = str(row[0])
            # Pinning and replay marks are kept per session: one database holds every session.
            sub = FileContext(
                ctx.path, ctx.tool, sid, ctx.state.setdefault("sessions", {}).setdefault(sid, {})
            )
            out.extend(self._session(sub, row, messages.get(sid, []), parts))
        return out

    def _session(
        self,
        ctx: FileContext,
        row: tuple[Any, ...],
        messages: list[tuple[Any, ...]],
        parts: dict[str, list[tuple[str, Any]]],
    ) -> list[Record]:
        """Records of one session: its info first, then its messages in the order they were created."""
        sid, parent, directory, title, version, created, updated, permission = row
        ctx.state["sid"] = str(sid)
        out: list[Record] = []
        cwd = as_str(directory) or None
        info = SessionInfo(
            session_id=str(sid),
            project_path=cwd,
            title=as_str(title),
            tool_version=as_str(version),
            started_at=self.ts(ctx, created, out),
            ended_at=self.ts(ctx, updated, out),
        )
        if isinstance(parent, str) and parent:
            info.is_automation = (
                True  # a subagent's session: the model delegated it, the user did not type it
            )
            info.extra["parent_session"] = parent
        elif _headless(permission):
            info.is_automation = True  # `opencode run`: headless work, mined like the TUI's
        first_user = ""
        prev_key: str | None = None
        for mid, _sid, mcreated, raw in messages:
            msg = _json(raw, f"message {mid}", out)
            if msg is None:
                continue
            key = str(mid)
            ts = self.ts(ctx, as_dict(msg.get("time")).get("created", mcreated), out)
            texts, tools = _split_parts(parts.get(key, []), out)
            role = msg.get("role")
            if role == "user":
                typed = [t for t, synthetic in texts if not synthetic]
                text = "\n".join(typed or [t for t, _ in texts])
                meta = not typed  # only OpenCode's own additions: context, not the user's words
                out.append(
                    TurnRecord(str(sid), key, "user", text, timestamp=ts, parent_key=prev_key, is_meta=meta)
                )
                if not meta:
                    first_user = first_user or text
                    self.check_replay_text(ctx, str(sid), text, out)
            elif role == "assistant":
                tokens = as_dict(msg.get("tokens"))
                model = as_str(msg.get("modelID"))
                turn = TurnRecord(
                    str(sid),
                    key,
                    "assistant",
                    "\n".join(t for t, _ in texts),
                    timestamp=ts,
                    parent_key=as_str(msg.get("parentID")) or prev_key,
                    model=model,
                    input_tokens=_int(tokens.get("input")),
                    output_tokens=_int(tokens.get("output")),
                )
                out.append(turn)
                if model:
                    info.model = model
                for call_id, part in tools:
                    out.extend(self._call(ctx, str(sid), key, call_id, part, ts))
            else:
                out.append(SkipRecord(f"unknown message role {role}", key))
                continue
            prev_key = key
        self.first_seen(ctx, info, cwd, first_user)
        out.insert(0, info)
        return out

    def _call(
        self, ctx: FileContext, sid: str, turn: str, call_id: str, part: dict[str, Any], ts: str | None
    ) -> list[Record]:
        state = as_dict(part.get("state"))
        out: list[Record] = [
            ToolCallRecord(
                sid, call_id, turn, str(part.get("tool") or "?"), summarize_input(state.get("input")), ts
            )
        ]
        status = state.get("status")
        if status not in ("completed", "error"):
            return out  # still pending or running: its result comes with a later reading
        end = self.ts(ctx, as_dict(state.get("time")).get("end"), out) or ts
        text = str(state.get("output") if status == "completed" else state.get("error") or "")
        exit_code = _int(as_dict(state.get("metadata")).get("exit"))
        if exit_code is None:
            exit_code = exit_code_in(text)
        out.append(ToolResultRecord(sid, call_id, exit_code, status == "error", text, timestamp=end))
        return out


# The rules `opencode run` (1.18.33) gives every session it creates: with no one to answer, the model may not
# ask questions or enter or leave plan mode. The TUI stores none (`permission` is NULL).
HEADLESS_DENIED = frozenset({"question", "plan_enter", "plan_exit"})


def _headless(permission: Any) -> bool:
    """Whether a session's stored `permission` rules are the ones `opencode run` creates its sessions with."""
    try:
        rules = json.loads(permission) if isinstance(permission, str) else None
    except (ValueError, RecursionError):
        return False
    if not isinstance(rules, list):
        return False
    denied = {
        r.get("permission")
        for r in rules
        if isinstance(r, dict) and r.get("action") == "deny" and r.get("pattern") == "*"
    }
    return denied >= HEADLESS_DENIED


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _json(raw: Any, where: str, out: list[Record]) -> dict[str, Any] | None:
    """A row's `data` as a JSON object; a cut-short or foreign value is noted in `out` (None)."""
    try:
        value = json.loads(raw) if isinstance(raw, str | bytes) else None
    except (ValueError, RecursionError):
        out.append(SkipRecord("invalid json", where))
        return None
    if not isinstance(value, dict):
        out.append(SkipRecord("not a json object", where))
        return None
    return value


def _split_parts(
    rows: list[tuple[str, Any]], out: list[Record]
) -> tuple[list[tuple[str, bool]], list[tuple[str, dict[str, Any]]]]:
    """A message's texts (with whether OpenCode added them itself) and tool calls (by call id)."""
    texts: list[tuple[str, bool]] = []
    tools: list[tuple[str, dict[str, Any]]] = []
    for pid, raw in rows:
        part = _json(raw, f"part {pid}", out)
        if part is None:
            continue
        ptype = part.get("type")
        if ptype == "text":
            if part.get("ignored") is True:
                continue
            texts.append((str(part.get("text") or ""), part.get("synthetic") is True))
        elif ptype == "tool":
            tools.append((str(part.get("callID") or pid), part))
        elif ptype not in BOOKKEEPING_PARTS:
            out.append(SkipRecord(f"unknown part type {ptype}" if ptype else "part without type", pid))
    return texts, tools


def _rows_by_session(conn: sqlite3.Connection, table: str, columns: str) -> dict[str, list[tuple[Any, ...]]]:
    found: dict[str, list[tuple[Any, ...]]] = {}
    for row in conn.execute(f"SELECT {columns} FROM {table} ORDER BY session_id, time_created, id"):
        found.setdefault(str(row[1]), []).append(row)
    return found


def _parts_by_message(conn: sqlite3.Connection) -> dict[str, list[tuple[str, Any]]]:
    found: dict[str, list[tuple[str, Any]]] = {}
    for pid, mid, raw in conn.execute("SELECT id, message_id, data FROM part ORDER BY message_id, id"):
        found.setdefault(str(mid), []).append((str(pid), raw))
    return found


def _unusable(path: Path, exc: sqlite3.Error) -> FileUnusable:
    text = str(exc)
    if "not a database" in text:
        what = "not an SQLite database"
    else:
        what = f"a damaged or cut-short SQLite database ({text})"
    short = f"the OpenCode database {path} is {what}"
    return FileUnusable(
        "unreadable-database",
        f"{short}; its sessions cannot be ingested (what was read from it before is kept): check it with "
        f"`sqlite3 {path} 'PRAGMA integrity_check'`",
        short=short,
    )


def _storage_version(path: Path, conn: sqlite3.Connection) -> str:
    """The schema's version (OpenCode's newest migration id); raises `FileUnusable` naming it when the
    tables the reader needs are missing or lack a column it reads."""
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version = ""
    if "migration" in tables:
        newest = conn.execute("SELECT MAX(id) FROM migration").fetchone()
        version = str(newest[0]) if newest and newest[0] is not None else ""
    missing = []
    for table, columns in NEEDED_COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")} if table in tables else set()
        missing += [f"{table}.{c}" for c in columns if c not in have]
    if missing:
        named = (
            f"storage version {version}" if version else "a storage version without OpenCode's migration list"
        )
        short = (
            f"the OpenCode database {path} has {named}, which this reader does not know "
            f"(checked with {KNOWN_MIGRATION}, OpenCode {OpenCodeSource.known_version}; missing "
            f"{', '.join(missing[:4])})"
        )
        raise FileUnusable(
            "unreadable-database",
            f"{short}; its sessions cannot be ingested until skillopt supports it (what was read before is kept)",
            short=short,
        )
    return version
