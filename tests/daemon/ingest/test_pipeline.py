"""The ingest pipeline on real files: upserts, offsets, and every kind of bad input, in one process."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from skillopt_daemon import ingest
from skillopt_daemon.ingest import pipeline as pipeline_module
from testkit.ingest_helpers import (
    Crash,
    claude_line,
    claude_session_lines,
    crash_at_finish,
    dump,
    dump_clean,
    write_claude_session,
    write_codex_session,
)

from .conftest import Env


def _sessions(db) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    cur = db.execute("SELECT * FROM sessions")
    cols = [d[0] for d in cur.description]
    return {r[cols.index("session_id")]: dict(zip(cols, r, strict=True)) for r in cur.fetchall()}


def _errors(db) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(Path(p).name if p else "", k) for p, k in db.execute("SELECT path, kind FROM ingest_errors")]


def _ingest(pipeline: ingest.Pipeline) -> list[ingest.FileOutcome]:
    return pipeline.ingest_paths(pipeline.discover())


def test_a_session_is_stored_once_however_often_it_is_read(env: Env, pipeline: ingest.Pipeline) -> None:
    write_claude_session(env.projects, "s1", turns=3, cwd="/tmp/proj-a")
    write_codex_session(env.codex, "0199a0b1-aaaa-bbbb-cccc-000000000001", cwd="/tmp/proj-b")
    _ingest(pipeline)
    first = dump(env.db)
    _ingest(pipeline)
    pipeline.writer.forget()
    pipeline._seen.clear()
    _ingest(pipeline)
    assert dump(env.db) == first

    sessions = _sessions(pipeline.db)
    s1 = sessions["s1"]
    assert s1["tool"] == "claude-code" and s1["project_path"] == "/tmp/proj-a"
    assert s1["turn_count"] == 8 and s1["tool_call_count"] == 3 and s1["has_user_turn"] == 1
    assert s1["started_at"] == "2026-11-30T10:00:00.000Z"
    codex = sessions["0199a0b1-aaaa-bbbb-cccc-000000000001"]
    assert codex["tool"] == "codex" and codex["project_path"] == "/tmp/proj-b"
    assert codex["repo_commit"] == "0" * 40
    (calls,) = pipeline.db.execute(
        "SELECT COUNT(*) FROM tool_calls WHERE session_pk = ?", [codex["id"]]
    ).fetchone()
    assert calls == 1


def test_appended_lines_are_read_incrementally_and_a_partial_line_waits(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    path = write_claude_session(env.projects, "s2", turns=1)
    _ingest(pipeline)
    before = _sessions(pipeline.db)["s2"]["turn_count"]
    line = claude_line("user", "late-1", "s2", content="now also update the docs")
    with open(path, "ab") as f:
        f.write(line[:20])  # a writer caught mid-line
    _ingest(pipeline)
    assert _sessions(pipeline.db)["s2"]["turn_count"] == before
    (offset,) = pipeline.db.execute(
        'SELECT "offset" FROM ingest_files WHERE path = ?', [str(path)]
    ).fetchone()
    assert offset == path.stat().st_size - 20
    with open(path, "ab") as f:
        f.write(line[20:])
    _ingest(pipeline)
    assert _sessions(pipeline.db)["s2"]["turn_count"] == before + 1
    texts = [r[0] for r in pipeline.db.execute("SELECT text FROM turns WHERE key = 'late-1'")]
    assert texts == ["now also update the docs"]


def test_truncated_and_replaced_files_are_read_again_without_duplicates(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    path = write_claude_session(env.projects, "s3", turns=4)
    _ingest(pipeline)
    n_turns = _sessions(pipeline.db)["s3"]["turn_count"]

    path.write_bytes(b"".join(claude_session_lines("s3", turns=1)))  # truncated in place
    _ingest(pipeline)
    assert _sessions(pipeline.db)["s3"]["turn_count"] == n_turns  # nothing doubled, nothing lost
    assert ("s3.jsonl", "truncated") in _errors(pipeline.db)

    replacement = path.with_name("tmp.jsonl.part")
    replacement.write_bytes(b"".join(claude_session_lines("s3b", turns=2, prompt="a different session")))
    os.replace(replacement, path)  # replaced by a different file under the same name
    _ingest(pipeline)
    sessions = _sessions(pipeline.db)
    assert sessions["s3b"]["turn_count"] == 6
    assert ("s3.jsonl", "replaced") in _errors(pipeline.db)


def test_an_archived_rollout_keeps_its_offset(env: Env, pipeline: ingest.Pipeline) -> None:
    path = write_codex_session(env.codex, "0199a0b1-aaaa-bbbb-cccc-000000000002")
    _ingest(pipeline)
    archived = env.codex / "archived_sessions" / path.name
    archived.parent.mkdir(parents=True)
    os.rename(path, archived)  # what `codex` does when a session is archived
    outcomes = _ingest(pipeline)
    assert sum(o.lines for o in outcomes) == 0  # not read again
    rows = pipeline.db.execute('SELECT path, "offset" FROM ingest_files').fetchall()
    assert rows == [(str(archived), archived.stat().st_size)]


def test_bad_lines_are_skipped_counted_and_reported(env: Env, pipeline: ingest.Pipeline) -> None:
    path = env.projects / "-tmp-project" / "s4.jsonl"
    path.parent.mkdir(parents=True)
    good = claude_session_lines("s4", turns=1)
    bad_utf8 = claude_line("user", "u-bad", "s4", content="caf\u00e9").replace(b"caf\\u00e9", b"caf\xe9")
    path.write_bytes(
        good[0]
        + b"this is not json\n"
        + bad_utf8
        + json.dumps({"type": "brand-new-record", "uuid": "n1"}).encode()
        + b"\n"
        + claude_line("user", "u-nozone", "s4", content="zoneless", timestamp="2026-11-30T10:00:00")
        + claude_line("user", "u-future", "s4", content="from the future", timestamp="2099-01-01T00:00:00Z")
        + b"".join(good[1:])
    )
    _ingest(pipeline)
    s4 = _sessions(pipeline.db)["s4"]
    skipped = json.loads(s4["skipped_json"])
    assert any("unknown record type" in k for k in skipped)
    assert any("json" in k for k in skipped)
    kinds = {k for _, k in _errors(pipeline.db)}
    assert {"invalid-utf8", "timestamp-without-zone", "future-timestamp", "invalid-json"} <= kinds
    texts = {r[0] for r in pipeline.db.execute("SELECT text FROM turns WHERE session_pk = ?", [s4["id"]])}
    assert {"zoneless", "from the future", "fix the failing test"} <= texts
    assert any(t.startswith("caf") for t in texts)  # the undecodable byte replaced, the line kept
    assert s4["ended_at"] < "2099"  # a future timestamp does not become the session's end
    status = ingest.status_section(pipeline.db)
    assert any("invalid-utf8" in line for line in status["lines"])


def test_a_50mb_line_is_skipped_and_the_rest_is_read(env: Env, pipeline: ingest.Pipeline) -> None:
    pipeline.settings.ingest.max_line_bytes = 1 << 20
    path = env.projects / "-tmp-project" / "s5.jsonl"
    path.parent.mkdir(parents=True)
    lines = claude_session_lines("s5", turns=1)
    with open(path, "wb") as f:
        f.write(lines[0])
        f.write(b'{"type":"user","blob":"')
        chunk = b"A" * (1 << 20)
        for _ in range(50):
            f.write(chunk)
        f.write(b'"}\n')
        f.write(b"".join(lines[1:]))
    _ingest(pipeline)
    s5 = _sessions(pipeline.db)["s5"]
    assert s5["turn_count"] == 4
    assert ("s5.jsonl", "line-too-long") in _errors(pipeline.db)
    (offset,) = pipeline.db.execute(
        'SELECT "offset" FROM ingest_files WHERE path = ?', [str(path)]
    ).fetchone()
    assert offset == path.stat().st_size


def test_unreadable_files_are_reported_once_and_retried(
    env: Env, pipeline: ingest.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_claude_session(env.projects, "s6", turns=1)
    write_claude_session(env.projects, "s7", turns=1)
    denied = {str(path)}
    real_open = open

    def guarded_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) in denied:
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    if os.geteuid() == 0:  # root reads any file: make the denial happen where the pipeline opens files
        monkeypatch.setattr(pipeline_module, "open", guarded_open, raising=False)
    else:
        path.chmod(0)
    _ingest(pipeline)
    _ingest(pipeline)
    sessions = _sessions(pipeline.db)
    assert "s7" in sessions and "s6" not in sessions
    assert _errors(pipeline.db).count(("s6.jsonl", "permission-denied")) == 1
    status = ingest.status_section(pipeline.db)
    assert status["failing_files"][0]["problem"] == "permission-denied"

    denied.clear()
    path.chmod(0o644)
    pipeline._seen.clear()
    _ingest(pipeline)
    assert "s6" in _sessions(pipeline.db)
    assert ingest.status_section(pipeline.db)["failing_files"] == []


def test_symlink_loops_do_not_hang_and_are_reported(env: Env, pipeline: ingest.Pipeline) -> None:
    write_claude_session(env.projects, "s8", turns=1)
    os.symlink(env.projects, env.projects / "-tmp-project" / "loop")
    os.symlink("me.jsonl", env.projects / "-tmp-project" / "me.jsonl")
    _ingest(pipeline)
    _ingest(pipeline)
    assert "s8" in _sessions(pipeline.db)
    kinds = _errors(pipeline.db)
    assert kinds.count(("loop", "symlink-loop")) == 1
    assert ("me.jsonl", "symlink-loop") in kinds


def test_a_file_deleted_mid_read_is_read_to_its_end(env: Env, pipeline: ingest.Pipeline) -> None:
    pipeline.settings.ingest.batch_lines = 3
    path = write_claude_session(env.projects, "s9", turns=5)
    source = pipeline.source_for(path)
    assert source is not None
    calls = []

    def delete_after_first_batch(n: int) -> None:
        if not calls:
            path.unlink()
        calls.append(n)

    out = pipeline.ingest_file(source, path, on_bytes=delete_after_first_batch)
    assert len(calls) > 1 and out.error is None
    assert _sessions(pipeline.db)["s9"]["turn_count"] == 12
    pipeline.ingest_file(source, path)  # an event for the vanished file: noted, not an error
    assert pipeline.db.execute("SELECT missing FROM ingest_files").fetchone() == (1,)
    assert _errors(pipeline.db) == []
    assert _sessions(pipeline.db)["s9"]["turn_count"] == 12  # what was read is kept


def test_a_file_replaced_mid_read_is_then_read_from_its_start(env: Env, pipeline: ingest.Pipeline) -> None:
    pipeline.settings.ingest.batch_lines = 3
    path = write_claude_session(env.projects, "s10", turns=5)
    source = pipeline.source_for(path)
    assert source is not None
    calls = []

    def replace_after_first_batch(n: int) -> None:
        if not calls:
            tmp = path.with_name("next.part")
            tmp.write_bytes(b"".join(claude_session_lines("s10-new", turns=1)))
            os.replace(tmp, path)
        calls.append(n)

    pipeline.ingest_file(source, path, on_bytes=replace_after_first_batch)
    assert _sessions(pipeline.db)["s10"]["turn_count"] == 12  # the old file, read to its end through its fd
    pipeline.ingest_file(source, path)
    assert _sessions(pipeline.db)["s10-new"]["turn_count"] == 4


def test_not_user_work_is_dropped_or_flagged(env: Env, pipeline: ingest.Pipeline) -> None:
    from skillopt_daemon.core import paths

    replay_cwd = str(paths.workspaces_dir() / "task-1")
    write_claude_session(env.projects, "replay", turns=1, cwd=replay_cwd)
    automation = env.projects / "-tmp-auto" / "auto.jsonl"
    automation.parent.mkdir(parents=True)
    automation.write_bytes(
        claude_line("user", "a1", "auto", content="summarize the changelog", entrypoint="sdk-cli")
        + claude_line("assistant", "a2", "auto", parent="a1", content="done", entrypoint="sdk-cli")
    )
    empty = env.projects / "-tmp-empty" / "empty.jsonl"
    empty.parent.mkdir(parents=True)
    empty.write_bytes(claude_line("assistant", "e1", "empty", content="hello?"))
    _ingest(pipeline)
    sessions = _sessions(pipeline.db)
    assert sessions["replay"]["drop_reason"] == "replay" and sessions["replay"]["turn_count"] == 0
    assert pipeline.db.execute(
        "SELECT COUNT(*) FROM turns WHERE session_pk = ?", [sessions["replay"]["id"]]
    ).fetchone() == (0,)
    assert sessions["auto"]["is_automation"] == 1 and sessions["auto"]["drop_reason"] is None
    assert sessions["empty"]["has_user_turn"] == 0
    from skillopt_daemon.ingest.queries import query_sessions

    listed = {s["session_id"] for s in query_sessions(pipeline.db)}
    assert listed == {"auto"}
    status = ingest.status_section(pipeline.db)
    assert status["dropped"] == {"replay": 1, "no_user_turn": 1}


def test_automation_can_be_dropped_by_config(env: Env, pipeline: ingest.Pipeline) -> None:
    pipeline.settings.ingest.keep_automation = False
    path = env.projects / "-tmp-auto" / "auto.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_line("user", "a1", "auto", content="summarize", entrypoint="sdk-cli"))
    _ingest(pipeline)
    assert _sessions(pipeline.db)["auto"]["drop_reason"] == "automation"


def test_a_crash_inside_a_batch_loses_and_repeats_nothing(env: Env, pipeline: ingest.Pipeline) -> None:
    """Records and offsets commit together: a failure mid-batch rolls both back, the rerun completes."""
    pipeline.settings.ingest.batch_lines = 4
    for i in range(4):
        write_claude_session(env.projects, f"c{i}", turns=4)
    clean_env_db = dump_clean(env.db, pipeline)

    with crash_at_finish(5), pytest.raises(Crash):
        _ingest(pipeline)
    _ingest(pipeline)
    assert dump(env.db) == clean_env_db


def test_a_bug_on_one_file_does_not_stop_the_others(
    env: Env, pipeline: ingest.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_claude_session(env.projects, "fine", turns=1)
    write_claude_session(env.projects, "poison", turns=1)
    real_apply = ingest.RecordWriter.apply

    def apply(self, tool, records, file_id, batch):  # type: ignore[no-untyped-def]
        if any(getattr(r, "session_id", "") == "poison" for r in records):
            raise ValueError("a bug")
        return real_apply(self, tool, records, file_id, batch)

    monkeypatch.setattr(ingest.RecordWriter, "apply", apply)
    outcomes = _ingest(pipeline)
    assert sorted(o.error or "ok" for o in outcomes) == ["internal-error", "ok"]
    assert "fine" in _sessions(pipeline.db)
    assert ("poison.jsonl", "internal-error") in _errors(pipeline.db)
    monkeypatch.setattr(ingest.RecordWriter, "apply", real_apply)
    _ingest(pipeline)  # fixed: the file is read on the next pass
    assert "poison" in _sessions(pipeline.db)


def _git(repo: Path, *args: str) -> str:
    import subprocess

    out = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_the_repo_state_is_pinned_when_a_session_is_first_seen(env: Env, pipeline: ingest.Pipeline) -> None:
    repo = env.root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\n")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-qm", "first")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("changed\n")  # uncommitted work: dirty
    path = write_claude_session(env.projects, "pinned", turns=1, cwd=str(repo))
    _ingest(pipeline)
    s = _sessions(pipeline.db)["pinned"]
    assert s["repo_commit"] == first and s["repo_dirty"] == 1 and s["pinned_at"]

    _git(repo, "commit", "-qam", "second")
    path.write_bytes(b"".join(claude_session_lines("pinned", turns=2, cwd=str(repo))))  # read again from 0
    pipeline._seen.clear()
    _ingest(pipeline)
    again = _sessions(pipeline.db)["pinned"]
    assert again["repo_commit"] == first and again["pinned_at"] == s["pinned_at"]


def _atif(steps: list[dict]) -> bytes:  # type: ignore[type-arg]
    return json.dumps(
        {
            "schema_version": "ATIF-v1.4",
            "session_id": "devin-doc-1",
            "agent": {"name": "devin-cli", "version": "1.2.0", "model_name": "swe-1.5"},
            "extra": {"cwd": "/home/dev/service"},
            "steps": steps,
        }
    ).encode()


def test_a_rewritten_whole_document_transcript_replaces_what_it_said(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    folder = env.home / ".local" / "share" / "devin" / "cli" / "transcripts"
    folder.mkdir(parents=True)
    path = folder / "devin-doc-1.json"
    user = {
        "step_id": 1,
        "source": "user",
        "timestamp": "2026-11-03T10:00:01Z",
        "message": "make the build pass",
    }
    agent = {
        "step_id": 2,
        "source": "agent",
        "timestamp": "2026-11-03T10:00:05Z",
        "message": "Running the build.",
        "tool_calls": [
            {"tool_call_id": "c1", "function_name": "exec", "arguments": {"command": "cargo test"}}
        ],
        "observation": {"results": [{"source_call_id": "c1", "content": "1 failed\nexit code 101"}]},
    }
    path.write_bytes(_atif([user, agent]))
    _ingest(pipeline)
    s = _sessions(pipeline.db)["devin-doc-1"]
    assert s["tool"] == "devin" and s["turn_count"] == 2 and s["tool_call_count"] == 1
    _ingest(pipeline)  # unchanged: not read again, nothing doubled
    assert _sessions(pipeline.db)["devin-doc-1"]["turn_count"] == 2

    done = {"step_id": 3, "source": "agent", "timestamp": "2026-11-03T10:02:00Z", "message": "All green now."}
    path.write_bytes(_atif([user, done]))  # rewritten in place: the old agent step is gone
    _ingest(pipeline)
    s = _sessions(pipeline.db)["devin-doc-1"]
    texts = [
        r[0]
        for r in pipeline.db.execute("SELECT text FROM turns WHERE session_pk = ? ORDER BY seq", [s["id"]])
    ]
    assert texts == ["make the build pass", "All green now."]
    assert s["turn_count"] == 2 and s["tool_call_count"] == 0


def test_a_newer_tool_version_is_reported_once(env: Env, pipeline: ingest.Pipeline) -> None:
    path = env.projects / "-tmp-new" / "v.jsonl"
    path.parent.mkdir(parents=True)
    lines = [claude_line("user", f"v{i}", "v", content=f"prompt {i}") for i in range(3)]
    path.write_bytes(b"".join(line.replace(b'"2.1.197"', b'"9.0.1"') for line in lines))
    _ingest(pipeline)
    write_claude_session(env.projects, "v2", turns=1)  # the known version: no report
    path.with_name("v3.jsonl").write_bytes(
        lines[0].replace(b'"2.1.197"', b'"9.0.1"').replace(b'"v"', b'"v3"')
    )
    _ingest(pipeline)
    assert _errors(pipeline.db).count(("v.jsonl", "newer-version")) == 1
    assert len([k for _, k in _errors(pipeline.db) if k == "newer-version"]) == 1
    assert _sessions(pipeline.db)["v"]["tool_version"] == "9.0.1"


def test_two_processes_reading_one_file_store_it_once(env: Env, pipeline: ingest.Pipeline) -> None:
    """`skillopt ingest` beside the daemon: whoever commits a batch second notices and backs off."""
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.core.store import open_db

    path = env.projects / "-tmp-two" / "two.jsonl"
    path.parent.mkdir(parents=True)
    lines = claude_session_lines("two", turns=6)
    path.write_bytes(b"".join(lines[:3]) + b"not json\n" + b"".join(lines[3:]))
    clean = dump_clean(env.db, pipeline)

    settings = load_settings()
    settings.ingest.batch_lines = 3
    pipeline.settings.ingest.batch_lines = 3
    other_db = open_db()
    other = ingest.Pipeline(other_db, ingest.load_sources(settings), settings)
    source = pipeline.source_for(path)
    assert source is not None
    ran = []

    def the_other_process_runs_now(_n: int) -> None:
        if not ran:
            ran.append(other.ingest_file(source, path))

    first = pipeline.ingest_file(source, path, on_bytes=the_other_process_runs_now)
    assert ran and ran[0].lines > 0 and not first.done  # the other one read the rest; this one backed off
    pipeline.refresh_signals()
    assert dump(env.db) == clean
    other_db.close()
