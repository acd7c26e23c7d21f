"""What each tool's integration places, and where: the plan `install` carries out.

The `skillopt` skill goes where the tool reads skills (the same folders approved versions go to, the
installers'); what else a tool gets is its own integration module's to say (`integrations/tools/<tool>.py`
for the built-in tools: Claude Code's commands and session hooks, Devin's rule and hooks, Copilot's MCP
server entry, and with `--instructions` a pointer in the tool's instruction file).
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import tool_home
from skillopt_daemon.integrations.hooks import skillopt_executable
from skillopt_daemon.integrations.manifest import Target
from skillopt_daemon.integrations.placements import FilePlacement, Placement
from skillopt_daemon.integrations.shipped import SKILL_NAME, integration_dir, shipped_skill
from skillopt_daemon.registry.installers import get_installer, has_installer
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_lib import plugins
from skillopt_lib.agents import TOOLS, AgentTool, spec
from skillopt_lib.errors import NotFoundError, SkillOptError
from skillopt_lib.skill import SkillBundle

Scope = Literal["user", "project"]

_TOOLS_PACKAGE = "skillopt_daemon.integrations.tools"


class _Scopes(Mapping[AgentTool, tuple[Scope, ...]]):
    """Scopes each tool supports, from its row (Devin reads skills, rules and hooks from the repository only)."""

    def __getitem__(self, tool: AgentTool) -> tuple[Scope, ...]:
        return TOOLS[tool].scopes

    def __iter__(self) -> Iterator[AgentTool]:
        return iter(TOOLS)

    def __len__(self) -> int:
        return len(TOOLS)


class _DefaultScope(Mapping[AgentTool, Scope]):
    """The scope `skillopt install TOOL` means without `--scope`: the first its row lists."""

    def __getitem__(self, tool: AgentTool) -> Scope:
        return TOOLS[tool].scopes[0]

    def __iter__(self) -> Iterator[AgentTool]:
        return iter(TOOLS)

    def __len__(self) -> int:
        return len(TOOLS)


SUPPORTED_SCOPES: Mapping[AgentTool, tuple[Scope, ...]] = _Scopes()
DEFAULT_SCOPE: Mapping[AgentTool, Scope] = _DefaultScope()


@dataclass(frozen=True)
class PlacementContext:
    """What a tool's integration function gets (`ToolSpec.integration`), to say what `skillopt install`
    places for one target: the `skillopt` skill's placements are already made (`skills`), and a tool that
    wants nothing else returns them unchanged."""

    tool: AgentTool
    target: Target
    src: Path  # the tool's shipped integration files (`integrations/<tool>/`)
    home: Path  # the tool's home folder (configured, its own variable, or its default)
    executable: str  # the `skillopt` command hooks should run
    instructions: bool  # `--instructions`: also a pointer in the tool's instruction file
    skills: tuple[Placement, ...]

    @property
    def base(self) -> Path:
        """The tool's home at user scope; the project folder at project scope."""
        if self.target.scope == "user":
            return self.home
        assert self.target.project is not None
        return self.target.project


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
    """Everything `skillopt install` places for a target, in order; `instructions` adds the pointer.

    The `skillopt` skill goes to the tool's skills folders; anything else (commands, hooks, an MCP entry,
    an instruction pointer) is the tool's own integration's to add: the function its row names
    (`ToolSpec.integration`), which gets a `PlacementContext` and returns the whole list.
    """
    tool = target.tool
    ctx = PlacementContext(
        tool=tool,
        target=target,
        src=integration_dir(tool),
        home=tool_home_or_default(tool),
        executable=executable or skillopt_executable(),
        instructions=instructions,
        skills=tuple(_skill_placements(tool, target)),
    )
    name = spec(tool).integration
    if name is None:
        return list(ctx.skills)
    placements: list[Placement] = plugins.load_object(
        name if ":" in name else f"{name}:placements", package=_TOOLS_PACKAGE
    )(ctx)
    return placements


def integration_part(tool: AgentTool, part: str) -> Callable[..., Any] | None:
    """An optional function of the tool's own integration module (`ToolSpec.integration`), or None when the
    tool has no integration module or its module does not define `part`. What only one tool has (Claude
    Code's plugin folder, its plugin's state in doctor) is asked for this way, with no per-tool branch."""
    name = spec(tool).integration
    if name is None:
        return None
    module = importlib.import_module(name.split(":", 1)[0] if ":" in name else f"{_TOOLS_PACKAGE}.{name}")
    found = getattr(module, part, None)
    return found if callable(found) else None


def plugin_dir(tool: AgentTool) -> Path:
    """The folder of the skillopt plugin shipped for `tool` (Claude Code's: for `claude --plugin-dir DIR` or
    `/plugin marketplace add DIR`), from its integration module's `plugin_dir`; a clear error for a tool
    that has none."""
    part = integration_part(tool, "plugin_dir")
    if part is None:
        raise SkillOptError(
            f"skillopt ships no plugin folder for {tool.value}",
            hint=f"`skillopt install {tool.value}` places that tool's files",
        )
    return Path(part(integration_dir(tool)))


def resolve_target(tool: AgentTool, scope: Scope | None = None, project: str | Path | None = None) -> Target:
    scope = scope or ("project" if project is not None else DEFAULT_SCOPE[tool])
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
