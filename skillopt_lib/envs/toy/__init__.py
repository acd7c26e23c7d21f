"""`house-style`: a small chat environment whose answers depend on a convention only a skill can teach.

Half of the items ask for a date "in our house format" (day, month and year as `DD.MM.YYYY`), which no model
can guess; the other half are sums any model gets right. A skill that states the date rule turns the
first half from failures into passes; a skill that says something harmful can break the second half. It is
small enough to run in seconds against a local server, and it is what the tests and the README's quick
example train on.

Options: `n_train`, `n_val`, `n_test` (items per split, default 12 each), `seed`.
"""

from __future__ import annotations

import difflib
import random
import re
import time
from datetime import date, timedelta
from typing import Any, Literal

from skillopt_lib.backends.base import BackendUnavailable, ChatMessage, Usage
from skillopt_lib.envs.base import Item, ItemResult, Splits
from skillopt_lib.errors import BackendError
from skillopt_lib.skill import SkillBundle, SkillDoc

ANSWER_RE = re.compile(r"ANSWER:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
INSTRUCTIONS = (
    "You are a careful assistant. Follow the skill below when it applies.\n"
    "Finish with one line of the form `ANSWER: <your answer>`."
)
SEED_BODY = """
# House style

Conventions for answers given on behalf of our team.
"""
# The rule a useful edit teaches (the scripted demo agent answers dates correctly only when it is present).
DATE_RULE = "Write every date as DD.MM.YYYY (day first, two digits, dots), e.g. 05.03.2024."


def date_question(d: date) -> str:
    return f"Write the date {d.isoformat()} in our house date format."


def sum_question(a: int, b: int) -> str:
    return f"What is {a} + {b}? Give the number only."


class HouseStyleEnv:
    """See the module docstring. Deterministic: the same options give the same items."""

    name = "house-style"
    agent_kind: Literal["chat", "exec"] = "chat"

    def __init__(self, n_train: int = 12, n_val: int = 12, n_test: int = 12, seed: int = 7) -> None:
        self.n_train, self.n_val, self.n_test, self.seed = int(n_train), int(n_val), int(n_test), int(seed)
        self._splits: Splits | None = None

    def _items(self, count: int, prefix: str, rng: random.Random) -> list[Item]:
        items = []
        for i in range(count):
            if i % 2 == 0:
                d = date(2020, 1, 1) + timedelta(days=rng.randrange(0, 2500))
                items.append(
                    Item(
                        id=f"{prefix}-{i:03d}",
                        data={"question": date_question(d), "kind": "date"},
                        gold={"answer": d.strftime("%d.%m.%Y")},
                    )
                )
            else:
                a, b = rng.randrange(10, 90), rng.randrange(10, 90)
                items.append(
                    Item(
                        id=f"{prefix}-{i:03d}",
                        data={"question": sum_question(a, b), "kind": "sum"},
                        gold={"answer": str(a + b)},
                    )
                )
        return items

    def splits(self) -> Splits:
        if self._splits is None:
            rng = random.Random(self.seed)
            self._splits = Splits(
                train=self._items(self.n_train, "train", rng),
                val=self._items(self.n_val, "val", rng),
                test=self._items(self.n_test, "test", rng),
            )
        return self._splits

    def seed_skill(self) -> SkillBundle:
        doc = SkillDoc.new(
            "house-style", "House conventions for answers: formats our team expects.", SEED_BODY
        )
        return SkillBundle.from_doc(doc)

    def describe(self, item: Item) -> str:
        return str(item.data["question"])

    def run(self, item: Item, skill: SkillBundle, agent: Any) -> ItemResult:
        started = time.monotonic()
        system = f"{INSTRUCTIONS}\n\n<skill>\n{skill.doc.serialize()}</skill>"
        try:
            resp = agent.complete([ChatMessage("user", str(item.data["question"]))], system=system)
        except BackendUnavailable:
            raise
        except BackendError as exc:
            return ItemResult(
                item_id=item.id,
                hard=0.0,
                soft=0.0,
                feedback="The agent did not answer (the model call failed).",
                error=exc.message,
                duration_s=time.monotonic() - started,
            )
        return self.score(item, resp.text, resp.usage, time.monotonic() - started)

    def score(self, item: Item, text: str, usage: Usage | None = None, duration_s: float = 0.0) -> ItemResult:
        found = ANSWER_RE.findall(text)
        answer = found[-1].strip().strip("`").strip() if found else ""
        gold = str(item.gold["answer"])
        hard = 1.0 if answer == gold else 0.0
        soft = difflib.SequenceMatcher(a=answer, b=gold).ratio() if answer else 0.0
        if hard:
            feedback = "Correct."
        elif not answer:
            feedback = "No final `ANSWER:` line was given."
        elif item.data.get("kind") == "date":
            feedback = f"The date was written as {answer!r}, which does not follow the house date convention."
        else:
            feedback = f"The answer {answer!r} is not the correct number."
        return ItemResult(
            item_id=item.id,
            hard=hard,
            soft=soft,
            feedback=feedback,
            trajectory=f"user: {item.data['question']}\nassistant: {text}",
            answer=answer,
            usage=usage or Usage(),
            duration_s=duration_s,
            details={"kind": item.data.get("kind")},
        )
