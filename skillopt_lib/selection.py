"""Choosing which candidate edits a step applies, within the textual learning rate.

When the candidates fit the step's budget they are all kept. Otherwise the optimizer ranks them (impact,
complementarity, generality, actionability) and the budget is filled in that order; if the ranking call fails,
failure-driven and better-supported edits go first. Edits that do not fit are reported with the reason.
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


def select_edits(
    caller: OptimizerCaller, candidates: Sequence[Edit], budget: StepBudget, context: dict[str, Any]
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
        kept, dropped = fit_budget(order, budget)
        dropped += [(e, "not chosen by the ranking") for e in unranked]
        return Selection(kept, dropped, [record], "ranking")
    kept, dropped = fit_budget(fallback_order(candidates), budget)
    return Selection(kept, dropped, [record], "fallback")
