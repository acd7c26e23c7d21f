"""What went wrong while reading transcripts: the bounded `ingest_errors` log that `skillopt status` shows.

Problems never stop ingest. A problem that is a property of a file (it cannot be opened) is recorded once
while it lasts; problems inside a file's content (bad lines, odd timestamps) are counted per batch and
recorded as one row per kind, with a sentence that says what happened to the data.
"""

from __future__ import annotations

from collections import Counter

import sqlite_utils

from skillopt_daemon.core.timeutil import utcnow_iso

MAX_ERROR_ROWS = 10_000

# Problems that are properties of a file (recorded once while they last, cleared when the file reads fine).
FILE_PROBLEMS = {
    "permission-denied",
    "symlink-loop",
    "unreadable",
    "too-large",
    "not-a-file",
    "unreadable-database",
}

# Kinds shown as warnings: the data was kept (or read again), only something about it was odd.
WARNINGS = {
    "timestamp-without-zone",
    "future-timestamp",
    "implausible-timestamp",
    "truncated",
    "replaced",
    "newer-version",
}

_EXPLAINED = {
    "invalid-utf8": "lines with invalid UTF-8 (undecodable bytes replaced)",
    "parser-error": "lines the reader failed on (skipped)",
    "line-too-long": "lines longer than ingest.max_line_bytes (skipped without being loaded)",
    "timestamp-without-zone": "timestamps without a time zone (taken as UTC)",
    "future-timestamp": "timestamps too far in the future (ignored)",
    "implausible-timestamp": "timestamps from before any agent tool existed (ignored)",
    "bad-timestamp": "timestamps that could not be read (ignored)",
    "invalid-json": "lines that are not JSON (skipped)",
}


def record_problem(
    db: sqlite_utils.Database,
    kind: str,
    message: str,
    *,
    path: str | None = None,
    tool: str | None = None,
    level: str = "error",
) -> None:
    """Append one problem to the log in its own transaction (or the caller's, when one is open: committing
    it here would commit the caller's half-done work too)."""
    row: dict[str, object] = {
        "at": utcnow_iso(),
        "tool": tool,
        "path": path,
        "kind": kind,
        "level": level,
        "message": message,
    }
    if db.conn.in_transaction:
        _append(db, [row])
        return
    with db.conn:
        _append(db, [row])


def record_counts(db: sqlite_utils.Database, counts: Counter[str], *, path: str, tool: str) -> None:
    """One row per kind of content problem a batch met, saying how many and what was done with them."""
    now = utcnow_iso()
    _append(
        db,
        [
            {
                "at": now,
                "tool": tool,
                "path": path,
                "kind": kind,
                "level": "warning" if kind in WARNINGS else "error",
                "message": f"{n} {_EXPLAINED.get(kind, kind)}",
            }
            for kind, n in sorted(counts.items())
        ],
    )


def _append(db: sqlite_utils.Database, rows: list[dict[str, object]]) -> None:
    """Insert rows, keeping the log bounded: the oldest rows go first. Call inside a transaction."""
    if not rows:
        return
    db.table("ingest_errors").insert_all(rows)
    db.execute(
        "DELETE FROM ingest_errors WHERE id <= (SELECT MAX(id) FROM ingest_errors) - ?", [MAX_ERROR_ROWS]
    )


def problem_of_skip(reason: str) -> str | None:
    """Skips that point at bad input (shown in `skillopt status`), as opposed to records not needed."""
    low = reason.lower()
    if "utf-8" in low or "utf8" in low:
        return "invalid-utf8"
    if "without zone" in low:
        return "timestamp-without-zone"
    if "future" in low:
        return "future-timestamp"
    if "before any agent tool" in low:
        return "implausible-timestamp"
    if "unreadable timestamp" in low:
        return "bad-timestamp"
    if "reader error" in low or "parser-error" in low:
        return "parser-error"
    if "invalid json" in low:
        return "invalid-json"
    return None
