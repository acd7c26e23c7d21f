"""The OpenClaw database (the real program's, from `fixtures/real/openclaw`) when it cannot be read: locked
by OpenClaw during an ingest, it is not recorded as read and its sessions arrive once the lock is gone,
without the file changing; damaged, not SQLite, or not OpenClaw's, it is a problem naming the file in
`skillopt status` and `skillopt doctor`, and what was read from it before is kept."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon import ingest
from testkit.ingest_helpers import cli
from testkit.ingest_home import Env

REAL_DB = Path(__file__).parent / "fixtures/real/openclaw/agents/main/agent/openclaw-agent.sqlite"


def _install(env: Env) -> Path:
    """The recorded database where OpenClaw keeps it under this test's OPENCLAW_STATE_DIR."""
    db = env.root / "openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    shutil.copy(REAL_DB, db)
    return db


def _ingest(env: Env) -> str:
    res = cli(env.environ(), "ingest", "--tool", "openclaw")
    assert res.returncode == 0, res.stderr
    return res.stdout


def _sessions(env: Env) -> list[tuple[str, int]]:
    res = cli(env.environ(), "sessions", "list", "--json", "--tool", "openclaw")
    assert res.returncode == 0, res.stderr
    return [(r["session_id"], r["turn_count"]) for r in json.loads(res.stdout)]


def _status(env: Env) -> dict[str, Any]:
    res = cli(env.environ(), "status", "--json")
    assert res.returncode == 0, res.stderr
    section: dict[str, Any] = json.loads(res.stdout)["sessions"]
    return section


def _locked(db: Path) -> sqlite3.Connection:
    """OpenClaw in the middle of a write: a connection holding the database's exclusive lock."""
    holder = sqlite3.connect(db, isolation_level=None, timeout=0)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


def test_a_locked_database_is_read_at_the_next_ingest_once_the_lock_is_gone(env: Env) -> None:
    db = _install(env)
    before = db.stat()
    holder = _locked(db)
    try:
        out = _ingest(env)
        assert "1 locked by its tool right now, read at the next ingest" in out
        assert _sessions(env) == []
        status = _status(env)
        assert status["errors_24h"] == {} and status["failing_files"] == []  # waiting is no problem
    finally:
        holder.rollback()
        holder.close()
    after = db.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)  # unchanged
    _ingest(env)
    (session,) = _sessions(env)
    assert session[1] > 0


def test_the_daemons_rescan_reads_a_database_that_was_locked(env: Env, pipeline: ingest.Pipeline) -> None:
    db = _install(env)
    holder = _locked(db)
    try:
        (outcome,) = pipeline.ingest_paths(pipeline.discover())
        assert outcome.change == "locked" and not outcome.done
    finally:
        holder.rollback()
        holder.close()
    # What the daemon's rescan does: only files that changed since they were read, or were never read.
    again = [(s, p) for s, p in pipeline.discover() if pipeline.needs_read(p)]
    assert [p for _, p in again] == [db]
    pipeline.ingest_paths(again)
    assert [r[0] for r in pipeline.db.execute("SELECT tool FROM sessions")] == ["openclaw"]


def _not_sqlite(db: Path) -> None:
    db.write_text("OpenClaw state, but not a database\n" * 40)


def _damaged(db: Path) -> None:
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for i in range(page, len(data)):  # every page but the header's
        data[i] = (i * 7) & 0xFF
    db.write_bytes(bytes(data))


def _not_openclaws(db: Path) -> None:
    db.unlink()
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('something else')")
    conn.close()


@pytest.mark.parametrize(
    ("damage", "what"),
    [
        (_not_sqlite, "is not an SQLite database"),
        (_damaged, "is a damaged SQLite database"),
        (_not_openclaws, "without OpenClaw's transcript_events table"),
    ],
)
def test_an_unreadable_database_is_a_problem_that_names_it(env: Env, damage: Any, what: str) -> None:
    db = _install(env)
    _ingest(env)
    (kept,) = _sessions(env)
    damage(db)
    _ingest(env)

    status = _status(env)
    assert {"path": str(db), "problem": "unreadable-database"} in [
        {k: f[k] for k in ("path", "problem")} for f in status["failing_files"]
    ]
    assert status["errors_24h"]["unreadable-database"] == 1  # (beside a "truncated" note when it shrank)
    message = status["latest_error"]["message"]
    assert str(db) in message and what in message and "PRAGMA integrity_check" in message
    text = cli(env.environ(), "status").stdout
    assert f"{db} (unreadable-database)" in text
    assert _sessions(env) == [kept]  # what was read from it before is kept

    _ingest(env)  # the next pass meets it again: still one problem, not one per pass
    assert _status(env)["errors_24h"]["unreadable-database"] == 1

    res = cli(env.environ(), "doctor", "--json")
    warnings = [c for c in json.loads(res.stdout)["checks"] if c["group"] == "transcripts"]
    assert [c["level"] for c in warnings] == ["warn"]
    assert str(db) in warnings[0]["detail"] and what in warnings[0]["detail"]


def _append_turn(db: Path, text: str) -> None:
    """What OpenClaw does when the conversation goes on: one more event row, committed and checkpointed."""
    con = sqlite3.connect(db, isolation_level=None)
    try:
        sid, seq, last = con.execute(
            "SELECT session_id, seq, event_json FROM transcript_events ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        parent = json.loads(last)
        event = {
            "type": "message",
            "id": f"appended-{seq + 1}",
            "parentId": parent["id"],
            "timestamp": "2026-12-01T15:32:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        }
        payload = json.dumps(event)
        # Enough rows that the file has to grow, as a long conversation's does.
        con.execute(
            "INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_utf8_bytes) "
            "VALUES (?, ?, ?, ?, ?)",
            [sid, seq + 1, payload, 1796139100000, len(payload.encode())],
        )
        con.execute("CREATE TABLE IF NOT EXISTS padding (x BLOB)")
        con.execute("INSERT INTO padding VALUES (zeroblob(20000))")
    finally:
        con.close()


def test_a_database_that_only_grew_is_read_again_and_not_reported_as_replaced(env: Env) -> None:
    db = _install(env)
    _ingest(env)
    ((_, turns),) = _sessions(env)
    size = db.stat().st_size
    _append_turn(db, "one more question")
    assert db.stat().st_size > size
    _ingest(env)
    ((_, grown),) = _sessions(env)
    assert grown == turns + 1
    status = _status(env)
    assert "was replaced" not in json.dumps(status), status
