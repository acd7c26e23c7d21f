"""Which recurring families get a new skill, and what the optimizer is shown to draft one."""

from __future__ import annotations

import json
from dataclasses import dataclass

from skillopt_daemon.night.learning import seeding
from skillopt_daemon.night.mining.mine import Attempt, Family
from skillopt_lib.backends.base import ChatMessage, ChatResponse


def _family(size: int, *, checks: bool = True) -> Family:
    attempts = [
        Attempt(
            key=f"a{i}", tool="claude-code" if i % 3 else "codex", session_id=f"s{i}", prompt=f"fix lint {i}"
        )
        for i in range(size)
    ]
    splits = {a.key: ("val" if i % 2 else "train") for i, a in enumerate(attempts)}
    splits["a1"] = "test" if size > 3 else splits["a1"]
    return Family(
        id="fam-1",
        name="lint / fix",
        attempts=attempts,
        checks=["make lint"] if checks else [],
        rubric=[],
        splits=splits,
    )


@dataclass
class _Version:
    state: str
    evidence: dict


def test_a_rejected_new_skill_waits_until_its_family_grows() -> None:
    rejected = seeding.rejected_sizes(
        [_Version("rejected", {"new_skill": True, "family": {"id": "fam-1", "size": 6}})]
    )
    chosen, notes = seeding.candidates([_family(6)], installed=set(), min_tasks=4, rejected=rejected)
    assert chosen == [] and "rejected at 6 tasks" in notes[0].reason
    chosen, notes = seeding.candidates([_family(7)], installed=set(), min_tasks=4, rejected=rejected)
    assert [f.id for f in chosen] == ["fam-1"] and notes == []


def test_families_without_a_skill_say_why_they_got_none() -> None:
    _, notes = seeding.candidates([_family(3)], installed=set(), min_tasks=4, rejected={})
    assert notes[0].reason == "too few tasks (3; a new skill needs 4)"
    _, notes = seeding.candidates([_family(6, checks=False)], installed=set(), min_tasks=4, rejected={})
    assert notes[0].reason.startswith("no check")


class _Drafter:
    name = "scripted"
    model = "m"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.seen: list[str] = []

    def complete(self, messages: list[ChatMessage], **_: object) -> ChatResponse:
        self.seen.append(messages[0].text())
        return ChatResponse(text=self.reply)


def test_a_draft_is_a_valid_skill_named_by_the_conventions_from_train_requests_only() -> None:
    chat = _Drafter(
        json.dumps({"name": "Fix Lint!", "description": "Fixes lint. Use when lint fails.", "body": ""})
    )
    bundle, note = seeding.draft(chat, _family(6), taken={"fix-lint"})  # type: ignore[arg-type]
    assert note is None
    assert bundle.doc.name == "fix-lint-2"
    bundle.require_valid(folder_name="fix-lint-2")
    fam = _family(6)
    shown = chat.seen[0]
    for a in fam.attempts:
        assert (a.prompt in shown) == (fam.splits[a.key] == "train")
    bad, note = seeding.draft(_Drafter("not json"), fam, taken=set())  # type: ignore[arg-type]
    assert note and bad.doc.name == "lint-fix"
