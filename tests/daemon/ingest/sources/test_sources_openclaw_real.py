"""`skillopt ingest --tool openclaw` on the database the real, pinned OpenClaw writes during this test run,
driven by the scripted model server, then on the same database after the session went on."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from skillopt_lib.testing import Match, Rule, Script, Step, bash
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit import cli
from testkit.fixtures import require
from testkit.openclaw_cli import openclaw_env, run_openclaw

from .helpers import git_repo

pytestmark = pytest.mark.agent_cli

FAILING = "python3 -c 'import sys; print(\"FAILED tests/test_x.py::test_a\"); sys.exit(3)'"
SCRIPT = Script(
    rules=[
        Rule(
            name="fix",
            match=Match(user="fix the failing test"),
            steps=[Step(text="Running the tests.", tool_calls=[bash(FAILING)]), Step(text="Fixed.")],
        ),
        Rule(name="hello", match=Match(user="say hello"), steps=[Step(text="Hello there.")]),
    ]
)


def skillopt(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return cli.run(*args, env=env, timeout=300)


def listed_sessions(env: dict[str, str]) -> list[dict[str, object]]:
    res = skillopt(env, "ingest", "--tool", "openclaw", "--json", "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    listed = skillopt(env, "sessions", "list", "--json", "--all")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    return rows if isinstance(rows, list) else rows.get("sessions", rows)


def test_ingest_reads_openclaw_sessions_from_its_database(tmp_path: Path) -> None:
    clis = ac.locate_agent_clis()
    require(clis.openclaw is not None, clis.why_missing("openclaw"))
    assert clis.openclaw is not None
    project = tmp_path / "project"
    commit = git_repo(project)
    home = tmp_path / "home"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "SKILLOPT_HOME": str(tmp_path / "skillopt-home"),
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),  # the checkout under test, not another install
    }
    with ScriptedServer(SCRIPT, expected_key=ac.DEFAULT_API_KEY) as server:
        oenv = openclaw_env(home, server.base_url_openai, project, node_dir=clis.node24)
        run = run_openclaw(clis.openclaw, "fix the failing test", session_id="s-one", cwd=project, env=oenv)
        assert run.returncode == 0 and run.transcript is not None, run.describe()
        (row,) = listed_sessions(env)
        assert row["tool"] == "openclaw" and row["session_id"] == "s-one"
        assert row["project_path"] == str(project.resolve())
        assert row["repo_commit"] == commit
        assert row["tool_version"] == "4"
        first_turns = row["turn_count"]

        again = run_openclaw(clis.openclaw, "say hello", session_id="s-one", cwd=project, env=oenv)
        assert again.returncode == 0, again.describe()
    (row,) = listed_sessions(env)  # the database changed in place: the session grew, nothing doubled
    assert isinstance(first_turns, int) and row["turn_count"] == first_turns + 2
