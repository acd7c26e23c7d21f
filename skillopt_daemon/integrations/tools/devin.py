"""Devin: a rule and the session-end hook, both in the repository (Devin has no user-level skills)."""

from __future__ import annotations

from skillopt_daemon.integrations.hooks import hook_command, hooks_add, hooks_strip
from skillopt_daemon.integrations.placements import FilePlacement, JsonPlacement, Placement
from skillopt_daemon.integrations.plan import PlacementContext


def placements(ctx: PlacementContext) -> list[Placement]:
    out: list[Placement] = list(ctx.skills)
    base = ctx.base / ".devin"
    rule = (ctx.src / "rules" / "skillopt.md").read_bytes()
    out.append(FilePlacement(base, base / "rules" / "skillopt.md", rule))
    events = {"SessionEnd": hook_command("session-end", ctx.tool, ctx.executable)}
    out.append(
        JsonPlacement(
            base,
            base / "hooks.v1.json",
            hooks_add(events, wrapped=False),
            hooks_strip(wrapped=False),
            "hooks",
        )
    )
    return out
