"""LiveMathematicianBench: research-level mathematics as five-way multiple choice.

Choices are shuffled per item with a seed fixed by the run seed and the item id, so a model cannot learn a
position bias from the data files and every run with the same seed shows the same order. Hard and soft
score are both label accuracy.
"""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import ChatMessage
from skillopt_lib.envs.base import Item
from skillopt_lib.envs.bench import BenchmarkEnv, Rollout, ask, read_json_or_jsonl, transcript
from skillopt_lib.envs.scoring import extract_choice_label
from skillopt_lib.errors import ConfigError
from skillopt_lib.skill import SkillBundle

TASK_INTRO = (
    "You answer research-level mathematics multiple-choice questions. Exactly one choice is correct. "
    "Reason briefly, then end your reply with one line of the form `Answer: <letter>`."
)
LABELS = string.ascii_uppercase


def _choices_of(rec: dict[str, Any], where: str) -> tuple[list[str], int]:
    """The choice texts in file order and the index of the correct one."""
    raw = rec.get("choices", rec.get("options"))
    if isinstance(raw, dict):
        keys = list(raw)
        texts = [str(raw[k]) for k in keys]
    elif isinstance(raw, list):
        keys = [LABELS[i] for i in range(len(raw))]
        texts = [str(c) for c in raw]
    else:
        raise ConfigError(f"{where}: 'choices' must be a list or a mapping of label to text")
    correct = rec.get("correct_choice", rec.get("answer"))
    if isinstance(correct, int) and not isinstance(correct, bool) and 0 <= correct < len(texts):
        return texts, correct
    if isinstance(correct, str):
        c = correct.strip()
        if c in keys:
            return texts, keys.index(c)
        if c.strip("()").upper() in keys:
            return texts, keys.index(c.strip("()").upper())
        if c in texts:
            return texts, texts.index(c)
    raise ConfigError(f"{where}: 'correct_choice' {correct!r} names none of the choices")


def shuffled(texts: list[str], correct: int, seed: int, item_id: str) -> tuple[list[str], str]:
    """The choices in this run's order and the label of the correct one."""
    order = list(range(len(texts)))
    random.Random(f"{seed}:{item_id}").shuffle(order)
    return [texts[i] for i in order], LABELS[order.index(correct)]


def load_livemath(root: Path, seed: int) -> list[Item]:
    items: list[Item] = []
    files = sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl") and p.name != "splits.json")
    for path in files:
        for n, rec in enumerate(read_json_or_jsonl(path)):
            item_id = str(rec.get("id") or rec.get("question_id") or f"{path.stem}-{n}")
            texts, correct = _choices_of(rec, f"{path.name} record {n}")
            order, label = shuffled(texts, correct, seed, item_id)
            meta: dict[str, Any] = {k: rec[k] for k in ("category", "month", "arxiv_id") if k in rec}
            items.append(
                Item(
                    id=item_id,
                    data={
                        "question": str(rec["question"]),
                        "choices": order,
                        "labels": list(LABELS[: len(order)]),
                    },
                    gold={"label": label},
                    meta=meta,
                )
            )
    return items


class LiveMathEnv(BenchmarkEnv):
    name = "livemath"
    download_url = "https://livemathematicianbench.github.io (the released monthly question files)"
    layout_hint = (
        "the question files (*.json or *.jsonl) with question, choices and correct_choice per record"
    )
    marker_globs = ("*.jsonl", "*.json", "*/*.json", "*/*.jsonl")

    def load_items(self) -> list[Item]:
        return load_livemath(self.root, self.seed)

    def rollout(self, item: Item, skill: SkillBundle, agent: Any) -> Rollout:
        labels = item.data["labels"]
        lines = [f"({lab}) {text}" for lab, text in zip(labels, item.data["choices"], strict=True)]
        prompt = f"{item.data['question']}\n\nChoices:\n" + "\n".join(lines)
        messages = [ChatMessage("user", prompt)]
        resp = ask(agent, skill, TASK_INTRO, messages)
        chosen = extract_choice_label(resp.text, labels)
        correct = chosen == item.gold["label"]
        if chosen is None:
            feedback = "The reply did not settle on exactly one choice letter."
        elif correct:
            feedback = "Correct choice."
        else:
            feedback = f"Chose ({chosen}), which is not the correct statement."
        score = 1.0 if correct else 0.0
        return Rollout(
            hard=score,
            soft=score,
            answer=chosen or "",
            feedback=feedback,
            trajectory=transcript(messages, resp.text),
            usage=resp.usage,
            details={"chosen": chosen},
        )
