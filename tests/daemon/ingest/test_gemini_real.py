"""Gemini CLI end to end with the real, pinned `gemini` from npm, offline against the scripted model
server (Gemini's `streamGenerateContent` protocol): the daemon backfills a session the real CLI wrote before
it started (the committed recording) and tails one written while it runs, and `skillopt replay --tool
gemini` drives the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skillopt_lib.testing import Match, Rule, Script, Step, bash
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.ingest_helpers import cli, query, start_daemon, wait_for

from .conftest import Env

SCRIPT = Script(
    [
        Rule(
            "failing-check",
            Match(user=r"(?i)run the release check"),
            steps=[Step(text="Running the check.", tool_calls=[bash("echo checking; exit 3")])],
            done_text="The check failed with exit code 3.",
        ),
        Rule("correction", Match(user=r"(?i)no, run it with"), steps=[Step(text="Understood, noted.")]),
        Rule(
            "make-file",
            Match(user=r"(?i)write the greeting"),
            steps=[Step(tool_calls=[bash("echo hello > greeting.txt")])],
            done_text="Wrote greeting.txt.",
        ),
    ]
)

pytestmark = [pytest.mark.agent_cli, pytest.mark.model_script(SCRIPT)]
RECORDED = Path(__file__).parent / "sources" / "fixtures" / "real" / "gemini" / "tmp"


def _gemini_env(env: Env, server: ScriptedServer) -> dict[str, str]:
    # The same HOME the daemon sees, so the sessions land in its default Gemini home (~/.gemini).
    return ac.gemini_env(env.home, server.url, extra={"PATH": env.environ()["PATH"]})


@pytest.mark.timeout(240)
def test_daemon_backfills_and_tails_real_gemini_sessions(
    env: Env, gemini_cli: Path, model_server: ScriptedServer, tmp_path: Path
) -> None:
    # Before the daemon starts: a session the real CLI wrote earlier (the committed recording).
    shutil.copytree(RECORDED, env.home / ".gemini" / "tmp", dirs_exist_ok=True)
    project = tmp_path / "gemini-project"
    project.mkdir()
    genv = _gemini_env(env, model_server)
    environ = env.environ()
    proc = start_daemon(environ, env.root / "daemon.log")
    try:
        wait_for(lambda: query(env.db, "SELECT 1 FROM sessions WHERE tool = 'gemini'"), timeout=60)
        # While it runs: a new session, written by the real CLI now.
        live = ac.run_gemini(gemini_cli, "No, run it with the --strict flag next time", cwd=project, env=genv)
        assert live.returncode == 0, live.stderr[-2000:]
        wait_for(
            lambda: query(env.db, "SELECT 1 FROM turns WHERE text LIKE '%--strict flag%' AND role = 'user'"),
            timeout=30,
        )
        res = cli(environ, "sessions", "list", "--tool", "gemini", "--json")
        assert res.returncode == 0, res.stderr
        sessions = {s["first_prompt"]: s for s in json.loads(res.stdout)}
        assert set(sessions) == {
            "Please run the release check",
            "No, run it with the --strict flag next time",
        }
        assert sessions["No, run it with the --strict flag next time"]["project_path"] == str(
            project.resolve()
        )
        first = sessions["Please run the release check"]
        assert first["project_path"] == "/home/dev/shop" and first["model"] == "gemini-2.5-flash"
        detail = json.loads(cli(environ, "sessions", "show", first["session_id"], "--json").stdout)
        prompts = [t["text"] for t in detail["turns"] if t["role"] == "user" and not t["is_meta"]]
        assert prompts == ["Please run the release check"]  # Gemini's own <session_context> is context
        calls = [c for t in detail["turns"] for c in t["tool_calls"]] + detail["unattached_tool_calls"]
        (failing,) = [c for c in calls if "exit 3" in c["input_summary"]]
        assert failing["name"] == "run_shell_command"
        assert failing["exit_code"] == 3
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


@pytest.mark.timeout(180)
def test_replay_drives_the_real_gemini_cli_with_a_candidate_skill(
    env: Env, gemini_cli: Path, model_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    skill = tmp_path / "greeting" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text("---\nname: greeting\ndescription: how to greet\n---\nSay hello in greeting.txt.\n")
    environ = env.environ(
        GEMINI_API_KEY=ac.DEFAULT_API_KEY,
        GOOGLE_GEMINI_BASE_URL=model_server.url,
        SKILLOPT_TOOLS__GEMINI__CLI=str(gemini_cli),
    )
    res = cli(
        environ,
        "replay",
        "--tool",
        "gemini",
        "--prompt",
        "Write the greeting file",
        "--repo",
        str(repo),
        "--skill",
        str(skill),
        "--model",
        "gemini-2.5-flash",
        "--check",
        "grep -q hello greeting.txt",
        "--json",
        timeout=150,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    result = json.loads(res.stdout)
    assert result["status"] == "ok", result
    assert result["tool"] == "gemini"
    assert result["files_changed"] == ["A greeting.txt"]
    assert result["checks"][0]["passed"] is True
    assert [c["name"] for c in result["tool_calls"]] == ["run_shell_command"]
    # The candidate skill reached the real CLI: Gemini lists the workspace's skills to the model.
    assert any("greeting" in r.text() for r in model_server.requests), "the skill never reached the model"
