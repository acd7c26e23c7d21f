"""The sessions / ingest section of `skillopt status`: what was read, what is not user work, what failed."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlite_utils

from skillopt_daemon.core import fsio, paths
from skillopt_daemon.core.store.db import LOW_SPACE_BYTES, disk_full_error, free_bytes
from skillopt_daemon.core.timeutil import humanize_age, to_iso, utcnow
from skillopt_daemon.ingest.meta import NO_TRANSCRIPT_KEY, PAUSE_KEY, get_meta

_DROP_WORDS = {"replay": "skillopt replays", "automation": "automation runs"}


@dataclass
class _Counts:
    """The numbers the section is made of, read in one place."""

    per_tool: dict[str, int]
    dropped: dict[str, int]
    no_user: int
    automation: int
    redacted: int
    files: int
    bytes_read: int
    failing: list[dict[str, Any]]
    recent: dict[str, int]
    latest: dict[str, Any] | None
    # Hook notes for sessions that never wrote a transcript (a plugin install, a session closed unused).
    no_transcript: int = 0


def _read_counts(db: sqlite_utils.Database) -> _Counts:
    def scalar(sql: str, args: list[Any] | None = None) -> Any:
        return db.execute(sql, args or []).fetchone()[0]

    user_work = "drop_reason IS NULL AND has_user_turn = 1"
    files = db.execute(
        'SELECT COUNT(*) AS n, COALESCE(SUM("offset"), 0) AS bytes FROM ingest_files'
    ).fetchone()
    since = to_iso(utcnow() - timedelta(days=1))
    latest = list(
        db.table("ingest_errors").rows_where(
            select="at, kind, level, path, message", order_by="id DESC", limit=1
        )
    )
    return _Counts(
        per_tool=dict(
            db.execute(f"SELECT tool, COUNT(*) FROM sessions WHERE {user_work} GROUP BY tool ORDER BY tool")
        ),
        dropped=dict(
            db.execute("SELECT drop_reason, COUNT(*) FROM sessions WHERE drop_reason IS NOT NULL GROUP BY 1")
        ),
        no_user=scalar("SELECT COUNT(*) FROM sessions WHERE drop_reason IS NULL AND has_user_turn = 0"),
        automation=scalar(f"SELECT COUNT(*) FROM sessions WHERE {user_work} AND is_automation = 1"),
        redacted=scalar("SELECT COALESCE(SUM(redaction_count), 0) FROM sessions"),
        files=files[0],
        bytes_read=files[1],
        failing=[
            {"path": r["path"], "problem": r["last_error"], "since": r["last_error_at"]}
            for r in db.table("ingest_files").rows_where(
                "last_error IS NOT NULL", select="path, last_error, last_error_at", order_by="path"
            )
        ],
        recent=dict(
            db.execute(
                "SELECT kind, COUNT(*) FROM ingest_errors WHERE at >= ? GROUP BY kind ORDER BY kind", [since]
            )
        ),
        latest=latest[0] if latest else None,
        no_transcript=int(get_meta(db, NO_TRANSCRIPT_KEY) or 0),
    )


def _lines(c: _Counts, last_ingest: str | None, flagged: str | None = None) -> list[str]:
    total = sum(c.per_tool.values())
    if flagged is None:
        flagged = f"{c.automation} run without a terminal" if c.automation else ""
    lines = [
        f"{total} session{'' if total == 1 else 's'}"
        + (" (" + ", ".join(f"{n} {tool}" for tool, n in c.per_tool.items()) + ")" if c.per_tool else "")
        + (f", {flagged}" if flagged else "")
        + f"; last ingest {humanize_age(last_ingest)}"
    ]
    not_counted = [f"{n} {_DROP_WORDS.get(k, k)}" for k, n in sorted(c.dropped.items())]
    if c.no_user:
        not_counted.append(f"{c.no_user} without a user turn")
    if c.no_transcript:
        n = c.no_transcript
        not_counted.append(f"{n} hook note{'' if n == 1 else 's'} for sessions that wrote no transcript")
    if not_counted:
        lines.append("not user work (not listed): " + ", ".join(not_counted))
    lines.append(
        f"{c.files} transcripts followed ({c.bytes_read / 1e6:.1f} MB read), {c.redacted} secrets redacted"
    )
    if c.failing:
        lines.append(
            f"{len(c.failing)} transcripts cannot be read now: "
            + ", ".join(f"{f['path']} ({f['problem']})" for f in c.failing[:3])
            + (" …" if len(c.failing) > 3 else "")
        )
    if c.recent:
        lines.append("problems in the last 24h: " + ", ".join(f"{n} {k}" for k, n in c.recent.items()))
        if c.latest:
            lines.append(f"latest: {c.latest['message']}")
    return lines


def paused(db: sqlite_utils.Database) -> dict[str, Any] | None:
    """Why ingest cannot go on now, or None: the running daemon's pause (a full disk, a locked store), or,
    whoever reads, the disk under the database being full (the daemon may not have been able to say so)."""
    if fsio.daemon_running():
        try:
            state = json.loads(get_meta(db, PAUSE_KEY) or "null")
        except ValueError:
            state = None
        if isinstance(state, dict) and state.get("message"):
            return state
    free = free_bytes(paths.db_path())
    if free is not None and free < LOW_SPACE_BYTES:
        err = disk_full_error(then="new sessions are read once there is room")
        return {
            "reason": "disk-full",
            "since": None,
            "free_bytes": free,
            "message": f"{err.message.replace('cannot be used now', 'cannot store new sessions')}; "
            f"{err.hint}",
        }
    return None


def status_section(
    db: sqlite_utils.Database, flagged: Callable[[sqlite_utils.Database], str] | None = None
) -> dict[str, Any]:
    """The sessions / ingest part of `skillopt status`: sessions per tool, last ingest, current problems.

    `flagged` words the sessions ingest flagged as run without a terminal (the service's, which knows
    which of them mining counts as work); without it they are only counted."""
    pause = paused(db)
    if "sessions" not in db.table_names():
        return {"sessions": {}, "paused": pause, "lines": _pause_lines(pause) + ["no sessions ingested yet"]}
    c = _read_counts(db)
    last_ingest = get_meta(db, "last_ingest_at")
    return {
        "paused": pause,
        "sessions": c.per_tool,
        "dropped": {**c.dropped, "no_user_turn": c.no_user},
        "notes_without_transcript": c.no_transcript,
        "automation_flagged": c.automation,
        "redactions": c.redacted,
        "files": c.files,
        "bytes_read": c.bytes_read,
        "failing_files": c.failing,
        "errors_24h": c.recent,
        "latest_error": c.latest,
        "last_ingest_at": last_ingest,
        "backfill_done_at": get_meta(db, "backfill_done_at"),
        "lines": _pause_lines(pause)
        + _lines(c, last_ingest, flagged(db) if flagged and c.automation else None),
    }


def _pause_lines(pause: dict[str, Any] | None) -> list[str]:
    if pause is None:
        return []
    since = f" (paused {humanize_age(pause['since'])})" if pause.get("since") else ""
    return [f"{pause['message']}{since}"]
