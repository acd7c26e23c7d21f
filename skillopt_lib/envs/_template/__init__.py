"""TEMPLATE for a new benchmark: copy this folder, rename it, and replace every part marked TEMPLATE.

What to change (see docs/benchmarks.md, "Adding a benchmark"):

1. `load_template` reads the benchmark's official files: one `Item` per task, with what the model may see in
   `data`, what only the scorer may see in `gold`, and (if the dataset has one) its split in
   `meta["split"]`.
2. `TemplateEnv` says where the official data comes from (`download_url`, `layout_hint`) and which files
   prove it is there (`marker_globs`).
3. `rollout` asks the model (the skill is the system prompt, via `ask`) and scores the reply with a scorer
   from `skillopt_lib.envs.scoring` or one of your own, unit-tested against hand-checked examples.
4. `SKILL.md` is the seed skill; `sample/` holds a few items in the official format plus `splits.json`.
5. Register the class with one line in `BUILTIN_ENVS` (`skillopt_lib/envs/__init__.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import ChatMessage
from skillopt_lib.envs.base import Item
from skillopt_lib.envs.bench import BenchmarkEnv, Rollout, ask, read_json_or_jsonl, transcript
from skillopt_lib.envs.scoring import exact_match, extract_final_answer, token_f1
from skillopt_lib.skill import SkillBundle

# TEMPLATE: what the model is told about the task, before the skill.
TASK_INTRO = "You answer short questions. End your reply with one line of the form `Answer: <answer>`."


def load_template(root: Path) -> list[Item]:
    """TEMPLATE: read the official files. Here: `*.jsonl` records with id, question and answers."""
    items: list[Item] = []
    for path in sorted(root.glob("*.jsonl")):
        for rec in read_json_or_jsonl(path):
            items.append(
                Item(
                    id=str(rec["id"]),
                    data={"question": str(rec["question"])},
                    gold={"answers": [str(a) for a in rec["answers"]]},
                )
            )
    return items


class TemplateEnv(BenchmarkEnv):
    name = "template"  # TEMPLATE: the name users type after --env
    download_url = "https://example.org/where-the-official-data-lives"  # TEMPLATE
    layout_hint = "the *.jsonl files with id, question and answers"  # TEMPLATE
    marker_globs = ("*.jsonl",)  # TEMPLATE

    def load_items(self) -> list[Item]:
        return load_template(self.root)

    def rollout(self, item: Item, skill: SkillBundle, agent: Any) -> Rollout:
        messages = [ChatMessage("user", f"Question: {item.data['question']}")]
        resp = ask(agent, skill, TASK_INTRO, messages)
        answer = extract_final_answer(resp.text)
        hard = exact_match(answer, item.gold["answers"])
        soft = token_f1(answer, item.gold["answers"])
        # Feedback is what the optimizer reads: say what went wrong without quoting the gold answer.
        feedback = "Correct." if hard else f"Wrong: {answer!r} does not answer the question."
        return Rollout(hard, soft, answer, feedback, transcript(messages, resp.text), resp.usage)
