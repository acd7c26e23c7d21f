"""The learning night's scripted agent with `noise`: in that share of its runs it does the work right whatever
the skill says, decided once per run so every request of the run tells the same story.

Requests are built the way Claude Code and Codex send them (a working directory in the system prompt or the
environment context, the history of the run's earlier turns) and parsed by the scripted server's own parser.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skillopt_lib.testing.script import ToolCall
from skillopt_lib.testing.scripted_server import ScriptedServer, parse_request
from testkit import agent_clis as ac
from testkit.corpus.night_world import work_kinds
from testkit.corpus.spec import family, scope_family
from testkit.fixtures import require
from testkit.learning_night import LearningNight

KIND = family("lint")
RUNS = 600


def _claude_request(prompt: str, cwd: str, turns: int) -> dict[str, Any]:
    """A Claude Code request `turns` replies into a run: each earlier reply called a tool and got its result."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
    for n in range(turns):
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "Bash"}]}
        )
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}]}
        )
    return {
        "model": "claude",
        "system": f"You are Claude Code.\nPrimary working directory: {cwd}\n",
        "messages": messages,
        "tools": [{"name": n, "input_schema": {"properties": {}}} for n in ("Bash", "Read", "Write")],
    }


def _codex_request(prompt: str, cwd: str, turns: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {
            "type": "message",
            "role": "user",
            "content": f"<environment_context><cwd>{cwd}</cwd></environment_context>",
        },
        {"type": "message", "role": "user", "content": prompt},
    ]
    for n in range(turns):
        items.append({"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": f"c{n}"})
        items.append({"type": "function_call_output", "call_id": f"c{n}", "output": "ok"})
    return {
        "model": ac.CODEX_MODEL,
        "instructions": "You are Codex.",
        "input": items,
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"properties": {}}}],
    }


def _run(script: LearningNight, api: str, prompt: str, cwd: str) -> list[str]:
    """One agent run: what it wrote to the work file and what its last turn said it wrote."""
    build = _claude_request if api == "anthropic" else _codex_request
    seen = []
    for turn in range(3):  # both agents: work, check, then say what they wrote
        step = script.select(parse_request(api, build(prompt, cwd, turn))).step  # type: ignore[arg-type]
        calls: list[ToolCall] = list(step.tool_calls)
        seen += [c.content or c.command for c in calls if c.kind == "write_file" or "cat >" in c.command]
        if step.text.startswith("Done."):
            seen.append(step.text)
    assert len(seen) == 2, seen
    return seen


def _right(seen: list[str]) -> bool:
    wrote, said = (KIND.after_correction in s for s in seen)
    assert wrote == said, seen  # one decision for the whole run
    return wrote


@pytest.mark.parametrize("api", ["anthropic", "responses"])
def test_noise_makes_that_share_of_runs_right_and_each_run_tells_one_story(api: str) -> None:
    script = LearningNight(work_kinds(["lint"]), noise=0.3, seed=7)
    prompts = KIND.prompts[:3]
    outcomes = [_right(_run(script, api, prompts[i % 3], f"/ws/run-{i}/repo")) for i in range(RUNS)]
    share = sum(outcomes) / RUNS
    # 600 runs at p = 0.3: the standard error is 0.019, so 0.3 +- 0.06 fails about once in 400 years of CI.
    assert 0.24 <= share <= 0.36, share
    # Runs are not lucky together: the outcome of a run says nothing about the next run's.
    both = sum(a and b for a, b in zip(outcomes, outcomes[1:], strict=False)) / (RUNS - 1)
    assert both < 0.16, both
    # The same run asked again (a retried request) gets the same answer; the same seed replays the same luck.
    again = LearningNight(work_kinds(["lint"]), noise=0.3, seed=7)
    replayed = [_right(_run(again, api, prompts[i % 3], f"/ws/run-{i}/repo")) for i in range(RUNS)]
    assert replayed == outcomes
    assert [_right(_run(script, api, prompts[i % 3], f"/ws/run-{i}/repo")) for i in range(20)] == outcomes[
        :20
    ]


def test_without_noise_the_agent_is_wrong_until_a_skill_states_the_rule() -> None:
    script = LearningNight(work_kinds(["lint"]))
    assert not any(_right(_run(script, "anthropic", KIND.prompts[0], f"/ws/{i}")) for i in range(50))
    assert script.lucky(parse_request("anthropic", _claude_request(KIND.prompts[0], "/ws/x", 0))) is False


def test_noise_reaches_neither_the_optimizer_nor_the_judge() -> None:
    quiet = LearningNight(work_kinds(["lint"]))
    noisy = LearningNight(work_kinds(["lint"]), noise=1.0, seed=3)
    for body in (
        {
            "model": "opt",
            "messages": [{"role": "user", "content": "skillopt role: failure analyst\n## Current skill\n"}],
        },
        {
            "model": "opt",
            "messages": [
                {
                    "role": "user",
                    "content": f"skillopt role: skill drafter\n## The user's requests\n- {KIND.prompts[0]}\n",
                }
            ],
        },
        {
            "model": "judge",
            "messages": [
                {"role": "system", "content": "You grade whether the work follows the rules."},
                {
                    "role": "user",
                    "content": f"The agent's work:\n+x  # noqa\nRules (index. rule):\n1. {KIND.rule}\n",
                },
            ],
        },
    ):
        conv = parse_request("chat", body)
        assert noisy.select(conv).step.text == quiet.select(conv).step.text


def test_noise_must_be_a_probability() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        LearningNight(work_kinds(["lint"]), noise=1.5)


def test_a_real_claude_run_with_noise_one_does_the_work_right_without_a_skill(tmp_path: Path) -> None:
    """Through the real CLI, whose run spans several requests (and side requests): one decision holds."""
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    project = tmp_path / "webapp" / "app"
    project.mkdir(parents=True)
    (project / "dates.py").write_text("def parse(s):    \n    return s\n")
    script = LearningNight(work_kinds(["lint"]), noise=1.0)
    with ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as server:
        env = ac.claude_env(tmp_path / "home", server.url, trusted_dirs=[project.parent])
        run = ac.run_claude(
            Path(str(clis.claude)),
            KIND.prompts[0],
            cwd=project.parent,
            env=env,
            allowed_tools=("Bash", "Read", "Write"),
        )
        rules = {r.rule for r in server.requests if r.rule and r.rule.startswith("agent-")}
    assert run.returncode == 0, run.describe()
    assert (project / "dates.py").read_text() == KIND.after_correction
    assert "agent-lucky" in rules and "agent-wrong" not in rules, rules


def _opencode_request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """An OpenCode request (Chat Completions): its skills listed in the system prompt, its tools offered."""
    listing = (
        "<available_skills>\n  <skill>\n    <name>customize-opencode</name>\n    <description>Set up "
        "opencode.</description>\n    <location>&lt;built-in&gt;</location>\n  </skill>\n  <skill>\n"
        "    <name>lint-fixes</name>\n    <description>Fix lint.</description>\n"
        "    <location>/ws/repo/.opencode/skills/lint-fixes/SKILL.md</location>\n  </skill>\n</available_skills>"
    )
    return {
        "model": "gpt-4.1",
        "messages": [{"role": "system", "content": f"You are opencode.\n{listing}"}, *messages],
        "tools": [
            {"type": "function", "function": {"name": n, "parameters": {"properties": {}}}}
            for n in ("bash", "read", "write")
        ],
    }


def _opencode_turn(script: LearningNight, messages: list[dict[str, Any]]) -> list[ToolCall]:
    return list(script.select(parse_request("chat", _opencode_request(messages))).step.tool_calls)


def test_the_opencode_agent_reads_the_listed_skill_and_is_right_only_when_it_or_the_user_says_how() -> None:
    script = LearningNight(work_kinds(["lint"]))
    asked = [{"role": "user", "content": KIND.prompts[0]}]
    (read,) = _opencode_turn(script, asked)
    assert (read.name, read.args) == ("read", {"filePath": "/ws/repo/.opencode/skills/lint-fixes/SKILL.md"})

    def after_reading(skill_text: str) -> str:
        history = [
            *asked,
            {"role": "assistant", "content": None, "tool_calls": [{"id": "r", "type": "function",
             "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "r", "content": skill_text},
        ]  # fmt: skip
        (write,) = _opencode_turn(script, history)
        return write.command

    assert KIND.first_try in after_reading("# Lint fixes\n\nLook at what the linter reports.\n")
    assert KIND.after_correction in after_reading(f"# Lint fixes\n\n- {KIND.rule}\n")
    corrected = [*asked, {"role": "assistant", "content": "Done."}, {"role": "user", "content": KIND.rule}]
    (read_again,) = _opencode_turn(script, corrected)
    assert read_again.name == "read"  # a follow-up in the same session: the same kind of work
    history = [
        *corrected,
        {"role": "assistant", "content": None, "tool_calls": [{"id": "r", "type": "function",
         "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "r", "content": "# Lint fixes\n"},
    ]  # fmt: skip
    (write,) = _opencode_turn(script, history)
    assert KIND.after_correction in write.command  # the user just said how


def test_the_agent_knows_a_rule_in_any_of_the_words_the_user_said_it() -> None:
    """The scope corpus' lint rule, said alike in three repositories: a skill that states it in the webapp's
    words teaches the agent at work in the site, as it would a competent model; in a world without those
    kinds the other wordings teach nothing."""
    site = scope_family("lint-site")

    def wrote(script: LearningNight, skill: str) -> str:
        body = _codex_request(site.prompts[0], "/ws/site", 1)  # it listed one skill and printed its file
        body["instructions"] += (
            "\n### Available skills\n- lint-work: Fix lint. (file: /s/lint-work/SKILL.md)\n"
        )
        body["input"][-1]["output"] = skill
        step = script.select(parse_request("responses", body)).step
        return str(step.tool_calls[0].command)

    told = "- The user's rule for this work, in their words: no noqa, fix the code"
    world = LearningNight(work_kinds(["lint", "lint-site", "lint-handbook"]))
    assert site.after_correction in wrote(world, told)
    assert site.first_try in wrote(world, "- Keep each change small.")
    assert site.first_try in wrote(LearningNight(work_kinds(["lint-site"])), told)


def test_the_login_defaults_optimizer_and_judge_answer_from_the_claude_p_prompt_alone() -> None:
    """The login default's optimizer and judge reach the server as `claude -p` prompts on the Anthropic API:
    they are answered as the optimizer and the judge, from the prompt alone, and never as the agent."""
    script = LearningNight(work_kinds(["lint"]))

    def ask(prompt: str) -> tuple[str, str]:
        sel = script.select(parse_request("anthropic", _claude_request(prompt, "/tmp/chat", 0)))
        return sel.rule.name, sel.step.text

    analyst = "skillopt role: failure analyst\n## Current skill\n# Lint\n## Budget\n"
    said = f"- '{KIND.rule}' · claude-code · webapp · 2026-12-01\n"
    role, text = ask(analyst + said)
    assert role == "analyst" and KIND.rule in text  # the user's words were shown: the rule is written
    role, text = ask(analyst)
    assert role == "analyst" and KIND.rule not in text  # no words shown: no rule
    role, text = ask(
        f"You grade whether the work follows the rules.\nThe agent's work:\n+x  # noqa\nRules (index. rule):\n1. {KIND.rule}\n"
    )
    assert role == "judge" and '"satisfied": false' in text
    assert ask(KIND.prompts[0])[0].startswith("agent-")
