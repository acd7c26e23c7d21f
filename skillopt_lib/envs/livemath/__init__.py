"""LiveMathematicianBench: research-level mathematics as five-way multiple choice.

Choices are laid out and shuffled as the official `eval/eval.py` does (BaohaoLiao/LiveMathematicianBench
at 1462443): the correct choice, which the released files keep apart from the wrong ones, first, then the
wrong ones, shuffled with `random.Random(seed + n)` for the record at position n of its file. With the
default seed (42, as there) a model sees the labels the official harness shows. The reply is read as there
too (`scoring.extract_choice_label`). Hard and soft score are both label accuracy.
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


def _mcq_of(rec: dict[str, Any]) -> dict[str, Any]:
    mcq = rec.get("mcq")
    return mcq if isinstance(mcq, dict) else {}


def _choice_text(choice: Any) -> str:
    if isinstance(choice, dict):
        return str(choice.get("text") or choice.get("content") or "").strip()
    return str(choice).strip()


def _choices_of(rec: dict[str, Any], where: str) -> tuple[list[str], int]:
    """The choice texts in the official order before shuffling, and the index of the correct one.

    Two shapes are read: flat (`choices` a list of texts or a mapping of label to text, `correct_choice` a
    label, a text or an index) and the nested one of the released files (`mcq: {question, choices,
    correct_choice}`, with choices as `{label, text}` objects and `correct_choice` as `{label, text}`). In
    the released files `choices` holds only the wrong answers, labelled apart from the correct one (which
    may share a label with one of them), so a `correct_choice` whose text is not among the choices comes
    first, as the official `build_choices` puts it; one whose text is among them is that choice.
    """
    mcq = _mcq_of(rec)
    raw = mcq.get("choices") or rec.get("choices", rec.get("options"))
    if isinstance(raw, dict):
        keys = [str(k).strip() for k in raw]
        texts = [_choice_text(v) for v in raw.values()]
    elif isinstance(raw, list):
        keys = [
            str(c.get("label") or LABELS[i]).strip() if isinstance(c, dict) else LABELS[i]
            for i, c in enumerate(raw)
        ]
        texts = [_choice_text(c) for c in raw]
    else:
        raise ConfigError(f"{where}: 'choices' must be a list or a mapping of label to text")
    keys = [k.upper().rstrip(".):") for k in keys]
    correct = mcq.get("correct_choice") or rec.get("correct_choice", rec.get("answer"))
    if isinstance(correct, dict):
        text = _choice_text(correct)
        if text:
            return (texts, texts.index(text)) if text in texts else ([text, *texts], 0)
        label = str(correct.get("label") or "").strip().upper().rstrip(".):").strip("(")
        if label in keys:
            return texts, keys.index(label)
        correct = text
    if isinstance(correct, int) and not isinstance(correct, bool) and 0 <= correct < len(texts):
        return texts, correct
    if isinstance(correct, str):
        c = correct.strip()
        label = c.strip("()").upper().rstrip(".):")
        if label in keys:
            return texts, keys.index(label)
        if c in texts:
            return texts, texts.index(c)
    raise ConfigError(f"{where}: 'correct_choice' {correct!r} names none of the choices")


def _question_of(rec: dict[str, Any], where: str) -> str:
    mcq = _mcq_of(rec)
    question = str(mcq.get("question") or rec.get("question") or "").strip()
    if not question:
        raise ConfigError(f"{where}: no 'question' (nor 'mcq.question')")
    return question


def shuffled(texts: list[str], correct: int, seed: int, position: int) -> tuple[list[str], str]:
    """The choices in this run's order and the label of the correct one: the official shuffle of the
    record at `position` in its file (`random.Random(seed + position)`; a shuffle's order depends only on
    the generator and the number of choices)."""
    order = list(range(len(texts)))
    random.Random(seed + position).shuffle(order)
    return [texts[i] for i in order], LABELS[order.index(correct)]


def load_livemath(root: Path, seed: int) -> list[Item]:
    items: list[Item] = []
    files = sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl") and p.name != "splits.json")
    for path in files:
        for n, rec in enumerate(read_json_or_jsonl(path)):
            where = f"{path.name} record {n}"
            month, no = str(rec.get("month") or "").strip(), rec.get("no")
            default_id = f"{month}:{no}" if month and no is not None else f"{path.stem}-{n}"
            item_id = str(rec.get("id") or rec.get("question_id") or default_id)
            question = _question_of(rec, where)
            texts, correct = _choices_of(rec, where)
            order, label = shuffled(texts, correct, seed, n)
            meta: dict[str, Any] = {
                k: rec[k] for k in ("category", "month", "arxiv_id", "theorem_type", "paper_link") if k in rec
            }
            items.append(
                Item(
                    id=item_id,
                    data={
                        "question": question,
                        "choices": order,
                        "labels": list(LABELS[: len(order)]),
                    },
                    gold={"label": label},
                    meta=meta,
                )
            )
    if not items:
        raise ConfigError(
            f"no LiveMathematicianBench questions in {root}",
            hint="expected .json/.jsonl files holding records with question, choices and correct_choice "
            "(flat, or nested under 'mcq' as in the released qa_<month>_final.json files)",
        )
    return items


class LiveMathEnv(BenchmarkEnv):
    name = "livemath"
    download_url = "https://livemathematicianbench.github.io (the released monthly question files)"
    layout_hint = (
        "the question files (*.json or *.jsonl, e.g. qa_<month>_final.json) with question, choices and "
        "correct_choice per record, flat or nested under 'mcq'"
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
            feedback = f"The reply names no choice letter ({labels[0]}-{labels[-1]})."
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
