"""The real, pinned `claude` and `codex` CLIs replayed in the sandbox against the scripted model server.

Locally these skip (with the fix in the reason) when the CLIs or Node.js are missing; in CI they must run.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from replay_helpers import repo_state, skill

from skillopt_lib.backends.claude_code import ClaudeCodeBackend
from skillopt_lib.backends.codex import CodexBackend
from skillopt_lib.execution import ExecLimits, ExecResult, ExecStatus
from skillopt_lib.sandbox import ReplayTask, SandboxConfig, replay
from skillopt_lib.testing import Fault, Match, Rule, Script, Step, bash, call, write_file
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.agents import SCRIPTED_API_KEY

pytestmark = pytest.mark.agent_cli

MakeRepo = Callable[..., tuple[Path, list[str]]]
TEST_FILE = "from calc import add\n\nassert add(2, 3) == 5\nprint('1 passed')\n"


def _script(*steps: Step, done: str = "Finished.") -> Script:
    return Script(rules=[Rule(name="task", match=Match(user="calc"), steps=list(steps), done_text=done)])


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's real home, with an older copy of the skill installed for every tool."""
    home = tmp_path / "user"
    for d in (".claude/skills/demo", ".codex/skills/demo", ".agents/skills/demo"):
        (home / d).mkdir(parents=True)
        (home / d / "SKILL.md").write_text(
            "---\nname: demo\ndescription: OLD-INSTALLED-DESCRIPTION.\n---\nOLD-INSTALLED-BODY\n"
        )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


def _claude(cli: Path, server: ScriptedServer, **kw: object) -> ClaudeCodeBackend:
    env = {
        "PATH": os.environ["PATH"],
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": SCRIPTED_API_KEY,
    }
    return ClaudeCodeBackend(cli=str(cli), base_env=env, **kw)  # type: ignore[arg-type]


def _codex(cli: Path, server: ScriptedServer, user_home: Path) -> CodexBackend:
    """Codex configured the way a user would: a custom provider in ~/.codex/config.toml, key in a variable."""
    (user_home / ".codex" / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "scripted"\n'
        f'[model_providers.scripted]\nname = "Scripted"\nbase_url = "{server.base_url_openai}"\n'
        'wire_api = "responses"\nenv_key = "SCRIPTED_KEY"\n'
        '[mcp_servers.unwanted]\ncommand = "does-not-exist"\n'
    )
    return CodexBackend(cli=str(cli), base_env={"PATH": os.environ["PATH"], "SCRIPTED_KEY": SCRIPTED_API_KEY})


# ------------------------------------------------------------------------------------------ Claude Code


def test_claude_keeps_its_cached_prompt_tokens_apart(
    claude_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    """Claude Code marks its prompt for the provider's cache; the replay's usage says how many prompt
    tokens went to (and came from) the cache, which the CLI prices at the cache prices."""
    model_server.set_script(_script(Step(tool_calls=[bash("true")])))
    result = replay(
        ReplayTask(prompt="check calc"),
        _claude(claude_cli, model_server),
        sandbox_config,
        limits=ExecLimits(max_turns=10, timeout_s=120),
    )
    assert result.status is ExecStatus.OK, (result.error, result.stderr)
    cached = result.usage.cache_read_tokens + result.usage.cache_write_tokens
    assert result.usage.cache_write_tokens > 0
    assert 0 < cached < result.usage.input_tokens  # input counts every prompt token, cached or not


def test_back_to_back_claude_replays_read_most_of_their_prompt_from_the_cache(
    claude_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    """Claude Code sends its system prompt and tools with every request and marks them for the cache: within
    a replay each turn reads the turns before it, and a second replay right after the first reads the
    shared system prompt and tools, as the real API would bill them."""
    model_server.set_script(_script(Step(tool_calls=[bash("true")]), Step(tool_calls=[bash("echo ok")])))

    def run() -> ExecResult:
        result = replay(
            ReplayTask(prompt="check calc"),
            _claude(claude_cli, model_server),
            sandbox_config,
            limits=ExecLimits(max_turns=10, timeout_s=120),
        )
        assert result.status is ExecStatus.OK, (result.error, result.stderr)
        return result

    first, second = run(), run()
    assert first.usage.calls >= 3 and first.usage.cache_read_tokens > 0  # later turns read earlier ones
    assert first.usage.cache_write_tokens > first.usage.cache_read_tokens / 10
    assert second.usage.cache_read_tokens > 0.8 * second.usage.input_tokens
    assert second.usage.cache_write_tokens < first.usage.cache_write_tokens / 3


def test_claude_writes_a_file_runs_a_test_and_passes_the_check(
    claude_cli: Path,
    model_server: ScriptedServer,
    make_repo: MakeRepo,
    sandbox_config: SandboxConfig,
    user_home: Path,
) -> None:
    repo, (first, _) = make_repo()
    before = repo_state(repo)
    model_server.set_script(
        _script(
            Step(tool_calls=[write_file("test_calc.py", TEST_FILE)]),
            Step(tool_calls=[bash("python3 test_calc.py")]),
        )
    )
    task = ReplayTask(prompt="add a test for calc", repo=repo, commit=first, checks=["python3 test_calc.py"])
    result = replay(
        task,
        _claude(claude_cli, model_server),
        sandbox_config,
        skill=skill(),
        limits=ExecLimits(max_turns=10, timeout_s=120),
    )
    assert result.status is ExecStatus.OK, (result.error, result.stderr)
    assert result.checks_passed, [c.to_dict() for c in result.checks]
    assert result.files_changed == ["A test_calc.py"]
    bash_call = next(c for c in result.tool_calls if c.name == "Bash")
    assert bash_call.exit_code == 0 and "1 passed" in bash_call.output
    assert result.final_message == "Finished."
    assert result.cost_reported and result.usage.input_tokens > 0
    assert repo_state(repo) == before, "the replay changed the user's repository"
    assert os.listdir(sandbox_config.root) == []


def test_claude_max_turns(
    claude_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    model_server.set_script(_script(*[Step(tool_calls=[bash(f"echo step{i}")]) for i in range(6)]))
    result = replay(
        ReplayTask(prompt="loop over calc"),
        _claude(claude_cli, model_server),
        sandbox_config,
        limits=ExecLimits(max_turns=2, timeout_s=120),
    )
    assert result.status is ExecStatus.MAX_TURNS
    assert len(result.tool_calls) <= 3


def test_claude_permission_denial_is_a_failure(
    claude_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    model_server.set_script(_script(Step(tool_calls=[bash("python3 -c 'print(42)'")])))
    result = replay(
        ReplayTask(prompt="run calc"),
        _claude(claude_cli, model_server, allowed_tools=("Read",)),
        sandbox_config,
        limits=ExecLimits(max_turns=5, timeout_s=120),
    )
    assert result.exit_code == 0, "Claude Code exits 0 on a denial; the status must still say so"
    assert result.status is ExecStatus.PERMISSION_DENIED
    assert result.tool_calls[0].denied


def test_claude_hang_is_killed_at_the_timeout(
    claude_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    model_server.set_script(_script(Step(fault=Fault(hang=True))))
    start = time.monotonic()
    result = replay(
        ReplayTask(prompt="calc forever"),
        _claude(claude_cli, model_server),
        sandbox_config,
        limits=ExecLimits(timeout_s=4),
    )
    assert result.status is ExecStatus.TIMEOUT
    assert time.monotonic() - start < 30
    assert os.listdir(sandbox_config.root) == []


def test_claude_is_shown_the_candidate_skill_not_the_installed_one(
    claude_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    model_server.set_script(_script(Step(tool_calls=[call("Skill", {"skill": "demo"})])))
    candidate = skill(description="CANDIDATE-DESCRIPTION-V2.", body="CANDIDATE-BODY-V2")
    result = replay(
        ReplayTask(prompt="use calc skill"),
        _claude(claude_cli, model_server),
        sandbox_config,
        skill=candidate,
        limits=ExecLimits(timeout_s=120),
    )
    assert result.status is ExecStatus.OK, result.error
    seen = model_server.all_text()
    assert "CANDIDATE-DESCRIPTION-V2" in seen, "the candidate was not listed to the model"
    assert "CANDIDATE-BODY-V2" in seen, "the candidate's body did not reach the model"
    assert "OLD-INSTALLED" not in seen, "the user's installed copy reached the model"


# ------------------------------------------------------------------------------------------ Codex


def test_codex_writes_a_file_runs_a_test_and_passes_the_check(
    codex_cli: Path,
    model_server: ScriptedServer,
    make_repo: MakeRepo,
    sandbox_config: SandboxConfig,
    user_home: Path,
) -> None:
    repo, (first, _) = make_repo()
    before = repo_state(repo)
    model_server.set_script(
        _script(
            Step(tool_calls=[write_file("test_calc.py", TEST_FILE)]),
            Step(tool_calls=[bash("python3 test_calc.py")]),
        )
    )
    task = ReplayTask(prompt="add a test for calc", repo=repo, commit=first, checks=["python3 test_calc.py"])
    result = replay(
        task,
        _codex(codex_cli, model_server, user_home),
        sandbox_config,
        skill=skill(),
        limits=ExecLimits(timeout_s=120),
    )
    assert result.status is ExecStatus.OK, (result.error, result.stderr)
    assert result.checks_passed
    assert result.files_changed == ["A test_calc.py"]
    run = next(c for c in result.tool_calls if c.name == "command_execution")
    assert run.exit_code == 0 and "1 passed" in run.output
    assert repo_state(repo) == before


def test_codex_turns_read_the_conversation_so_far_from_the_cache(
    codex_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    """OpenAI caches a repeated prompt prefix on its own: every request after Codex's first re-sends the
    instructions, tools and conversation so far, and Codex's usage counts those tokens as cached."""
    model_server.set_script(_script(Step(tool_calls=[bash("true")]), Step(tool_calls=[bash("echo ok")])))
    result = replay(
        ReplayTask(prompt="check calc"),
        _codex(codex_cli, model_server, user_home),
        sandbox_config,
        limits=ExecLimits(timeout_s=120),
    )
    assert result.status is ExecStatus.OK, (result.error, result.stderr)
    requests = model_server.requests_matching(api="responses")
    assert len(requests) >= 3
    assert result.usage.cache_read_tokens > 0.5 * result.usage.input_tokens
    assert result.usage.cache_read_tokens % 128 == 0  # OpenAI caches in steps of 128 tokens


def test_codex_sandbox_refuses_a_write_outside_the_workspace(
    codex_cli: Path,
    model_server: ScriptedServer,
    make_repo: MakeRepo,
    sandbox_config: SandboxConfig,
    user_home: Path,
) -> None:
    repo, (first, _) = make_repo()
    target = repo / "calc.py"
    original = target.read_text()
    model_server.set_script(_script(Step(tool_calls=[bash(f"echo hacked > {target}")])))
    result = replay(
        ReplayTask(prompt="break calc", repo=repo, commit=first),
        _codex(codex_cli, model_server, user_home),
        sandbox_config,
        limits=ExecLimits(timeout_s=120),
    )
    assert target.read_text() == original
    assert result.status is ExecStatus.PERMISSION_DENIED, result.to_dict()
    assert "Read-only file system" in result.tool_calls[0].output


def test_codex_is_shown_the_candidate_skill_not_the_installed_one(
    codex_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    candidate = skill(description="CANDIDATE-DESCRIPTION-V2.", body="CANDIDATE-BODY-V2")
    model_server.set_script(_script(Step(tool_calls=[bash("cat .agents/skills/demo/SKILL.md")])))
    result = replay(
        ReplayTask(prompt="use calc skill"),
        _codex(codex_cli, model_server, user_home),
        sandbox_config,
        skill=candidate,
        limits=ExecLimits(timeout_s=120),
    )
    assert result.status is ExecStatus.OK, result.error
    seen = model_server.all_text()
    assert "CANDIDATE-DESCRIPTION-V2" in seen and "CANDIDATE-BODY-V2" in seen
    assert "OLD-INSTALLED" not in seen
    assert "does-not-exist" not in json.dumps([r.body for r in model_server.requests])


def test_codex_max_turns(
    codex_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    model_server.set_script(_script(*[Step(tool_calls=[bash(f"echo step{i}")]) for i in range(6)]))
    result = replay(
        ReplayTask(prompt="loop over calc"),
        _codex(codex_cli, model_server, user_home),
        sandbox_config,
        limits=ExecLimits(max_turns=2, timeout_s=120),
    )
    assert result.status is ExecStatus.MAX_TURNS


# ------------------------------------------------------------------------------- what a replay resends

WORK_TOOLS = {"Bash", "Read", "Edit", "Write", "Glob", "Grep", "Skill", "Agent", "TaskCreate"}


def _tool_names(body: dict[str, object]) -> set[str]:
    tools = body.get("tools")
    assert isinstance(tools, list)
    return {str(t.get("name") or t.get("type")) for t in tools if isinstance(t, dict)}


def test_claude_replay_requests_leave_out_what_the_replay_cannot_use(
    claude_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    """A confined replay's requests carry no web or scheduling tools (the confinement refuses the web, and a
    scheduled prompt dies with the `-p` session), and still every tool the agent works with and the skill."""
    model_server.set_script(_script(Step(tool_calls=[bash("true")])))
    result = replay(
        ReplayTask(prompt="check calc"),
        _claude(claude_cli, model_server),
        sandbox_config,
        skill=skill(),
        limits=ExecLimits(max_turns=5, timeout_s=120),
    )
    assert result.status is ExecStatus.OK, (result.error, result.stderr)
    asked = [r for r in model_server.requests if r.api == "anthropic"]
    assert asked
    for request in asked:
        names = _tool_names(request.body)
        assert not names & {"WebFetch", "WebSearch", "CronCreate", "CronDelete", "CronList", "ScheduleWakeup"}
        assert names >= WORK_TOOLS, WORK_TOOLS - names
    assert "demo" in asked[0].text()  # the candidate skill is still offered


def test_claude_untrimmed_sends_the_full_tool_set(
    claude_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    """`trim_prompt = false` sends what the CLI sends by default: the comparison the trimming is measured by."""
    model_server.set_script(_script())
    result = replay(
        ReplayTask(prompt="check calc"),
        _claude(claude_cli, model_server, trim_prompt=False),
        sandbox_config,
        limits=ExecLimits(max_turns=5, timeout_s=120),
    )
    assert result.status is ExecStatus.OK, (result.error, result.stderr)
    names = _tool_names(next(r for r in model_server.requests if r.api == "anthropic").body)
    assert {"WebFetch", "WebSearch", "CronCreate"} <= names


@pytest.mark.parametrize("trim", [True, False])
def test_codex_replay_requests_leave_out_web_search(
    trim: bool, codex_cli: Path, model_server: ScriptedServer, sandbox_config: SandboxConfig, user_home: Path
) -> None:
    """Codex's confined replay sends no web search tool and keeps its shell, its patch tool and the skill;
    untrimmed, it offers web search."""
    model_server.set_script(_script(Step(tool_calls=[bash("true")])))
    backend = _codex(codex_cli, model_server, user_home)
    backend.trim_prompt = trim
    result = replay(
        ReplayTask(prompt="check calc"),
        backend,
        sandbox_config,
        skill=skill(),
        limits=ExecLimits(max_turns=5, timeout_s=120),
    )
    assert result.status is ExecStatus.OK, (result.error, result.stderr)
    asked = [r for r in model_server.requests if r.api == "responses"]
    names = _tool_names(asked[0].body)
    assert {"exec_command", "apply_patch"} <= names
    assert "demo" in asked[0].text()
    assert ("web_search" in names) is not trim
