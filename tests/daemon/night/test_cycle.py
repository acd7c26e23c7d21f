"""The nightly cycle's bookkeeping, run for real as processes: the schedule inside the daemon, one lock for
manual and scheduled runs, a `kill -9` mid-cycle, and a night with nothing usable configured."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow_iso
from testkit import cli

SKILLOPT = str(cli.SKILLOPT)


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
    return cli.run(*args, env=env, check=check, timeout=timeout)


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


def seed_sessions(env: dict[str, str], n: int = 6, *, skill: bool = True, tool: str = "claude-code") -> None:
    """A registered skill and sessions that used it, as ingest would have stored them (with `skill=False`,
    sessions of the same recurring work and no skill at all); `tool` is the agent the sessions came from."""
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
                        "tool": tool,
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
    assert "trained nothing: no optimizer backend is configured" in status
    assert "skillopt config set optimizer.backend" in status
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
    assert [r["status"] for r in night_rows(env)] == ["failed", "failed"]


def test_a_dry_run_leaves_the_sessions_for_the_next_night(env: dict[str, str]) -> None:
    seed_sessions(env, skill=False)
    run(env, "sleep", "run", "--now", "--dry-run")
    real = run(env, "sleep", "run")
    assert "Nothing new was ingested" not in real.stdout
    assert [(r["status"], bool(r["dry_run"])) for r in night_rows(env)] == [
        ("dry-run", True),
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
    assert [r["status"] for r in rows] == ["interrupted", "failed"]  # the only skill cannot replay here
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


def nightly_line(status_text: str) -> str:
    """The nightly section of `skillopt status` as printed: one line, its parts joined by "; "."""
    return next(line for line in status_text.splitlines() if line.startswith("Nightly:"))


def test_a_failed_night_is_recorded_as_failed_with_its_reason(env: dict[str, str]) -> None:
    seed_sessions(env)  # a skill, and no optimizer to train it with
    proc = run(env, "sleep", "run", "--now", check=False)
    assert proc.returncode == 1
    (last,) = json.loads(run(env, "sleep", "history", "--json").stdout)
    assert last["status"] == "failed"
    assert "no skill was trained" in last["error"] and "release-notes" in last["error"]
    assert "failed" in run(env, "sleep", "history").stdout
    assert json.loads(run(env, "status", "--json").stdout)["nightly"]["last"]["status"] == "failed"


def test_a_dry_run_is_recorded_as_a_dry_run(env: dict[str, str]) -> None:
    seed_sessions(env, skill=False)
    run(env, "sleep", "run", "--now", "--dry-run")
    (last,) = json.loads(run(env, "sleep", "history", "--json").stdout)
    assert (last["status"], bool(last["dry_run"])) == ("dry-run", True)
    assert re.search(
        r"Nightly: Last night \(\d{4}-\d\d-\d\d\): dry-run \(", nightly_line(run(env, "status").stdout)
    )


def test_a_skill_installed_nowhere_is_skipped_and_the_night_says_so(env: dict[str, str]) -> None:
    seed_sessions(env)
    run(env, "install", "claude-code")
    run(env, "uninstall", "claude-code")  # removes the skill from the only tool it was installed to
    report = json.loads(run(env, "sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["skill"] == "release-notes" and outcome["status"] == "skipped", outcome
    assert outcome["reason"].startswith("installed nowhere: skipped")
    assert report["status"] == "nothing-to-do" and not report["missing"]
    assert "release-notes: installed nowhere: skipped" in nightly_line(run(env, "status").stdout)
    # Put back: last night's note does not claim it is still installed nowhere.
    run(env, "install", "claude-code")
    line = nightly_line(run(env, "status").stdout)
    assert "release-notes: skipped, installed nowhere then; installed again since" in line
    assert "installed nowhere: skipped" not in line


def test_status_leads_with_the_missing_optimizer_key_and_a_stored_key_fixes_it(env: dict[str, str]) -> None:
    seed_sessions(env)
    for key, value in {
        "optimizer.backend": "openai",
        "optimizer.model": "gpt-5.5",
        "optimizer.base_url": "http://127.0.0.1:9/v1",
        "optimizer.api_key_env": "NIGHT_OPT_KEY",
        "night.label_with_model": "false",  # no model call while mining: the endpoint is a closed port
    }.items():
        run(env, "config", "set", key, value)
    assert run(env, "sleep", "run", "--now", check=False).returncode == 1
    line = nightly_line(run(env, "status").stdout)
    assert re.match(r"Nightly: Last night \(\d{4}-\d\d-\d\d\): failed \(", line), line
    assert (
        ", trained nothing: the optimizer's key NIGHT_OPT_KEY is neither set in the environment nor stored "
        "in skillopt's keys file"
    ) in line
    assert "skillopt keys set NIGHT_OPT_KEY" in line
    status = json.loads(run(env, "status", "--json").stdout)["nightly"]
    assert status["attention"].startswith("last night trained nothing: the optimizer's key NIGHT_OPT_KEY")

    stored = subprocess.run(
        [SKILLOPT, "keys", "set", "NIGHT_OPT_KEY"],
        env=env,
        input="sk-night-0123456789\n",
        text=True,
        capture_output=True,
        timeout=60,
    )
    assert stored.returncode == 0, stored.stderr
    assert "NIGHT_OPT_KEY is in the keys file now: the next night will find it" in run(env, "status").stdout
    report = json.loads(run(env, "sleep", "run", "--now", "--json", check=False).stdout)
    assert report["mining"]["families"] == 1  # the night got as far as checking what replays need
    assert not any("NIGHT_OPT_KEY" in m for m in report["missing"]), report["missing"]


KILLED_REPLAY = """
import os, signal, sys
from pathlib import Path
from skillopt_lib.sandbox import ReplayTask, create_workspace
create_workspace(ReplayTask(prompt="x", repo=sys.argv[1], commit=sys.argv[2]), Path(sys.argv[3]))
os.kill(os.getpid(), signal.SIGKILL)  # killed mid-replay: its workspace and worktree are left behind
"""


def test_the_daemons_start_settles_a_killed_night_and_removes_its_worktrees(
    env: dict[str, str], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo)]
    repo.mkdir()
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "-c", "user.name=t", "-c", "user.email=t@e.x", "commit", "-qm", "a"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    workspaces = Path(env["SKILLOPT_HOME"]) / "data" / "workspaces"
    killed = subprocess.Popen(
        [sys.executable, "-c", KILLED_REPLAY, str(repo), head, str(workspaces)], env=env
    )
    assert killed.wait(timeout=60) == -signal.SIGKILL
    listed = subprocess.run([*git, "worktree", "list"], capture_output=True, text=True).stdout
    assert str(workspaces) in listed and any(workspaces.iterdir())
    db = open_db(Path(env["SKILLOPT_HOME"]) / "data" / "skillopt.db")
    with db.conn:
        db.table("night_runs").insert(
            {
                "id": "killed-night",
                "trigger": "schedule",
                "status": "running",
                "dry_run": False,
                "started_at": utcnow_iso(),
                "heartbeat_at": utcnow_iso(),
                "pid": killed.pid,
                "summary_json": "{}",
            }
        )
    db.conn.close()
    run(env, "config", "set", "night.enabled", "false")
    daemon = subprocess.Popen(
        [SKILLOPT, "daemon", "run"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(
            lambda: [r for r in night_rows(env) if r["status"] == "interrupted"], what="the night settled"
        )
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
    (row,) = night_rows(env)
    assert "removed 1 replay workspace(s)" in row["error"]
    listed = subprocess.run([*git, "worktree", "list", "--porcelain"], capture_output=True, text=True).stdout
    assert listed.count("worktree ") == 1 and str(workspaces) not in listed
    assert list(workspaces.iterdir()) == []


def test_before_the_first_paid_night_status_and_sleep_run_say_what_a_night_may_cost(
    env: dict[str, str],
) -> None:
    env = dict(env, OPENAI_API_KEY="sk-test-not-used-0123456789")
    for key, value in {"optimizer.backend": "openai", "optimizer.model": "gpt-5.5"}.items():
        run(env, "config", "set", key, value)
    # gpt-5.5: $10 per million output tokens, so the 5M-token cap would allow $50: the $20 money cap rules
    line = nightly_line(run(env, "status").stdout)
    assert "one night may cost at most ≈ $20.00 est. with the optimizer's gpt-5.5" in line, line
    run(env, "config", "set", "night.max_tokens", "1000000")  # 1M tokens at $10 per million: $10
    data = json.loads(run(env, "status", "--json").stdout)["nightly"]
    assert data["cost_ceiling"]["most_usd"] == pytest.approx(10.0)

    night = run(env, "sleep", "run", "--now")  # nothing ingested: nothing to do, nothing spent
    assert "note: before a night spends money: one night may cost at most ≈ $10.00 est." in night.stderr
    assert "≈ $0.00 est." in night.stdout and "$0.0000" not in night.stdout
    assert "may cost at most" in nightly_line(run(env, "status").stdout)  # still no night has spent

    run(env, "config", "set", "optimizer.model", "my-own-model")
    unpriced = nightly_line(run(env, "status").stdout)
    assert "skillopt has no price for the optimizer's model my-own-model" in unpriced
    run(env, "config", "set", "prices.my-own-model.input", "2")
    run(env, "config", "set", "prices.my-own-model.output", "4")
    assert "at most ≈ $4.00 est." in nightly_line(run(env, "status").stdout)  # 1M tokens at $4

    db = open_db(Path(env["SKILLOPT_HOME"]) / "data" / "skillopt.db")
    with db.conn:
        db.table("night_runs").insert(
            {
                "id": "paid-night",
                "trigger": "schedule",
                "status": "completed",
                "dry_run": False,
                "started_at": utcnow_iso(),
                "finished_at": utcnow_iso(),
                "pid": 1,
                "summary_json": json.dumps({"spend": {"cost_usd": 0.42}}),
            }
        )
    db.conn.close()
    assert "may cost at most" not in run(env, "status").stdout
    assert "note:" not in run(env, "sleep", "run", "--now").stderr
