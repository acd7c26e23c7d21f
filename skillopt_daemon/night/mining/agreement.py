"""Do the corrections users gave in different repositories say the same rule? What decides whether mining
keeps a kind of work done in several repositories as one family (`mining.split_by_repository`).

Two corrections from different repositories are

- **opposite** when `conflicts.opposed` says so: they share a subject word and one allows what the other
  forbids, or they name opposite places or choices ("at the top" against "at the end");
- **alike** when they are not opposite and one follows from the other (`wording.follows_from`, either way:
  a paraphrase keeps the things it names) or they share a subject word (`opposites.subject`).

The repositories **agree** when no cross-repository pair is opposite and each repository's corrections
have one alike with another repository's: then the rule is the user's, not a repository's, and one family
lets its skill be proposed for user scope (`night/mining/scope.py`). Otherwise they **disagree** and are split:
opposite rules averaged into one would serve neither; and rules that are merely different (neither alike
nor opposite) are each one repository's convention as far as the evidence shows, so each keeps its own
evidence and its own skill in its own repository, rather than one skill carrying a repository's habit to
user scope.

The words are compared as they are written, so a rule said in two languages is alike only when both name
the same things (a tool, a flag, a file: "noqa", "code"); a translation that shares no word with the
original is not recognised, and the family splits — the safe side: each repository keeps its rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from skillopt_daemon.night.mining.conflicts import opposed
from skillopt_daemon.night.mining.opposites import subject
from skillopt_daemon.night.mining.wording import follows_from


def alike(a: str, b: str) -> bool:
    """Do two corrections give the same rule (the module docstring's "alike")?"""
    if opposed(a, b):
        return False
    return follows_from(a, b) or follows_from(b, a) or bool(subject(a) & subject(b))


def _any_opposed(said: Mapping[str, Sequence[str]]) -> bool:
    """Does any correction say the opposite of one from another repository?"""
    repos = list(said)
    return any(
        opposed(a, b)
        for i, here in enumerate(repos)
        for there in repos[i + 1 :]
        for a in said[here]
        for b in said[there]
    )


def _shares_a_rule(repo: str, said: Mapping[str, Sequence[str]]) -> bool:
    """Is one of `repo`'s corrections alike with one from another repository?"""
    return any(alike(a, b) for other in said if other != repo for a in said[repo] for b in said[other])


def agree(said: Mapping[str, Sequence[str]]) -> bool:
    """Do the repositories' corrections (repository -> what its users said) agree, as the module docstring
    defines it? Fewer than two repositories with corrections have nothing to disagree about."""
    said = {repo: list(texts) for repo, texts in said.items() if texts}
    if len(said) < 2:
        return True
    return not _any_opposed(said) and all(_shares_a_rule(repo, said) for repo in said)
