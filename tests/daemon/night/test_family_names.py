"""A family mined without a model is named in the user's words: the clause of its requests that says most
of what they share, never a list of top terms ("red / lint check / check / lint")."""

from __future__ import annotations

from skillopt_daemon.night.mining.clustering import normalize_prompt, vectorize
from skillopt_daemon.night.mining.naming import clauses, lexical_name


def _name(requests: list[str]) -> str:
    vec, rows = vectorize([normalize_prompt(r) for r in requests])
    return lexical_name(requests, vec, rows.mean())


def test_a_family_is_named_by_the_clause_that_says_what_its_requests_share() -> None:
    name = _name(
        [
            "red lint check after the merge",
            "the lint check is red again, can you look",
            "lint check red on main; please fix it",
        ]
    )
    # A whole clause one request holds, in the user's order: not "red / lint check / check / lint".
    assert name == "the lint check is red again"


def test_courtesies_are_left_off_a_name() -> None:
    assert clauses("hey, could you fix the lint check please") == ["fix the lint check"]
    assert clauses("Please update docs/api.md. Thanks") == ["update docs/api.md"]


def test_a_clause_with_one_word_that_weighs_never_names_a_family() -> None:
    # "put that in config/worker.toml" is one term (`worker`) closest to what the requests share, yet it does
    # not say what the work is.
    name = _name(
        [
            "the worker should retry failed jobs three times; put that in config/worker.toml",
            "add retry settings to the worker config",
            "configure how many times the worker retries",
        ]
    )
    assert name != "put that in config/worker.toml" and "worker" in name


def test_requests_of_stop_words_alone_still_name_the_family() -> None:
    assert _name(["do it", "do it again"]) == "do it"
