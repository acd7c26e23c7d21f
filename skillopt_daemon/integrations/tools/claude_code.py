"""Claude Code: the slash commands and the session hooks that tell skillopt when a session starts and ends."""

from __future__ import annotations

from skillopt_daemon.integrations.hooks import hook_command, hooks_add, hooks_strip
from skillopt_daemon.integrations.placements import FilePlacement, JsonPlacement, Placement
from skillopt_daemon.integrations.plan import PlacementContext


def placements(ctx: PlacementContext) -> list[Placement]:
    out: list[Placement] = list(ctx.skills)
    base = ctx.home if ctx.target.scope == "user" else ctx.base / ".claude"
    for cmd in sorted((ctx.src / "commands").glob("*.md")):
        out.append(FilePlacement(base, base / "commands" / cmd.name, cmd.read_bytes()))
    settings = base / ("settings.json" if ctx.target.scope == "user" else "settings.local.json")
    events = {
        ev: hook_command(arg, ctx.tool, ctx.executable)
        for ev, arg in (("SessionStart", "session-start"), ("SessionEnd", "session-end"))
    }
    out.append(
        JsonPlacement(base, settings, hooks_add(events, wrapped=True), hooks_strip(wrapped=True), "hooks")
    )
    return out
