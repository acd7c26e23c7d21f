"""A full disk under SKILLOPT_HOME, for real (a small tmpfs): every command says the disk is full and what
to do, never that the database may be corrupt; `skillopt ingest` ends in one clear error; the daemon says
so once, backs off, shows it in `skillopt status`, and catches up once there is room, losing nothing."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import time
from collections.abc import Iterator

import pytest

from skillopt_daemon.ingest.pipeline import Pipeline
from skillopt_daemon.ingest.transactions import GROUP_MIN_FILES
from testkit.ingest_helpers import cli, start_daemon, wait_for, write_claude_session
from testkit.ingest_home import Env
from testkit.ingest_home import env as env  # the daemon runs in the ingest tests' installation
from testkit.ingest_home import pipeline as pipeline
from testkit.small_disk import SmallDisk, small_disk

BIG = {"turns": 300, "pad": 2000}  # about 1.5 MB of transcript each: more than the disk has left


@pytest.fixture
def disk(env: Env) -> Iterator[SmallDisk]:
    """SKILLOPT_HOME on its own small file system, with room for the store once nothing else fills it."""
    with small_disk(env.skillopt_home, 24 * 1024) as d:
        yield d


def _out(res: subprocess.CompletedProcess[bytes]) -> str:
    return res.stdout + res.stderr


def _says_disk_full(text: str) -> None:
    assert "is full" in text and "free some space" in text and "nothing stored is lost" in text, text
    assert "corrupt" not in text and "move it aside" not in text and "fresh one" not in text, text
    assert "Traceback" not in text, text


def _sessions(env: Env) -> dict[str, int]:
    res = cli(env.environ(), "sessions", "list", "--json")
    assert res.returncode == 0, _out(res)
    return {row["session_id"]: row["turn_count"] for row in json.loads(res.stdout)}


def test_commands_on_a_full_disk_say_so_and_not_that_the_database_is_corrupt(
    env: Env, disk: SmallDisk
) -> None:
    write_claude_session(env.projects, "kept", turns=2)
    assert cli(env.environ(), "ingest", "--quiet").returncode == 0
    disk.fill()

    for args in (["status"], ["sessions", "list"], ["history", "lint-fixer"]):
        res = cli(env.environ(), *args)
        assert res.returncode == 5, _out(res)
        _says_disk_full(_out(res))
        assert len([ln for ln in res.stderr.splitlines() if ln.startswith("error:")]) == 1
    res = cli(env.environ(), "doctor", "--json")
    assert res.returncode == 5
    (check,) = [c for c in json.loads(res.stdout)["checks"] if c["group"] == "database"]
    assert check["level"] == "error"
    _says_disk_full(check["detail"])

    disk.free_up()  # the whole fix: the same database, whole
    assert _sessions(env) == {"kept": 6}
    res = cli(env.environ(), "doctor", "--json")
    assert [c["level"] for c in json.loads(res.stdout)["checks"] if c["group"] == "database"] == ["ok"]


def test_ingest_on_a_full_disk_ends_in_one_clear_error_and_loses_nothing(env: Env, disk: SmallDisk) -> None:
    write_claude_session(env.projects, "small", turns=1)
    assert cli(env.environ(), "ingest", "--quiet").returncode == 0
    for i in range(3):
        write_claude_session(env.projects, f"big{i}", cwd=f"/tmp/big{i}", **BIG)
    disk.fill(leave=200_000)  # room to open the database, not to store these

    res = cli(env.environ(), "ingest", "--quiet")
    assert res.returncode == 5, _out(res)
    _says_disk_full(_out(res))
    assert "database or disk is full" in _out(res)
    assert len(res.stderr.strip().splitlines()) == 2  # the error, and what to do

    disk.free_up()
    res = cli(env.environ(), "ingest", "--quiet")
    assert res.returncode == 0, _out(res)
    assert _sessions(env) == {"small": 4, "big0": 602, "big1": 602, "big2": 602}


def _paused(env: Env) -> dict[str, object] | None:
    res = cli(env.environ(), "status", "--json")
    assert res.returncode == 0, _out(res)
    paused = json.loads(res.stdout)["sessions"]["paused"]
    return paused if isinstance(paused, dict) else None


def test_the_daemon_says_once_that_the_disk_is_full_backs_off_and_catches_up(
    env: Env, disk: SmallDisk
) -> None:
    write_claude_session(env.projects, "first", turns=1)
    log = env.root / "daemon.log"
    proc = start_daemon(env.environ(), log)
    try:
        wait_for(lambda: "first" in _sessions(env), timeout=60)
        disk.fill(leave=200_000)
        for i in range(3):
            write_claude_session(env.projects, f"big{i}", cwd=f"/tmp/big{i}", **BIG)
        wait_for(lambda: "ingest paused" in log.read_text(), timeout=60)
        time.sleep(12)  # a retry every 7 s used to log a traceback each time
        text = log.read_text()
        assert text.count("ingest paused") == 1, text
        assert "Traceback" not in text and "ingest pass failed" not in text, text
        _says_disk_full(text[text.index("ingest paused") :].splitlines()[0])
        assert "ingest resumes on its own" in text

        paused = _paused(env)
        assert paused is not None and paused["reason"] == "disk-full"
        status = _out(cli(env.environ(), "status"))
        (line,) = [ln for ln in status.splitlines() if ln.startswith("Sessions:")]
        assert re.search(r"ingest paused: the disk holding \S+ is full", line), line

        disk.free_up()
        wait_for(lambda: len(_sessions(env)) == 4, timeout=90, interval=0.5)
        assert _sessions(env) == {"first": 4, "big0": 602, "big1": 602, "big2": 602}
        assert wait_for(lambda: "ingest resumed" in log.read_text(), timeout=10)
        assert _paused(env) is None
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_files_read_in_a_transaction_the_full_disk_undid_are_read_again(
    env: Env, disk: SmallDisk, pipeline: Pipeline
) -> None:
    """A backfill shares transactions between files; when the full disk rolls one back, the files read
    to their end inside it are read again by the next rescan, as the daemon runs it."""
    names = [f"s{i}" for i in range(GROUP_MIN_FILES + 2)]
    for name in names:
        write_claude_session(env.projects, name, cwd=f"/tmp/{name}", turns=60, pad=2000)
    disk.fill(leave=600_000)
    with pytest.raises(sqlite3.OperationalError, match="full"):
        pipeline.ingest_paths(pipeline.discover())
    disk.free_up()
    pipeline.ingest_paths([(s, p) for s, p in pipeline.discover() if pipeline.needs_read(p)])
    stored = dict(pipeline.db.execute("SELECT session_id, turn_count FROM sessions").fetchall())
    assert stored == dict.fromkeys(names, 122)
