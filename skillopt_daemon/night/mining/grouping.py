"""Whether the mined families are the final grouping or a provisional one, and what status says about it.

Without a model, mining groups requests by their words (`clustering.LEXICAL`); once the night's model labels
each request with its kind of work, mining groups by those kinds instead (`clustering.LABELLED`), and the
families change: requests worded apart meet, requests that only share words part. So before labelling, a
family's size and the sessions it still needs for a new skill are provisional, and the user should know
what regroups them and what to do for it (usually: say yes to the night's model). Mining records how it
grouped each family (`task_families.grouped_by`); status reads it back here, without the clustering stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillopt_daemon.night.agents import NightModel

WORDS = "words"  # grouped by the words of the requests: the lexical path
LABELS = "labels"  # grouped by the kinds of work a model named


def stored_grouping(db: Any) -> str | None:
    """How the stored families were grouped: `words` when any was grouped lexically (labelling would still
    regroup it), `labels` when all were grouped by a model's labels, None when nothing says (no families, or
    families mined before mining recorded it)."""
    if "task_families" not in db.table_names():
        return None
    if "grouped_by" not in {c.name for c in db["task_families"].columns}:
        return None
    found = {r["grouped_by"] for r in db.query("SELECT DISTINCT grouped_by FROM task_families")}
    if WORDS in found:
        return WORDS
    return LABELS if LABELS in found else None


def regroup_note(model: NightModel) -> str:
    """Why the counts are provisional and what regroups them, with the step the user takes, if any."""
    from skillopt_daemon.night.agents import SAY_YES

    if model.asks:
        when = f"once you say yes to the night's model (`{SAY_YES}`)"
    elif model.usable:
        when = "at the next night (or `skillopt tasks mine`)"
    else:
        when = "once the night has a model (see the night's model below)"
    return (
        "these kinds of work are grouped by the words of your requests, so the sessions they still need are "
        f"provisional: {when}, the model labels each session's kind of work and mining regroups them"
    )


def provisional(what: str) -> str:
    """A count of sessions still needed, marked as holding only until labelling regroups the families."""
    return f"{what}, provisional"
