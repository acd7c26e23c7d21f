"""Codex: with `--instructions`, a pointer to skillopt in AGENTS.md."""

from __future__ import annotations

from skillopt_daemon.integrations.placements import Placement, SectionPlacement
from skillopt_daemon.integrations.plan import PlacementContext


def placements(ctx: PlacementContext) -> list[Placement]:
    out: list[Placement] = list(ctx.skills)
    if ctx.instructions:
        agents_md = ctx.base / "AGENTS.md"
        body = (ctx.src / "AGENTS.md.snippet").read_text(encoding="utf-8")
        out.append(SectionPlacement(agents_md.parent, agents_md, body))
    return out
