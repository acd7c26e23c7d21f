"""End to end as a user would meet it: the real Claude Code and Codex CLIs write sessions full of secrets,
`skillopt ingest` reads them, and no secret appears in any file under SKILLOPT_HOME or in what the CLI
prints, while `skillopt sessions list` shows every session with its project."""

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

from .helpers import git_repo
from .secrets_corpus import make_secrets

pytestmark = pytest.mark.agent_cli


def skillopt(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return cli.run(*args, env=env, timeout=300)


def test_ingest_of_real_sessions_stores_no_secret(tmp_path: Path) -> None:
    clis = ac.locate_agent_clis()
    require(clis.claude is not None and clis.codex is not None, clis.why_missing("claude/codex"))
    assert clis.claude is not None and clis.codex is not None
    secrets = make_secrets(seed=int.from_bytes(os.urandom(2), "big"))
    project = tmp_path / "work" / "shop-api"
    commit = git_repo(project)
    (project / "creds.txt").write_text("\n".join(s.text for s in secrets) + "\n")
    script = Script(
        rules=[
            Rule(
                name="setup",
                match=Match(user="set up the credentials"),
                steps=[Step(text="Reading them.", tool_calls=[bash("cat creds.txt")]), Step(text="Done.")],
            )
        ]
    )
    prompt = "set up the credentials:\n" + "\n".join(s.text for s in secrets)
    home = tmp_path / "home"
    with ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as server:
        cenv = ac.claude_env(home, server.url, trusted_dirs=[project])
        run = ac.run_claude(clis.claude, prompt, cwd=project, env=cenv)
        xenv = ac.codex_env(home, server.base_url_openai, trusted_dirs=[project])
        xrun = ac.run_codex(clis.codex, prompt, cwd=project, env=xenv)
    assert run.transcript is not None, run.describe()
    assert xrun.transcript is not None, xrun.describe()
    written = run.transcript.read_text() + xrun.transcript.read_text()
    assert secrets[0].secret in written  # the CLIs really wrote them down

    skillopt_home = tmp_path / "skillopt-home"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "SKILLOPT_HOME": str(skillopt_home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "LANG": "C.UTF-8",
    }
    res = skillopt(env, "ingest", "--json", "--quiet")
    assert res.returncode == 0, res.stderr
    listed = skillopt(env, "sessions", "list", "--json", "--all")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    rows = rows if isinstance(rows, list) else rows.get("sessions", rows)
    by_tool = {r["tool"]: r for r in rows}
    assert set(by_tool) == {"claude-code", "codex"}
    for row in by_tool.values():
        assert row["project_path"] == str(project.resolve())
        assert row["repo_commit"] == commit  # the repo state the session started from is pinned
        assert row["redaction_count"] >= 2 * len(secrets)  # in the prompt and in the command's output
        assert row["is_automation"]  # headless runs, kept and flagged
    assert by_tool["claude-code"]["session_id"] == run.session_id
    assert by_tool["codex"]["session_id"] == xrun.session_id

    printed = res.stdout + res.stderr + listed.stdout + listed.stderr
    stored = b"".join(p.read_bytes() for p in sorted(skillopt_home.rglob("*")) if p.is_file())
    leaked = [s.kind for s in secrets if s.secret in printed or s.secret.encode() in stored]
    assert leaked == []
