"""One-word variants of a request that mining left in separate groups count as one item of the gate's
evidence: tonight, and when a copy arrives on a later night with a group of its own."""

from __future__ import annotations

from skillopt_daemon.night.mining.nearcopies import SIMILAR, fingerprint, regroup, similarity
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
        _task("d", "rename the config loader and update all callers"),  # re-asked tonight, same tree
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
    assert decision.stats["n"] == 2, "a and its later copy b are one item, c and d another"


def _at(tid: str, prompt: str, commit: str, diff: str | None = None) -> NightTask:
    return NightTask(
        id=tid, prompt=prompt, split="val", group=f"g-{tid}", repo="/src/app", commit=commit, dirty_diff=diff
    )


def test_a_request_re_asked_of_the_same_tree_tonight_is_one_item_recurring_work_on_a_new_tree_is_not() -> (
    None
):
    ask = "write the weekly status report for the platform team into report.md"
    tonight = [
        _at("a", ask, "c1"),
        _at("b", ask.replace("status", "progress"), "c1"),  # re-asked of the same tree: a copy
        _at("c", ask.replace("platform", "billing"), "c2"),  # next week's report, the project moved on
        _at("d", ask.replace("platform", "search"), "c2", diff="+ local change\n"),  # same commit, other tree
        _at("e", "rename the config loader and update its callers", "c1"),
    ]
    grouped = {t.id: t.group_key for t in regroup(tonight, None)}
    assert grouped == {"a": "g-a", "b": "g-a", "c": "g-c", "d": "g-d", "e": "g-e"}
    asked: list[str] = []

    def measure(requests: list[tuple[str, str]]) -> list[float]:
        asked.extend(item for item, _ in requests)
        return [1.0 if arm == "candidate" else 0.0 for _, arm in requests]

    decision = Gate(ANYTIME).decide_paired(measure, list(grouped), None, clusters=grouped)
    assert decision.stats["n"] == 4, "the copy and its original are one item of the evidence"
