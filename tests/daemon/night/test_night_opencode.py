"""A night of a user who works with OpenCode, for real: sessions written by the real `opencode run` (offline,
against the scripted model server) → ingest → mining → replays through the plugin's `opencode` backend →
scripted optimizer → gate → proposal; approval installs the rule where OpenCode reads it, and the next real
`opencode run` loads it.

The user has a lint skill that says nothing of how they want lint fixed; in each session the agent
silences the linter and the user corrects it. The scripted agent (`testkit/learning_night.py`) does the
work right only when the SKILL.md it read states the rule, or when the user has just said it; the scripted
optimizer writes a rule only when its request shows the user's own words. So the rule can reach the skill
only from the user's corrections, and the agent only through the installed skill.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import skillopt_lib
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit import cli
from testkit.learning_night import LearningNight, WorkKind
from testkit.night_scenario import apply_settings, skillopt_env
from testkit.opencode import opencode_cli, opencode_plugin
from testkit.opencode_cli import opencode_env, run_opencode

pytestmark = [pytest.mark.timeout(1500), pytest.mark.agent_cli, pytest.mark.usefixtures("opencode_plugin")]
__all__ = ["opencode_cli", "opencode_plugin"]

RULE = "no noqa, fix the code"
CHECK = "python3 check_lint.py"
BROKEN = "import os\n\nprint('release')\n"
KIND = WorkKind(
    id="lint",
    prompts=("fix the lint errors in app.py",),
    rule=RULE,
    work_file="app.py",
    wrong="import os  # noqa: F401\n\nprint('release')\n",
    right="print('release')\n",
    check=CHECK,
    violation=r"# noqa",
)
CHECK_SCRIPT = """import sys
text = open("app.py").read()
bad = [why for why, found in (("unused import os", "import os" in text), ("silenced", "noqa" in text)) if found]
print("lint: " + ", ".join(bad) if bad else "lint ok")
sys.exit(1 if bad else 0)
"""
SKILL = (
    "---\nname: lint-fixes\ndescription: Fix the lint errors in this project's Python code.\n---\n\n"
    "# Lint fixes\n\nLook at what the linter reports in app.py.\n"
)
MODULES = ["billing", "search", "mobile", "infra", "growth", "design"]
OPTIMIZER = "opt"
JUDGE = "judge"


class World:
    """The user's machine: OpenCode's config and data folders, a project, and skillopt's own folder."""

    def __init__(self, root: Path, server: ScriptedServer, opencode: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.server = server
        self.opencode = opencode
        self.env = opencode_env(self.home, server.base_url_openai)
        self.env["XDG_CONFIG_HOME"] = str(self.home / ".config")
        self.env["OPT_KEY"] = ac.DEFAULT_API_KEY
        # `skillopt` runs in a subprocess with an isolated environment: make it run the code under test.
        self.env["PYTHONPATH"] = str(Path(skillopt_lib.__file__).resolve().parents[1])

    def skillopt(self, *args: str) -> subprocess.CompletedProcess[str]:
        return cli.run(
            *args, env=skillopt_env(self.env, self.root / "skillopt"), cwd=self.root, timeout=900, check=True
        )

    def git(self, *args: str) -> None:
        subprocess.run(
            ["git", "-C", str(self.project), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            check=True,
        )

    def opencode_run(self, prompt: str, session: str | None = None) -> ac.CliRun:
        run = run_opencode(self.opencode, prompt, cwd=self.project, env=self.env, session=session)
        assert run.returncode == 0 and run.session_id, run.describe()
        return run


def _world(root: Path, server: ScriptedServer, opencode: Path) -> World:
    """One corrected session per module, each ingested before the project moves on; the user's skill
    imported from OpenCode's folder."""
    w = World(root, server, opencode)
    w.project.mkdir(parents=True)
    (w.project / "app.py").write_text(BROKEN)
    (w.project / "check_lint.py").write_text(CHECK_SCRIPT)
    w.git("init", "-q", "-b", "main")
    w.git("add", ".")
    w.git("commit", "-q", "-m", "init")
    skill = w.home / ".config" / "opencode" / "skills" / "lint-fixes" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL)
    for module in MODULES:
        first = w.opencode_run(f"fix the lint errors in app.py before the {module} release")
        w.opencode_run(RULE, session=first.session_id)
        assert (w.project / "app.py").read_text() == KIND.right  # the correction got the code fixed
        w.skillopt("ingest")
        # The next release starts from the broken file again, at a commit of its own (recurring work).
        (w.project / "app.py").write_text(BROKEN)
        with (w.project / "NOTES.md").open("a") as notes:
            notes.write(f"- {module} released\n")
        w.git("add", "NOTES.md")
        w.git("commit", "-q", "-m", f"notes: {module}")
    w.skillopt("skills", "import", "--tool", "opencode")
    w.skillopt("ingest")
    settings = {
        "tools.opencode.cli": str(opencode),
        "optimizer.backend": "openai",
        "optimizer.model": OPTIMIZER,
        "optimizer.base_url": server.base_url_openai,
        "optimizer.api_key_env": "OPT_KEY",
        "optimizer.max_retries": "0",
        "judge.backend": "openai",
        "judge.model": JUDGE,
        "judge.base_url": server.base_url_openai,
        "judge.api_key_env": "OPT_KEY",
        "judge.max_retries": "0",
        "night.label_with_model": "false",
        "replay.env_allowlist": json.dumps(["PATH", "LANG"]),
        "replay.max_parallel": "2",
        "replay.timeout_s": "120",
    }
    apply_settings(w.skillopt, settings, {})
    return w


def _json(w: World, *args: str) -> Any:
    return json.loads(w.skillopt(*args, "--json").stdout)


def test_a_night_of_opencode_sessions_learns_the_users_rule_and_opencode_loads_it(
    tmp_path: Path, opencode_cli: Path
) -> None:
    script = LearningNight([KIND], optimizer_model=OPTIMIZER)
    with ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as server:
        w = _world(tmp_path / "world", server, opencode_cli)
        sessions = _json(w, "sessions", "list", "--tool", "opencode")
        assert len(sessions) == len(MODULES)

        server.clear_requests()
        report = _json(w, "sleep", "run", "--now")
        (outcome,) = [s for s in report["skills"] if s["skill"] == "lint-fixes"]
        assert outcome["status"] == "proposed", report["skills"]
        # The replays went through OpenCode: its requests list the candidate's SKILL.md in a workspace.
        agent = [r for r in server.requests if (r.rule or "").startswith("agent-")]
        assert agent and any((r.rule or "") == "agent-right" for r in agent)
        diff = w.skillopt("diff", outcome["proposal_id"]).stdout
        assert any(line.startswith("+") and RULE in line for line in diff.splitlines()), diff

        approved = _json(w, "approve", outcome["proposal_id"])
        assert approved["installs"], approved
        installed = w.home / ".config" / "opencode" / "skills" / "lint-fixes" / "SKILL.md"
        assert RULE in installed.read_text()

        server.clear_requests()
        w.opencode_run("fix the lint errors in app.py before the sales release")
        loaded = [r for r in server.requests if (r.rule or "") == "agent-right"]
        assert loaded, [r.rule for r in server.requests]
        assert any(RULE in json.dumps(r.body) and str(installed) in json.dumps(r.body) for r in loaded)
        assert (w.project / "app.py").read_text() == KIND.right
