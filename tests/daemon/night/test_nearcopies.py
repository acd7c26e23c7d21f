"""One-word variants of a request that mining left in separate groups count as one item of the gate's
evidence: tonight, and when a copy arrives on a later night with a group of its own."""

from __future__ import annotations

import random

from skillopt_daemon.night.nearcopies import SIMILAR, fingerprint, regroup, similarity
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.gate import Gate, GateConfig, PairedEvidence

ANYTIME = GateConfig.anytime()


def _task(tid: str, prompt: str, split: str = "val") -> NightTask:
    return NightTask(id=tid, prompt=prompt, split=split, group=f"g-{tid}")


def test_a_one_word_variant_is_a_near_copy_and_another_request_is_not() -> None:
    lint = fingerprint("Fix the lint errors in src/parser.py before the release")
    assert (
        similarity(lint, fingerprint("fix the lint warnings in src/parser.py before the release")) >= SIMILAR
    )
    assert similarity(fingerprint("bump the version"), fingerprint("bump the changelog")) < SIMILAR
    # the same kind of work on another file with another verb is another item
    assert (
        similarity(lint, fingerprint("Explain the lint errors in src/lexer.py before the release")) < SIMILAR
    )
    assert "lint" not in lint, "the evidence keeps hashes of words, never the request's text"


def test_a_copy_on_a_later_night_counts_in_the_measured_items_cluster_and_is_not_replayed() -> None:
    measured = PairedEvidence("cand", "inc", {"a": [[0.0, 1.0]]}, 1, 0.8, clusters={"a": "g-a"})
    measured.fingerprints["a"] = fingerprint("add a changelog entry for the parser fix in the release notes")
    tonight = [
        _task("b", "add a changelog entry for the lexer fix in the release notes"),  # mining's new group
        _task("c", "rename the config loader and update its callers"),
        _task("d", "rename the config loader and update all callers"),  # a copy of tonight's c
        _task("t", "add a changelog entry for the parser fix in the release notes", split="train"),
    ]
    grouped = {t.id: t.group_key for t in regroup(tonight, measured)}
    assert grouped == {"b": "g-a", "c": "g-c", "d": "g-c", "t": "g-t"}
    asked: list[str] = []

    def measure(requests: list[tuple[str, str]]) -> list[float]:
        asked.extend(item for item, _ in requests)
        return [1.0 if arm == "candidate" else 0.0 for _, arm in requests]

    val = [t for t in tonight if t.split == "val"]
    decision = Gate(ANYTIME).decide_paired(measure, [t.id for t in val], measured, clusters=grouped)
    assert "b" not in asked, "a copy of an item already measured is not replayed"
    assert decision.stats["n"] == 2, "a and its copy b are one item, c and its copy d another"


def test_unmerged_copies_answered_alike_do_not_inflate_false_proposals() -> None:
    """Four requests, each arriving as three one-word variants that mining kept apart; the agent answers
    the variants alike and the edit does nothing. Grouped by the night's near-copy check they are four items,
    and a useless edit is proposed within the rate (`benchmarks/gate.py --nightly --cluster 3 --merge none`
    measures how far counting them apart inflates it)."""
    rng = random.Random(7)
    gate = Gate(ANYTIME)
    trials, accepted = 400, 0
    for _ in range(trials):
        tasks: list[NightTask] = []
        for r in range(4):
            words = [f"w{rng.randrange(300)}" for _ in range(8)]
            for c in range(3):
                variant = list(words)
                if c:
                    variant[rng.randrange(8)] = f"w{rng.randrange(300)}"
                tasks.append(_task(f"{r}.{c}", " ".join(variant)))
        coins = {r: rng.random() < 0.5 for r in range(4)}

        def arms(requests: list[tuple[str, str]], coins: dict[int, bool] = coins) -> list[float]:
            return [float((arm == "candidate") == coins[int(item.split(".")[0])]) for item, arm in requests]

        ids = [t.id for t in tasks]
        grouped = {t.id: t.group_key for t in regroup(tasks, None)}
        assert len(set(grouped.values())) == 4
        decision = gate.decide_paired(arms, ids, PairedEvidence(share=0.8), clusters=grouped)
        assert decision.stats["n"] == 4
        accepted += decision.accepted
    assert accepted / trials <= 0.10 * 0.8 + 0.02
