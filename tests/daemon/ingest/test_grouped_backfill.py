"""A backfill stores many files in shared transactions and derives new sessions' signals from the rows it
inserts: the store it leaves must be the one a file-by-file, row-by-row ingest leaves, whatever fails."""

from __future__ import annotations

import json

import pytest

from skillopt_daemon import ingest
from skillopt_daemon.ingest import signals, transactions
from testkit.ingest_helpers import (
    Crash,
    claude_line,
    crash_at_finish,
    dump,
    dump_clean,
    empty_store,
    write_claude_session,
)

from .conftest import Env


def _ingest(pipeline: ingest.Pipeline) -> list[ingest.FileOutcome]:
    return pipeline.ingest_paths(pipeline.discover())


def _telling_session(env: Env, name: str) -> None:
    """A session the signals have something to say about: a failed test run, a correction, a pass."""
    folder = env.projects / "-tmp-telling"
    folder.mkdir(parents=True, exist_ok=True)

    def call(uid: str, parent: str, command: str, ts: str) -> bytes:
        content = [{"type": "tool_use", "id": f"{name}-{uid}", "name": "Bash", "input": {"command": command}}]
        return claude_line("assistant", uid, name, parent=parent, content=content, timestamp=ts)

    def result(uid: str, parent: str, call_uid: str, output: str, failed: bool, ts: str) -> bytes:
        block = {"type": "tool_result", "tool_use_id": f"{name}-{call_uid}", "content": output}
        block["is_error"] = failed
        return claude_line("user", uid, name, parent=parent, content=[block], timestamp=ts)

    lines = [
        claude_line("user", "u1", name, content="fix the parser", timestamp="2026-11-30T10:00:00.000Z"),
        call("a1", "u1", "npm test", "2026-11-30T10:01:00.000Z"),
        result("r1", "a1", "a1", "Exit code 1\n2 failing", True, "2026-11-30T10:01:30.000Z"),
        claude_line(
            "assistant", "a2", name, parent="r1", content="It fails.", timestamp="2026-11-30T10:02:00.000Z"
        ),
        claude_line(
            "user",
            "u2",
            name,
            parent="a2",
            content="no, run pytest instead",
            timestamp="2026-11-30T10:03:00.000Z",
        ),
        call("a3", "u2", "pytest -q", "2026-11-30T10:04:00.000Z"),
        result("r3", "a3", "a3", "3 passed in 0.1s", False, "2026-11-30T10:04:30.000Z"),
    ]
    (folder / f"{name}.jsonl").write_bytes(b"".join(lines))


def _corpus(env: Env, n: int) -> None:
    for i in range(n):
        write_claude_session(env.projects, f"plain-{i:02d}", turns=3, cwd=f"/tmp/p{i % 3}")
    _telling_session(env, "telling")


def _signals(db: object) -> dict[str, dict[str, object]]:
    rows = db.execute("SELECT session_id, signals_json, signals_stale FROM sessions").fetchall()  # type: ignore[attr-defined]
    assert all(stale == 0 for _, _, stale in rows)
    return {sid: json.loads(text) for sid, text, _ in rows}


def test_grouped_backfill_stores_what_file_by_file_ingest_stores(
    env: Env,
    pipeline: ingest.Pipeline,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _corpus(env, 11)
    commits: list[int] = []
    real_commit = transactions.BatchTransactions.commit

    def counting_commit(self: transactions.BatchTransactions) -> None:
        commits.append(1)
        real_commit(self)

    monkeypatch.setattr(transactions.BatchTransactions, "commit", counting_commit)
    outcomes = _ingest(pipeline)
    assert len(outcomes) == 12 and not any(o.error for o in outcomes)
    assert commits  # the files went through group transactions
    grouped = dump(env.db)
    fresh = _signals(pipeline.db)

    # The same files, one transaction per batch and signals read back from the store.
    monkeypatch.setattr(transactions, "GROUP_MIN_FILES", 10_000)
    from skillopt_daemon.ingest import pipeline as pipeline_module

    monkeypatch.setattr(pipeline_module, "GROUP_MIN_FILES", 10_000)
    empty_store(pipeline)
    commits.clear()
    _ingest(pipeline)
    assert not commits
    assert dump(env.db) == grouped

    # Signals derived from the rows a batch inserted equal those computed from the stored rows.
    pks = [pk for (pk,) in pipeline.db.execute("SELECT id FROM sessions")]
    with pipeline.db.conn:
        signals.update_sessions(pipeline.db, pks)
    assert _signals(pipeline.db) == fresh
    telling = fresh["telling"]
    assert telling["correction_count"] == 1 and telling["failed_command_count"] == 1
    assert telling["final_test_outcome"] == "passed"


def test_a_session_that_grows_over_several_batches_gets_its_signals_from_the_store(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    pipeline.settings.ingest.batch_lines = 2  # the failing run and the correction land in later batches
    _telling_session(env, "telling")
    _ingest(pipeline)
    (text,) = pipeline.db.execute("SELECT signals_json FROM sessions WHERE session_id = 'telling'").fetchone()
    sig = json.loads(text)
    assert sig["correction_count"] == 1 and sig["failed_command_count"] == 1
    assert sig["final_test_outcome"] == "passed"


def test_a_crash_in_the_middle_of_a_group_loses_and_repeats_nothing(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    _corpus(env, 11)
    clean = dump_clean(env.db, pipeline)

    with crash_at_finish(6), pytest.raises(Crash):
        _ingest(pipeline)
    # The five files before the crash are stored whole; the sixth not at all.
    (files,) = pipeline.db.execute('SELECT COUNT(*) FROM ingest_files WHERE "offset" > 0').fetchone()
    assert files == 5
    _ingest(pipeline)
    assert dump(env.db) == clean


def test_a_bug_on_one_file_of_a_group_rolls_back_that_file_alone(
    env: Env, pipeline: ingest.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    _corpus(env, 11)
    real_apply = ingest.RecordWriter.apply

    def apply(self, tool, records, file_id, batch):  # type: ignore[no-untyped-def]
        real_apply(self, tool, records, file_id, batch)  # rows written, then the bug
        if any(getattr(r, "session_id", "") == "plain-04" for r in records):
            raise ValueError("a bug")

    monkeypatch.setattr(ingest.RecordWriter, "apply", apply)
    outcomes = _ingest(pipeline)
    assert sorted(o.error or "ok" for o in outcomes) == ["internal-error"] + ["ok"] * 11
    stored = {sid for (sid,) in pipeline.db.execute("SELECT session_id FROM sessions")}
    assert "plain-04" not in stored and len(stored) == 11
    assert pipeline.db.execute(
        "SELECT COUNT(*) FROM ingest_errors WHERE kind = 'internal-error'"
    ).fetchone() == (1,)
    monkeypatch.setattr(ingest.RecordWriter, "apply", real_apply)
    _ingest(pipeline)
    assert "plain-04" in {sid for (sid,) in pipeline.db.execute("SELECT session_id FROM sessions")}


def test_an_automation_session_keeps_its_last_activity_time(env: Env, pipeline: ingest.Pipeline) -> None:
    pipeline.settings.ingest.keep_automation = False
    path = env.projects / "-tmp-auto" / "auto.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        claude_line("user", "a1", "auto", content="summarize", entrypoint="sdk-cli")
        + claude_line(
            "assistant",
            "a2",
            "auto",
            parent="a1",
            content="done",
            entrypoint="sdk-cli",
            timestamp="2026-11-30T10:05:00.000Z",
        )
    )
    _ingest(pipeline)
    row = pipeline.db.execute("SELECT drop_reason, started_at, ended_at FROM sessions").fetchone()
    assert row == ("automation", "2026-11-30T10:00:00.000Z", "2026-11-30T10:05:00.000Z")
