"""What one replay costs, in the night's units: input-equivalent tokens (`Usage.input_equivalent`) and
estimated dollars, for planning a target before it spends anything.

The figure is tonight's average once the night has measured a replay; before that, the average the last
nights measured for the tool that replays (kept in each night's spend, `NightBudget.by_tool`); before any
night measured one, the defaults below. The average includes the night's optimizer and judge calls, spread
over its replays, since a target's training makes them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `skillopt status` reads the constants below and builds no budget
    from skillopt_daemon.night.budgets import NightBudget

# A Claude Code replay of a few turns before any night measured one, in input-equivalent tokens: the nights
# corpus measured about 68k raw tokens a replay, nearly all of it Claude Code's system prompt and tools (18k)
# and the turns so far, sent again with each request and read from the prompt cache. About two thirds are
# cache reads (a tenth each), a quarter cache writes, the rest output: about 30k at what they cost.
TOKENS_PER_REPLAY = 30_000
# Dollars per replay before any night measured one: a first night on Claude Code spent $20 on 54 replays
# with their optimizer and judge calls (about $0.37 each); rounded up, so a first night plans no more than
# it can pay for.
USD_PER_REPLAY = 0.40
# How many of the last nights' spends the measured average reads.
PAST_NIGHTS = 5


def tokens_per_replay(budget: NightBudget, tool: str | None = None) -> float:
    """Input-equivalent tokens one replay costs: tonight's average, else the last nights' for `tool` (or
    any tool), else `TOKENS_PER_REPLAY`."""
    if budget.replays:
        return budget.tokens / budget.replays
    past = _past(budget, tool)
    return past[0] if past is not None else TOKENS_PER_REPLAY


def usd_per_replay(budget: NightBudget, tool: str | None = None) -> float:
    """Estimated dollars one replay costs, by the same rule as `tokens_per_replay` (0 when the replays
    measured report no cost: an unpriced model, which the money cap cannot stop)."""
    if budget.replays:
        return budget.cost_usd / budget.replays
    past = _past(budget, tool)
    return past[1] if past is not None else USD_PER_REPLAY


def _past(budget: NightBudget, tool: str | None) -> tuple[float, float] | None:
    if tool is not None and tool in budget.past:
        return budget.past[tool]
    if not budget.past:
        return None
    # Another tool's measure: the dearest, so a plan never counts on a cheaper replay than was seen.
    return max(budget.past.values())


def past_per_replay(spends: Iterable[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Per tool, the tokens and dollars of one replay over the nights' spends given (`NightBudget.to_dict`),
    the night's optimizer and judge share included. Nights from before the spend was kept per tool, and
    nights with no replay, are left out."""
    totals: dict[str, list[float]] = {}
    for spend in spends:
        by_tool = spend.get("by_tool") if isinstance(spend, dict) else None
        if not isinstance(by_tool, dict) or not by_tool:
            continue
        replays = sum(int(r.get("replays") or 0) for r in by_tool.values())
        if not replays:
            continue
        # What the night spent besides its replays (optimizer, judge, labels), a share per replay.
        extra_tokens = float(spend.get("tokens") or 0) - sum(
            float(r.get("tokens") or 0) for r in by_tool.values()
        )
        extra_usd = float(spend.get("cost_usd") or 0) - sum(
            float(r.get("cost_usd") or 0) for r in by_tool.values()
        )
        for tool, row in by_tool.items():
            n = int(row.get("replays") or 0)
            if not n:
                continue
            acc = totals.setdefault(tool, [0.0, 0.0, 0.0])
            acc[0] += n
            acc[1] += float(row.get("tokens") or 0) + max(extra_tokens, 0.0) * n / replays
            acc[2] += float(row.get("cost_usd") or 0) + max(extra_usd, 0.0) * n / replays
    return {tool: (acc[1] / acc[0], acc[2] / acc[0]) for tool, acc in totals.items()}


def load_past(db: Any) -> dict[str, tuple[float, float]]:
    """`past_per_replay` over the last `PAST_NIGHTS` real nights that replayed anything."""
    if "night_runs" not in db.table_names():
        return {}
    rows = db.execute(
        "SELECT summary_json FROM night_runs WHERE NOT dry_run AND status NOT IN ('running', 'dry-run', "
        "'skipped') AND CAST(json_extract(summary_json, '$.spend.replays') AS INTEGER) > 0 "
        "ORDER BY started_at DESC LIMIT ?",
        [PAST_NIGHTS],
    ).fetchall()
    spends = []
    for (text,) in rows:
        try:
            spends.append(json.loads(text or "{}").get("spend") or {})
        except ValueError:
            continue
    return past_per_replay(spends)
