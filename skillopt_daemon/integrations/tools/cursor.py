"""Cursor: with `--instructions`, a rule that points the agent at skillopt."""

from __future__ import annotations

from skillopt_daemon.integrations.placements import FilePlacement, Placement
from skillopt_daemon.integrations.plan import PlacementContext


def placements(ctx: PlacementContext) -> list[Placement]:
    out: list[Placement] = list(ctx.skills)
    if ctx.instructions:
        base = ctx.home if ctx.target.scope == "user" else ctx.base / ".cursor"
        rule = (ctx.src / "rules" / "skillopt.mdc").read_bytes()
        out.append(FilePlacement(base, base / "rules" / "skillopt.mdc", rule))
    return out
