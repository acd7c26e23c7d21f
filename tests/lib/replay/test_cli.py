"""`skillopt replay` as a user runs it: output, JSON, errors with exit codes, the repository left alone."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from replay_helpers import repo_state

from skillopt_lib.testing import Match, Rule, Script, Step, bash, write_file
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import cli
from testkit.agents import SCRIPTED_API_KEY

MakeRepo = Callable[..., tuple[Path, list[str]]]


def skillopt(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return cli.run(*args, env={**os.environ, "COLUMNS": "200", **(env or {})})


def _skill_file(tmp_path: Path) -> Path:
    path = tmp_path / "SKILL.md"
    path.write_text("---\nname: testing\ndescription: How to test here.\n---\nRun the tests.\n")
    return path


def test_replay_with_copilot_prints_what_happened(
    make_repo: MakeRepo, tmp_path: Path, fake_copilot: str, skillopt_home: Path
) -> None:
    repo, (first, _) = make_repo()
    before = repo_state(repo)
    env = {"SKILLOPT_TOOLS__COPILOT__CLI": fake_copilot}
    out = skillopt(
        "replay",
        "--tool",
        "copilot",
        "--prompt",
        "WRITE result.txt done",
        "--repo",
        str(repo),
        "--commit",
        first,
        "--skill",
        str(_skill_file(tmp_path)),
        "--check",
        "grep -qx done result.txt",
        "--check",
        "grep -q 'def sub' calc.py",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "status: ok" in out.stdout
    assert "files changed: A result.txt" in out.stdout
    assert "checks failed" in out.stdout and "FAIL" in out.stdout and "pass" in out.stdout
    assert repo_state(repo) == before
    assert os.listdir(skillopt_home / "data" / "workspaces") == []


def test_replay_json_and_keep(tmp_path: Path, fake_copilot: str, skillopt_home: Path) -> None:
    env = {"SKILLOPT_TOOLS__COPILOT__CLI": fake_copilot}
    out = skillopt(
        "replay",
        "-t",
        "copilot",
        "-p",
        "WRITE x.txt y",
        "--check",
        "test -f x.txt",
        "--keep",
        "--json",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["status"] == "ok" and data["checks_passed"] is True
    assert data["files_changed"] == ["A x.txt"]
    kept = Path(data["workspace"])
    assert kept.is_relative_to(skillopt_home / "data" / "workspaces")
    assert (kept / "x.txt").read_text() == "y\n" and (kept / ".skillopt-replay").is_file()


def test_missing_cli_names_the_package_and_exits_8(tmp_path: Path) -> None:
    out = skillopt(
        "replay", "--tool", "codex", "--prompt", "x", env={"SKILLOPT_TOOLS__CODEX__CLI": "/no/such/codex"}
    )
    assert out.returncode == 8
    assert "not found" in out.stderr and "npm install -g @openai/codex" in out.stderr


def test_tool_without_headless_cli_is_a_config_error() -> None:
    out = skillopt("replay", "--tool", "devin", "--prompt", "x")
    assert out.returncode == 6
    assert "cannot be replayed" in out.stderr


@pytest.mark.agent_cli
def test_replay_with_the_real_claude(
    claude_cli: Path, model_server: ScriptedServer, make_repo: MakeRepo, tmp_path: Path, skillopt_home: Path
) -> None:
    repo, _ = make_repo()
    before = repo_state(repo)
    model_server.set_script(
        Script(
            rules=[
                Rule(
                    name="t",
                    match=Match(user="test"),
                    done_text="Added the test.",
                    steps=[
                        Step(
                            tool_calls=[
                                write_file("test_calc.py", "from calc import sub\nassert sub(5, 3) == 2\n")
                            ]
                        ),
                        Step(tool_calls=[bash("python3 test_calc.py")]),
                    ],
                )
            ]
        )
    )
    env = {
        "PATH": f"{claude_cli.parent}{os.pathsep}{os.environ['PATH']}",
        "ANTHROPIC_BASE_URL": model_server.url,
        "ANTHROPIC_API_KEY": SCRIPTED_API_KEY,
        "HOME": str(tmp_path / "user"),
    }
    out = skillopt(
        "replay",
        "--tool",
        "claude-code",
        "--prompt",
        "add a test for sub",
        "--repo",
        str(repo),
        "--skill",
        str(_skill_file(tmp_path)),
        "--check",
        "python3 test_calc.py",
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "status: ok" in out.stdout and "all checks passed" in out.stdout
    assert "A test_calc.py" in out.stdout
    assert repo_state(repo) == before
