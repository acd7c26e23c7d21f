"""The session queries every face shows: list, find, one session's turns in order, its first prompt.

The CLI, the dashboard and the MCP server all read sessions through these functions, so a filter or a
hidden-session rule is written once. Everything stored is already redacted; nothing here writes.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from skillopt_lib.errors import ConfigError, ConflictError, NotFoundError

_REL = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}

SESSION_COLUMNS = (
    "id",
    "tool",
    "session_id",
    "project_path",
    "git_branch",
    "model",
    "entrypoint",
    "tool_version",
    "title",
    "started_at",
    "ended_at",
    "repo_commit",
    "repo_dirty",
    "repo_diff_hash",
    "repo_pin_source",
    "pinned_at",
    "pin_error",
    "is_automation",
    "is_replay",
    "drop_reason",
    "has_user_turn",
    "turn_count",
    "tool_call_count",
    "redaction_count",
    "skipped_json",
    "signals_json",
    "extra_json",
    "first_seen_at",
    "updated_at",
)


def parse_since(value: str) -> str:
    """`2d`, `12h`, `30m`, or an ISO date/time (local time if it has no zone) → UTC ISO."""
    from datetime import datetime

    from skillopt_daemon.core.timeutil import to_iso, utcnow

    m = _REL.match(value)
    if m:
        return to_iso(utcnow() - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))}))
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"--since {value!r} is not a time", hint="use e.g. 2d, 12h, 30m, 2026-11-01 or 2026-11-01T09:00"
        ) from None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # a person's "since 9:00" means their local 9:00
    return to_iso(dt)


def query_sessions(
    db: Any,
    *,
    tool: str | None = None,
    project: str | None = None,
    since: str | None = None,
    include_all: bool = False,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Sessions newest first, as dicts of SESSION_COLUMNS (the list command and the dashboard share this)."""
    where = []
    args: list[Any] = []
    if not include_all:
        where.append("drop_reason IS NULL AND has_user_turn = 1")
    if tool:
        where.append("tool = ?")
        args.append(tool)
    if project:
        where.append("(project_path = ? OR project_path LIKE ? ESCAPE '\\')")
        like = project.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        args.extend([project, f"%{like}%"])
    if since:
        where.append("COALESCE(ended_at, started_at, first_seen_at) >= ?")
        args.append(since)
    sql = f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY COALESCE(started_at, first_seen_at) DESC, id DESC"
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [_session_dict(row) for row in db.execute(sql, args).fetchall()]


def flagged_sessions(db: Any) -> list[dict[str, Any]]:
    """The user-work sessions ingest flagged as run without a terminal (`is_automation`), as dicts."""
    sql = (
        f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions "
        "WHERE drop_reason IS NULL AND has_user_turn = 1 AND is_automation = 1"
    )
    return [_session_dict(row) for row in db.execute(sql).fetchall()]


def _session_dict(row: Any) -> dict[str, Any]:
    out = dict(zip(SESSION_COLUMNS, row, strict=True))
    for key in ("skipped_json", "signals_json", "extra_json"):
        out[key[: -len("_json")]] = json.loads(out.pop(key) or "{}")
    for key in ("is_automation", "is_replay", "has_user_turn"):
        out[key] = bool(out[key])
    if out["repo_dirty"] is not None:
        out["repo_dirty"] = bool(out["repo_dirty"])
    return out


def first_prompt(db: Any, pk: int) -> str:
    row = db.execute(
        "SELECT text FROM turns WHERE session_pk = ? AND role = 'user' AND is_meta = 0 AND trim(text) != '' "
        "ORDER BY COALESCE(timestamp, ''), seq LIMIT 1",
        [pk],
    ).fetchone()
    return row[0] if row else ""


def find_session(db: Any, ident: str) -> dict[str, Any]:
    """By number (`id`), full session id, or a unique prefix of a session id."""
    rows = []
    if ident.isdigit():
        rows = db.execute(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE id = ?", [int(ident)]
        ).fetchall()
    if not rows:
        rows = db.execute(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE session_id = ?", [ident]
        ).fetchall()
    if not rows:
        rows = db.execute(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE session_id LIKE ? ESCAPE '\\' LIMIT 10",
            [ident.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"],
        ).fetchall()
    if not rows:
        raise NotFoundError(
            f"no session {ident!r}", hint="`skillopt sessions list --all` shows every session"
        )
    if len(rows) > 1:
        raise ConflictError(
            f"{ident!r} matches {len(rows)} sessions", hint="give more characters of the session id"
        )
    return _session_dict(rows[0])


def ordered_turns(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turns in conversation order: along the parent chain where there is one, else in reading order.

    Interactive Claude Code writes a prompt's record after the answer's first records, so line order is
    not conversation order; the chain is.
    """
    by_key = {t["key"]: t for t in turns}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for t in turns:
        parent = t["parent_key"] if t["parent_key"] in by_key and t["parent_key"] != t["key"] else None
        children.setdefault(parent, []).append(t)
    for kids in children.values():
        kids.sort(key=lambda t: t["seq"])
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    stack = list(reversed(children.get(None, [])))
    while stack:
        t = stack.pop()
        if t["key"] in seen:
            continue
        seen.add(t["key"])
        out.append(t)
        stack.extend(reversed(children.get(t["key"], [])))
    # Anything left is on a cycle (hostile input): keep it, in reading order.
    out.extend(t for t in sorted(turns, key=lambda t: t["seq"]) if t["key"] not in seen)
    return out


def session_detail(db: Any, session: dict[str, Any]) -> dict[str, Any]:
    cols = [
        "key",
        "seq",
        "role",
        "text",
        "timestamp",
        "parent_key",
        "is_meta",
        "model",
        "input_tokens",
        "output_tokens",
    ]
    turns = [
        dict(zip(cols, r, strict=True))
        for r in db.execute(
            f"SELECT {', '.join(cols)} FROM turns WHERE session_pk = ? ORDER BY seq", [session["id"]]
        ).fetchall()
    ]
    ccols = [
        "key",
        "seq",
        "turn_key",
        "name",
        "input_summary",
        "timestamp",
        "exit_code",
        "is_error",
        "output_excerpt",
    ]
    calls = [
        dict(zip(ccols, r, strict=True))
        for r in db.execute(
            f"SELECT {', '.join(ccols)} FROM tool_calls WHERE session_pk = ? ORDER BY seq", [session["id"]]
        ).fetchall()
    ]
    by_turn: dict[str | None, list[dict[str, Any]]] = {}
    for c in calls:
        c["is_error"] = None if c["is_error"] is None else bool(c["is_error"])
        by_turn.setdefault(c["turn_key"], []).append(c)
    ordered = ordered_turns(turns)
    for t in ordered:
        t["is_meta"] = bool(t["is_meta"])
        t["tool_calls"] = by_turn.pop(t["key"], [])
    orphans = [c for cs in by_turn.values() for c in cs]
    return {**session, "turns": ordered, "unattached_tool_calls": orphans}
