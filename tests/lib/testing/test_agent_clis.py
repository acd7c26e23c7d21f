"""The real, pinned Claude Code and Codex CLIs, driven against the scripted model server.

These prove the harness the rest of the suite relies on: a scripted model can make each CLI edit files
and run commands, the tool results come back to the model, the CLIs leave transcripts in the isolated
home, and skills installed there reach the model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from skillopt_lib.testing import Match, Rule, Script, Step, apply_patch, bash, write_file
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.agent_clis import codex_items

if TYPE_CHECKING:
    from testkit.agents import AgentSandbox

pytestmark = pytest.mark.agent_cli

REPO = Path(__file__).resolve().parents[3]

BUILD = Script(
    [
        Rule(
            "build",
            Match(user="create the greeting script"),
            steps=[
                Step(
                    text="Writing greet.py.",
                    tool_calls=[write_file("greet.py", "print('hello from greet')\n")],
                ),
                Step(text="Running it.", tool_calls=[bash("python3 greet.py")]),
                Step(text="greet.py prints its greeting."),
            ],
        ),
        Rule(
            "codex-build",
            Match(user="patch and run", api="responses"),
            steps=[
                Step(
                    text="Adding the file.",
                    tool_calls=[
                        apply_patch(
                            "*** Begin Patch\n*** Add File: notes/todo.txt\n+first item\n*** End Patch\n"
                        )
                    ],
                ),
                Step(text="Checking it.", tool_calls=[bash("wc -l notes/todo.txt && cat notes/todo.txt")]),
                Step(text="todo.txt has one item."),
            ],
        ),
        Rule(
            "follow-up",
            Match(user="(?i)now append a farewell"),
            steps=[
                Step(tool_calls=[bash("echo \"print('bye')\" >> greet.py && python3 greet.py")]),
                Step(text="Added the farewell."),
            ],
        ),
        Rule("skill-aware", Match(request="RULE-X-7731"), steps=[Step(text="I will follow RULE-X.")]),
    ]
)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_pinned_versions_match_the_install_script() -> None:
    script = (REPO / "scripts" / "install-agent-clis.sh").read_text()
    assert f'CLAUDE_VERSION="{ac.CLAUDE_CODE_VERSION}"' in script
    assert f'CODEX_VERSION="{ac.CODEX_VERSION}"' in script


def test_installed_clis_are_the_pinned_versions(claude_cli: Path, codex_cli: Path) -> None:
    import subprocess

    claude = subprocess.run([claude_cli, "--version"], capture_output=True, text=True, timeout=60)
    codex = subprocess.run([codex_cli, "--version"], capture_output=True, text=True, timeout=60)
    assert claude.stdout.startswith(ac.CLAUDE_CODE_VERSION), claude.stdout + claude.stderr
    assert codex.stdout.strip().endswith(ac.CODEX_VERSION), codex.stdout + codex.stderr


@pytest.mark.model_script(BUILD)
def test_claude_writes_a_file_runs_it_and_resumes(
    claude_sandbox: AgentSandbox, model_server: ScriptedServer
) -> None:
    run = claude_sandbox.run("Please create the greeting script and run it.")
    assert run.returncode == 0, run.describe()
    assert run.result is not None and run.result["subtype"] == "success", run.describe()
    assert run.result["result"] == "greet.py prints its greeting."
    assert run.result["permission_denials"] == []
    assert (claude_sandbox.project / "greet.py").read_text() == "print('hello from greet')\n"

    # The command's output went back to the model in the next request, as a tool_result.
    steps = [r.step for r in model_server.requests_matching(rule="build")]
    assert steps == ["build/0", "build/1", "build/2"]
    last = model_server.requests_matching(rule="build")[-1].body
    tool_results = [
        block
        for message in last["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert any("hello from greet" in json.dumps(block["content"]) for block in tool_results)
    assert all(r.auth_ok and r.status == 200 for r in model_server.requests)

    # The transcript is in the isolated home, under the project's folder name.
    assert run.transcript is not None
    assert run.transcript.parent.name == ac.claude_project_slug(claude_sandbox.project)
    assert run.transcript.is_relative_to(claude_sandbox.home / ".claude" / "projects")
    records = read_jsonl(run.transcript)
    assert {r.get("entrypoint") for r in records if r.get("type") == "user"} == {"sdk-cli"}
    tool_uses = [
        block["name"]
        for r in records
        if r.get("type") == "assistant"
        for block in r["message"]["content"]
        if block.get("type") == "tool_use"
    ]
    assert tool_uses == ["Write", "Bash"]

    follow = claude_sandbox.run("Now append a farewell.", resume=run.session_id)
    assert follow.returncode == 0, follow.describe()
    assert follow.session_id == run.session_id and follow.transcript == run.transcript
    assert (claude_sandbox.project / "greet.py").read_text().endswith("print('bye')\n")
    resumed = model_server.requests_matching(rule="follow-up")[-1]
    assert "hello from greet" in resumed.text()  # the first turn's history was sent again
    assert resumed.step == "follow-up/1"
    prompts = [
        r["message"]["content"]
        for r in read_jsonl(follow.transcript or run.transcript)
        if r.get("type") == "user" and isinstance(r["message"]["content"], str)
    ]
    assert prompts == ["Please create the greeting script and run it.", "Now append a farewell."]


@pytest.mark.model_script(BUILD)
def test_codex_applies_a_patch_and_runs_a_command(
    codex_sandbox: AgentSandbox, model_server: ScriptedServer
) -> None:
    run = codex_sandbox.run("Please patch and run the todo list.")
    assert run.returncode == 0, run.describe()
    assert (codex_sandbox.project / "notes" / "todo.txt").read_text() == "first item\n"
    changes = codex_items(run, "file_change")
    assert [c["kind"] for item in changes for c in item["changes"]] == ["add"]
    (command,) = codex_items(run, "command_execution")
    assert command["exit_code"] == 0 and "first item" in command["aggregated_output"]
    assert [m["text"] for m in codex_items(run, "agent_message")][-1] == "todo.txt has one item."
    assert run.of_type("turn.completed"), run.describe()

    # The model saw both tool outputs; Codex offered its shell as exec_command and apply_patch as custom.
    last = model_server.requests_matching(rule="codex-build")[-1]
    outputs = [
        i for i in last.body["input"] if i.get("type") in ("function_call_output", "custom_tool_call_output")
    ]
    assert [o["type"] for o in outputs] == ["custom_tool_call_output", "function_call_output"]
    assert "first item" in json.dumps(outputs[1]["output"])
    offered = {t.get("name"): t.get("type") for t in last.body["tools"]}
    assert offered["exec_command"] == "function" and offered["apply_patch"] == "custom"
    assert all(r.auth_ok for r in model_server.requests)

    assert run.transcript is not None and run.transcript.is_relative_to(
        codex_sandbox.home / ".codex" / "sessions"
    )
    meta = read_jsonl(run.transcript)[0]
    assert meta["type"] == "session_meta" and meta["payload"]["id"] == run.session_id
    assert meta["payload"]["model_provider"] == ac.CODEX_PROVIDER_ID


@pytest.mark.model_script(BUILD)
def test_installed_skills_reach_the_model(
    claude_sandbox: AgentSandbox, codex_sandbox: AgentSandbox, model_server: ScriptedServer
) -> None:
    description = "Use when asked about RULE-X-7731 compliance."
    claude_sandbox.write_skill("rule-x", description, "Always cite RULE-X.")
    codex_sandbox.write_skill("rule-x", description, "Always cite RULE-X.")
    claude_run = claude_sandbox.run("Is this change compliant?")
    codex_run = codex_sandbox.run("Is this change compliant?")
    assert claude_run.result is not None and claude_run.result["result"] == "I will follow RULE-X."
    assert "rule-x" in claude_run.events[0].get("skills", [])
    assert codex_items(codex_run, "agent_message")[-1]["text"] == "I will follow RULE-X."
    assert {r.api for r in model_server.requests_matching(rule="skill-aware")} == {"anthropic", "responses"}


@pytest.mark.model_script(
    Script(
        [
            Rule(
                "tui",
                Match(user="make the marker", tools=["Bash"]),
                steps=[
                    Step(text="Making it.", tool_calls=[bash("echo typed-in-tui > marker.txt")]),
                    Step(text="Marker made."),
                ],
            ),
            Rule(
                "tui-codex",
                Match(user="make the marker", tools=["exec_command"]),
                steps=[
                    Step(text="Making it.", tool_calls=[bash("echo typed-in-tui > marker.txt")]),
                    Step(text="Marker made."),
                ],
            ),
        ]
    )
)
@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_interactive_tui_session_in_tmux(
    kind: str, request: pytest.FixtureRequest, tmux_bin: str, model_server: ScriptedServer
) -> None:
    sandbox: AgentSandbox = request.getfixturevalue(f"{kind}_sandbox")
    extra = ["--allowedTools", "Bash"] if kind == "claude" else []
    run = sandbox.interactive(["Please make the marker.", "Thanks, that is all."], extra_args=extra)
    assert run.exit_status == 0, "\n".join(run.screens)
    assert (sandbox.project / "marker.txt").read_text() == "typed-in-tui\n"
    assert run.transcript is not None and run.transcript.is_relative_to(sandbox.home)
    records = read_jsonl(run.transcript)
    if kind == "claude":
        # A person's session: typed prompts, "cli" entrypoint, one turn_duration record per turn.
        assert {r.get("entrypoint") for r in records if r.get("type") == "user"} == {"cli"}
        turns = [r for r in records if r.get("type") == "system" and r.get("subtype") == "turn_duration"]
        assert len(turns) == 2
    else:
        assert records[0]["payload"]["originator"] == "codex-tui"
        typed = [
            part["text"]
            for r in records
            if r["type"] == "response_item"
            and r["payload"].get("type") == "message"
            and r["payload"].get("role") == "user"
            for part in r["payload"]["content"]
            if not part["text"].startswith("<environment_context>")
        ]
        assert typed == ["Please make the marker.", "Thanks, that is all."]
    assert "Marker made." in run.screens[0]
    assert re.search(r"Thanks, that is all", model_server.all_text())
