"""`skillopt doctor --repair`: rebuild a damaged database from what SQLite can still read, then from the logs.

A database whose interior pages are garbled (a crash during a disk error, a bad sector, a copy taken while
it was written) still opens: its header and schema read fine, and only the queries that reach a damaged
page fail, with "database disk image is malformed". Nothing in it can be trusted to be whole, and every
further write risks more, so the repair works on copies and replaces the file only at the end:

1. The damaged file (and its write-ahead log, which holds the latest commits) is copied into the backups
   folder first, readable by the user only, so the repair can never lose more than the damage did.
2. SQLite recovers what it can: the `sqlite3` command line's `.recover` when it is installed (it reads
   every page it can, also rows of tables whose b-tree is broken), else every table is read in rowid
   order from both ends, which keeps the rows before and after the damage.
3. The recovered rows go into a new database with the current schema; rows whose parent row was lost
   (`PRAGMA foreign_key_check`) are dropped, since nothing could reach them.
4. Every session log on disk is read again: the logs are the source of truth for sessions, and rows are
   upserts, so what was recovered is not doubled and what was lost comes back. What exists only in the
   database (the registry's versions and decisions, the nights' results) comes back only as far as step 2
   read it; the report says which of it was recovered and which was not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_daemon.core import paths
from skillopt_daemon.core.timeutil import utcnow_iso

# The database's own files: the write-ahead log holds commits not yet copied into the main file.
SIDE_FILES = ("-wal", "-shm")
# Tables the repair never copies: SQLite's own, the migrations (the new file has every one applied), and
# the search index, which the triggers on `turns` rebuild as the recovered turns are inserted.
SKIP_PREFIXES = ("sqlite_", "_migrations", "turns_fts")
# What exists only in the database: what a user would miss if its rows were lost.
REGISTRY_TABLES = ("skills", "versions", "version_files", "targets", "installs")


@dataclass
class RepairReport:
    """What the repair kept, recovered and could not recover, for the doctor to print."""

    backup: Path
    method: str
    tables: dict[str, int] = field(default_factory=dict)  # rows recovered per table
    dropped: dict[str, int] = field(default_factory=dict)  # recovered rows whose parent row was lost
    sessions_recovered: int = 0
    sessions_after: int = 0
    logs_read: int = 0
    versions_recovered: int = 0
    unreferenced_objects: int = 0  # skill store files no recovered version names: their versions were lost
    damage_left: str = "ok"

    def lines(self) -> list[str]:
        out = [
            f"the damaged database was copied to {self.backup} first (only you can read it)",
            f"recovered with {self.method}: "
            + (", ".join(f"{n} {t}" for t, n in sorted(self.tables.items()) if n) or "no rows"),
        ]
        if any(self.dropped.values()):
            out.append(
                "left out, their parent rows were lost: "
                + ", ".join(f"{n} {t}" for t, n in sorted(self.dropped.items()) if n)
            )
        out.append(
            f"sessions: {self.sessions_recovered} recovered, {self.sessions_after} after reading "
            f"{self.logs_read} session logs again (sessions whose logs are gone from disk come back only "
            "if they were recovered)"
        )
        registry = f"skill registry: {self.versions_recovered} versions recovered"
        if self.unreferenced_objects:
            registry += (
                f"; {self.unreferenced_objects} stored skill files belong to versions that were not "
                "recovered and cannot be re-created (the files stay in the skill store; installed skills "
                "are untouched, and `skillopt skills import` registers them again)"
            )
        out.append(registry)
        if self.damage_left != "ok":
            out.append(f"the new database still fails its integrity check: {self.damage_left}")
        return out


def backup_damaged(db: Path) -> Path:
    """Copy the damaged database (and its write-ahead log) into the backups folder, mode 0600."""
    folder = paths.ensure_private_dir(paths.backups_dir())
    stamp = utcnow_iso().replace(":", "").replace("-", "").replace(".", "")
    dest = folder / f"{db.stem}-damaged-{stamp}{db.suffix}"
    for suffix in ("", *SIDE_FILES):
        src = Path(f"{db}{suffix}")
        if src.exists():
            _private_copy(src, Path(f"{dest}{suffix}"))
    return dest


def _private_copy(src: Path, dest: Path) -> None:
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out, src.open("rb") as inp:
        shutil.copyfileobj(inp, out)


def recover_with_cli(damaged: Path, into: Path, sqlite_cli: str) -> bool:
    """SQLite's `.recover` of `damaged` loaded into the new file `into`; False when the CLI could not."""
    dump = subprocess.run(
        [sqlite_cli, str(damaged), ".recover"], capture_output=True, timeout=3600, check=False
    )
    if dump.returncode != 0 or not dump.stdout.strip():
        return False
    load = subprocess.run(
        [sqlite_cli, str(into)], input=dump.stdout, capture_output=True, timeout=3600, check=False
    )
    return load.returncode == 0


def readable_rows(conn: sqlite3.Connection, table: str, columns: list[str]) -> Iterator[tuple[Any, ...]]:
    """Every row of `table` that can be read: in rowid order up to the first damaged page, then from the
    last row backwards down to the next one (a scan cannot step over a broken page, but can start past it)."""
    cols = ", ".join(f'"{c}"' for c in columns)
    last: int | None = None
    try:
        for row in conn.execute(f'SELECT rowid, {cols} FROM "{table}" ORDER BY rowid'):
            last = row[0]
            yield row[1:]
        return
    except sqlite3.DatabaseError:
        pass
    with contextlib.suppress(sqlite3.DatabaseError):
        for row in conn.execute(f'SELECT rowid, {cols} FROM "{table}" ORDER BY rowid DESC'):
            if last is not None and row[0] <= last:
                return
            yield row[1:]


def _columns(conn: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA "{schema}".table_info("{table}")')]


def copy_readable(source: sqlite3.Connection, dest: sqlite3.Connection) -> dict[str, int]:
    """Copy every row `source` can still give into the same tables of `dest` (current schema, columns
    both have); returns the rows copied per table."""
    try:
        have = {r[0] for r in source.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError:
        return {}  # not even the schema can be read: nothing to copy, the logs are read again
    tables = [
        r[0]
        for r in dest.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")
        if not r[0].startswith(SKIP_PREFIXES) and r[0] in have
    ]
    copied: dict[str, int] = {}
    for table in tables:
        try:
            theirs = set(_columns(source, "main", table))
        except sqlite3.DatabaseError:
            continue
        columns = [c for c in _columns(dest, "main", table) if c in theirs]
        marks = ", ".join("?" for _ in columns)
        names = ", ".join(f'"{c}"' for c in columns)
        n = 0
        for row in readable_rows(source, table, columns):
            try:
                cur = dest.execute(f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({marks})', row)
            except sqlite3.IntegrityError:  # a garbled value that breaks a constraint: that row is lost
                continue
            n += cur.rowcount
        copied[table] = n
    return copied


def drop_orphans(conn: sqlite3.Connection) -> dict[str, int]:
    """Delete the rows whose parent row was not recovered, until `PRAGMA foreign_key_check` finds none."""
    dropped: dict[str, int] = {}
    while True:
        bad = conn.execute("PRAGMA foreign_key_check").fetchall()
        if not bad:
            return dropped
        for table, rowid, *_ in bad:
            if rowid is None:
                continue
            cur = conn.execute(f'DELETE FROM "{table}" WHERE rowid = ?', [rowid])
            dropped[table] = dropped.get(table, 0) + cur.rowcount


def recount_sessions(conn: sqlite3.Connection) -> None:
    """Make each session's counts those of its recovered rows. Ingest adds the turns and tool calls it
    inserts to these counts, so the logs read again add exactly the ones the damage took."""
    conn.execute(
        "UPDATE sessions SET "
        "turn_count = CASE WHEN drop_reason IS NULL THEN "
        "(SELECT count(*) FROM turns t WHERE t.session_pk = sessions.id) ELSE 0 END, "
        "tool_call_count = CASE WHEN drop_reason IS NULL THEN "
        "(SELECT count(*) FROM tool_calls c WHERE c.session_pk = sessions.id) ELSE 0 END, "
        "signals_stale = 1"
    )


def _unreferenced_objects(conn: sqlite3.Connection) -> int:
    objects = paths.skill_store_dir() / "objects"
    if not objects.is_dir():
        return 0
    known = {r[0] for r in conn.execute("SELECT sha256 FROM version_files")}
    return sum(1 for p in objects.glob("*/*") if p.is_file() and p.name not in known)


def repair(db: Path | None = None, *, sqlite_cli: str | None = None) -> RepairReport:
    """Back up, recover and rebuild the database at `db` (see the module's docstring). `sqlite_cli` is the
    `sqlite3` executable to recover with (found on PATH when not given; "" to read table by table).
    Reading the session logs again (step 4) is the caller's: it is the ingest pipeline's work."""
    from skillopt_daemon.core.store.db import open_db

    db = db or paths.db_path()
    if not db.exists():
        raise FileNotFoundError(db)
    backup = backup_damaged(db)
    cli = shutil.which("sqlite3") if sqlite_cli is None else sqlite_cli
    with tempfile.TemporaryDirectory(dir=db.parent, prefix=".repair-") as tmp:
        work = Path(tmp)
        # Read a scratch copy: SQLite may write to a file it opens (a checkpoint of its log) and the backup
        # must stay as it was found.
        scratch = work / "damaged.db"
        for suffix in ("", *SIDE_FILES):
            if Path(f"{backup}{suffix}").exists():
                shutil.copyfile(f"{backup}{suffix}", f"{scratch}{suffix}")
        salvage = work / "salvage.db"
        method = "the table-by-table copy of what can still be read"
        source_path = scratch
        if cli and recover_with_cli(scratch, salvage, cli):
            method, source_path = "SQLite's .recover", salvage
        fresh_path = work / "new.db"
        fresh = open_db(fresh_path)
        conn = fresh.conn
        source = sqlite3.connect(str(source_path))
        try:
            conn.execute("PRAGMA foreign_keys=OFF")
            with conn:
                tables = copy_readable(source, conn)
                dropped = drop_orphans(conn)
                recount_sessions(conn)
            conn.execute("PRAGMA foreign_keys=ON")
        finally:
            source.close()
        report = RepairReport(backup=backup, method=method, tables=tables, dropped=dropped)
        report.sessions_recovered = tables.get("sessions", 0) - dropped.get("sessions", 0)
        report.versions_recovered = tables.get("versions", 0) - dropped.get("versions", 0)
        report.unreferenced_objects = _unreferenced_objects(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        fresh.close()
        # The new file takes the damaged one's place; the damaged one's log must not be applied to it.
        for suffix in SIDE_FILES:
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        os.replace(fresh_path, db)
        os.chmod(db, 0o600)
    check = open_db(db)
    try:
        report.damage_left = check.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        check.close()
    return report
