"""Plan before spending: the replays a target's training may use tonight, what the night can afford, and,
for a family larger than any night's budget, which of its validation groups tonight replays.

A target is started only when what is left of the night can finish its plan (a half-measured candidate
is evidence wasted); one that does not fit what is left waits, and goes first the next night. A family
whose plan is larger than a *whole* night would wait every night: at the agent login's caps (60 replays)
that is any family with ten or more validation groups, the user's most frequent work. Such a family is
replayed in parts instead: tonight its training tasks, the groups the carried evidence already measured,
and as many of the other groups as fit, in the family's order; later nights measure the rest. The nightly
gate's evidence adds up over nights (`skillopt_lib.gate`, the e-value test is valid at any stopping
time), so a decision from part of the family tonight, or from all of it over several nights, is as sound
as one from all of it at once.
"""

from __future__ import annotations

import math

from skillopt_daemon.night import replay_cost
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.learning.recorded import corrected_train
from skillopt_daemon.night.pending import Carried
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.gate import GateConfig, plan_gate


def tokens_per_replay(budget: NightBudget, tool: str | None = None) -> float:
    """What one replay costs in input-equivalent tokens (`replay_cost.tokens_per_replay`: tonight's
    average, the last nights' for the tool, or the default before any)."""
    return replay_cost.tokens_per_replay(budget, tool)


def new_groups(tasks: list[NightTask], carried: Carried | None) -> list[str]:
    """Validation groups the carried evidence has not measured yet (what tonight can add to it), in the
    tasks' order."""
    groups = list(dict.fromkeys(t.group_key for t in tasks if t.split == "val"))
    if carried is None:
        return groups
    ev = carried.pending.evidence
    seen = {ev.cluster_of(i) for i in ev.pairs} | set(ev.pairs)
    return [g for g in groups if g not in seen]


def planned_replays(tasks: list[NightTask], cfg: GateConfig, new_items: int, holding: bool) -> int:
    """The most replays tonight's training of these tasks can use: train rollouts of the tasks whose
    failure is not already on record (none when a carried candidate holds the budget), every new
    validation item (one per group: the gate counts a group once) replayed to the gate's cap in both arms,
    and the test split for the initial and the best skill when a candidate wins. No baseline: the gate's
    pairs measure the installed skill (`train_config`)."""
    n_train = sum(1 for t in tasks if t.split == "train" and not corrected_train(t))
    n_test = sum(1 for t in tasks if t.split == "test")
    return (0 if holding else n_train) + 2 * cfg.repeats * new_items + 2 * n_test


def affordable_replays(budget: NightBudget, *, whole_night: bool = False, tool: str | None = None) -> int:
    """How many replays the night can still pay for (`whole_night`: a night that has spent nothing), by
    every cap: replays, tokens and money, at what a replay of `tool` costs (`replay_cost`: tonight's
    average, the last nights', or the defaults before the first)."""
    spent_replays = 0 if whole_night else budget.replays
    spent_tokens = 0 if whole_night else budget.tokens
    spent_cost = 0.0 if whole_night else budget.cost_usd
    n = budget.max_replays - spent_replays
    n = min(n, int((budget.max_tokens - spent_tokens) // max(tokens_per_replay(budget, tool), 1.0)))
    usd = replay_cost.usd_per_replay(budget, tool)
    if usd > 0 and not math.isinf(budget.max_cost_usd):
        n = min(n, int((budget.max_cost_usd - spent_cost) // usd))
    return max(n, 0)


def fit_tonight(
    tasks: list[NightTask], cfg: GateConfig, carried: Carried | None, affordable: int
) -> list[NightTask] | None:
    """The part of `tasks` to replay tonight within `affordable` replays: the training tasks, every group the
    carried evidence measured, and as many unmeasured validation groups as fit, in the tasks' order.

    None when the part would be too small for the gate to decide on (fewer validation groups than its
    smallest decision needs) and more could come from another night: the target then waits and goes first.
    """
    holding = carried is not None
    fresh = new_groups(tasks, carried)
    fresh_set = set(fresh)
    kept = [t for t in tasks if not (t.split == "val" and t.group_key in fresh_set)]
    used = planned_replays(kept, cfg, 0, holding)
    taken: set[str] = set()
    for group in fresh:
        cost = 2 * cfg.repeats
        if used + cost > affordable:
            break
        used += cost
        taken.add(group)
    if not taken:
        return None
    chosen = [t for t in tasks if not (t.split == "val" and t.group_key in fresh_set) or t.group_key in taken]
    n_val_groups = len({t.group_key for t in chosen if t.split == "val"})
    if n_val_groups < plan_gate(n_val_groups, cfg).min_items:
        return None
    return chosen
