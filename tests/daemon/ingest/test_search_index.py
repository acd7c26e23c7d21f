"""Search over stored turns: a large backfill builds the index in one go at the end, live tailing keeps it
current row by row, and a backfill that died half-way never leaves turns out of it for good."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_daemon import ingest
from skillopt_daemon.core.store.migrations import m002_ingest
from skillopt_daemon.ingest import fts
from testkit.ingest_helpers import claude_line, write_claude_session

from .conftest import Env


def _found(db, word: str) -> set[str]:  # type: ignore[no-untyped-def]
    rows = db.execute(
        "SELECT s.session_id FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid "
        "JOIN sessions s ON s.id = t.session_pk WHERE turns_fts MATCH ?",
        [word],
    )
    return {r[0] for r in rows}


def _index_consistent(db) -> bool:  # type: ignore[no-untyped-def]
    db.execute("INSERT INTO turns_fts (turns_fts, rank) VALUES ('integrity-check', 1)")
    (indexed,) = db.execute("SELECT COUNT(*) FROM turns_fts_docsize").fetchone()
    (turns,) = db.execute("SELECT COUNT(*) FROM turns").fetchone()
    return bool(indexed == turns)


def _triggers(db) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {n: s for n, s in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")}


def _backfill_corpus(env: Env, sessions: int = 10) -> None:
    for i in range(sessions):
        write_claude_session(env.projects, f"s{i}", turns=4, prompt=f"fix the flaky zebra{i} test", pad=3000)


@pytest.fixture
def small_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thresholds a test corpus reaches (the real ones are tens of MB)."""
    monkeypatch.setattr(fts, "BULK_MIN_BYTES", 1000)
    monkeypatch.setattr(fts, "BULK_MIN_FILES", 3)


def test_triggers_match_the_migrations(pipeline: ingest.Pipeline) -> None:
    created = _triggers(pipeline.db)
    assert set(created) == set(fts.TRIGGERS)
    fts.suspend(pipeline.db, "now")
    assert _triggers(pipeline.db) == {}
    assert fts.resume(pipeline.db)
    assert _triggers(pipeline.db) == created
    assert all(sql.replace("\n", " ") in m002_ingest.SCHEMA.replace("\n", " ") for sql in created.values())


def test_a_large_backfill_is_searchable_and_live_lines_stay_searchable(
    env: Env, pipeline: ingest.Pipeline, small_bulk: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _backfill_corpus(env)
    suspended_during: list[bool] = []
    monkeypatch.setattr(pipeline, "ingest_file", _watching(pipeline.ingest_file, pipeline, suspended_during))
    pipeline.ingest_paths(pipeline.discover())
    assert suspended_during and all(suspended_during)  # the backfill did index in bulk
    assert not fts.suspended(pipeline.db) and set(_triggers(pipeline.db)) == set(fts.TRIGGERS)
    assert _found(pipeline.db, "zebra3") == {"s3"}
    assert _index_consistent(pipeline.db)

    # Live tailing: one appended line, searchable as soon as it is stored (no bulk for one file).
    path = next(env.projects.rglob("s3.jsonl"))
    with path.open("ab") as f:
        f.write(claude_line("user", "s3-late", "s3", parent="s3-end", content="now the giraffe test"))
    suspended_during.clear()
    pipeline.ingest_paths([(pipeline.source_for(path), path)])
    assert suspended_during == [False]
    assert _found(pipeline.db, "giraffe") == {"s3"}
    assert _index_consistent(pipeline.db)


def test_a_backfill_that_died_half_way_is_indexed_by_the_next_ingest(
    env: Env, pipeline: ingest.Pipeline, small_bulk: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _backfill_corpus(env)
    files = pipeline.discover()

    def die(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt  # as if killed: no cleanup code of ours may count on running

    monkeypatch.setattr(fts, "resume_quietly", die)
    calls = [0]
    inner = pipeline.ingest_file

    def crash_after_five(source, path, **kw):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] > 5:
            raise KeyboardInterrupt
        return inner(source, path, **kw)

    monkeypatch.setattr(pipeline, "ingest_file", crash_after_five)
    with pytest.raises(KeyboardInterrupt):
        pipeline.ingest_paths(files)
    assert fts.suspended(pipeline.db) and _triggers(pipeline.db) == {}
    monkeypatch.undo()

    # A new process (the daemon, `skillopt ingest`) with only a little to read still repairs the index.
    settings = pipeline.settings
    fresh = ingest.Pipeline(pipeline.db, ingest.load_sources(settings), settings)
    fresh.ingest_paths(files[:1])
    assert not fts.suspended(fresh.db) and set(_triggers(fresh.db)) == set(fts.TRIGGERS)
    assert _index_consistent(fresh.db)
    stored = {r[0] for r in fresh.db.execute("SELECT session_id FROM sessions")}
    assert len(stored) >= 5
    assert all(_found(fresh.db, f"zebra{sid[1:]}") == {sid} for sid in stored)


def _watching(inner, pipeline: ingest.Pipeline, seen: list[bool]):  # type: ignore[no-untyped-def]
    def ingest_file(source, path: Path, **kw):  # type: ignore[no-untyped-def]
        seen.append(fts.suspended(pipeline.db))
        return inner(source, path, **kw)

    return ingest_file
