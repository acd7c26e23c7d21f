"""Splits that serve teaching and judging: a small family's corrected attempt teaches, the rest judge.

Families of 4 to 12 sessions with corrections in only some of them and a failure or two: the optimizer
sees at least one correction of every family that has one, the gate gets every other group (no held-out
test split until a family is large), failures judge, and an attempt keeps its split when the family grows.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from skillopt_daemon.night.checks import EXCLUDED, decide
from skillopt_daemon.night.mining.clustering import normalize_prompt, vectorize
from skillopt_daemon.night.mining.mine import Attempt, CommandRun, Family, _assign_splits

PROMPTS = [
    "make lint is failing, please fix",
    "fix the lint warnings in dates.py",
    "the linter complains about app/views.py, sort it out",
    "get make lint green again",
    "clean up the style errors the linter reports in models.py",
    "lint is red on CI for the app package; fix it",
    "fix the linter errors in app/dates.py",
    "can you make the linter pass on app/",
    "make lint fails on the new forms module, fix it",
    "linter warnings in app/urls.py need fixing",
    "please fix what make lint reports in app/admin.py",
    "the lint step of CI fails on app/api.py",
]


WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
]


def _attempt(i: int, role: str) -> Attempt:
    failed = role == "failure"
    a = Attempt(
        key=f"claude-code:s{i}:u{i}",
        tool="claude-code",
        session_id=f"s{i}",
        prompt=PROMPTS[i] if i < len(PROMPTS) else f"lint the {WORDS[i - len(PROMPTS)]} module",
        project_path="/home/dev/webapp",
        started_at=f"2026-11-{i + 1:02d}T09:00:00.000Z",
        commands=[CommandRun("make lint", 1), CommandRun("make lint", 1 if failed else 0)],
    )
    if role == "corrected":
        a.corrections.append("no noqa, fix the code")
    return a


def _split(attempts: list[Attempt], previous: dict[str, str] | None = None) -> Family:
    """The family of these attempts as mining splits it (clustering is tested elsewhere)."""
    fam = Family(id="fam-lint", name="lint", attempts=attempts)
    _, prompts = vectorize([normalize_prompt(a.prompt) for a in attempts])
    _assign_splits(fam, prompts, previous=previous)
    return fam


def _family(roles: list[str]) -> tuple[list[Attempt], dict[str, str]]:
    fam = _split([_attempt(i, r) for i, r in enumerate(roles)])
    return fam.attempts, fam.splits


@pytest.mark.parametrize(
    "roles",
    [
        ["plain", "corrected", "plain", "failure"],
        ["plain", "corrected", "plain", "failure", "plain"],
        ["plain", "plain", "corrected", "plain", "failure", "corrected"],
        ["plain", "corrected", "plain", "failure", "plain", "corrected", "plain", "failure"],
        ["plain", "corrected", "plain", "failure", "plain", "corrected"] * 2,
    ],
)
def test_one_correction_teaches_and_everything_else_judges(roles: list[str]) -> None:
    attempts, splits = _family(roles)
    by_role: dict[str, Counter[str]] = {}
    for a in attempts:
        role = "corrected" if a.corrections else ("failure" if a.outcome == "failure" else "plain")
        by_role.setdefault(role, Counter())[splits[a.key]] += 1
    corrected = by_role["corrected"]
    assert corrected["train"] >= 1, "the optimizer must see the user's words"
    assert corrected["train"] == max(1, round(sum(corrected.values()) / 3))
    assert sum(c["test"] for c in by_role.values()) == 0, "no test split below 16 requests"
    # Every group that does not teach judges: validation gets all the family can give.
    assert Counter(splits.values())["val"] == len(attempts) - corrected["train"]
    assert by_role.get("failure", Counter())["train"] == 0


def test_a_family_without_corrections_trains_on_a_task_the_night_can_replay() -> None:
    """With no correction there is no rule from the user to score a failed session by, so its task is left
    out of replays: the train seat goes to the first session that did not fail, or the family could never
    train however many sessions it gathers."""
    attempts, splits = _family(["failure", "plain", "plain", "failure", "plain"])
    (train,) = [a for a in attempts if splits[a.key] == "train"]
    assert train.outcome != "failure"
    for a in attempts:
        task = {
            "outcome": a.outcome,
            "commands_json": json.dumps(
                [{"command": c.command, "exit_code": c.exit_code} for c in a.commands]
            ),
        }
        verdict = decide(task, ["make lint"], [], {"make lint": None})
        assert (verdict.scoring == EXCLUDED) == (a.outcome == "failure"), verdict.why
    # A family of failures only still trains on one (it stays too few to replay, and says so).
    only, only_splits = _family(["failure", "failure", "failure"])
    assert Counter(only_splits.values())["train"] == 1


def test_a_large_family_holds_a_test_split_out() -> None:
    roles = (["plain", "corrected", "plain", "failure"] * 5)[:20]
    _, splits = _family(roles)
    counts = Counter(splits.values())
    assert counts["test"] >= 1 and counts["val"] > counts["test"]


def test_an_attempt_keeps_its_split_when_the_family_grows() -> None:
    """Night 1 validated on these attempts; on night 2 a new correction arrives. What validated must not
    start teaching (its pairs are pending evidence), and what taught never judges."""
    first = [_attempt(i, r) for i, r in enumerate(["plain", "plain", "plain", "plain"])]
    fam1 = _split(first)
    night1 = dict(fam1.splits)
    grown = [*first, *(_attempt(i, r) for i, r in [(4, "corrected"), (5, "plain")])]
    fam2 = _split(grown, night1)
    for key, split in night1.items():
        assert fam2.splits[key] == split
    # Without memory, the new correction would take the train seat from the first plain session.
    fresh = _split(grown)
    assert fresh.splits[first[0].key] == "val"
    assert fam2.splits[grown[4].key] == "train"
