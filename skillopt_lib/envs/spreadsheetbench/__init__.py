"""SpreadsheetBench: the model writes Python (openpyxl) that transforms a real-world `.xlsx` workbook.

The code runs once per test case (`{n}_{id}_input.xlsx`) in a subprocess with a scrubbed environment, a
time limit and a fresh temporary folder; the cells at `answer_position` of its output are compared with
`{n}_{id}_answer.xlsx` by the official evaluation's rules (`runner.compare_workbooks`; option `scorer`:
`current`, values only, or `paper`, the paper's release). Hard score: every test case matches (the
benchmark's online-judge metric). Soft score: the fraction of test cases that match.

As the official pipeline opens every workbook in LibreOffice first, a compared formula without a cached
value, in the output or in the answer workbook, is recalculated: by LibreOffice where `soffice` is
installed, else by the pure-Python `formulas` engine (option `recalc`); each result says which engine was
used (`details["recalc"]`). So a solution may write either values or formulas.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import ChatMessage
from skillopt_lib.envs.base import Item
from skillopt_lib.envs.bench import BenchmarkEnv, Rollout, ask, read_json_or_jsonl, transcript
from skillopt_lib.envs.scoring import extract_final_answer
from skillopt_lib.envs.spreadsheetbench.runner import (
    SCORERS,
    Recalculation,
    compare_workbooks,
    needs_recalculation,
    preview_workbook,
    run_solution,
)
from skillopt_lib.errors import ConfigError
from skillopt_lib.skill import SkillBundle

TASK_INTRO = (
    "You solve spreadsheet manipulation tasks by writing one Python 3 program that uses openpyxl. "
    "The program is run as `python solution.py INPUT.xlsx OUTPUT.xlsx`: read the workbook from sys.argv[1], "
    "change it as the instruction asks and save it to sys.argv[2]. It is run on several workbooks with the "
    "same layout but different values, so compute results from the data rather than typing them in. You may "
    "write values or Excel formulas into cells (formulas are recalculated before checking). Reply with the "
    "program in one ```python fenced block."
)
_CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_code(text: str) -> str:
    """The last fenced Python block of a reply (the final version when a model iterates), else ''."""
    blocks = _CODE_BLOCK.findall(text)
    return blocks[-1].strip() + "\n" if blocks else ""


def test_cases(folder: Path, item_id: str) -> list[tuple[Path, Path]]:
    """(input, answer) pairs named `{n}_{id}_input.xlsx` / `{n}_{id}_answer.xlsx`, ordered by n."""
    pairs = []
    for inp in folder.glob(f"*_{item_id}_input.xlsx"):
        n = inp.name.split("_", 1)[0]
        ans = folder / f"{n}_{item_id}_answer.xlsx"
        if ans.is_file():
            pairs.append((int(n) if n.isdigit() else 0, inp, ans))
    return [(i, a) for _, i, a in sorted(pairs)]


def load_spreadsheetbench(root: Path) -> list[Item]:
    """Read `dataset.json` (or the sample `*.jsonl`): id, instruction, spreadsheet_path, instruction_type,
    answer_position; `spreadsheet_path` is the folder (relative to the data folder) of the test cases."""
    files = [root / "dataset.json"] if (root / "dataset.json").is_file() else sorted(root.glob("*.jsonl"))
    items: list[Item] = []
    for path in files:
        for rec in read_json_or_jsonl(path):
            item_id = str(rec["id"])
            folder = root / str(rec.get("spreadsheet_path") or f"spreadsheet/{item_id}")
            cases = test_cases(folder, item_id)
            if not cases:
                continue
            items.append(
                Item(
                    id=item_id,
                    data={
                        "instruction": str(rec["instruction"]),
                        "instruction_type": str(rec.get("instruction_type", "")),
                        "answer_position": str(rec["answer_position"]),
                        "inputs": [str(i) for i, _ in cases],
                    },
                    gold={"answers": [str(a) for _, a in cases]},
                    meta={"instruction_type": rec.get("instruction_type", "")},
                )
            )
    return items


class SpreadsheetBenchEnv(BenchmarkEnv):
    name = "spreadsheetbench"
    download_url = "https://github.com/RUCKBReasoning/SpreadsheetBench (data/: unpack the dataset archive)"
    layout_hint = (
        "dataset.json and the spreadsheet/<id>/ folders with {n}_{id}_input.xlsx and _answer.xlsx files"
    )
    marker_globs = ("dataset.json", "*.jsonl")

    def __init__(
        self, sample: bool = False, data_dir: str | Path | None = None, seed: int = 42, **options: Any
    ):
        super().__init__(sample=sample, data_dir=data_dir, seed=seed, **options)
        self.scorer = str(self.options.get("scorer", "current"))
        if self.scorer not in SCORERS:
            raise ConfigError(
                f"spreadsheetbench scorer {self.scorer!r} is unknown",
                hint="use current (the official evaluation today) or paper (the paper's release)",
            )
        soffice = self.options.get("soffice")
        self.recalc = Recalculation(
            str(self.options.get("recalc", "auto")), str(soffice) if soffice else None
        )

    def load_items(self) -> list[Item]:
        return load_spreadsheetbench(self.root)

    def rollout(self, item: Item, skill: SkillBundle, agent: Any) -> Rollout:
        rows = int(self.options.get("preview_rows", 10))
        timeout = float(self.options.get("timeout_s", 30.0))
        first_input = Path(item.data["inputs"][0])
        prompt = (
            f"Instruction: {item.data['instruction']}\n"
            f"Instruction type: {item.data['instruction_type']}\n"
            f"Cells that must hold the answer: {item.data['answer_position']}\n\n"
            f"The first rows of one of the workbooks:\n{preview_workbook(first_input, rows)}"
        )
        messages = [ChatMessage("user", prompt)]
        resp = ask(agent, skill, TASK_INTRO, messages)
        code = extract_code(resp.text)
        traj = transcript(messages, resp.text)
        if not code:
            return Rollout(
                0.0,
                0.0,
                extract_final_answer(resp.text),
                "No ```python block in the reply.",
                traj,
                resp.usage,
            )
        position = item.data["answer_position"]
        cases = list(zip(item.data["inputs"], item.gold["answers"], strict=True))
        runs = [run_solution(code, Path(inp), timeout_s=timeout) for inp, _ in cases]
        try:
            # the workbooks whose compared formulas need computing, recalculated in one go
            books: list[Path] = []
            for run, (_, ans) in zip(runs, cases, strict=True):
                for book in (run.output, Path(ans)) if run.ok and run.output else (Path(ans),):
                    needed = needs_recalculation(book, position, answer=Path(ans), scorer=self.scorer)
                    if needed and book not in books:
                        books.append(book)
            if books:
                self.recalc.formula_values(books)
            passed = 0
            notes: list[str] = []
            for n, (run, (_, ans)) in enumerate(zip(runs, cases, strict=True), 1):
                if not run.ok or run.output is None:
                    notes.append(f"test case {n}: the program failed: {run.error}")
                    continue
                mismatches = compare_workbooks(
                    run.output,
                    Path(ans),
                    position,
                    recalc=self.recalc,
                    scorer=self.scorer,
                    colours=self.scorer == "paper" and "CF" in item.id,
                )
                if not mismatches:
                    passed += 1
                else:
                    notes.append(
                        f"test case {n}: {len(mismatches)} answer cell(s) wrong, e.g. {mismatches[0]}"
                    )
        finally:
            for run in runs:
                run.cleanup()
        total = len(item.data["inputs"])
        soft = passed / total if total else 0.0
        hard = 1.0 if total and passed == total else 0.0
        feedback = "All test cases pass." if hard else "; ".join(notes[:3])
        details = {"passed": passed, "cases": total, "recalc": self.recalc.engine, "recalculated": len(books)}
        return Rollout(hard, soft, code, feedback, traj, resp.usage, details=details)
