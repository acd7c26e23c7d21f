"""The real, pinned Copilot CLI replayed in the sandbox against the scripted model server, configured the
way a user without a GitHub login would: its bring-your-own-provider variables.

Locally these skip (with the fix in the reason) when the CLI is missing; in CI they must run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from replay_helpers import repo_state

from skillopt_lib.backends.copilot import CopilotBackend
from skillopt_lib.execution import ExecLimits, ExecStatus
from skillopt_lib.sandbox import ReplayTask, SandboxConfig, replay
from skillopt_lib.testing import Match, Rule, Script, Step, bash, write_file
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.agents import SCRIPTED_API_KEY
from testkit.copilot_cli import copilot_provider_env
from testkit.fixtures import require

pytestmark = pytest.mark.agent_cli

MakeRepo = Callable[..., tuple[Path, list[str]]]
TEST_FILE = "from calc import add\n\nassert add(2, 3) == 5\nprint('1 passed')\n"


@pytest.fixture
def copilot_cli() -> Path:
    clis = ac.locate_agent_clis()
    require(clis.copilot is not None, clis.why_missing("copilot"))
    assert clis.copilot is not None
    return clis.copilot


def _copilot(cli: Path, server: ScriptedServer, **kw: object) -> CopilotBackend:
    env = {
        "PATH": os.environ["PATH"],
        **copilot_provider_env(server.base_url_openai, api_key=SCRIPTED_API_KEY),
    }
    return CopilotBackend(cli=str(cli), base_env=env, **kw)  # type: ignore[arg-type]


def _script(*steps: Step) -> Script:
    return Script(
        rules=[Rule(name="task", match=Match(user="calc"), steps=list(steps), done_text="Finished.")]
    )


def test_copilot_writes_a_file_runs_a_test_and_passes_the_check(
    copilot_cli: Path, model_server: ScriptedServer, make_repo: MakeRepo, sandbox_config: SandboxConfig
) -> None:
    repo, (first, _) = make_repo()
    before = repo_state(repo)
    model_server.set_script(
        _script(
            Step(tool_calls=[write_file("test_calc.py", TEST_FILE)]),
            Step(tool_calls=[bash("python3 test_calc.py")]),
            Step(tool_calls=[bash("python3 -c 'import sys; sys.exit(4)'")]),
        )
    )
    task = ReplayTask(prompt="add a test for calc", repo=repo, commit=first, checks=["python3 test_calc.py"])
    result = replay(
        task, _copilot(copilot_cli, model_server), sandbox_config, limits=ExecLimits(timeout_s=120)
    )
    assert result.status is ExecStatus.OK, (result.error, result.stderr)
    assert result.checks_passed, [c.to_dict() for c in result.checks]
    assert result.files_changed == ["A test_calc.py"]
    shell = [c for c in result.tool_calls if c.name == "bash"]
    assert [c.exit_code for c in shell][-2:] == [0, 4]
    assert "1 passed" in shell[-2].output
    assert result.final_message == "Finished."
    assert result.session_id
    assert repo_state(repo) == before, "the replay changed the user's repository"


def test_copilot_denied_tool_is_a_permission_failure(
    copilot_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig
) -> None:
    model_server.set_script(_script(Step(tool_calls=[bash("python3 -c 'print(42)'")])))
    result = replay(
        ReplayTask(prompt="run calc"),
        _copilot(copilot_cli, model_server, allowed_tools=("write",)),
        sandbox_config,
        limits=ExecLimits(timeout_s=120),
    )
    assert result.status is ExecStatus.PERMISSION_DENIED, (result.error, result.tool_calls)
    assert result.tool_calls and result.tool_calls[0].denied
