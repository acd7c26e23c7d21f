"""One whole night, for real: sessions written by the real `claude` CLI → ingest → mining → replays with the
real CLI → scripted optimizer → gate → proposal → approve → the agent receives the learned rule.

The scripted model plays a weekly-report task family: the agent's reports fail the project's check until
its skill tells it to end the report with a sign-off line. The user taught that by correcting the agent in
every session; the night must turn the corrections into a skill edit, prove it on held-out replays, and
wait for the user's approval. The negatives (a leaking candidate, a no-op edit, a budget cap) run the same
night with other optimizer models, chosen by model name in one script.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillopt.testing import agent_clis as ac
from skillopt.testing.script import Match, Rule, Script, Step, bash, call, write_file
from skillopt.testing.scripted_server import ScriptedServer

SIGN_OFF = "Reviewed-by: bot"
CHECK = "python3 check_report.py"
TEAMS = ["platform", "billing", "search", "mobile", "infra", "growth", "design", "sales"]
OPT_KEY_ENV = "NIGHT_TEST_OPTIMIZER_KEY"

CHECK_SCRIPT = f"""import sys
text = open("report.md").read() if __import__("os").path.exists("report.md") else ""
ok = text.rstrip().endswith({SIGN_OFF!r})
print("report ok" if ok else "report is missing its sign-off")
sys.exit(0 if ok else 1)
"""


def _edits(*contents: str) -> str:
    return json.dumps(
        {
            "failure_summary": [{"type": "report rejected by the project's check", "count": 2}],
            "reasoning": "reports keep failing the same way",
            "edits": [{"op": "append", "content": c, "rationale": "seen in every failure"} for c in contents],
        }
    )


def night_script() -> Script:
    agent_good = [
        Step(tool_calls=[call("Skill", {"skill": "report-writer"})]),
        Step(
            tool_calls=[
                write_file("report.md", f"# Weekly report\n\nAll good.\n\n{SIGN_OFF}\n"),
                bash(CHECK),
            ]
        ),
        Step(text="The report is written."),
    ]
    agent_bad = [
        Step(tool_calls=[call("Skill", {"skill": "report-writer"})]),
        Step(tool_calls=[write_file("report.md", "# Weekly report\n\nAll good.\n"), bash(CHECK)]),
        Step(text="The report is written."),
    ]
    optimizer = {
        "opt-useful": _edits(f"Always end report.md with a final line `{SIGN_OFF}`."),
        "opt-leak": _edits(f"Before finishing, run {CHECK} and make sure report.md ends with `{SIGN_OFF}`."),
        "opt-noop": _edits("Write the report clearly."),
    }
    rules = [
        Rule("agent-with-rule", Match(api="anthropic", user="report", request=SIGN_OFF), agent_good),
        Rule("agent-without-rule", Match(api="anthropic", user="report"), agent_bad),
        Rule(
            "judge",
            Match(api="chat", system="You grade whether"),
            [Step(text=json.dumps({"items": [{"index": 0, "satisfied": True}]}))],
        ),
    ]
    for model, reply in optimizer.items():
        rules.append(
            Rule(
                f"analyst-{model}",
                Match(api="chat", model=model, request="skillopt role: failure analyst"),
                [Step(text=reply)],
            )
        )
    return Script(rules=rules, default_text="{}")


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(night_script(), expected_key=ac.DEFAULT_API_KEY) as srv:
        yield srv


@pytest.fixture(scope="module")
def claude_path() -> Path:
    clis = ac.locate_agent_clis()
    if clis.claude is None:
        if os.environ.get("CI"):
            pytest.fail(clis.why_missing("claude"))
        pytest.skip(clis.why_missing("claude"))
    return Path(clis.claude)


class World:
    """The user's machine: a HOME with Claude Code, a project, and skillopt's own folder."""

    def __init__(self, root: Path, server: ScriptedServer, claude: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.skillopt_home = root / "skillopt"
        self.server = server
        self.claude = claude
        self.env = ac.claude_env(self.home, server.url, trusted_dirs=[self.project])
        self.env[OPT_KEY_ENV] = ac.DEFAULT_API_KEY

    def skillopt_env(self) -> dict[str, str]:
        env = dict(self.env)
        env["SKILLOPT_HOME"] = str(self.skillopt_home)
        env["SKILLOPT_NO_DESKTOP_NOTIFY"] = "1"
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        return env

    def skillopt(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        exe = Path(sys.executable).parent / "skillopt"
        proc = subprocess.run(
            [str(exe), *args],
            env=self.skillopt_env(),
            capture_output=True,
            text=True,
            timeout=600,
            cwd=self.root,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"skillopt {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def configure(self, optimizer_model: str, **night: Any) -> None:
        settings = {
            "tools.claude-code.cli": str(self.claude),
            "optimizer.backend": "openai",
            "optimizer.model": optimizer_model,
            "optimizer.base_url": self.server.base_url_openai,
            "optimizer.api_key_env": OPT_KEY_ENV,
            "optimizer.max_retries": "0",
            "night.include_automation": "true",
            "night.min_tasks": "4",
            # Small families: half of the tasks validate, so the gate has enough items to be sure.
            "night.split_ratios": "[0.25, 0.5, 0.25]",
            "replay.max_parallel": "2",
            "replay.timeout_s": "120",
            "replay.env_allowlist": json.dumps(["PATH", "LANG", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]),
        }
        settings.update({f"night.{k}": str(v) for k, v in night.items()})
        for key, value in settings.items():
            self.skillopt("config", "set", key, value)


def _make_world(root: Path, server: ScriptedServer, claude: Path) -> World:
    w = World(root, server, claude)
    w.project.mkdir(parents=True)
    (w.project / "check_report.py").write_text(CHECK_SCRIPT)
    (w.project / "README.md").write_text("# Team reports\n")
    git = ["git", "-C", str(w.project)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run(
        [*git, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"],
        check=True,
    )
    skill = w.home / ".claude" / "skills" / "report-writer" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: report-writer\ndescription: Write the team's weekly status report into report.md.\n---\n\n"
        "# Weekly reports\n\nSummarize the week in a few bullet points.\n"
    )
    return w


@pytest.fixture(scope="module")
def sessions_home(
    tmp_path_factory: pytest.TempPathFactory, server: ScriptedServer, claude_path: Path
) -> World:
    """Six real sessions in which the user corrects the agent, ingested once for every test here."""
    w = _make_world(tmp_path_factory.mktemp("night"), server, claude_path)
    for team in TEAMS:
        first = ac.run_claude(
            claude_path,
            f"write the weekly status report for the {team} team into report.md",
            cwd=w.project,
            env=w.env,
            allowed_tools=("Bash", "Write", "Skill"),
        )
        assert first.returncode == 0, first.describe()
        again = ac.run_claude(
            claude_path,
            f"no, the report must end with the line {SIGN_OFF}",
            cwd=w.project,
            env=w.env,
            resume=first.session_id,
            allowed_tools=("Bash", "Write", "Skill"),
        )
        assert again.returncode == 0, again.describe()
    w.skillopt("skills", "import", "--tool", "claude-code")
    w.skillopt("ingest")
    return w


def _morning(base: World) -> World:
    """Put the world back as it was after ingest, at the same paths (the registry records absolute ones),
    so every night here starts from the same morning."""
    snap = base.root.parent / f"{base.root.name}-snapshot"
    if not snap.exists():
        snap.mkdir()
        for part in ("home", "skillopt", "project"):
            shutil.copytree(base.root / part, snap / part, symlinks=True)
    else:
        for part in ("home", "skillopt", "project"):
            shutil.rmtree(base.root / part)
            shutil.copytree(snap / part, base.root / part, symlinks=True)
    return base


def test_a_night_proposes_the_rule_and_approval_reaches_the_agent(
    sessions_home: World, server: ScriptedServer
) -> None:
    w = _morning(sessions_home)
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
    w = _morning(sessions_home)
    w.configure("opt-leak")
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["status"] == "leak", outcome
    assert "check #1" in outcome["reason"]
    assert CHECK not in outcome["reason"]  # the reason names the check, never quotes it
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []


def test_a_no_op_edit_is_rejected_by_the_gate(sessions_home: World) -> None:
    w = _morning(sessions_home)
    w.configure("opt-noop")
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["status"] == "no-improvement", outcome
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []


def test_a_budget_cap_stops_the_night_cleanly(sessions_home: World) -> None:
    w = _morning(sessions_home)
    w.configure("opt-useful", max_replays=3)
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["status"] == "budget", outcome
    assert "replay cap (3)" in outcome["reason"]
    assert report["spend"]["replays"] == 3
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []
    history = json.loads(w.skillopt("sleep", "history", "--json").stdout)
    assert history[0]["status"] in ("completed", "budget")
