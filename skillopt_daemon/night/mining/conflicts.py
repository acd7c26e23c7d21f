"""Does a proposal say the opposite of a rule installed in another scope, and which one wins where?

Skills learned in different places can disagree: the user asked for changelog entries "at the top" in one
repository and to "append them to the end" in another, or a user-scope rule forbids what one repository's
rule allows. Each is right where it was learned, but an agent in a repository that loads both reads two
opposite instructions. So review shows, for each rule line of a proposal, an installed rule of another
skill in another place (user scope against project scope, or another repository's project) whose words say
the opposite, and the night's report says which one wins where: a project rule wins in its repository,
the user rule everywhere else; two projects' rules each hold only in their own repository.

Opposite means the two lines share a subject word (`opposites.subject`: not a word like "use" or "code")
and either one allows what the other forbids (`opposites.allows`, the same words that mark a user's
correction as contradicting an installed rule, against a negation), or they name opposite places or
choices for it (top against end, tabs against spaces).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillopt_daemon.night.mining.opposites import allows, subject
from skillopt_daemon.night.mining.preferences import terms
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_lib.rulelines import rule_lines

if TYPE_CHECKING:
    from skillopt_daemon.registry.book import Registry

# Pairs of word sets naming opposite places or choices: a line using one side and a line using the other,
# about the same subject, disagree. Words of order in a sequence ("first", "before", "after") are left
# out: "run ruff first" and "run mypy after ruff" do not disagree.
OPPOSITES: tuple[tuple[frozenset[str], frozenset[str]], ...] = (
    (
        frozenset({"top", "beginning", "prepend", "prepended", "above", "newest"}),
        frozenset({"bottom", "end", "append", "appended", "below", "oldest"}),
    ),
    (frozenset({"tabs", "tab"}), frozenset({"spaces", "space"})),
    (frozenset({"single"}), frozenset({"double"})),
    (frozenset({"camelcase"}), frozenset({"snake_case", "snakecase"})),
)
_SIDES = frozenset().union(*(a | b for a, b in OPPOSITES))
_FORBIDS = re.compile(
    r"\b(?:never|don'?t|do\s+not|must\s+not|should\s+not|avoid|no\s+longer|stop)\b|\bnicht\b|\bnunca\b|不要|しない",
    re.IGNORECASE,
)


def opposed(a: str, b: str) -> bool:
    """Do two rule lines say opposite things about the same subject?"""
    shared = (subject(a) & subject(b)) - _SIDES
    if not shared:
        return False
    if (allows(a) and _FORBIDS.search(b) and not allows(b)) or (
        allows(b) and _FORBIDS.search(a) and not allows(a)
    ):
        return True
    wa, wb = terms(a), terms(b)
    return any((wa & x and wb & y and not wa & y) or (wa & y and wb & x and not wa & x) for x, y in OPPOSITES)


def place_of(target: InstallTarget) -> str:
    """ "user scope" or "project scope in <repository>": where a rule applies."""
    return "user scope" if target.project is None else f"project scope in {target.project}"


def winner(ours: str, theirs: str) -> str:
    """Which rule wins where, for a proposal placed at `ours` against an installed rule at `theirs`."""
    if ours == theirs:
        return "both apply in the same place: review which one the agents should follow"
    if theirs == "user scope":
        return f"this proposal's rule wins in {ours.removeprefix('project scope in ')}; the installed one elsewhere"
    if ours == "user scope":
        return f"the installed rule wins in {theirs.removeprefix('project scope in ')}; this one elsewhere"
    return "each holds only in its own repository"


@dataclass(frozen=True)
class Conflict:
    """One rule line of a proposal against one installed rule of another skill in another place."""

    skill: str
    where: str
    theirs: str
    ours: str
    wins: str

    def describe(self) -> str:
        return f"contradicts {self.skill} installed in {self.where}: {self.theirs!r} vs {self.ours!r} ({self.wins})"

    def to_dict(self) -> dict[str, str]:
        return {
            "skill": self.skill,
            "where": self.where,
            "theirs": self.theirs,
            "ours": self.ours,
            "wins": self.wins,
            "text": self.describe(),
        }


def _rules(text: str) -> list[str]:
    return [line.strip().lstrip("-*0123456789. ").strip() for line in rule_lines(text.splitlines())]


def find(
    skill: str,
    text: str,
    places: Sequence[str],
    installed: Iterable[tuple[str, InstallTarget, str]],
) -> list[Conflict]:
    """Conflicts of a proposal of `skill` (its SKILL.md `text`, installed at `places`: `place_of` strings)
    with `installed` rules of other skills: (skill, target, its SKILL.md text). A rule installed where the
    proposal goes too is flagged as well: the agents there would read both."""
    ours = _rules(text)
    found: dict[tuple[str, str, str, str], Conflict] = {}
    for other, target, body in installed:
        if other == skill:
            continue
        where = place_of(target)
        for theirs in _rules(body):
            for line in ours:
                if opposed(line, theirs):
                    for p in places:
                        key = (other, where, theirs, line)
                        found.setdefault(key, Conflict(other, where, theirs, line, winner(p, where)))
    return list(found.values())


def places(scope: Mapping[str, Any] | None, targets: Iterable[InstallTarget]) -> list[str]:
    """Where a proposal installs: its evidence's scope record (a new skill), else the places its skill is
    installed now."""
    if scope:
        if scope.get("scope") == "project":
            return [f"project scope in {r}" for r in scope.get("repositories") or []]
        return ["user scope"]
    return sorted({place_of(t) for t in targets})


def installed(reg: Registry) -> list[tuple[str, InstallTarget, str]]:
    """Every enabled install's rules as the agents read them: (skill, target, SKILL.md body)."""
    out = []
    bodies: dict[str, str] = {}
    for ts in reg.targets():
        if not ts.enabled or not ts.active_version_id:
            continue
        if ts.active_version_id not in bodies:
            bodies[ts.active_version_id] = reg.load_bundle(ts.active_version_id).doc.body
        out.append((ts.skill, ts.target, bodies[ts.active_version_id]))
    return out


def of_proposal(
    reg: Registry,
    skill: str,
    text: str,
    scope: Mapping[str, Any] | None,
    rules: Sequence[tuple[str, InstallTarget, str]] | None = None,
) -> list[Conflict]:
    """A proposal's conflicts with what is installed now (`find`; `rules`: `installed(reg)` when the
    caller read it already), placed by its scope record (`places`)."""
    here = places(scope, [ts.target for ts in reg.targets(skill)])
    return find(skill, text, here, installed(reg) if rules is None else rules)
