"""Ingest tables: sessions with their turns and tool calls, the files they came from, and what went wrong.

`ingest_files` holds each transcript's byte offset, identity (device, inode, size, a hash of its first
bytes) and parser state. The tailer writes it in the same transaction as the rows the bytes produced, so a
crash can neither lose nor repeat anything. Turns and tool calls are keyed by the source's stable keys
(unique per session) so re-reading bytes is an upsert, never a duplicate.
"""

from __future__ import annotations

import sqlite_utils

SCHEMA = """
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    tool TEXT NOT NULL,
    session_id TEXT NOT NULL,
    project_path TEXT,
    git_branch TEXT,
    model TEXT,
    entrypoint TEXT,
    tool_version TEXT,
    title TEXT,
    started_at TEXT,
    ended_at TEXT,
    repo_commit TEXT,
    repo_dirty INTEGER,
    repo_diff_hash TEXT,
    repo_pin_source TEXT,
    pinned_at TEXT,
    pin_error TEXT,
    is_automation INTEGER NOT NULL DEFAULT 0,
    is_replay INTEGER NOT NULL DEFAULT 0,
    drop_reason TEXT,
    has_user_turn INTEGER NOT NULL DEFAULT 0,
    turn_count INTEGER NOT NULL DEFAULT 0,
    tool_call_count INTEGER NOT NULL DEFAULT 0,
    redaction_count INTEGER NOT NULL DEFAULT 0,
    skipped_json TEXT NOT NULL DEFAULT '{}',
    signals_json TEXT NOT NULL DEFAULT '{}',
    signals_stale INTEGER NOT NULL DEFAULT 0,
    extra_json TEXT NOT NULL DEFAULT '{}',
    first_seen_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (tool, session_id)
);
CREATE INDEX idx_sessions_started ON sessions (started_at);
CREATE INDEX idx_sessions_tool_started ON sessions (tool, started_at);
CREATE INDEX idx_sessions_project ON sessions (project_path);
CREATE INDEX idx_sessions_signals_stale ON sessions (signals_stale) WHERE signals_stale = 1;

CREATE TABLE ingest_files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    tool TEXT NOT NULL,
    device INTEGER,
    inode INTEGER,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    head_len INTEGER NOT NULL DEFAULT 0,
    head_hash TEXT,
    "offset" INTEGER NOT NULL DEFAULT 0,
    in_long_line INTEGER NOT NULL DEFAULT 0,
    state_json TEXT NOT NULL DEFAULT '{}',
    session_pk INTEGER REFERENCES sessions (id) ON DELETE SET NULL,
    lines INTEGER NOT NULL DEFAULT 0,
    records INTEGER NOT NULL DEFAULT 0,
    skipped_json TEXT NOT NULL DEFAULT '{}',
    missing INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    last_error_at TEXT,
    first_seen_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX idx_ingest_files_inode ON ingest_files (device, inode);

-- Which sessions each file fed, with the file's running count of redacted secrets for that session.
CREATE TABLE file_sessions (
    file_id INTEGER NOT NULL REFERENCES ingest_files (id) ON DELETE CASCADE,
    session_pk INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    redactions INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (file_id, session_pk)
);
CREATE INDEX idx_file_sessions_session ON file_sessions (session_pk);

CREATE TABLE turns (
    id INTEGER PRIMARY KEY,
    session_pk INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    timestamp TEXT,
    parent_key TEXT,
    is_meta INTEGER NOT NULL DEFAULT 0,
    model TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    file_id INTEGER REFERENCES ingest_files (id) ON DELETE SET NULL,
    UNIQUE (session_pk, key)
);
CREATE INDEX idx_turns_session_seq ON turns (session_pk, seq);
CREATE INDEX idx_turns_file ON turns (file_id);

CREATE TABLE tool_calls (
    id INTEGER PRIMARY KEY,
    session_pk INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    turn_key TEXT,
    name TEXT,
    input_summary TEXT NOT NULL DEFAULT '',
    timestamp TEXT,
    exit_code INTEGER,
    is_error INTEGER,
    output_excerpt TEXT,
    result_at TEXT,
    file_id INTEGER REFERENCES ingest_files (id) ON DELETE SET NULL,
    UNIQUE (session_pk, key)
);
CREATE INDEX idx_tool_calls_session_seq ON tool_calls (session_pk, seq);
CREATE INDEX idx_tool_calls_file ON tool_calls (file_id);

CREATE TABLE ingest_errors (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    tool TEXT,
    path TEXT,
    kind TEXT NOT NULL,
    level TEXT NOT NULL DEFAULT 'error',
    message TEXT NOT NULL
);
CREATE INDEX idx_ingest_errors_at ON ingest_errors (at);

CREATE TABLE ingest_meta (
    key TEXT PRIMARY KEY,
    value TEXT
);

CREATE VIRTUAL TABLE turns_fts USING fts5 (text, content='turns', content_rowid='id');
CREATE TRIGGER turns_fts_ai AFTER INSERT ON turns BEGIN
    INSERT INTO turns_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER turns_fts_ad AFTER DELETE ON turns BEGIN
    INSERT INTO turns_fts (turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER turns_fts_au AFTER UPDATE OF text ON turns BEGIN
    INSERT INTO turns_fts (turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO turns_fts (rowid, text) VALUES (new.id, new.text);
END;
"""


def migrate(db: sqlite_utils.Database) -> None:
    # One statement at a time: executescript would commit the migration's surrounding transaction.
    for statement in _statements(SCHEMA):
        db.execute(statement)


def _statements(script: str) -> list[str]:
    """Split on `;` at line ends, keeping trigger bodies (which contain `;`) whole."""
    out: list[str] = []
    buf: list[str] = []
    in_trigger = False
    for line in script.strip().splitlines():
        if not line.strip():
            continue
        buf.append(line)
        if line.lstrip().upper().startswith("CREATE TRIGGER"):
            in_trigger = True
        if in_trigger:
            if line.strip().upper() == "END;":
                out.append("\n".join(buf))
                buf, in_trigger = [], False
        elif line.rstrip().endswith(";"):
            out.append("\n".join(buf))
            buf = []
    if buf:
        out.append("\n".join(buf))
    return out
