"""What a user sees after ordinary use and from `skillopt doctor`: no false alarm after a session starts,
and doctor naming transcripts it cannot read."""

from __future__ import annotations

import json

from skillopt_daemon import ingest
from skillopt_daemon.core import paths
from skillopt_daemon.ingest.inbox import handle_notes
from skillopt_daemon.ingest.notes import write_note
from testkit.ingest_helpers import cli, write_claude_session

from .conftest import Env


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


def test_a_note_for_a_transcript_that_never_appears_is_not_a_problem(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    """`claude plugin install`, or a session opened and closed without a prompt: hooks ran, no transcript
    was ever written. Nothing is wrong, so nothing shows as a problem; the notes are only counted."""
    for sid in ("plugin-install", "closed-unused"):
        gone = env.projects / "-tmp-project" / f"{sid}.jsonl"
        write_note("session-start", {"session_id": sid, "transcript_path": str(gone)})
        write_note("session-end", {"session_id": sid, "transcript_path": str(gone), "reason": "other"})
    handle_notes(pipeline)
    assert list(paths.inbox_dir().glob("*.json")) == []
    section = ingest.status_section(pipeline.db)
    assert section["errors_24h"] == {} and section["latest_error"] is None
    assert not [ln for ln in section["lines"] if "problem" in ln or "missing" in ln]
    assert section["notes_without_transcript"] == 2
    assert "2 hook notes for sessions that wrote no transcript" in " ".join(section["lines"])


def test_a_note_is_read_only_inside_the_tools_own_log_folders(env: Env, pipeline: ingest.Pipeline) -> None:
    """A note names a file; only a transcript that resolves inside the tool's log folders is read. Any other
    path (a system file, a JSONL elsewhere, a link from inside that leads out) is refused unread."""
    elsewhere = env.root / "elsewhere"
    outside = write_claude_session(elsewhere, "outside", turns=1)
    link = env.projects / "-tmp-project" / "link.jsonl"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    inside_home = write_claude_session(env.claude / "kept-elsewhere", "in-home", turns=1)
    for target in ("/etc/passwd", str(outside), str(link), str(inside_home)):
        write_note("session-end", {"session_id": "x", "transcript_path": target})
    handle_notes(pipeline)

    sessions = [r[0] for r in pipeline.db.execute("SELECT session_id FROM sessions")]
    assert sessions == ["in-home"]  # in the tool's home: read at once
    read = {r[0] for r in pipeline.db.execute("SELECT path FROM ingest_files")}
    assert read == {str(inside_home)}  # nothing else was opened as a transcript
    refused = list(
        pipeline.db.execute("SELECT path, level, message FROM ingest_errors WHERE kind = 'note-refused'")
    )
    assert sorted(r[0] for r in refused) == sorted(["/etc/passwd", str(outside), str(link)])
    assert all(r[1] == "warning" and "outside claude-code's log folders" in r[2] for r in refused)
    (via_link,) = [r[2] for r in refused if r[0] == str(link)]
    assert f"which leads to {outside}" in via_link
    assert "root:" not in " ".join(r[2] for r in refused)  # the refused file's content is nowhere
    assert list(paths.inbox_dir().glob("*.json")) == []


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


def test_the_dashboard_overview_shows_no_problem_for_notes_without_a_transcript(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    from fastapi.testclient import TestClient

    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.core.store.db import apply_migrations
    from skillopt_daemon.service.dashboard import ensure_token
    from skillopt_daemon.web.app import create_app

    gone = env.projects / "-tmp-project" / "never.jsonl"
    write_note("session-end", {"session_id": "never", "transcript_path": str(gone)})
    handle_notes(pipeline)
    # A store from an earlier version holds such notes as warnings; upgrading turns them into the count.
    with pipeline.db.conn:
        pipeline.db.table("ingest_errors").insert(
            {
                "at": "2026-11-30T10:00:00Z",
                "kind": "note-missing-transcript",
                "level": "warning",
                "message": "x",
            }
        )
        pipeline.db.execute("DELETE FROM _migrations WHERE name = 'm009_notes_and_signals'")
    assert apply_migrations(pipeline.db) == ["m009_notes_and_signals"]
    assert ingest.status_section(pipeline.db)["notes_without_transcript"] == 2

    with TestClient(create_app(load_settings()), base_url="http://127.0.0.1:8765") as client:
        assert client.get(f"/?token={ensure_token()}", follow_redirects=False).status_code == 303
        page = client.get("/").text
    errors = page.split("<h2>Ingest errors</h2>", 1)[1].split("</section>", 1)[0]
    assert "note-missing-transcript" not in page and "<tr class=" not in errors
    assert "None." in errors
