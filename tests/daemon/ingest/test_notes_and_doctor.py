"""What a user sees after ordinary use and from `skillopt doctor`: no false alarm after a session starts,
and doctor naming transcripts it cannot read."""

from __future__ import annotations

import json

from skillopt_daemon import ingest
from skillopt_daemon.core import paths
from skillopt_daemon.ingest.inbox import handle_notes
from skillopt_daemon.ingest.notes import write_note

from .conftest import Env
from .helpers import cli, write_claude_session


def test_a_start_note_before_its_transcript_exists_is_not_a_problem(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    path = env.projects / "-tmp-project" / "fresh.jsonl"  # Claude Code writes it after the hook ran
    write_note("session-start", {"session_id": "fresh", "transcript_path": str(path), "cwd": "/tmp/project"})
    handle_notes(pipeline)
    assert list(paths.inbox_dir().glob("*.json")) == []  # settled: the file is found when it appears
    written = write_claude_session(env.projects, "fresh", turns=1)
    assert written == path
    pipeline.ingest_paths(pipeline.discover())
    section = ingest.status_section(pipeline.db)
    assert section["errors_24h"] == {}
    assert not [ln for ln in section["lines"] if "problems" in ln]
    assert section["sessions"] == {"claude-code": 1}


def test_an_end_note_naming_a_missing_transcript_is_still_reported(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    gone = env.projects / "-tmp-project" / "gone.jsonl"
    write_note("session-end", {"session_id": "gone", "transcript_path": str(gone)})
    handle_notes(pipeline)
    assert ingest.status_section(pipeline.db)["errors_24h"] == {"note-missing-transcript": 1}


def _doctor(env: Env) -> list[dict]:  # type: ignore[type-arg]
    res = cli(env.environ(), "doctor", "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["checks"]


def test_doctor_names_unreadable_transcripts_and_folders(env: Env) -> None:
    ok = write_claude_session(env.projects, "fine", turns=1, cwd="/tmp/fine")
    locked_file = write_claude_session(env.projects, "locked", turns=1, cwd="/tmp/locked")
    hidden = write_claude_session(env.projects, "hidden", turns=1, cwd="/tmp/hidden")
    locked_file.chmod(0)
    hidden.parent.chmod(0)
    try:
        checks = _doctor(env)
    finally:
        hidden.parent.chmod(0o755)
        locked_file.chmod(0o644)
    problems = [c for c in checks if c["group"] == "transcripts" and c["level"] != "ok"]
    details = " ".join(c["detail"] for c in problems)
    assert str(locked_file) in details and str(hidden.parent) in details
    assert str(ok) not in details
    assert all(c["level"] == "warn" for c in problems)


def test_doctor_is_quiet_about_transcripts_when_all_are_readable(env: Env) -> None:
    write_claude_session(env.projects, "fine", turns=1)
    checks = [c for c in _doctor(env) if c["group"] == "transcripts"]
    assert checks and all(c["level"] in ("ok", "info") for c in checks)
