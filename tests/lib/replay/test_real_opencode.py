"""The real, pinned OpenCode replayed in the sandbox by the plugin's `opencode` exec backend, against the
scripted model server configured as the user's own OpenAI-compatible provider in their `opencode.json`.

Locally this skips (with the fix in the reason) when the CLI is missing; in CI it must run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from replay_helpers import repo_state

from skillopt_daemon.plugins.opencode.backend import OpenCodeBackend
from skillopt_lib.backends import create_backend
from skillopt_lib.config import BackendConfig
from skillopt_lib.errors import ExternalToolError
from skillopt_lib.execution import ExecLimits, ExecStatus
from skillopt_lib.process import ProcessOutcome
from skillopt_lib.sandbox import ReplayTask, SandboxConfig, replay
from skillopt_lib.skill import SkillBundle
from skillopt_lib.testing import Match, Rule, Script, Step, bash, call
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.agents import SCRIPTED_API_KEY
from testkit.opencode import opencode_cli, opencode_plugin
from testkit.opencode_cli import opencode_config

pytestmark = pytest.mark.usefixtures("opencode_plugin")
__all__ = ["opencode_cli", "opencode_plugin"]

MakeRepo = Callable[..., tuple[Path, list[str]]]
TEST_FILE = "from calc import add\n\nassert add(2, 3) == 5\nprint('1 passed')\n"
SKILL = b"---\nname: calc-tests\ndescription: how to test calc\n---\nRun python3 test_calc.py.\n"


def _backend(cli: Path, server: ScriptedServer, tmp_path: Path, **kw: object) -> OpenCodeBackend:
    """The backend as a user would have it: their config folder names the provider, nothing else is set."""
    config = tmp_path / "user-config"
    config.mkdir()
    (config / "opencode.json").write_text(
        json.dumps(opencode_config(server.base_url_openai, api_key=SCRIPTED_API_KEY))
    )
    return OpenCodeBackend(
        cli=str(cli),
        user_config=config,
        user_home=tmp_path / "user-data",
        base_env={"PATH": os.environ["PATH"]},
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.agent_cli
def test_opencode_writes_a_file_runs_it_and_passes_the_check_with_the_skill_listed(
    opencode_cli: Path,
    model_server: ScriptedServer,
    make_repo: MakeRepo,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
) -> None:
    repo, (first, _) = make_repo()
    before = repo_state(repo)
    model_server.set_script(
        Script(
            rules=[
                Rule(
                    name="task",
                    match=Match(user="calc"),
                    steps=[
                        Step(tool_calls=[call("write", {"filePath": "test_calc.py", "content": TEST_FILE})]),
                        Step(tool_calls=[bash("python3 test_calc.py")]),
                        Step(tool_calls=[bash("python3 -c 'import sys; sys.exit(4)'")]),
                    ],
                    done_text="Finished.",
                )
            ]
        )
    )
    task = ReplayTask(prompt="add a test for calc", repo=repo, commit=first, checks=["python3 test_calc.py"])
    backend = _backend(opencode_cli, model_server, tmp_path)
    result = replay(
        task,
        backend,
        sandbox_config,
        skill=SkillBundle(files={"SKILL.md": SKILL}),
        limits=ExecLimits(timeout_s=120),
    )
    assert result.status is ExecStatus.OK, (result.error, result.stderr)
    assert result.checks_passed, [c.to_dict() for c in result.checks]
    assert result.files_changed == ["A test_calc.py"]
    assert [c.name for c in result.tool_calls] == ["write", "bash", "bash"]
    assert [c.exit_code for c in result.tool_calls[1:]] == [0, 4] and "1 passed" in result.tool_calls[
        1
    ].output
    assert result.final_message == "Finished."
    assert result.session_id and result.session_id.startswith("ses_")
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    system = " ".join(
        str(m.get("content"))
        for r in model_server.requests
        for m in r.body.get("messages", [])
        if m.get("role") == "system"
    )
    assert "<name>calc-tests</name>" in system  # the candidate skill was offered to the model
    assert repo_state(repo) == before, "the replay changed the user's repository"


# What `opencode run --format json` printed when its provider could not be reached (OpenCode 1.18.33), and
# the exit code it ended with.
UNREACHABLE = (
    '{"type":"error","timestamp":1796447314651,"sessionID":"ses_dbb667a71ffeqrHOqMwAk69YSF","error":'
    '{"name":"APIError","data":{"message":"Cannot connect to API: Unable to connect. Is the computer able to '
    'access the url?","isRetryable":true,"metadata":{"url":"http://127.0.0.1:9/v1/chat/completions"}}}}'
)


def test_a_provider_error_ends_the_replay_with_its_message(tmp_path: Path) -> None:
    backend = OpenCodeBackend(cli="opencode", user_config=tmp_path, base_env={})
    outcome = ProcessOutcome(returncode=1, lines=[UNREACHABLE], stderr="", duration_s=1.0)
    result = backend.interpret(outcome, ExecLimits())
    assert result.status is ExecStatus.ERROR
    assert (
        result.error
        == "opencode ended with Cannot connect to API: Unable to connect. Is the computer able to access the url?"
    )
    assert result.session_id == "ses_dbb667a71ffeqrHOqMwAk69YSF"


def test_a_stream_cut_before_the_last_step_finished_is_a_crash(tmp_path: Path) -> None:
    backend = OpenCodeBackend(cli="opencode", user_config=tmp_path, base_env={})
    started = '{"type":"step_start","sessionID":"ses_x","part":{"type":"step-start"}}'
    outcome = ProcessOutcome(returncode=-9, lines=[started], stderr="", duration_s=1.0)
    result = backend.interpret(outcome, ExecLimits())
    assert result.status is ExecStatus.CRASHED and "signal 9" in (result.error or "")


def test_a_replay_without_opencode_installed_says_how_to_install_it(
    make_repo: MakeRepo, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """The backend a night builds from its name, on a machine whose PATH has no `opencode`: the replay is
    refused before anything runs, naming the package and the setting that points at another install."""
    empty = tmp_path / "bin"
    empty.mkdir()
    backend = create_backend(BackendConfig(backend="opencode"), "agent")
    assert isinstance(backend, OpenCodeBackend)
    backend.base_env = {"PATH": str(empty)}
    repo, (first, _) = make_repo()
    task = ReplayTask(prompt="add a test for calc", repo=repo, commit=first, checks=["python3 test_calc.py"])
    with pytest.raises(ExternalToolError) as caught:
        replay(task, backend, sandbox_config, skill=SkillBundle(files={"SKILL.md": SKILL}))
    assert str(caught.value).splitlines() == [
        "the opencode CLI (opencode) was not found",
        "install it (npm install -g opencode-ai), or set tools.opencode.cli to its path",
    ]
