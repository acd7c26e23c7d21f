"""Reading an agent tool's own SQLite database without getting in its way: for readers whose tool keeps its
sessions in SQLite (OpenClaw; plugins such as OpenCode's use it too).

The tool is running while we read: the connection is read-only by URI, so our reads never take its write
lock or change its file, and a read that meets its lock waits `LOCK_WAIT_S` and then gives up, leaving the
database for the next rescan instead of stalling ingest behind the tool.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# How long a read waits for the tool's write lock before leaving the database for the next rescan.
LOCK_WAIT_S = 1.0


def connect_readonly(path: Path, timeout: float = LOCK_WAIT_S) -> sqlite3.Connection:
    """The database at `path`, opened read-only by URI (its `?` and `#` escaped so they are not read as the
    URI's query or fragment)."""
    uri = "file:" + path.resolve().as_posix().replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=timeout)


def is_locked(exc: sqlite3.Error) -> bool:
    """Whether `exc` says the tool held its lock (try again later), not that the database is unusable."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text
