"""The files skillopt ships for each tool's integration, and the names they use.

They come from the package (`skillopt_daemon/_integrations`, mapped from `integrations/` when the wheel is
built) or, in a source checkout, from `integrations/` itself.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from skillopt_daemon.registry.imports import OWN_SKILL
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import NotFoundError

# The skill that teaches an agent the skillopt CLI, and the name of skillopt's section in instruction files.
SKILL_NAME = OWN_SKILL  # the registry leaves it out of imports
SECTION_NAME = "skillopt"


def integrations_root() -> Path:
    """The folder holding `claude-code/`, `codex/`, ...: inside the installed package, else the checkout."""
    packaged = Path(str(resources.files("skillopt_daemon"))) / "_integrations"
    if packaged.is_dir():
        return packaged
    source = Path(__file__).resolve().parents[2] / "integrations"
    if source.is_dir():
        return source
    raise NotFoundError(
        "skillopt's integration files are missing from this installation",
        hint="reinstall skillopt (pip install --force-reinstall skillopt-local)",
    )


def integration_dir(tool: AgentTool) -> Path:
    return integrations_root() / tool.value


def shipped_skill(tool: AgentTool) -> dict[str, bytes]:
    """The `skillopt` skill for a tool, by path relative to the skill folder; a tool without a folder of its
    own (a plugin's) gets the plain one (Codex's, with no tool-specific frontmatter)."""
    root = integration_dir(tool) / "skills" / SKILL_NAME
    if not root.is_dir():
        root = integration_dir(AgentTool.CODEX) / "skills" / SKILL_NAME
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
