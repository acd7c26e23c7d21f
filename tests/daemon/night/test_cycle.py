"""The nightly cycle's bookkeeping, run for real as processes: the schedule inside the daemon, one lock for
manual and scheduled runs, a `kill -9` mid-cycle, and a night with nothing usable configured."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow_iso

SKILLOPT = str(Path(sys.executable).parent / "skillopt")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    e = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "ANTHROPIC_", "OPENAI_"))}
    e.update(HOME=str(home), SKILLOPT_HOME=str(tmp_path / "so"), SKILLOPT_NO_DESKTOP_NOTIFY="1")
    e.pop("CLAUDE_CONFIG_DIR", None)
    e.pop("CODEX_HOME", None)
    return e


def run(
    env: dict[str, str], *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([SKILLOPT, *args], env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"skillopt {' '.join(args)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def night_rows(env: dict[str, str]) -> list[dict[str, Any]]:
    path = Path(env["SKILLOPT_HOME"]) / "data" / "skillopt.db"
    if not path.exists():
        return []
    db = open_db(path)
    if "night_runs" not in db.table_names():
        return []
    return list(db.query("SELECT * FROM night_runs ORDER BY started_at"))


def wait_for(predicate: Any, timeout: float = 45.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def seed_sessions(env: dict[str, str], n: int = 6, *, skill: bool = True) -> None:
    """A registered skill and sessions that used it, as ingest would have stored them (with `skill=False`,
    sessions of the same recurring work and no skill at all)."""
    if skill:
        skill_dir = Path(env["HOME"]) / ".claude" / "skills" / "release-notes"
        skill_dir.mkdir(parents=True)
        (skill_dir / "SKILL.md").write_text(
            "---\nname: release-notes\ndescription: Write release notes for a version.\n---\n\n"
            "List the changes.\n"
        )
        run(env, "skills", "import", "--tool", "claude-code")
    db = open_db(Path(env["SKILLOPT_HOME"]) / "data" / "skillopt.db")
    now = utcnow_iso()
    with db.conn:
        for i in range(n):
            pk = (
                db.table("sessions")
                .insert(
                    {
                        "tool": "claude-code",
                        "session_id": f"s{i}",
                        "project_path": "/nonexistent/project",
                        "started_at": f"2026-11-0{i + 1}T10:00:00.000Z",
                        "has_user_turn": 1,
                        "first_seen_at": now,
                        "updated_at": now,
                    }
                )
                .last_pk
            )
            db.table("turns").insert_all(
                [
                    {
                        "session_pk": pk,
                        "key": "u1",
                        "seq": 0,
                        "role": "user",
                        "text": f"write the release notes for version 1.{i} into NOTES.md",
                    },
                    {"session_pk": pk, "key": "a1", "seq": 1, "role": "assistant", "text": "done"},
                ]
            )
            db.table("tool_calls").insert_all(
                [
                    {
                        "session_pk": pk,
                        "key": "c1",
                        "seq": 0,
                        "turn_key": "a1",
                        "name": "Skill",
                        "input_summary": json.dumps({"skill": "release-notes"}),
                        "result_at": now,
                    },
                    {
                        "session_pk": pk,
                        "key": "c2",
                        "seq": 1,
                        "turn_key": "a1",
                        "name": "Bash",
                        "input_summary": json.dumps({"command": "python3 check_notes.py"}),
                        "exit_code": 0,
                        "is_error": 0,
                        "result_at": now,
                    },
                ]
            )


def test_with_nothing_configured_the_night_still_mines_and_says_what_is_missing(env: dict[str, str]) -> None:
    seed_sessions(env)
    report = json.loads(run(env, "sleep", "run", "--now", "--json", check=False).stdout)
    assert report["mining"]["families"] == 1
    (outcome,) = report["skills"]
    assert outcome["skill"] == "release-notes" and outcome["status"] == "error"
    assert any("no optimizer backend" in m for m in report["missing"])
    status = run(env, "status").stdout
    assert "missing for replays" in status and "skillopt config set optimizer.backend" in status
    assert json.loads(run(env, "status", "--json").stdout)["pending"]["items"] == []


def test_a_night_whose_only_skill_errored_fails_with_the_reason(env: dict[str, str]) -> None:
    seed_sessions(env)
    proc = run(env, "sleep", "run", "--now", check=False)
    assert proc.returncode == 1
    assert "release-notes" in proc.stderr and "replays cannot run" in proc.stderr
    as_json = run(env, "sleep", "run", "--now", "--json", check=False)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["skills"][0]["status"] == "error"


def test_a_night_that_trained_nothing_leaves_the_sessions_for_the_next_night(env: dict[str, str]) -> None:
    seed_sessions(env)
    run(env, "sleep", "run", "--now", check=False)  # the only skill errored: nothing was trained
    again = run(env, "sleep", "run", check=False)
    assert "Nothing new was ingested" not in again.stdout
    assert [r["status"] for r in night_rows(env)] == ["completed", "completed"]


def test_a_dry_run_leaves_the_sessions_for_the_next_night(env: dict[str, str]) -> None:
    seed_sessions(env, skill=False)
    run(env, "sleep", "run", "--now", "--dry-run")
    real = run(env, "sleep", "run")
    assert "Nothing new was ingested" not in real.stdout
    assert [(r["status"], bool(r["dry_run"])) for r in night_rows(env)] == [
        ("nothing-to-do", True),
        ("nothing-to-do", False),
    ]
    # the real night looked at everything: the next one has nothing new to work on
    assert "Nothing new was ingested" in run(env, "sleep", "run").stdout


def test_manual_runs_and_the_schedule_share_one_lock(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillopt_daemon.night.lock import night_lock

    monkeypatch.setenv("SKILLOPT_HOME", env["SKILLOPT_HOME"])
    with night_lock():
        proc = run(env, "sleep", "run", "--now", check=False)
    assert proc.returncode == 4
    assert "a nightly cycle is already running" in proc.stderr
    assert night_rows(env) == []  # the refused run left no trace


def test_kill_9_mid_cycle_leaves_nothing_half_done_and_the_next_run_says_so(env: dict[str, str]) -> None:
    seed_sessions(env)
    paused = dict(env, SKILLOPT_TEST_INSTALL_PAUSE="night-before-mining:60")
    proc = subprocess.Popen(
        [SKILLOPT, "sleep", "run", "--now"],
        env=paused,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    while line and "skillopt-install-pause: night-before-mining" not in line:
        line = proc.stderr.readline()
    assert line, "the cycle never reached the pause point"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    (row,) = night_rows(env)
    assert row["status"] == "running"  # what a killed process leaves behind

    report = json.loads(run(env, "sleep", "run", "--now", "--json", check=False).stdout)
    assert "was interrupted before training; starting clean" in report["start_note"]
    rows = night_rows(env)
    assert [r["status"] for r in rows] == ["interrupted", "completed"]
    assert json.loads(run(env, "status", "--json").stdout)["pending"]["items"] == []


def test_the_daemon_runs_the_night_on_its_schedule(env: dict[str, str]) -> None:
    run(env, "config", "set", "night.schedule", "*/2 * * * * *")
    run(env, "config", "set", "ingest.rescan_interval_s", "0.5")
    daemon = subprocess.Popen(
        [SKILLOPT, "daemon", "run"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        first = wait_for(
            lambda: [r for r in night_rows(env) if r["trigger"] == "schedule"], what="a scheduled night"
        )
        assert first[0]["status"] in ("nothing-to-do", "running", "completed")
        # Nothing new was ingested since: the next firing is recorded as skipped, not run again.
        wait_for(lambda: [r for r in night_rows(env) if r["status"] == "skipped"], what="a skipped night")
        status = json.loads(run(env, "status", "--json").stdout)
        assert status["nightly"]["next"] is not None
        assert status["nightly"]["last"]["trigger"] == "schedule"
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            raise
    assert daemon.returncode == 0


def test_status_says_why_a_recurring_family_got_no_new_skill(env: dict[str, str]) -> None:
    seed_sessions(env, n=3, skill=False)
    report = json.loads(run(env, "sleep", "run", "--now", "--json").stdout)
    assert report["status"] == "nothing-to-do"
    (fam,) = report["families"]
    assert fam["tasks"] == 3 and fam["reason"] == "too few tasks (3; a new skill needs 4)"
    status = run(env, "status").stdout
    # What the family still needs, said in the user's terms instead of the min_tasks rule behind it.
    assert "no skill for the family" in status and "(3 recurring tasks): waiting for " in status
    assert fam["needs"] in status and "a new skill needs 4" not in status
