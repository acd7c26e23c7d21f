"""A real night, watched while it runs and then killed with `kill -9` in the middle of a replay.

Sessions are written by the real `claude` CLI and replayed by it (`testkit/night_scenario.py`);
for the night itself the scripted agent never answers, so every replay hangs until the night is killed.
While it runs, `skillopt status` (text and JSON) and the dashboard's overview show what it is on and its
replays done of planned; after the kill, the next look at the nights settles it as interrupted and removes
its workspaces and the `git worktree` registrations they made in the user's repository.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillopt_lib.testing import Fault, Match, Rule, Script, Step
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit import cli
from testkit.fixtures import require
from testkit.night_scenario import World, make_world, night_script, record_sessions

TEAMS = ["platform", "billing", "search", "mobile", "infra", "growth", "design", "sales"]
AGENT_RULES = ("agent-with-rule", "agent-without-rule")


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(night_script(), expected_key=ac.DEFAULT_API_KEY) as srv:
        yield srv


@pytest.fixture(scope="module")
def claude_path() -> Path:
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    return Path(str(clis.claude))


def stuck_agent() -> Script:
    """The night's script with an agent that never answers: each replay hangs until it is stopped."""
    base = night_script()
    hang = Rule("agent-hangs", Match(api="anthropic", user="report"), [Step(fault=Fault(hang=True))])
    return Script(rules=[hang, *(r for r in base.rules if r.name not in AGENT_RULES)], default_text="{}")


def worktrees(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


def processes_in(folder: Path) -> list[int]:
    """Processes whose working directory lies in `folder` (the replayed agents a killed night leaves)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd").startswith(str(folder)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def nightly(w: World) -> dict[str, Any]:
    section: dict[str, Any] = json.loads(w.skillopt("status", "--json").stdout)["nightly"]
    return section


def overview(w: World, monkeypatch: pytest.MonkeyPatch) -> str:
    """The dashboard's overview page, as a signed-in browser gets it."""
    from fastapi.testclient import TestClient

    monkeypatch.setenv("SKILLOPT_HOME", str(w.skillopt_home))
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.service.dashboard import ensure_token
    from skillopt_daemon.web.app import create_app

    token = ensure_token()
    with TestClient(create_app(load_settings()), base_url="http://127.0.0.1:8765") as client:
        assert client.get(f"/?token={token}", follow_redirects=False).status_code == 303
        return str(client.get("/").text)


@pytest.mark.timeout(1200)  # eight real sessions recorded, then a night up to its first replay
def test_a_running_night_shows_its_progress_and_kill_9_mid_replay_leaves_nothing_behind(
    tmp_path: Path, server: ScriptedServer, claude_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = make_world(tmp_path / "world", server, claude_path)
    record_sessions(w, TEAMS)
    w.configure("opt-useful")
    workspaces = w.skillopt_home / "data" / "workspaces"
    server.set_script(stuck_agent())
    night = subprocess.Popen(
        [str(cli.SKILLOPT), "sleep", "run", "--now"],
        env=w.skillopt_env(),
        cwd=w.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    orphans: list[int] = []
    try:

        def replaying() -> dict[str, Any] | None:
            section = nightly(w)
            running = section.get("running") or {}
            if (
                running.get("replays_done")
                and running.get("replays_planned")
                and len(worktrees(w.project)) > 1
            ):
                return section
            return None

        section = wait_for(replaying, 420, "the night's first replay")
        running = section["running"]
        assert running["pid"] == night.pid and running["skill"] == "report-writer"
        assert (running["index"], running["total"]) == (1, 1)
        assert 1 <= running["replays_done"] <= running["replays_planned"] <= 200
        line = next(x for x in w.skillopt("status").stdout.splitlines() if x.startswith("Nightly:"))
        assert line.startswith("Nightly: Tonight (running): started "), line
        assert "training report-writer (1 of 1)" in line and "replays planned" in line
        page = overview(w, monkeypatch)
        assert 'id="night-progress"' in page and "Tonight (running): started " in page

        night.send_signal(signal.SIGKILL)
        night.wait(timeout=30)
        orphans = processes_in(workspaces)
        left = worktrees(w.project)
        assert len(left) > 1 and any(str(workspaces) in p for p in left), left  # what kill -9 leaves
        assert any(workspaces.iterdir())

        after = nightly(w)  # the next look at the nights settles the killed one
        assert after["running"] is None
        assert after["last"]["status"] == "interrupted", after["last"]
        assert "removed" in after["last"]["error"] and "replay workspace" in after["last"]["error"]
        assert worktrees(w.project) == [str(w.project.resolve())]
        assert not list((w.project / ".git" / "worktrees").glob("*"))
        assert list(workspaces.iterdir()) == []
        assert not list((w.skillopt_home / "data" / "runs").glob("night-*/progress.json"))
        assert "Tonight (running)" not in w.skillopt("status").stdout
    finally:
        if night.poll() is None:
            night.kill()
            night.wait(timeout=30)
        for pid in orphans:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        server.set_script(night_script())
