"""The full-text index of turns (`turns_fts`): kept current row by row, or rebuilt in one go after a backfill.

Triggers keep the index current as turns are written, which is what live tailing needs: a line appended
to a transcript is searchable once its transaction commits. During a large backfill (more new bytes than
the store already holds, and at least `BULK_MIN_BYTES`) indexing each row as it goes costs more than
building the index once from the finished table, so the pipeline suspends the triggers and rebuilds.

Crash safety: the triggers are dropped in the same transaction that records `SUSPENDED` in `ingest_meta`,
and recreated in the one that rebuilds the index and clears it. Whoever finds the mark (the next ingest of
any process, after a crash or beside a running backfill) resumes: the index is then rebuilt from every
stored turn and the triggers take over, so no turn is ever left out of it for good. While a backfill runs,
search does not yet see the turns it has stored.
"""

from __future__ import annotations

import logging
import sqlite3

import sqlite_utils

from skillopt_daemon.ingest.meta import get_meta, set_meta

log = logging.getLogger("skillopt.ingest")

SUSPENDED = "fts_suspended"
# Measured: a first backfill of 10 MB takes a quarter less CPU with the index built at the end, 52 MB too.
BULK_MIN_BYTES = 8 << 20
BULK_MIN_FILES = 8

# The triggers of migration m002, word for word (a migration never imports live code, so they are
# repeated here; a test checks that the two agree).
TRIGGERS = {
    "turns_fts_ai": """CREATE TRIGGER turns_fts_ai AFTER INSERT ON turns BEGIN
    INSERT INTO turns_fts (rowid, text) VALUES (new.id, new.text);
END""",
    "turns_fts_ad": """CREATE TRIGGER turns_fts_ad AFTER DELETE ON turns BEGIN
    INSERT INTO turns_fts (turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
END""",
    "turns_fts_au": """CREATE TRIGGER turns_fts_au AFTER UPDATE OF text ON turns BEGIN
    INSERT INTO turns_fts (turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO turns_fts (rowid, text) VALUES (new.id, new.text);
END""",
}


def worth_bulk(db: sqlite_utils.Database, files: int, pending_bytes: int) -> bool:
    """Whether reading `pending_bytes` (in `files` transcripts) is big enough to index in one go afterwards.

    A rebuild reads every stored turn, so it pays only when the backfill brings more than the store holds.
    """
    if files < BULK_MIN_FILES or pending_bytes < BULK_MIN_BYTES:
        return False
    (stored,) = db.execute('SELECT COALESCE(SUM("offset"), 0) FROM ingest_files').fetchone()
    return pending_bytes >= int(stored)


def suspended(db: sqlite_utils.Database) -> bool:
    return get_meta(db, SUSPENDED) is not None


def suspend(db: sqlite_utils.Database, at: str) -> None:
    """Stop indexing row by row until `resume` (one transaction: no trigger is gone without the mark)."""
    with db.conn:
        for name in TRIGGERS:
            db.execute(f"DROP TRIGGER IF EXISTS {name}")
        set_meta(db, SUSPENDED, at)


def resume(db: sqlite_utils.Database) -> bool:
    """Rebuild the index from every stored turn and bring the triggers back, if suspended; True if it did.

    Raises sqlite3.Error when the store cannot be written now; the mark then stays for the next attempt.
    """
    with db.conn:
        if not suspended(db):
            return False
        db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('rebuild')")
        present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        for name, sql in TRIGGERS.items():
            if name not in present:
                db.execute(sql)
        db.execute("DELETE FROM ingest_meta WHERE key = ?", [SUSPENDED])
    return True


def resume_quietly(db: sqlite_utils.Database) -> None:
    """`resume` (after a read that costs nothing when not suspended), logging instead of raising: the next
    ingest tries again."""
    try:
        if suspended(db):
            resume(db)
    except sqlite3.Error as exc:
        log.warning("the search index is rebuilt on the next ingest (%s)", exc)
