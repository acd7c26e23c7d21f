"""Screening a step's candidate edits before they take a seat in its edit budget.

A step applies at most `budget.edits` edits. When the screen saw only the candidate built from the chosen
ones, planted lines the ranking put above the user's rule filled every seat, the screen rejected them all
and the step applied nothing: the planted text crowded the user's rule out without ever being learned. So
every candidate edit's lines are screened first, against everything the optimizer was shown this step
(`shown`, the replays' transcripts, tool output and checks' output, as well as what the screen already
knows of the sessions): an edit with a rejected line never takes a seat (it goes to the rejected-edit
buffer with the screen's reason), and an edit with only warnings sits behind every clean one
(`select_edits(held_back=)`). However many lines were planted, the edits carrying the user's words keep
their seats.

The candidate built from the chosen edits is screened again afterwards (lines can combine), so this is a
first pass, not the only one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from skillopt_lib.edits import Edit
from skillopt_lib.envs.base import ItemResult
from skillopt_lib.screen import ScreenResult
from skillopt_lib.skill import SkillBundle


class Screen(Protocol):
    """What screens a candidate's added lines before it is replayed (`skillopt_lib.screen.CandidateScreen`).

    `shown` are the results the optimizer read, so a line copied from their tool output is caught.
    """

    def check(
        self, incumbent: SkillBundle, candidate: SkillBundle, shown: Sequence[ItemResult] = ()
    ) -> ScreenResult: ...


# What the edits' lines are screened as: a bundle of their own, added over nothing.
_NOTHING = SkillBundle(files={})
_PROBE = "candidate-edits.md"


@dataclass
class Seating:
    """The step's candidate edits after the screen: those that may take a seat (clean ones and `held_back`
    ones, which the screen warned about), and those it rejected with its verdict on their lines."""

    eligible: list[Edit]
    held_back: list[Edit] = field(default_factory=list)
    rejected: list[tuple[Edit, ScreenResult]] = field(default_factory=list)


def edit_lines(edit: Edit) -> list[str]:
    """The non-blank lines an edit writes (none for a deletion)."""
    return [line for line in (edit.content or "").splitlines() if line.strip()]


def carries(edit: Edit, lines: set[str]) -> bool:
    """Whether `edit` writes one of `lines` (the screen's findings keep a line's first 300 characters)."""
    return any(own.strip() in lines or own.strip()[:300] in lines for own in edit_lines(edit))


def _own(edit: Edit, verdict: ScreenResult) -> ScreenResult:
    """The findings of `verdict` on `edit`'s lines, numbered as the edit's own lines."""
    mine = [line.strip() for line in edit_lines(edit)]
    found = []
    for f in verdict.findings:
        key = f.line.strip()
        at = next((i for i, own in enumerate(mine) if own == key or own[:300] == key), None)
        if at is not None:
            found.append(replace(f, line_no=at + 1))
    return ScreenResult(lines=edit_lines(edit), findings=found)


def seat_screen(
    screen: Screen, incumbent: SkillBundle, candidates: Sequence[Edit], shown: Sequence[ItemResult]
) -> Seating:
    """Screen every line the candidate edits would add (one screen call for the whole step: the corpora of
    what the optimizer was shown are built once) and sort the edits by the verdict on their own lines.
    Lines the incumbent already has are not new and are not screened again."""
    existing = {line.strip() for text in incumbent.text_files().values() for line in text.splitlines()}
    lines = list(
        dict.fromkeys(line for e in candidates for line in edit_lines(e) if line.strip() not in existing)
    )
    if not lines:
        return Seating(list(candidates))
    probe = SkillBundle(files={_PROBE: ("\n".join(lines) + "\n").encode("utf-8")})
    verdict = screen.check(_NOTHING, probe, shown)
    seating = Seating([])
    for edit in candidates:
        own = _own(edit, verdict)
        if own.rejected:
            seating.rejected.append((edit, own))
            continue
        seating.eligible.append(edit)
        if own.flagged:
            seating.held_back.append(edit)
    return seating
