"""Each replay is capped relative to the session it replays: what mining measures of an attempt, and a real
`claude` replay stopped at the cap its short session gives it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillopt_daemon.night.learning import replay_caps
from skillopt_daemon.night.learning.replay import ReplayEnvironment
from skillopt_daemon.night.mining.attempts import segment
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.backends.claude_code import ClaudeCodeBackend
from skillopt_lib.execution import ExecLimits
from skillopt_lib.skill import SkillBundle
from skillopt_lib.testing import Match, Rule, Script, Step, bash, write_file
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.agents import SCRIPTED_API_KEY
from testkit.fixtures import require

SKILL = SkillBundle.from_text("---\nname: demo\ndescription: Use for demo tasks.\n---\nSay hello.\n")


def _turn(key: str, role: str, text: str, at: str) -> dict[str, object]:
    return {"key": key, "seq": int(key[1:]), "role": role, "text": text, "timestamp": at, "is_meta": 0}


def _call(key: str, turn: str, at: str, done: str) -> dict[str, object]:
    return {"key": key, "turn_key": turn, "name": "Bash", "input_summary": '{"command": "make lint"}',
            "timestamp": at, "result_at": done, "exit_code": 0, "is_error": 0}  # fmt: skip


def test_an_attempt_counts_its_tool_calls_and_the_agents_time_not_the_users_pauses() -> None:
    turns = [
        _turn("t1", "user", "fix the lint errors in app.py", "2026-12-01T10:00:00Z"),
        _turn("t2", "assistant", "", "2026-12-01T10:00:05Z"),
        _turn("t3", "assistant", "Fixed.", "2026-12-01T10:00:30Z"),
        # the user reads the answer for ten minutes, then asks for a follow-up
        _turn("t4", "user", "also fix the same thing in models.py", "2026-12-01T10:10:30Z"),
        _turn("t5", "assistant", "Done too.", "2026-12-01T10:10:50Z"),
    ]
    calls = [
        _call("c1", "t2", "2026-12-01T10:00:05Z", "2026-12-01T10:00:20Z"),
        _call("c2", "t2", "2026-12-01T10:00:21Z", "2026-12-01T10:00:25Z"),
        _call("c3", "t5", "2026-12-01T10:10:40Z", "2026-12-01T10:10:45Z"),
    ]
    session = {"id": 1, "tool": "claude-code", "session_id": "s1", "signals_json": "{}"}
    [attempt] = segment(session, turns, calls)
    assert attempt.tool_calls == 3
    assert attempt.work_s == pytest.approx(30 + 20)


def test_a_task_without_recorded_figures_gets_the_replay_limits() -> None:
    base = ExecLimits(max_turns=30, timeout_s=600)
    unknown = replay_caps.cap_for(NightTask(id="t", prompt="p", split="val"), base)
    assert (unknown.max_turns, unknown.timeout_s, unknown.sized_from_session) == (30, 600, False)
    long = replay_caps.cap_for(
        NightTask(id="t", prompt="p", split="val", recorded_tool_calls=40, recorded_work_s=900), base
    )
    assert (long.max_turns, long.timeout_s) == (30, 600)  # never above the replay's own limits


def _env(server: ScriptedServer, tmp_path: Path, tasks: list[NightTask]) -> ReplayEnvironment:
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    env = {
        "PATH": os.environ["PATH"],
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": SCRIPTED_API_KEY,
    }
    agent = ClaudeCodeBackend(
        cli=str(clis.claude), base_env=env, user_home=tmp_path / "user", limits=ExecLimits(max_turns=30)
    )
    return ReplayEnvironment(
        tasks, seed_skill=SKILL, workspaces_root=tmp_path / "ws", agents={"claude-code": agent}
    )


@pytest.mark.agent_cli
def test_a_short_sessions_replay_stops_at_its_small_cap_and_is_scored_by_its_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session that took one tool call gives its replay 10 turns (the floor): an agent that would go on for
    60 is stopped there, its record says it hit the cap, and its check decides its score."""
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))
    forever = [Step(tool_calls=[bash(f"echo round {i}")]) for i in range(60)]
    script = Script(
        rules=[
            Rule(name="fails", match=Match(user="broken"), steps=forever, done_text="Done."),
            Rule(
                name="works",
                match=Match(user="sound"),
                steps=[Step(tool_calls=[write_file("done.txt", "ok\n")]), *forever],
                done_text="Done.",
            ),
        ]
    )
    tasks = [
        NightTask(id="broken", prompt="the broken one", split="val", tool="claude-code",
                  checks=["test -f done.txt"], recorded_tool_calls=1, recorded_work_s=20.0),
        NightTask(id="sound", prompt="the sound one", split="val", tool="claude-code",
                  checks=["test -f done.txt"], recorded_tool_calls=1, recorded_work_s=20.0),
    ]  # fmt: skip
    with ScriptedServer(script, expected_key=SCRIPTED_API_KEY) as server:
        env = _env(server, tmp_path, tasks)
        items = {i.id: i for i in env.splits().val}
        broken = env.run(items["broken"], SKILL, env.agents["claude-code"])
        answered = len([r for r in server.requests if r.api == "anthropic"])
        sound = env.run(items["sound"], SKILL, env.agents["claude-code"])
    assert broken.details["cap"] == {"max_turns": 10, "timeout_s": 180.0, "sized_from": "session"}
    assert broken.details["status"] == "max_turns" and broken.details["hit_cap"] == "turns"
    assert 10 <= answered <= 12  # stopped at the cap, not after the script's 60 rounds
    assert broken.hard == 0.0  # its check fails on what it produced
    assert sound.details["hit_cap"] == "turns" and sound.hard == 1.0  # its work passes its check
    [run] = env.observed[(SKILL.content_hash, "broken")]
    assert run["hit_cap"] == "turns"


@pytest.mark.agent_cli
def test_a_replay_of_a_task_without_recorded_figures_gets_the_default_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))
    script = Script(rules=[Rule(name="t", match=Match(user="calc"), steps=[], done_text="Done.")])
    task = NightTask(id="old", prompt="check calc", split="val", tool="claude-code", checks=["true"])
    with ScriptedServer(script, expected_key=SCRIPTED_API_KEY) as server:
        env = _env(server, tmp_path, [task])
        result = env.run(env.splits().val[0], SKILL, env.agents["claude-code"])
    assert result.details["cap"] == {"max_turns": 30, "timeout_s": 600.0, "sized_from": "default"}
    assert result.details["hit_cap"] is None and result.hard == 1.0
