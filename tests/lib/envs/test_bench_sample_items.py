"""The ALFWorld, coding and SpreadsheetBench samples are large enough for the gate to decide, and every item
added for that is solvable: scored by the benchmark's own scorer, its reference solution scores 1 and doing
nothing scores 0.

Before these samples had six validation items, `skillopt train --env <name> --sample` warned at start that
no edit could ever be accepted on them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bench_helpers import answer_rule, scripted_chat
from test_bench_coding import _fix_script_all
from test_bench_spreadsheet_alfworld import SOLUTIONS, items_by_id

from skillopt_lib.envs import load_env
from skillopt_lib.gate import GateConfig, plan_gate
from skillopt_lib.testing import Match, Rule, Script, Step
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.agents import SCRIPTED_API_KEY

NEW_CODING = (
    "coding-durations", "coding-dedupe", "coding-pagination", "coding-money", "coding-leapyear", "coding-semver",
)  # fmt: skip

# SpreadsheetBench items added for the gate -> a reference program (run as `solution.py INPUT OUTPUT`)
SHEET_SOLUTIONS = {
    "107-5": "for r in range(2, ws.max_row + 1):\n"
    "    ws.cell(r, 4).value = round(ws.cell(r, 2).value * ws.cell(r, 3).value, 2)\n",
    "108-2": "for r in range(2, ws.max_row + 1):\n"
    "    if ws.cell(r, 2).value is None:\n"
    "        ws.cell(r, 2).value = 0\n",
    "109-6": "rows = [(ws.cell(r, 2).value, ws.cell(r, 1).value) for r in range(2, ws.max_row + 1)]\n"
    "ws['E1'] = max(rows)[1]\n",
    "110-4": "balance = 0\n"
    "for r in range(2, ws.max_row + 1):\n"
    "    balance += ws.cell(r, 2).value\n"
    "    ws.cell(r, 3).value = round(balance, 2)\n",
    "111-8": "for r in range(2, ws.max_row + 1):\n"
    "    first, last = ws.cell(r, 1).value.split(' ', 1)\n"
    "    ws.cell(r, 2).value, ws.cell(r, 3).value = first, last\n",
    "112-3": "report = wb['Report']\n"
    "for r in range(2, report.max_row + 1):\n"
    "    report.cell(r, 2).value = f'=SUMIF(Data!A:A,A{r},Data!B:B)'\n",
}
SHEET_PROGRAM = (
    "import sys\nimport openpyxl\n\nwb = openpyxl.load_workbook(sys.argv[1])\nws = wb.active\n"
    "{body}wb.save(sys.argv[2])\n"
)
DO_NOTHING = "import shutil, sys\nshutil.copy(sys.argv[1], sys.argv[2])\n"


@pytest.mark.parametrize("name", ["alfworld", "coding", "spreadsheetbench"])
def test_the_sample_has_six_validation_items_and_can_decide(name: str) -> None:
    sp = load_env(name, sample=True).splits()
    assert [len(sp.train), len(sp.val), len(sp.test)] == [4, 6, 2]
    plan = plan_gate(len(sp.val), GateConfig())
    assert plan.decidable, plan


def _walkthrough(commands: list[str]) -> list[Rule]:
    """Step k answers once the conversation holds the reply of step k - 1 (latest step first)."""
    rules = [
        Rule(
            name=f"step{k}",
            match=Match(request=rf"Think: step {k - 1}\." if k else None),
            steps=[Step(text=f"Think: step {k}.\nAction: {command}")],
        )
        for k, command in enumerate(commands)
    ]
    return rules[::-1]


def test_every_alfworld_sample_game_is_won_by_its_walkthrough_and_lost_by_doing_nothing() -> None:
    env = load_env("alfworld", sample=True, max_steps=12)
    items = items_by_id(env)
    assert len(items) == 12
    for item in items.values():
        commands = SOLUTIONS[item.gold["pddl_params"]["object_target"]]
        with scripted_chat(_walkthrough(commands)) as (_server, agent):
            won = env.run(item, env.seed_skill(), agent)
        assert (won.hard, won.soft) == (1.0, 1.0), (item.id, won.feedback)
        assert won.details == {"steps": len(commands), "invalid_actions": 0, "won": True}, item.id
        with scripted_chat([], default_text="Action: look") as (_server, agent):
            idle = env.run(item, env.seed_skill(), agent)
        assert (idle.hard, idle.soft) == (0.0, 0.0), item.id
        assert idle.details["steps"] == 12 and not idle.details["won"]


@pytest.mark.parametrize("item_id", list(SHEET_SOLUTIONS))
def test_every_new_spreadsheet_item_passes_with_its_reference_and_fails_when_nothing_is_done(
    item_id: str,
) -> None:
    env = load_env("spreadsheetbench", sample=True)
    item = items_by_id(env)[item_id]
    program = SHEET_PROGRAM.format(body=SHEET_SOLUTIONS[item_id])
    with scripted_chat([answer_rule("ref", item.data["instruction"], f"```python\n{program}```")]) as (
        _s,
        agent,
    ):
        solved = env.run(item, env.seed_skill(), agent)
    assert (solved.hard, solved.soft) == (1.0, 1.0), solved.feedback
    assert (solved.details["passed"], solved.details["cases"]) == (3, 3)
    with scripted_chat([answer_rule("idle", item.data["instruction"], f"```python\n{DO_NOTHING}```")]) as (
        _s,
        agent,
    ):
        idle = env.run(item, env.seed_skill(), agent)
    assert (idle.hard, idle.soft) == (0.0, 0.0), idle.feedback


@pytest.mark.agent_cli
def test_claude_code_solves_every_new_coding_task_with_its_reference_fix_and_fails_doing_nothing(
    claude_cli: Path, model_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillopt_lib.backends.claude_code import ClaudeCodeBackend
    from skillopt_lib.execution import ExecLimits

    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    backend = ClaudeCodeBackend(
        cli=str(claude_cli),
        base_env={
            "PATH": os.environ["PATH"],
            "ANTHROPIC_BASE_URL": model_server.url,
            "ANTHROPIC_API_KEY": SCRIPTED_API_KEY,
        },
        limits=ExecLimits(max_turns=6, timeout_s=180),
    )
    env = load_env("coding")
    items = items_by_id(env)
    for item_id in NEW_CODING:
        item = items[item_id]
        model_server.set_script(_fix_script_all())
        fixed = env.run(item, env.seed_skill(), backend)
        assert (fixed.hard, fixed.soft) == (1.0, 1.0), (item_id, fixed.feedback, fixed.error)
        model_server.set_script(Script(rules=[], default_text="I will not change anything."))
        idle = env.run(item, env.seed_skill(), backend)
        assert idle.hard == 0.0 and idle.soft < 1.0, (item_id, idle.feedback)
        assert "hidden checks failed" in idle.feedback
