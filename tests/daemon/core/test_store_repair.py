"""A store whose interior pages are garbled (its header intact): every command says so in one error with the
repair to run, and `skillopt doctor --repair` keeps a copy, recovers what it can and reads the logs again."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

from testkit import cli
from testkit.ingest_helpers import write_claude_session
from testkit.ingest_home import Env, env  # noqa: F401

SESSIONS = 40


def _garble_interior(db: Path) -> bytes:
    """Overwrite one leaf page in the middle of each session table with garbage; the header (page 1), the
    schema and every other page stay as they were."""
    con = sqlite3.connect(db)
    try:
        page_size = con.execute("PRAGMA page_size").fetchone()[0]
        leaves: dict[str, list[int]] = {}
        for name, pageno in con.execute(
            "SELECT name, pageno FROM dbstat WHERE pagetype = 'leaf' "
            "AND name IN ('sessions', 'turns', 'tool_calls') ORDER BY pageno"
        ):
            leaves.setdefault(name, []).append(pageno)
    finally:
        con.close()
    data = bytearray(db.read_bytes())
    for pages in leaves.values():
        assert len(pages) >= 3, "the store is too small to damage only its middle"
        start = (pages[len(pages) // 2] - 1) * page_size
        data[start : start + page_size] = b"\xa5" * page_size
    db.write_bytes(bytes(data))
    return bytes(data)


def _counts(db: Path) -> tuple[int, int, int]:
    con = sqlite3.connect(db)
    try:
        return tuple(  # type: ignore[return-value]
            con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("sessions", "turns", "tool_calls")
        )
    finally:
        con.close()


def test_a_damaged_store_gives_one_clear_error_and_doctor_repair_rebuilds_it(env: Env) -> None:  # noqa: F811
    for i in range(SESSIONS):
        write_claude_session(env.projects, f"s{i:03d}", turns=6, cwd=f"/srv/p{i % 5}", day=1 + i % 27)
    environ = env.environ()
    cli.run("ingest", "--quiet", env=environ, check=True)
    whole = _counts(env.db)
    assert whole[0] == SESSIONS
    damaged = _garble_interior(env.db)

    for args in (["sessions", "list"], ["ingest", "--backfill", "--quiet"], ["status"]):
        r = cli.run(*args, env=environ)
        assert "Traceback" not in r.stderr, (args, r.stderr)
        if r.returncode:
            assert r.returncode == 5, (args, r.stderr)
            assert "is damaged" in r.stderr and "skillopt doctor --repair" in r.stderr, (args, r.stderr)
    r = cli.run("sessions", "list", env=environ)
    assert r.returncode == 5 and "malformed" in r.stderr

    doctor = cli.run("doctor", env=environ)
    assert doctor.returncode == 5 and "Traceback" not in doctor.stderr
    assert "damaged" in doctor.stdout and "--repair" in doctor.stdout

    r = cli.run("doctor", "--repair", "--json", env=environ)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    backup = Path(report["backup"])
    assert backup.parent == env.skillopt_home / "data" / "backups"
    assert backup.read_bytes() == damaged, "the damaged file is kept exactly as it was found"
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert 0 < report["recovered"]["turns"] < whole[1], "what could be read was recovered, not all of it"
    assert report["logs_read"] == SESSIONS and report["sessions_after"] == SESSIONS
    assert report["integrity"] == "ok"

    # Everything lost came back from the logs, nothing doubled, and the counts shown agree with the rows.
    assert _counts(env.db) == whole
    listed = cli.run_json("sessions", "list", "--limit", "100", env=environ)
    assert len(listed) == SESSIONS
    assert {s["turn_count"] for s in listed} == {14} and {s["tool_call_count"] for s in listed} == {6}
    assert cli.run("doctor", env=environ).returncode == 0
    assert stat.S_IMODE(env.db.stat().st_mode) == 0o600

    human = cli.run("doctor", "--repair", env=environ, check=True).stdout
    assert "copied to" in human and "sessions: 40 recovered, 40 after reading 40 session logs" in human
    assert "skill registry: 0 versions recovered" in human


def test_repair_refuses_while_the_daemon_runs_and_without_a_database(env: Env) -> None:  # noqa: F811
    environ = env.environ()
    r = cli.run("doctor", "--repair", env=environ)
    assert r.returncode == 5 and "no database" in r.stderr
    cli.run("ingest", "--quiet", env=environ, check=True)
    pid_file = env.skillopt_home / "data" / "daemon.pid"
    pid_file.write_text(f"{os.getpid()}\n")  # this test's own process: alive
    r = cli.run("doctor", "--repair", env=environ)
    assert r.returncode == 5 and "skillopt daemon stop" in r.stderr
    assert not (env.skillopt_home / "data" / "backups").exists()
