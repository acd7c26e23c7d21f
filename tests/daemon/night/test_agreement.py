"""Repositories' corrections agree only when none is opposite and each repository's has one alike with
another's: what keeps a kind of work done in several repositories one family."""

from __future__ import annotations

from skillopt_daemon.night.mining.agreement import agree, alike

NOQA = "no noqa, fix the code"
NOQA_AGAIN = "don't add noqa, fix the code instead"
TOP = "changelog entries go at the top"
END = "append changelog entries at the end"


def test_alike_is_a_shared_rule_that_is_not_opposite() -> None:
    assert alike(NOQA, NOQA_AGAIN) and alike(NOQA_AGAIN, NOQA)
    assert not alike(TOP, END)
    assert not alike(NOQA, TOP)


def test_one_opposite_pair_is_disagreement_even_beside_alike_ones() -> None:
    assert agree({"app": [NOQA], "lib": [NOQA_AGAIN]})
    assert not agree({"app": [NOQA, TOP], "lib": [NOQA_AGAIN, END]})


def test_every_repository_must_share_a_rule_with_another() -> None:
    assert agree({"app": [NOQA], "lib": [NOQA_AGAIN], "web": [NOQA]})
    assert not agree({"app": [NOQA], "lib": [NOQA_AGAIN], "web": [TOP]})


def test_a_repository_without_corrections_has_nothing_to_disagree_about() -> None:
    assert agree({"app": [TOP], "lib": []})
