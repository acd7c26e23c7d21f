"""What each tool's integration places, and where: the plan `install` carries out.

The `skillopt` skill goes where the tool reads skills (the same folders approved versions go to, the
installers'); Claude Code also gets commands and session hooks, Devin a rule and hooks, Copilot an MCP
server entry, and with `--instructions` a pointer in the tool's instruction file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Literal

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import tool_home
from skillopt_daemon.integrations.hooks import (
    hook_command,
    hooks_add,
    hooks_strip,
    mcp_add,
    mcp_entry,
    mcp_strip,
    skillopt_executable,
)
from skillopt_daemon.integrations.manifest import Target
from skillopt_daemon.integrations.placements import FilePlacement, JsonPlacement, Placement, SectionPlacement
from skillopt_daemon.integrations.shipped import SKILL_NAME, integration_dir, shipped_skill
from skillopt_daemon.registry.installers import get_installer, has_installer
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_lib.agents import TOOLS, AgentTool, spec
from skillopt_lib.errors import NotFoundError, SkillOptError
from skillopt_lib.skill import SkillBundle

Scope = Literal["user", "project"]

# Scopes each tool supports (Devin reads skills, rules and hooks from the repository only).
SUPPORTED_SCOPES: dict[AgentTool, tuple[Scope, ...]] = {t: row.scopes for t, row in TOOLS.items()}


DEFAULT_SCOPE: dict[AgentTool, Scope] = {t: SUPPORTED_SCOPES[t][0] for t in AgentTool}


def skill_roots(tool: AgentTool, scope: Scope, project: Path | None = None) -> list[Path]:
    """Where `tool` reads skills at `scope`: the same folders approved versions go to (the installers')."""
    if not has_installer(tool):
        return []
    return [loc.root for loc in get_installer(tool).locations(InstallTarget(tool, scope, project))]


def tool_home_or_default(tool: AgentTool) -> Path:
    """The tool's home folder; a broken config falls back to the default folder."""
    try:
        return tool_home(tool)
    except SkillOptError:
        return paths.default_tool_home(tool)


def _skill_placements(tool: AgentTool, target: Target) -> list[Placement]:
    """The `skillopt` skill, adapted by the tool's installer (OpenClaw's single-line frontmatter)."""
    bundle = get_installer(tool).prepare(SkillBundle(files=shipped_skill(tool)))
    out: list[Placement] = []
    for root in skill_roots(tool, target.scope, target.project):
        for rel, data in sorted(bundle.files.items()):
            out.append(FilePlacement(root, root / SKILL_NAME / rel, data))
    return out


def plan_placements(
    target: Target, *, instructions: bool = False, executable: str | None = None
) -> list[Placement]:
    """Everything `skillopt install` places for a target, in order; `instructions` adds the pointer."""
    tool = target.tool
    src = integration_dir(tool)
    th = tool_home_or_default(tool)
    p = target.project
    copilot_instr = tool is AgentTool.COPILOT and target.scope == "project" and instructions
    out: list[Placement] = [] if copilot_instr else _skill_placements(tool, target)
    exe = executable or skillopt_executable()
    if tool is AgentTool.CLAUDE_CODE:
        base = th if target.scope == "user" else p / ".claude"  # type: ignore[operator]
        for cmd in sorted((src / "commands").glob("*.md")):
            out.append(FilePlacement(base, base / "commands" / cmd.name, cmd.read_bytes()))
        settings = base / ("settings.json" if target.scope == "user" else "settings.local.json")
        events = {
            ev: hook_command(arg, tool, exe)
            for ev, arg in (("SessionStart", "session-start"), ("SessionEnd", "session-end"))
        }
        out.append(
            JsonPlacement(base, settings, hooks_add(events, wrapped=True), hooks_strip(wrapped=True), "hooks")
        )
    elif tool is AgentTool.CODEX:
        if instructions:
            agents_md = th / "AGENTS.md" if target.scope == "user" else p / "AGENTS.md"  # type: ignore[operator]
            body = (src / "AGENTS.md.snippet").read_text(encoding="utf-8")
            out.append(SectionPlacement(agents_md.parent, agents_md, body))
    elif tool is AgentTool.COPILOT:
        if target.scope == "user":
            out.append(
                JsonPlacement(
                    th, th / "mcp-config.json", mcp_add(mcp_entry(tool, exe)), mcp_strip, "MCP server"
                )
            )
        if instructions:
            base = th if target.scope == "user" else p / ".github"  # type: ignore[operator]
            body = (src / "copilot-instructions.snippet.md").read_text(encoding="utf-8")
            out.append(SectionPlacement(base, base / "copilot-instructions.md", body))
    elif tool is AgentTool.DEVIN:
        base = p / ".devin"  # type: ignore[operator]
        out.append(
            FilePlacement(base, base / "rules" / "skillopt.md", (src / "rules" / "skillopt.md").read_bytes())
        )
        events = {"SessionEnd": hook_command("session-end", tool, exe)}
        out.append(
            JsonPlacement(
                base,
                base / "hooks.v1.json",
                hooks_add(events, wrapped=False),
                hooks_strip(wrapped=False),
                "hooks",
            )
        )
    elif tool is AgentTool.CURSOR and instructions:
        base = th if target.scope == "user" else p / ".cursor"  # type: ignore[operator]
        out.append(
            FilePlacement(
                base, base / "rules" / "skillopt.mdc", (src / "rules" / "skillopt.mdc").read_bytes()
            )
        )
    return out


def resolve_target(tool: AgentTool, scope: Scope | None = None, project: str | Path | None = None) -> Target:
    scope = scope or (
        "project" if project is not None and tool is not AgentTool.DEVIN else DEFAULT_SCOPE[tool]
    )
    if scope not in SUPPORTED_SCOPES[tool]:
        raise SkillOptError(
            f"{tool.value} has no {scope}-level skills; skillopt installs it per project",
            hint=f"run `skillopt install {tool.value} --scope project --project PATH`",
        )
    if scope == "project":
        proj = Path(project or os.getcwd()).expanduser().resolve()
        if not proj.is_dir():
            raise NotFoundError(
                f"the project folder {proj} does not exist", hint="give an existing folder with --project"
            )
        return Target(tool, "project", proj)
    return Target(tool, "user", None)


def detect(tool: AgentTool) -> dict[str, Any]:
    """Is the tool on this machine? Its home folder or its CLI on PATH are both taken as yes."""
    home = tool_home_or_default(tool)
    cli = shutil.which(spec(tool).executable)
    return {
        "home": str(home),
        "home_exists": home.is_dir(),
        "cli": cli,
        "detected": home.is_dir() or cli is not None,
    }
