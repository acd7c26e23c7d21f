"""Small facts about ingest kept in `ingest_meta`: when the daemon started, the last ingest, whether the
first backfill finished, which newer tool versions were already reported, whether ingest is paused."""

from __future__ import annotations

import sqlite_utils

# Why the daemon's ingest is paused (JSON: reason, since, message), or "" while it runs: see
# `service.daemon.IngestPause`.
PAUSE_KEY = "ingest_paused"
# How many hook notes (other than start notes) named a transcript that did not exist: informational only.
NO_TRANSCRIPT_KEY = "notes_without_transcript"


def get_meta(db: sqlite_utils.Database, key: str) -> str | None:
    row = db.execute("SELECT value FROM ingest_meta WHERE key = ?", [key]).fetchone()
    return row[0] if row else None


def set_meta(db: sqlite_utils.Database, key: str, value: str) -> None:
    """Set one key (call inside a transaction when it must commit with other rows)."""
    db.table("ingest_meta").upsert({"key": key, "value": value}, pk="key")
