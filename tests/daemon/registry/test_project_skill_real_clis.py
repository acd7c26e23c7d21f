"""After approval, a project-scope skill reaches the real agent CLIs in its repository and nowhere else:
a `claude -p` (and `codex exec`) session started in repository A lists the skill to the model, one started
in repository B does not. The model is the scripted server; its request log is the proof."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillopt_lib.testing import Match, Rule, Script, Step
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from tests.daemon.registry.test_scope_review import NEW, evidence, git_repo

pytestmark = pytest.mark.agent_cli

# What the model sees of the skill when a session loads it: its description in the skill listing.
LISTED = "Fix lint errors without silencing them"
SCRIPT = Script(
    [
        Rule("skill-listed", Match(request=LISTED), steps=[Step(text="the fix-lint skill is available")]),
        Rule("plain", Match(user="lint"), steps=[Step(text="no skill for this")]),
    ]
)


def approved_in(env: Any, app: Path) -> None:
    cand = env.candidate(NEW, name="fix-lint")
    pid = env.cli_json("propose", "fix-lint", str(cand), "--evidence", json.dumps(evidence(app)))["id"]
    env.cli("approve", pid, check=True)
    assert (app / ".claude" / "skills" / "fix-lint" / "SKILL.md").read_text() == NEW


@pytest.mark.model_script(SCRIPT)
def test_claude_in_the_repository_loads_it_and_claude_elsewhere_does_not(
    env: Any, claude_cli: Path, model_server: ScriptedServer, tmp_path: Path
) -> None:
    app, web = git_repo(env.root / "app"), git_repo(env.root / "web")
    approved_in(env, app)
    cli_env = ac.claude_env(
        tmp_path / "claude-home", model_server.url, api_key=ac.DEFAULT_API_KEY, trusted_dirs=[app, web]
    )
    there = ac.run_claude(claude_cli, "fix the lint errors", cwd=app, env=cli_env)
    assert there.result is not None and there.result["result"] == "the fix-lint skill is available"
    assert "fix-lint" in there.events[0].get("skills", [])
    seen = model_server.requests_matching(rule="skill-listed")
    assert seen and all(LISTED in r.text() for r in seen)
    model_server.clear_requests()
    elsewhere = ac.run_claude(claude_cli, "fix the lint errors", cwd=web, env=cli_env)
    assert elsewhere.result is not None and elsewhere.result["result"] == "no skill for this"
    assert "fix-lint" not in elsewhere.events[0].get("skills", [])
    assert model_server.requests and not any(LISTED in r.text() for r in model_server.requests)


@pytest.mark.model_script(SCRIPT)
def test_codex_in_the_repository_loads_it_and_codex_elsewhere_does_not(
    env: Any, codex_cli: Path, model_server: ScriptedServer, tmp_path: Path
) -> None:
    app, web = git_repo(env.root / "app"), git_repo(env.root / "web")
    approved_in(env, app)
    cli_env = ac.codex_env(
        tmp_path / "codex-home",
        model_server.base_url_openai,
        api_key=ac.DEFAULT_API_KEY,
        trusted_dirs=[app, web],
    )
    there = ac.run_codex(codex_cli, "fix the lint errors", cwd=app, env=cli_env)
    assert there.returncode == 0, there.stderr
    assert ac.codex_items(there, "agent_message")[-1]["text"] == "the fix-lint skill is available"
    model_server.clear_requests()
    elsewhere = ac.run_codex(codex_cli, "fix the lint errors", cwd=web, env=cli_env)
    assert ac.codex_items(elsewhere, "agent_message")[-1]["text"] == "no skill for this"
    assert model_server.requests and not any(LISTED in r.text() for r in model_server.requests)
