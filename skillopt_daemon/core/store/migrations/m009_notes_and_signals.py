"""Two readings of stored data that changed.

Hook notes for transcripts that never appeared are no longer problems, only counted: earlier versions
logged each as a `note-missing-transcript` warning in `ingest_errors`, which the dashboard's overview kept
showing (after a `claude plugin install`, a new user saw something broken on day one). Those rows become the
informational count in `ingest_meta` (`notes_without_transcript`).

What counts as a correction is now one classifier (`ingest/kinds.py`), the one mining uses; sessions'
stored signals were counted by older, English-only rules, so every session is marked for its signals to be
computed again (the daemon and `skillopt ingest` do it as they would after new lines).
"""

from __future__ import annotations

import sqlite_utils

KEY = "notes_without_transcript"


def migrate(db: sqlite_utils.Database) -> None:
    if "sessions" in db.table_names():
        db.execute("UPDATE sessions SET signals_stale = 1 WHERE signals_stale = 0")
    if "ingest_errors" not in db.table_names():
        return
    (n,) = db.execute("SELECT COUNT(*) FROM ingest_errors WHERE kind = 'note-missing-transcript'").fetchone()
    if not n:
        return
    row = db.execute("SELECT value FROM ingest_meta WHERE key = ?", [KEY]).fetchone()
    before = int(row[0]) if row and str(row[0]).isdigit() else 0
    db.execute(
        "INSERT INTO ingest_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [KEY, str(before + n)],
    )
    db.execute("DELETE FROM ingest_errors WHERE kind = 'note-missing-transcript'")
