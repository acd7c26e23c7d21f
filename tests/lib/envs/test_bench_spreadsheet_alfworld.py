"""SpreadsheetBench (model-written code run in a scrubbed, time-limited subprocess) and ALFWorld (an
interactive multi-turn game) on their shipped samples, against the scripted model server."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from bench_helpers import answer_rule, scripted_chat

from skillopt_lib.envs import load_env
from skillopt_lib.envs.alfworld import parse_action
from skillopt_lib.envs.alfworld.engine import MiniAlfredGame, load_game
from skillopt_lib.envs.base import Item
from skillopt_lib.envs.spreadsheetbench import extract_code
from skillopt_lib.envs.spreadsheetbench.runner import (
    Recalculation,
    compare_workbooks,
    recalculate,
    run_solution,
)
from skillopt_lib.testing import Match, Rule, Step


def items_by_id(env: Any) -> dict[str, Item]:
    sp = env.splits()
    return {i.id: i for i in (*sp.train, *sp.val, *sp.test)}


SUM_PROGRAM = """
import sys
import openpyxl

wb = openpyxl.load_workbook(sys.argv[1])
ws = wb.active
for row in range(2, ws.max_row + 1):
    ws.cell(row, 4).value = ws.cell(row, 2).value + ws.cell(row, 3).value
wb.save(sys.argv[2])
"""


def test_spreadsheet_program_that_computes_passes_every_test_case() -> None:
    env = load_env("spreadsheetbench", sample=True)
    item = items_by_id(env)["101-1"]
    reply = f"Here is the program.\n```python\n{SUM_PROGRAM}```"
    with scripted_chat([answer_rule("sum", item.data["instruction"], reply)]) as (server, agent):
        result = env.run(item, env.seed_skill(), agent)
        prompt = server.requests[0].body["messages"][1]["content"]
    assert (result.hard, result.soft) == (1.0, 1.0), result.feedback
    assert result.details["passed"] == 3 and result.details["cases"] == 3
    assert result.details["recalculated"] == 0  # values only: nothing to recalculate
    assert "D2:D6" in prompt and "B1='Q1'" in prompt  # the answer cells and a preview of the workbook


def test_spreadsheet_program_that_hardcodes_one_case_gets_partial_credit() -> None:
    env = load_env("spreadsheetbench", sample=True)
    item = items_by_id(env)["101-1"]
    first = openpyxl.load_workbook(item.gold["answers"][0])
    values = [first.active.cell(r, 4).value for r in range(2, 7)]
    program = (
        "import sys, openpyxl\nwb = openpyxl.load_workbook(sys.argv[1])\nws = wb.active\n"
        f"for r, v in enumerate({values!r}, 2):\n    ws.cell(r, 4).value = v\nwb.save(sys.argv[2])\n"
    )
    with scripted_chat([answer_rule("hard", item.data["instruction"], f"```python\n{program}```")]) as (
        _s,
        agent,
    ):
        result = env.run(item, env.seed_skill(), agent)
    assert result.hard == 0.0 and result.soft == pytest.approx(1 / 3)
    assert "test case 2" in result.feedback and "wrong" in result.feedback
    # the expected values of the failing cases are not revealed to the optimizer
    second = openpyxl.load_workbook(item.gold["answers"][1])
    expected = [second.active.cell(r, 4).value for r in range(2, 7)]
    assert not any(f"{v!r}" in result.feedback for v in expected if v not in values)


def test_spreadsheet_reply_without_code_or_with_a_crash_scores_zero() -> None:
    env = load_env("spreadsheetbench", sample=True)
    item = items_by_id(env)["104-2"]
    with scripted_chat([answer_rule("none", item.data["instruction"], "I would use Excel.")]) as (_s, agent):
        none = env.run(item, env.seed_skill(), agent)
    crash = "```python\nraise SystemExit('boom: no idea')\n```"
    with scripted_chat([answer_rule("crash", item.data["instruction"], crash)]) as (_s, agent):
        crashed = env.run(item, env.seed_skill(), agent)
    assert (none.hard, none.soft) == (0.0, 0.0) and "python" in none.feedback
    assert (crashed.hard, crashed.soft) == (0.0, 0.0) and "boom: no idea" in crashed.feedback


def test_spreadsheet_answer_on_a_named_sheet_and_formulas_are_recalculated(tmp_path: Path) -> None:
    env = load_env("spreadsheetbench", sample=True)
    item = items_by_id(env)["104-2"]
    answer = Path(item.gold["answers"][0])
    out = tmp_path / "out.xlsx"
    wb = openpyxl.load_workbook(item.data["inputs"][0])
    # a formula written with openpyxl has no cached value: it is computed before comparing
    wb["Summary"]["B1"] = '=COUNTIF(Orders!B:B,"Shipped")'
    wb.save(out)
    assert compare_workbooks(out, answer, item.data["answer_position"]) == []
    wb["Summary"]["B1"] = '=COUNTIF(Orders!B:B,"Pending")'
    wb.save(out)
    problems = compare_workbooks(out, answer, item.data["answer_position"])
    assert len(problems) == 1 and problems[0].startswith("Summary!B1 = =COUNTIF(") and "wrong" in problems[0]
    wb["Summary"]["B1"] = "=NOSUCHFUNCTION(1)"
    wb.save(out)
    # an unknown function is Excel's #NAME? error, as a spreadsheet application would show it
    assert compare_workbooks(out, answer, item.data["answer_position"]) == [
        "Summary!B1 = =NOSUCHFUNCTION(1) gives '#NAME?', which is wrong"
    ]
    wb["Summary"]["B1"] = openpyxl.load_workbook(answer)["Summary"]["B1"].value
    wb.save(out)
    assert compare_workbooks(out, answer, item.data["answer_position"]) == []


def _book(path: Path, cells: dict[str, Any], title: str = "Sheet1") -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = title
    for ref, value in cells.items():
        ws[ref] = value
    wb.save(path)
    return path


def test_formulas_of_the_benchmark_kind_are_computed_in_the_sandbox(tmp_path: Path) -> None:
    """The `formulas` engine, used where LibreOffice is not installed."""
    engine = Recalculation("formulas")
    data = {f"A{r}": v for r, v in enumerate([1.5, 3, 4.5, 6, 7.5], 1)}
    data.update({f"B{r}": v for r, v in enumerate(["x", "y", "x", "z", "x"], 1)})
    formulas = {
        "C1": "=SUM(A1:A5)",
        "C2": '=SUMIF(B1:B5,"x",A1:A5)',
        "C3": '=COUNTIF(B1:B5,"x")',
        "C4": "=VLOOKUP(4.5,A1:B5,2,FALSE)",
        "C5": "=INDEX(B1:B5,MATCH(6,A1:A5,0))",
        "C6": '=IF(A1>1,"big","small")',
        "C7": "=ROUND(AVERAGE(A1:A5),1)",
        "C8": "=DATE(2024,1,2)",
        "C9": "=A1>1",
        "C10": '=CONCATENATE(B1,"-",B2)',
        "C11": "=Data!A1*2",
    }
    expected = {
        "C1": 22.5, "C2": 13.5, "C3": 3, "C4": "x", "C5": "z", "C6": "big", "C7": 4.5,
        "C8": dt.datetime(2024, 1, 2), "C9": True, "C10": "x-y", "C11": 20,
    }  # fmt: skip
    out = _book(tmp_path / "out.xlsx", {**data, **formulas})
    wb = openpyxl.load_workbook(out)
    wb.create_sheet("Data")["A1"] = 10
    wb.save(out)
    want = _book(tmp_path / "want.xlsx", {**data, **expected})
    wb = openpyxl.load_workbook(want)
    wb.create_sheet("Data")["A1"] = 10
    wb.save(want)
    assert compare_workbooks(out, want, "C1:C11", recalc=engine) == []
    values = recalculate(out)["Sheet1"]
    assert values["C1"] == 22.5 and values["C4"] == "x" and values["C8"] == 45293 and values["C9"] is True
    # a changed input changes the computed answer: the values are computed, not read from the file
    wb = openpyxl.load_workbook(out)
    wb["Sheet1"]["A1"] = 2.5
    wb.save(out)
    problems = compare_workbooks(out, want, "C1:C11", recalc=engine)
    assert [p.split(" ")[0] for p in problems] == ["C1", "C2", "C7"]


def test_the_sheet_colours_and_first_sheet_follow_the_official_evaluation(tmp_path: Path) -> None:
    from openpyxl.styles import Font, PatternFill

    want = _book(tmp_path / "want.xlsx", {"A1": 5}, title="Answer")
    out = _book(tmp_path / "out.xlsx", {"A1": 5}, title="Answer")
    assert compare_workbooks(out, want, "A1") == []
    wb = openpyxl.load_workbook(out)
    wb["Answer"]["A1"].fill = PatternFill("solid", fgColor="FFFF00")
    wb.save(out)
    # the official evaluation compares values only (its colour check was switched off in October 2025)
    assert compare_workbooks(out, want, "A1") == []
    # the paper's release compared colours on conditional-formatting ("CF") tasks
    mismatch = ["A1 has the right value but the wrong fill or font colour"]
    assert compare_workbooks(out, want, "A1", scorer="paper", colours=True) == mismatch
    wb["Answer"]["A1"].fill = PatternFill()
    wb["Answer"]["A1"].font = Font(color="FF0000")
    wb.save(out)
    assert compare_workbooks(out, want, "A1") == []
    assert compare_workbooks(out, want, "A1", scorer="paper", colours=True) == mismatch
    # a range without a sheet is on the answer's first sheet, found by name in the output
    renamed = _book(tmp_path / "renamed.xlsx", {"A1": 5}, title="Other")
    assert compare_workbooks(renamed, want, "A1") == ["sheet 'Answer' is missing"]
    # a position on a sheet the answer workbook lacks fails the case, as the official evaluation's error does
    assert compare_workbooks(out, want, "Nowhere!A1") == [
        "sheet 'Nowhere' named by the answer position is not in the answer workbook"
    ]


def test_a_solution_that_writes_formulas_passes_every_test_case() -> None:
    env = load_env("spreadsheetbench", sample=True)
    item = items_by_id(env)["101-1"]
    program = (
        "import sys, openpyxl\nwb = openpyxl.load_workbook(sys.argv[1])\nws = wb.active\n"
        "for r in range(2, ws.max_row + 1):\n    ws.cell(r, 4).value = f'=B{r}+C{r}'\nwb.save(sys.argv[2])\n"
    )
    with scripted_chat([answer_rule("f", item.data["instruction"], f"```python\n{program}```")]) as (
        _s,
        agent,
    ):
        result = env.run(item, env.seed_skill(), agent)
    assert (result.hard, result.soft) == (1.0, 1.0), result.feedback


def test_solution_runs_in_a_scrubbed_environment_with_a_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    book = tmp_path / "in.xlsx"
    openpyxl.Workbook().save(book)
    spy = (
        "import os, sys, shutil\n"
        "open('env.txt', 'w').write('\\n'.join(sorted(os.environ)))\n"
        "shutil.copy(sys.argv[1], sys.argv[2])\n"
        "print(os.getcwd())\n"
    )
    run = run_solution(spy, book, timeout_s=20)
    assert run.ok and run.workdir is not None
    names = (run.workdir / "env.txt").read_text().split()
    assert "OPENAI_API_KEY" not in names and "SKILLOPT_HOME" not in names
    assert run.stdout.strip() == str(run.workdir)  # runs in its own fresh folder
    workdir = run.workdir
    run.cleanup()
    assert not workdir.exists()
    slow = run_solution("import time\ntime.sleep(30)\n", book, timeout_s=1)
    assert not slow.ok and "timed out" in slow.error
    hog = run_solution("x = bytearray(3 * 1024**3)\n", book, timeout_s=20)  # above the 2 GiB limit
    assert not hog.ok and "MemoryError" in hog.error


def test_extract_code_takes_the_last_python_block() -> None:
    reply = "first try\n```python\nprint(1)\n```\nbetter:\n```py\nprint(2)\n```"
    assert extract_code(reply) == "print(2)\n"
    assert extract_code("no code") == ""


# ---------------------------------------------------------------------------------------------- ALFWorld

SOLUTIONS = {
    "Mug": ["go to cabinet 2", "open cabinet 2", "take mug 1 from cabinet 2", "go to coffeemachine 1",
            "move mug 1 to coffeemachine 1"],
    "Plate": ["go to countertop 1", "take plate 1 from countertop 1", "go to sinkbasin 1",
              "clean plate 1 with sinkbasin 1", "go to shelf 1", "put plate 1 in/on shelf 1"],
    "Egg": ["go to fridge 1", "open fridge 1", "take egg 1 from fridge 1", "go to microwave 1",
            "heat egg 1 with microwave 1", "go to countertop 1", "move egg 1 to countertop 1"],
    "Book": ["go to bed 1", "take book 1 from bed 1", "go to desklamp 1", "use desklamp 1"],
    "Apple": ["go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1",
              "cool apple 1 with fridge 1", "go to diningtable 1", "move apple 1 to diningtable 1"],
    "Pillow": ["go to armchair 1", "take pillow 1 from armchair 1", "go to sofa 1", "move pillow 1 to sofa 1",
               "go to bed 1", "take pillow 2 from bed 1", "go to sofa 1", "move pillow 2 to sofa 1"],
    "Potato": ["go to cabinet 1", "open cabinet 1", "take potato 1 from cabinet 1", "go to microwave 1",
               "heat potato 1 with microwave 1", "go to diningtable 1", "move potato 1 to diningtable 1"],
    "Watch": ["go to drawer 1", "open drawer 1", "take watch 1 from drawer 1", "go to floorlamp 1",
              "use floorlamp 1"],
    "CellPhone": ["go to desk 1", "take cellphone 1 from desk 1", "go to drawer 1", "open drawer 1",
                  "move cellphone 1 to drawer 1"],
    "Cup": ["go to diningtable 1", "take cup 1 from diningtable 1", "go to sinkbasin 1",
            "clean cup 1 with sinkbasin 1", "go to cabinet 1", "open cabinet 1", "move cup 1 to cabinet 1"],
    "Lettuce": ["go to diningtable 1", "take lettuce 1 from diningtable 1", "go to fridge 1",
                "cool lettuce 1 with fridge 1", "go to countertop 1", "move lettuce 1 to countertop 1"],
    "CD": ["go to desk 1", "take cd 1 from desk 1", "go to shelf 1", "move cd 1 to shelf 1", "go to drawer 1",
           "open drawer 1", "take cd 2 from drawer 1", "go to shelf 1", "move cd 2 to shelf 1"],
}  # fmt: skip


def test_every_sample_game_is_winnable_and_only_by_finishing_the_task() -> None:
    env = load_env("alfworld", sample=True)
    for item in items_by_id(env).values():
        game = load_game(Path(item.data["game_dir"]))
        first = game.reset()
        assert first.startswith("-= Welcome to TextWorld, ALFRED! =-") and "Your task is to: " in first
        steps = SOLUTIONS[item.gold["pddl_params"]["object_target"]]
        for n, command in enumerate(steps, 1):
            obs, won = game.step(command)
            assert obs != "Nothing happens.", (item.id, command)
            assert won == (n == len(steps)), (item.id, command)


def test_game_rules_follow_alfworld() -> None:
    spec = json.loads(
        (Path(load_env("alfworld", sample=True).root) / "json_2.1.1/valid_seen")
        .glob("pick_heat*/*/game.skillopt.json")
        .__next__()
        .read_text()
    )
    game = MiniAlfredGame(spec)
    game.reset()
    assert game.step("take egg 1 from fridge 1") == ("Nothing happens.", False)  # not there yet
    assert game.step("go to fridge 1")[0] == "You arrive at fridge 1. The fridge 1 is closed."
    assert game.step("take egg 1 from fridge 1")[0] == "Nothing happens."  # closed
    assert game.step("open fridge 1")[0].endswith("In it, you see a egg 1, and a potato 1.")
    game.step("take egg 1 from fridge 1")
    assert game.step("inventory")[0] == "You are carrying: a egg 1."
    game.step("go to countertop 1")
    # a cold egg on the countertop does not win a "hot egg" task
    assert game.step("move egg 1 to countertop 1") == ("You move the egg 1 to the countertop 1.", False)
    assert game.step("fly away")[0] == "Nothing happens."


def test_parse_action() -> None:
    assert parse_action("Think: the mug is likely in a cabinet.\nAction: go to cabinet 1") == (
        "go to cabinet 1",
        False,
    )
    assert parse_action("Think: first find the mug.") == (None, True)
    assert parse_action("go to cabinet 1") == ("go to cabinet 1", False)
    assert parse_action("") == (None, False)


def _expert_rules(observations_to_actions: list[tuple[str, str]]) -> list[Rule]:
    return [
        Rule(
            name=f"s{i}", match=Match(user=pattern), steps=[Step(text=f"Think: next step.\nAction: {action}")]
        )
        for i, (pattern, action) in enumerate(observations_to_actions)
    ]


def test_alfworld_episode_with_a_scripted_agent_wins() -> None:
    env = load_env("alfworld", sample=True)
    item = next(i for i in items_by_id(env).values() if "Book" in i.id)
    rules = _expert_rules(
        [
            (r"Your task is to: look at book", "go to bed 1"),
            (r"You arrive at bed 1", "take book 1 from bed 1"),
            (r"You pick up the book 1", "go to desklamp 1"),
            (r"You arrive at desklamp 1", "use desklamp 1"),
        ]
    )
    with scripted_chat(rules) as (server, agent):
        result = env.run(item, env.seed_skill(), agent)
        last = server.requests[-1].body["messages"]
    assert (result.hard, result.soft) == (1.0, 1.0)
    assert result.details == {"steps": 4, "invalid_actions": 0, "won": True}
    assert result.usage.calls == 4
    # the whole episode is in the conversation: observation, action, observation, ...
    assert [m["role"] for m in last[1:]] == ["user", "assistant"] * 3 + ["user"]
    assert "You pick up the book 1 from the bed 1." in result.trajectory


def test_alfworld_episode_ends_at_the_step_limit() -> None:
    env = load_env("alfworld", sample=True, max_steps=5)
    item = next(iter(items_by_id(env).values()))
    with scripted_chat([], default_text="Action: dance") as (_server, agent):
        result = env.run(item, env.seed_skill(), agent)
    assert (result.hard, result.soft) == (0.0, 0.0)
    assert result.details == {"steps": 5, "invalid_actions": 5, "won": False}
    assert "within 5 steps" in result.feedback


def _trial(root: Path, split: str, task: str, task_type: str = "pick_and_place_simple") -> Path:
    trial = root / "json_2.1.1" / split / task / "trial_T1"
    trial.mkdir(parents=True)
    (trial / "traj_data.json").write_text(json.dumps({"task_type": task_type, "pddl_params": {}}))
    return trial


def test_alfworld_keeps_the_official_game_set_skipping_unsolvable_games(tmp_path: Path) -> None:
    solvable = _trial(tmp_path, "valid_unseen", "pick_and_place_simple-Mug-None-Desk-1")
    (solvable / "game.tw-pddl").write_text(json.dumps({"solvable": True, "pddl_problem": ""}))
    unsolvable = _trial(tmp_path, "valid_unseen", "pick_and_place_simple-Mug-None-Desk-2")
    (unsolvable / "game.tw-pddl").write_text(json.dumps({"solvable": False}))
    unchecked = _trial(tmp_path, "valid_unseen", "pick_and_place_simple-Mug-None-Desk-3")
    (unchecked / "game.tw-pddl").write_text(json.dumps({"pddl_problem": ""}))  # no 'solvable' key
    _trial(tmp_path, "valid_unseen", "pick_and_place_simple-Mug-None-Desk-4")  # no game file
    other = _trial(tmp_path, "train", "pick_and_place_simple-Mug-None-Desk-5", task_type="unknown_task")
    (other / "game.tw-pddl").write_text(json.dumps({"solvable": True}))
    movable = _trial(tmp_path, "train", "pick_and_place_with_movable_recep-Mug-Pan-Desk-6")
    (movable / "game.tw-pddl").write_text(json.dumps({"solvable": True}))
    env = load_env("alfworld", data_dir=tmp_path)
    sp = env.splits()
    assert [len(sp.train), len(sp.val), len(sp.test)] == [0, 0, 1]
    assert sp.test[0].id.endswith("Desk-1/trial_T1")
    assert os.path.basename(sp.test[0].data["game_dir"]) == "trial_T1"
    narrowed = load_env("alfworld", data_dir=tmp_path, task_types=["look_at_obj_in_light"])
    assert len(narrowed.splits().test) == 0
    try:
        import alfworld  # noqa: F401
    except ImportError:
        from skillopt_lib.errors import ConfigError

        with pytest.raises(ConfigError, match="alfworld"):
            load_game(solvable)


@pytest.fixture(scope="module")
def tw_games(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two games generated by TextWorld's own `tw-make`, laid out as ALFWorld trial folders, and a copy
    of one whose description records it as unsolvable."""
    root = tmp_path_factory.mktemp("tw")
    tw_make = Path(sys.executable).parent / "tw-make"
    walkthroughs = {}
    for seed, split in ((1, "train"), (2, "valid_unseen")):
        trial = _trial(root, split, f"pick_and_place_simple-Key-None-Chest-{seed}")
        subprocess.run(
            [str(tw_make), "custom", "--world-size", "3", "--nb-objects", "4", "--quest-length", "2",
             "--seed", str(seed), "--output", str(trial / "game.z8"), "--silent", "-f"],
            check=True, timeout=300,
        )  # fmt: skip
        meta = json.loads((trial / "game.json").read_text())["metadata"]
        walkthroughs[split] = list(meta["walkthrough"])
    source = next((root / "json_2.1.1" / "train").rglob("game.z8")).parent
    broken = _trial(root, "valid_seen", "pick_and_place_simple-Key-None-Chest-3")
    (broken / "game.z8").write_bytes((source / "game.z8").read_bytes())
    data = json.loads((source / "game.json").read_text())
    data["solvable"] = False
    (broken / "game.json").write_text(json.dumps(data))
    return {"root": root, "walkthroughs": walkthroughs}


def test_textworld_games_made_by_tw_make_are_played_end_to_end(tw_games: dict[str, Any]) -> None:
    env = load_env("alfworld", data_dir=tw_games["root"], max_steps=20)
    sp = env.splits()
    assert [len(sp.train), len(sp.val), len(sp.test)] == [1, 0, 1]  # the unsolvable copy is left out
    for item, split in ((sp.train[0], "train"), (sp.test[0], "valid_unseen")):
        walkthrough = tw_games["walkthroughs"][split]
        # step k answers once the conversation holds the reply of step k - 1 (latest step first)
        rules = [
            Rule(
                name=f"step{k}",
                match=Match(request=rf"Think: step {k - 1}\." if k else None),
                steps=[Step(text=f"Think: step {k}.\nAction: {cmd}")],
            )
            for k, cmd in enumerate(walkthrough)
        ][::-1]
        with scripted_chat(rules) as (server, agent):
            result = env.run(item, env.seed_skill(), agent)
            first_prompt = server.requests[0].body["messages"][1]["content"]
        assert result.error is None, result.error
        assert (result.hard, result.soft) == (1.0, 1.0), result.feedback
        assert result.details["won"] and result.details["steps"] == len(walkthrough)
        assert first_prompt.strip()  # the engine's opening observation reached the model
    # the same game is lost when the agent never finishes the quest
    idle = Rule(name="idle", match=Match(), steps=[Step(text="Action: look")])
    with scripted_chat([idle]) as (_server, agent):
        lost = env.run(sp.train[0], env.seed_skill(), agent)
    assert (lost.hard, lost.soft) == (0.0, 0.0)
    assert lost.details["steps"] == 20 and not lost.details["won"]
