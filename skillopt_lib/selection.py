"""Choosing which candidate edits a step applies, within the textual learning rate.

When the candidates fit the step's budget they are all kept. Otherwise the optimizer ranks them (impact,
complementarity, generality, actionability) and the budget is filled in that order; if the ranking call fails,
failure-driven and better-supported edits go first. Edits that do not fit are reported with the reason.

Edits the candidate screen flagged (`held_back`: warned about, not rejected, see `skillopt_lib.seating`) take
a seat only after every clean edit: a flagged edit the ranking chose gives its seat to the next clean edit
the ranking left out, so lines planted in tool output cannot crowd the user's own rule out of a step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from skillopt_lib.budget import StepBudget, fit_budget
from skillopt_lib.edits import Edit
from skillopt_lib.reflect import CallRecord, OptimizerCaller, render_edits


class Ranking(BaseModel):
    reasoning: str = ""
    keep: list[int] = []


@dataclass
class Selection:
    selected: list[Edit]
    dropped: list[tuple[Edit, str]] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    ranked_by: str = "all-fit"


def fallback_order(edits: Sequence[Edit]) -> list[Edit]:
    indexed = list(enumerate(edits))
    indexed.sort(key=lambda p: (p[1].source_type != "failure", -p[1].support_count, p[0]))
    return [e for _, e in indexed]


def _clean_first(
    order: list[Edit], unranked: list[Edit], held_back: Sequence[Edit]
) -> tuple[list[Edit], list[Edit]]:
    """(the seating order, the edits left unranked): the ranked clean edits, then as many clean edits the
    ranking left out as it chose flagged ones (their seats, given back), then the flagged ones."""
    held = [e for e in order if any(e is h for h in held_back)]
    clean = [e for e in order if all(e is not h for h in held_back)]
    spare = [e for e in fallback_order(unranked) if all(e is not h for h in held_back)][: len(held)]
    rest = [e for e in unranked if all(e is not s for s in spare)]
    return [*clean, *spare, *held], rest


def select_edits(
    caller: OptimizerCaller,
    candidates: Sequence[Edit],
    budget: StepBudget,
    context: dict[str, Any],
    held_back: Sequence[Edit] = (),
) -> Selection:
    total = sum(e.tokens() for e in candidates)
    if len(candidates) <= budget.edits and total <= budget.tokens:
        return Selection(list(candidates))
    ranking, record = caller.call_json(
        "rank",
        Ranking,
        candidates=render_edits(candidates, numbered=True),
        max_edits=budget.edits,
        max_tokens=budget.tokens,
        **context,
    )
    if ranking is not None:
        order: list[Edit] = []
        seen: set[int] = set()
        for i in ranking.keep:
            if 0 <= i < len(candidates) and i not in seen:
                seen.add(i)
                order.append(candidates[i])
        unranked = [e for i, e in enumerate(candidates) if i not in seen]
        order, unranked = _clean_first(order, unranked, held_back)
        kept, dropped = fit_budget(order, budget)
        dropped += [(e, "not chosen by the ranking") for e in unranked]
        return Selection(kept, dropped, [record], "ranking")
    order, _ = _clean_first(fallback_order(candidates), [], held_back)
    kept, dropped = fit_budget(order, budget)
    return Selection(kept, dropped, [record], "fallback")
