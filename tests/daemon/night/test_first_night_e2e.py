"""A new Claude Code user's first nights, for real, with nothing configured: a fresh HOME with only the
real `claude` CLI (signed in to the scripted model server), `skillopt install claude-code`, real sessions
in which the user corrects the agent, and a night started by the daemon's own schedule.

Said yes: the night uses `claude-code-chat` (the user's login) as its optimizer and judge and proposes the
rule the user kept asking for. Said no: the night spends nothing (the model server sees no request at all
while it runs) and status says how to enable it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.core.store import open_db
from skillopt_lib.testing.script import Match, Rule, Script, Step
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.fixtures import require
from testkit.night_scenario import (
    SIGN_OFF,
    World,
    _edits,
    make_world,
    night_script,
    record_sessions,
    restore,
    snapshot,
)

pytestmark = [pytest.mark.timeout(900), pytest.mark.agent_cli, pytest.mark.slow]

# Two sessions to learn from and four to judge on: the fewest from which the gate can propose.
TEAMS = ["platform", "billing", "search", "mobile", "infra", "growth"]
ANALYST = "skillopt role: failure analyst"


def login_script() -> Script:
    """The night scenario's agent, with the optimizer and the judge reached the way `claude-code-chat`
    reaches them: as `claude -p` prompts on the Anthropic API (their instructions inside the prompt)."""
    base = night_script()
    agent = [r for r in base.rules if r.name.startswith("agent-")]
    chat = [
        Rule(
            "login-analyst",
            Match(api="anthropic", user=ANALYST),
            [Step(text=_edits(f"Always end report.md with a final line `{SIGN_OFF}`."))],
        ),
        Rule(
            "login-judge",
            Match(api="anthropic", user="You grade whether"),
            [Step(text=json.dumps({"items": [{"index": 0, "satisfied": True}]}))],
        ),
        Rule("login-other", Match(api="anthropic", user="skillopt role:"), [Step(text="{}")]),
    ]
    return Script(rules=[*chat, *agent], default_text="{}")


def night_rows(w: World) -> list[dict[str, Any]]:
    path = w.skillopt_home / "data" / "skillopt.db"
    db = open_db(path)
    if "night_runs" not in db.table_names():
        return []
    return list(db.query("SELECT * FROM night_runs ORDER BY started_at"))


def scheduled_night(w: World, timeout: float = 600.0) -> dict[str, Any]:
    """Start the daemon with a schedule that fires every few seconds, wait for its first night to end, stop
    it; returns that night's row."""
    w.skillopt("config", "set", "night.schedule", "*/3 * * * * *")
    daemon = subprocess.Popen(
        [str(Path(w.skillopt_env()["PATH"].split(":")[0]) / "skillopt"), "daemon", "run"],
        env=w.skillopt_env(),
        cwd=w.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = [r for r in night_rows(w) if r["trigger"] == "schedule" and r["status"] != "running"]
            if done:
                return done[0]
            assert daemon.poll() is None, (
                f"the daemon exited: {daemon.stderr.read() if daemon.stderr else ''}"
            )
            time.sleep(0.5)
        raise AssertionError("no scheduled night finished in time")
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            raise


def test_a_new_user_says_yes_and_gets_a_proposal_or_says_no_and_nothing_is_spent(
    tmp_path: Path,
) -> None:
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    with ScriptedServer(login_script(), expected_key=ac.DEFAULT_API_KEY) as server:
        w = make_world(tmp_path / "w", server, Path(str(clis.claude)))
        # Only what the test machine needs: where the pinned CLI is, the dashboard on any free port (other
        # runs share this machine), and the scripted server's variables passed to replays.
        w.skillopt("config", "set", "tools.claude-code.cli", str(w.claude))
        w.skillopt("config", "set", "ui.port", "0")
        allow = ["PATH", "LANG", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]
        w.skillopt("config", "set", "replay.env_allowlist", json.dumps(allow))
        installed = w.skillopt("install", "claude-code")
        # Not a terminal: the install says what it would use and how to answer. Signed in with a key, the
        # login is billed per token, so the money cap is named first, then the login's own caps.
        assert "skillopt config set optimizer.consent yes" in installed.stderr
        said = " ".join(installed.stderr.split())
        assert "billed to" in said and "a night stops at $20.00 a night, est. (night.max_cost_usd)" in said
        assert "also at most 60 replays and 4,000,000 tokens a night" in said
        record_sessions(w, TEAMS)
        before = json.loads(w.skillopt("status", "--json").stdout)["nightly"]
        assert before["last"] is None and before["model"]["backend"] == "claude-code-chat"
        assert "at most 60 replays" in before["model"]["question"]
        assert any("optimizer.consent yes" in x for x in before["lines"])
        snapshot(w)

        # The user says no: the night spends nothing, and status says how to enable it.
        w.skillopt("config", "set", "optimizer.consent", "no")
        seen = len(server.requests)
        row = scheduled_night(w)
        assert len(server.requests) == seen, "a declined default must not reach the model at all"
        assert row["status"] == "failed"
        line = next(x for x in w.skillopt("status").stdout.splitlines() if x.startswith("Nightly:"))
        assert "you said no" in line and "skillopt config set optimizer.consent yes" in line

        # The user says yes: the same first night uses their login and proposes the rule.
        restore(w)
        w.skillopt("config", "set", "optimizer.consent", "yes")
        started = len(server.requests)
        row = scheduled_night(w)
        report = json.loads(row["summary_json"])
        assert report["model"]["backend"] == "claude-code-chat" and report["model"]["source"] == "default"
        assert row["status"] == "completed", report
        analyst = [r for r in server.requests[started:] if r.rule == "login-analyst"]
        assert analyst, "the optimizer ran through the user's claude login"
        spend = report["spend"]
        assert spend["replays"] <= 60 and spend["tokens"] <= 4_000_000
        status = json.loads(w.skillopt("status", "--json").stdout)
        (proposal,) = status["pending"]["items"]
        assert proposal["skill"] == "report-writer"
        assert SIGN_OFF in w.skillopt("diff", proposal["short_id"]).stdout
        print(
            "first night:",
            json.dumps(
                {"spend": spend, "analyst_calls": len(analyst), "requests": len(server.requests) - started}
            ),
        )
