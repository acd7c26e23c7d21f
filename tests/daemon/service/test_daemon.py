"""The daemon as a real process: live tailing, hook notes, one per home, graceful stop, kill -9 recovery."""

from __future__ import annotations

import json
import os
import plistlib
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testkit.ingest_helpers import (
    PROJECT_ROOT,
    claude_line,
    cli,
    dump,
    query,
    start_daemon,
    wait_for,
    write_claude_session,
    write_codex_session,
)
from testkit.ingest_home import Env
from testkit.ingest_home import env as env  # the daemon runs in the ingest tests' installation


def _session_ids(env: Env) -> set[str]:
    return {r[0] for r in query(env.db, "SELECT session_id FROM sessions")}


def _meta(env: Env, key: str) -> str | None:
    rows = query(env.db, "SELECT value FROM ingest_meta WHERE key = ?", [key])
    return rows[0][0] if rows else None


def _running_pid(env: Env) -> int | None:
    pid_file = env.skillopt_home / "data" / "daemon.pid"
    try:
        return int(pid_file.read_text())
    except (OSError, ValueError):
        return None


def _gone(pid: int) -> bool:
    """Exited (a zombie waiting for a reaper counts: the daemon was started by a process that is gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return state in ("Z", "X")


def _stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=30)


def test_daemon_follows_sessions_live(env: Env) -> None:
    write_claude_session(env.projects, "before", turns=2)
    log = env.root / "daemon.log"
    proc = start_daemon(env.environ(), log)
    try:
        wait_for(lambda: _meta(env, "backfill_done_at"), timeout=30)
        assert _session_ids(env) == {"before"}

        # A new session, written by an agent while the daemon runs, is queryable within a second.
        path = env.projects / "-tmp-live" / "live.jsonl"
        path.parent.mkdir(parents=True)
        with open(path, "ab") as f:
            f.write(claude_line("user", "l1", "live", cwd="/tmp/live", content="add a changelog entry"))
        wait_for(lambda: "live" in _session_ids(env), timeout=1.0)

        # Each appended line too.
        with open(path, "ab") as f:
            f.write(claude_line("assistant", "l2", "live", parent="l1", content="added it"))
        wait_for(lambda: query(env.db, "SELECT 1 FROM turns WHERE key = 'l2'"), timeout=1.0)

        # A log root that did not exist when the daemon started is picked up once it appears.
        assert not env.codex.exists()
        write_codex_session(env.codex, "0199a0b1-aaaa-bbbb-cccc-00000000000a")
        wait_for(lambda: "0199a0b1-aaaa-bbbb-cccc-00000000000a" in _session_ids(env), timeout=5)

        # A hook's note makes the daemon read a transcript it does not watch (in the tool's home, outside
        # the folders it follows), at once.
        elsewhere = env.claude / "other" / "projects" / "-tmp-x"
        elsewhere.mkdir(parents=True)
        hooked = elsewhere / "hooked.jsonl"
        hooked.write_bytes(claude_line("user", "h1", "hooked", content="from a hook"))
        note = {"session_id": "hooked", "transcript_path": str(hooked), "cwd": "/tmp", "reason": "other"}
        res = cli(env.environ(), "notify", "session-end", stdin=json.dumps(note))
        assert res.returncode == 0, res.stderr
        wait_for(lambda: "hooked" in _session_ids(env), timeout=2)
        assert wait_for(lambda: not list((env.skillopt_home / "data" / "inbox").glob("*.json")), timeout=2)

        # One daemon per SKILLOPT_HOME: a second one refuses, naming the first.
        second = subprocess.run(
            [sys.executable, "-m", "skillopt_daemon.service.daemon"],
            env=env.environ(),
            capture_output=True,
            text=True,
            timeout=30,
            cwd=str(PROJECT_ROOT),
        )
        assert second.returncode == 7
        assert f"already running (pid {proc.pid})" in second.stderr
        assert proc.poll() is None

        res = cli(env.environ(), "daemon", "status", "--json")
        info = json.loads(res.stdout)
        assert info["running"] is True and info["pid"] == proc.pid
        assert info["ingest"]["sessions"]["claude-code"] == 3

        res = cli(env.environ(), "daemon", "stop")
        assert res.returncode == 0 and f"pid {proc.pid}" in res.stdout
        assert proc.wait(timeout=10) == 0
        assert _running_pid(env) is None
        assert "offsets saved" in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()


def _corpus(env: Env, n: int = 120) -> None:
    for i in range(n):
        write_claude_session(env.projects, f"bulk-{i:04d}", turns=25, cwd=f"/tmp/bulk{i % 5}", pad=1500)


def _offsets_on_line_boundaries(env: Env) -> None:
    for path, offset in query(env.db, 'SELECT path, "offset" FROM ingest_files'):
        if offset:
            with open(path, "rb") as f:
                f.seek(offset - 1)
                assert f.read(1) == b"\n", f"{path} offset {offset} is inside a line"


@pytest.mark.slow
def test_sigterm_and_kill_9_mid_backfill_then_restart_equal_a_clean_run(env: Env) -> None:
    _corpus(env)

    # The reference: one uninterrupted ingest (the same pipeline as `skillopt ingest`) into another home.
    clean_home = env.root / "clean"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKILLOPT_HOME", str(clean_home))
        from skillopt_daemon import ingest
        from skillopt_daemon.core.config import load_settings
        from skillopt_daemon.core.store import open_db

        settings = load_settings()
        db = open_db()
        pipeline = ingest.Pipeline(db, ingest.load_sources(settings), settings)
        pipeline.ingest_paths(pipeline.discover())
        db.close()
    clean = dump(clean_home / "data" / "skillopt.db")
    assert len(clean["sessions"]) == 120

    log = env.root / "daemon.log"
    # Groups of batches share a transaction; short ones, so that both stops land in the middle of the run
    # (the kill -9 most likely with a group open, which the restart must then read again).
    environ = env.environ(SKILLOPT_INGEST__BATCH_LINES="50", SKILLOPT_INGEST__GROUP_COMMIT_S="0.05")

    # 1. SIGTERM during the backfill: the daemon finishes its batch and exits cleanly.
    proc = start_daemon(environ, log)
    wait_for(lambda: len(_session_ids(env)) >= 5, timeout=60)
    assert _meta(env, "backfill_done_at") is None
    assert _stop(proc) == 0
    assert _meta(env, "backfill_done_at") is None
    _offsets_on_line_boundaries(env)
    partial = len(_session_ids(env))
    assert 5 <= partial < 120

    # 2. Restart, then kill -9 in the middle of the rest.
    proc = start_daemon(environ, log)
    wait_for(lambda: len(_session_ids(env)) >= partial + 5, timeout=60)
    assert _meta(env, "backfill_done_at") is None
    proc.kill()
    proc.wait(timeout=10)
    _offsets_on_line_boundaries(env)

    # 3. Restart and let it finish: the store equals the clean run's, row for row.
    proc = start_daemon(environ, log)
    try:
        wait_for(lambda: _meta(env, "backfill_done_at"), timeout=120)
    finally:
        assert _stop(proc) == 0
    assert dump(env.db) == clean


def test_notify_returns_without_touching_the_database(env: Env) -> None:
    payload = {
        "session_id": "abc",
        "transcript_path": "/tmp/x/abc.jsonl",
        "cwd": "/tmp/x",
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
        "unrelated": "not kept",
    }
    res = cli(env.environ(), "notify", "session-end", stdin=json.dumps(payload))
    assert res.returncode == 0, res.stderr
    assert not env.db.exists()  # no database opened, let alone locked
    notes = list((env.skillopt_home / "data" / "inbox").glob("*.json"))
    assert len(notes) == 1
    assert stat.S_IMODE(notes[0].stat().st_mode) == 0o600
    note = json.loads(notes[0].read_text())
    assert note["event"] == "session-end" and note["transcript_path"] == "/tmp/x/abc.jsonl"
    assert "unrelated" not in note

    # A malformed hook input never fails the agent's hook.
    res = cli(env.environ(), "notify", "session-start", stdin="{not json")
    assert res.returncode == 0
    assert "not JSON" in res.stderr


def test_install_service_writes_unit_files(env: Env) -> None:
    res = cli(env.environ(), "daemon", "install-service", "--platform", "linux", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    unit = Path(out["path"])
    assert unit == env.home / ".config" / "systemd" / "user" / "skillopt.service"
    text = unit.read_text()
    start = re.search(r"^ExecStart=(\S+) -m skillopt_daemon\.service\.daemon$", text, re.MULTILINE)
    assert start is not None, text
    python = Path(start.group(1))  # skillopt's own interpreter, whichever of its names started it
    assert python.parent == Path(sys.executable).parent and python.resolve() == Path(sys.executable).resolve()
    assert f'Environment="SKILLOPT_HOME={env.skillopt_home}"' in text
    assert "WantedBy=default.target" in text and "Restart=on-failure" in text
    assert "systemctl --user enable --now skillopt.service" in out["enable"]

    from skillopt_daemon.service import service_files

    plist_path = service_files.install_service("macos").path  # in process: the CLI path is covered above
    assert plist_path == env.home / "Library" / "LaunchAgents" / "dev.skillopt.daemon.plist"
    plist = plistlib.loads(plist_path.read_bytes())
    assert plist["ProgramArguments"] == [sys.executable, "-m", "skillopt_daemon.service.daemon"]
    assert plist["RunAtLoad"] is True
    assert plist["EnvironmentVariables"]["SKILLOPT_HOME"] == str(env.skillopt_home)
    assert not (env.skillopt_home / "data" / "daemon.pid").exists()  # nothing was started


def test_start_and_stop_in_the_background(env: Env) -> None:
    res = cli(env.environ(), "daemon", "start")
    assert res.returncode == 0, res.stderr
    pid = _running_pid(env)
    assert pid is not None and f"pid {pid}" in res.stdout
    try:
        again = cli(env.environ(), "daemon", "start")
        assert again.returncode == 7 and f"pid {pid}" in again.stderr
        log = env.skillopt_home / "data" / "logs" / "daemon.log"
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
    finally:
        res = cli(env.environ(), "daemon", "stop")
    assert res.returncode == 0
    assert _running_pid(env) is None
    assert _gone(pid)  # `stop` returns once the process has exited, not just released its lock
    res = cli(env.environ(), "daemon", "status")
    assert "not running" in res.stdout


def test_daemon_reports_faults_and_keeps_running(env: Env) -> None:
    write_claude_session(env.projects, "ok", turns=1)
    (env.projects / "-tmp-bad").mkdir()
    os.symlink(env.projects, env.projects / "-tmp-bad" / "loop")
    bad = env.projects / "-tmp-bad" / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe garbage\n" + claude_line("user", "b1", "bad", content="still read"))
    proc = start_daemon(env.environ(), env.root / "daemon.log")
    try:
        wait_for(lambda: _meta(env, "backfill_done_at"), timeout=30)
        time.sleep(0.7)  # a couple of rescans: problems are reported once, not on every scan
        assert proc.poll() is None
        assert {"ok", "bad"} <= _session_ids(env)
        res = cli(env.environ(), "status", "--json")
        assert res.returncode == 0, res.stderr
        section = json.loads(res.stdout)["sessions"]
        assert section["errors_24h"].get("symlink-loop") == 1
        assert "invalid-json" in section["errors_24h"] or "invalid-utf8" in section["errors_24h"]
    finally:
        assert _stop(proc) == 0


@pytest.mark.slow
def test_a_hook_note_is_served_during_a_long_backfill(env: Env) -> None:
    _corpus(env, 80)
    # A commit after every batch: the backfill takes long enough for the note to arrive in the middle.
    environ = env.environ(SKILLOPT_INGEST__BATCH_LINES="20", SKILLOPT_INGEST__GROUP_COMMIT_S="0")
    proc = start_daemon(environ, env.root / "daemon.log")
    try:
        wait_for(lambda: len(_session_ids(env)) >= 2, timeout=60)
        elsewhere = env.claude / "elsewhere" / "-tmp-y"  # the tool's home, but no folder the backfill reads
        elsewhere.mkdir(parents=True)
        hooked = elsewhere / "urgent.jsonl"
        hooked.write_bytes(claude_line("user", "x1", "urgent", content="just finished"))
        from skillopt_daemon.ingest.notes import write_note

        # Written in process: the command's own start-up time is not what this test is about.
        write_note("session-end", {"session_id": "urgent", "transcript_path": str(hooked)})
        wait_for(lambda: "urgent" in _session_ids(env), timeout=60)
        wait_for(lambda: _meta(env, "backfill_done_at"), timeout=120)
        (seen,) = query(env.db, "SELECT first_seen_at FROM sessions WHERE session_id = 'urgent'")[0]
        assert seen < _meta(env, "backfill_done_at")  # read in the middle of the backfill, not after it
    finally:
        assert _stop(proc) == 0
