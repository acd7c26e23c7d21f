"""The daemon ingests what the real `claude` and `codex` CLIs write, live, with the right project."""

from __future__ import annotations

import json

import pytest

from skillopt_lib.testing import Match, Rule, Script, Step, bash
from testkit.ingest_helpers import cli, query, start_daemon, wait_for

from .conftest import Env

SCRIPT = Script(
    [
        Rule(
            "failing-check",
            Match(user=r"(?i)run the release check"),
            steps=[
                Step(text="Running the check.", tool_calls=[bash("echo checking; exit 3")]),
                Step(text="The check failed with exit code 3."),
            ],
        ),
        Rule("correction", Match(user=r"(?i)no, run it with"), steps=[Step(text="Understood, noted.")]),
    ]
)


@pytest.mark.agent_cli
@pytest.mark.model_script(SCRIPT)
def test_daemon_ingests_real_claude_and_codex_sessions(env: Env, claude_sandbox, codex_sandbox) -> None:  # type: ignore[no-untyped-def]
    environ = env.environ(
        CLAUDE_CONFIG_DIR=str(claude_sandbox.home / ".claude"),
        CODEX_HOME=str(codex_sandbox.home / ".codex"),
    )
    proc = start_daemon(environ, env.root / "daemon.log")
    try:
        wait_for(
            lambda: query(env.db, "SELECT 1 FROM ingest_meta WHERE key = 'backfill_done_at'"), timeout=30
        )

        run = claude_sandbox.run("Please run the release check")
        assert run.returncode == 0, run.describe()
        follow = claude_sandbox.run("No, run it with the --strict flag next time", resume=run.session_id)
        assert follow.returncode == 0, follow.describe()
        crun = codex_sandbox.run("Please run the release check")
        assert crun.returncode == 0, crun.describe()

        def both() -> bool:
            return {r[0] for r in query(env.db, "SELECT tool FROM sessions WHERE has_user_turn = 1")} == {
                "claude-code",
                "codex",
            }

        wait_for(both, timeout=10)
        wait_for(
            lambda: query(env.db, "SELECT 1 FROM turns WHERE text LIKE '%--strict flag%' AND role = 'user'"),
            timeout=10,
        )
        res = cli(environ, "sessions", "list", "--json")
        assert res.returncode == 0, res.stderr
        sessions = {s["tool"]: s for s in json.loads(res.stdout)}
        claude = sessions["claude-code"]
        assert claude["session_id"] == run.session_id
        assert claude["project_path"] == str(claude_sandbox.project.resolve())
        assert claude["is_automation"] is True  # `claude -p`: kept, flagged
        assert claude["first_prompt"] == "Please run the release check"
        assert sessions["codex"]["project_path"] == str(codex_sandbox.project.resolve())

        for tool in ("claude-code", "codex"):
            res = cli(environ, "sessions", "show", sessions[tool]["session_id"], "--json")
            detail = json.loads(res.stdout)
            calls = [c for t in detail["turns"] for c in t["tool_calls"]] + detail["unattached_tool_calls"]
            failing = [c for c in calls if "exit 3" in c["input_summary"]]
            assert failing, calls
            assert failing[0]["exit_code"] == 3 or failing[0]["is_error"] is True
            prompts = [t["text"] for t in detail["turns"] if t["role"] == "user" and not t["is_meta"]]
            assert prompts.count("Please run the release check") == 1  # Codex's duplicated user items: once
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
