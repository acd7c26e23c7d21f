"""Copilot CLI: the MCP server entry (user scope) and, with `--instructions`, a pointer in
copilot-instructions.md. In a project with `--instructions` the pointer replaces the skill: Copilot reads
the instruction file there, and a skill beside it would say the same thing twice."""

from __future__ import annotations

from skillopt_daemon.integrations.hooks import mcp_add, mcp_entry, mcp_strip
from skillopt_daemon.integrations.placements import JsonPlacement, Placement, SectionPlacement
from skillopt_daemon.integrations.plan import PlacementContext


def placements(ctx: PlacementContext) -> list[Placement]:
    project = ctx.target.scope == "project"
    out: list[Placement] = [] if project and ctx.instructions else list(ctx.skills)
    th = ctx.home
    if not project:
        out.append(
            JsonPlacement(
                th,
                th / "mcp-config.json",
                # Copilot wants the server's type and the tools it may call spelled out.
                mcp_add({"type": "local", **mcp_entry(ctx.tool, ctx.executable), "tools": ["*"]}),
                mcp_strip,
                "MCP server",
            )
        )
    if ctx.instructions:
        base = th if not project else ctx.base / ".github"
        body = (ctx.src / "copilot-instructions.snippet.md").read_text(encoding="utf-8")
        out.append(SectionPlacement(base, base / "copilot-instructions.md", body))
    return out
