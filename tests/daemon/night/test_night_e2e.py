"""One whole night, for real: sessions written by the real `claude` CLI → ingest → mining → replays with the
real CLI → scripted optimizer → gate → proposal → approve → the agent receives the learned rule.

The scenario (`skillopt_lib.testing.night_scenario`): the agent's weekly reports fail the project's check until
its skill tells it to end the report with a sign-off line; the user taught that by correcting the agent in
every session. The night must turn the corrections into a skill edit, prove it on held-out replays, and wait
for the user's approval. The negatives (a leaking candidate, a no-op edit, a budget cap) run the same night
with other optimizer models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.fixtures import require

from skillopt_lib.testing import agent_clis as ac
from skillopt_lib.testing.night_scenario import (
    CHECK,
    SIGN_OFF,
    World,
    make_world,
    night_script,
    record_sessions,
    restore,
    snapshot,
)
from skillopt_lib.testing.scripted_server import ScriptedServer

TEAMS = ["platform", "billing", "search", "mobile", "infra", "growth", "design", "sales"]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(night_script(), expected_key=ac.DEFAULT_API_KEY) as srv:
        yield srv


@pytest.fixture(scope="module")
def claude_path() -> Path:
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    return Path(str(clis.claude))


@pytest.fixture(scope="module")
def sessions_home(
    tmp_path_factory: pytest.TempPathFactory, server: ScriptedServer, claude_path: Path
) -> World:
    """Eight real sessions in which the user corrects the agent, ingested once for every test here."""
    w = make_world(tmp_path_factory.mktemp("night"), server, claude_path)
    record_sessions(w, TEAMS)
    snapshot(w)
    return w


def test_a_night_proposes_the_rule_and_approval_reaches_the_agent(
    sessions_home: World, server: ScriptedServer
) -> None:
    w = restore(sessions_home)
    w.configure("opt-useful")
    sessions = json.loads(w.skillopt("sessions", "list", "--json").stdout)
    assert len(sessions) == len(TEAMS)

    tasks = json.loads(w.skillopt("tasks", "list", "--json").stdout)
    assert tasks == []  # nothing mined before the first night
    run = w.skillopt("sleep", "run", "--now", "--json")
    report = json.loads(run.stdout)
    assert report["status"] == "completed", report
    (outcome,) = report["skills"]
    assert outcome["skill"] == "report-writer"
    assert outcome["status"] == "proposed", outcome
    assert outcome["baseline"] == 0.0 and outcome["candidate"] == 1.0

    families = json.loads(w.skillopt("tasks", "list", "--json").stdout)
    assert len(families) == 1 and families[0]["size"] == len(TEAMS)
    fam = json.loads(w.skillopt("tasks", "show", "--family", families[0]["id"], "--json").stdout)
    assert fam["checks"] == [CHECK]
    assert any(SIGN_OFF in r for r in fam["rubric"])
    # The optimizer's analysts never saw the rubric (the user's correction) nor the judge's instructions.
    analyst = [r for r in server.requests if (r.rule or "").startswith("analyst-")]
    assert analyst
    assert not any("must end with the line" in r.text() or "You grade whether" in r.text() for r in analyst)

    status = json.loads(w.skillopt("status", "--json").stdout)
    pending = status["pending"]["items"]
    assert [p["skill"] for p in pending] == ["report-writer"]
    proposal = pending[0]
    assert proposal["score_change"] == pytest.approx(1.0)
    diff = w.skillopt("diff", proposal["id"]).stdout
    assert f"+Always end report.md with a final line `{SIGN_OFF}`." in diff

    installed = w.home / ".claude" / "skills" / "report-writer" / "SKILL.md"
    assert SIGN_OFF not in installed.read_text()  # nothing reaches the agent before approval
    w.skillopt("approve", proposal["id"])
    assert SIGN_OFF in installed.read_text()

    server.clear_requests()
    final = ac.run_claude(
        w.claude,
        "write the weekly status report for the docs team into report.md",
        cwd=w.project,
        env=w.env,
        allowed_tools=("Bash", "Write", "Skill"),
    )
    assert final.returncode == 0, final.describe()
    shown = [r for r in server.requests if r.api == "anthropic"]
    assert any(f"final line `{SIGN_OFF}`" in r.text() for r in shown), (
        "the approved skill never reached the model"
    )
    assert (w.project / "report.md").read_text().rstrip().endswith(SIGN_OFF)


def test_a_candidate_that_copies_the_check_is_rejected_by_the_leak_guard(sessions_home: World) -> None:
    w = restore(sessions_home)
    w.configure("opt-leak")
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["status"] == "leak", outcome
    assert "check #1" in outcome["reason"]
    assert CHECK not in outcome["reason"]  # the reason names the check, never quotes it
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []


def test_a_no_op_edit_is_rejected_by_the_gate(sessions_home: World) -> None:
    w = restore(sessions_home)
    w.configure("opt-noop")
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["status"] == "no-improvement", outcome
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []


def test_a_budget_cap_stops_the_night_cleanly(sessions_home: World) -> None:
    w = restore(sessions_home)
    w.configure("opt-useful", max_replays=3)
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["status"] == "budget", outcome
    assert "replay cap (3)" in outcome["reason"]
    assert report["spend"]["replays"] == 3
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []
    history = json.loads(w.skillopt("sleep", "history", "--json").stdout)
    assert history[0]["status"] in ("completed", "budget")
