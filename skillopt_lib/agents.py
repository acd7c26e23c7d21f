"""The agent tools skillopt knows, and the facts about them that both halves of the project share.

One place for each fact: the daemon's sources, installers, integrations and `doctor`, and the library's exec
backends all read `TOOLS` (executables, tested versions, homes, scopes, skill folders, and which reader,
installer and backend belong to the tool).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from skillopt_lib.errors import did_you_mean


class AgentTool(str, Enum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    COPILOT = "copilot"
    CURSOR = "cursor"
    DEVIN = "devin"
    OPENCLAW = "openclaw"

    @classmethod
    def parse(cls, value: str) -> AgentTool:
        """Accept `claude-code`, `claude_code` or `claude`; raise ValueError naming the known tools."""
        norm = value.strip().lower().replace("_", "-")
        aliases = {"claude": "claude-code", "copilot-cli": "copilot", "cursor-agent": "cursor"}
        norm = aliases.get(norm, norm)
        for tool in cls:
            if tool.value == norm:
                return tool
        known = ", ".join(t.value for t in cls)
        guess = did_you_mean(norm, [t.value for t in cls])
        raise ValueError(
            f"unknown agent tool {value!r}" + (f" ({guess})" if guess else "") + f"; known tools: {known}"
        )


Scope = Literal["user", "project"]


@dataclass(frozen=True)
class ToolSpec:
    """Everything skillopt knows about one agent tool, in one row.

    Adding a tool means one row here plus the tool's own modules: its reader (`skillopt_daemon.ingest.
    sources.<source>`), its installer (`skillopt_daemon.registry.installers.<installer>`) and, when skillopt
    can replay tasks with it, its exec backend (`skillopt_lib.backends`, registered as `backend`). Modules
    are named, not imported, so the library stays free of the daemon and each layer loads only its own.
    """

    tool: AgentTool
    executables: tuple[str, ...]  # CLI names, tried in order (the first is the one users know)
    tested_versions: tuple[str, str] | None  # oldest and newest CLI version the formats were checked with
    install_hint: str  # how to install the CLI, for error messages
    home_env: str | None  # variable that moves the tool's home folder
    home_default: str  # the home folder relative to the user's home
    user_skill_dir: str | None  # where the tool reads user skills, relative to its home (None: none)
    project_skill_dirs: tuple[str, ...]  # inside a repository; the first is where skillopt writes
    scopes: tuple[Scope, ...]  # scopes skillopt installs to, the default first
    source: str  # reader module under skillopt_daemon.ingest.sources
    installer: str  # installer module under skillopt_daemon.registry.installers
    backend: str | None  # exec backend name, when skillopt can replay with the tool
    extra_sources: tuple[str, ...] = ()  # further readers (e.g. VS Code's Copilot Chat beside Copilot CLI)
    # Hosts a replay of this tool may reach besides the endpoints its settings name (`skillopt_lib.netjail`):
    # its provider's API and sign-in, which the CLI reaches through HTTPS_PROXY. None: not known to use the
    # proxy, so its replays are confined only when every endpoint they name is on this machine.
    model_hosts: tuple[str, ...] | None = None

    @property
    def executable(self) -> str:
        """The CLI name users type."""
        return self.executables[0]


TOOLS: dict[AgentTool, ToolSpec] = {
    AgentTool.CLAUDE_CODE: ToolSpec(
        tool=AgentTool.CLAUDE_CODE,
        executables=("claude",),
        tested_versions=("2.1.0", "2.1.197"),
        install_hint="npm install -g @anthropic-ai/claude-code",
        home_env="CLAUDE_CONFIG_DIR",
        home_default=".claude",
        user_skill_dir="skills",
        project_skill_dirs=(".claude/skills",),
        scopes=("user", "project"),
        source="claude_code",
        installer="claude_code",
        backend="claude-code",
        model_hosts=(
            "anthropic.com",
            "claude.ai",
            "claude.com",
            "bedrock-runtime.*.amazonaws.com",
            "sts.amazonaws.com",
            "sts.*.amazonaws.com",
            "*aiplatform.googleapis.com",
            "oauth2.googleapis.com",
        ),
    ),
    AgentTool.CODEX: ToolSpec(
        tool=AgentTool.CODEX,
        executables=("codex",),
        tested_versions=("0.171.0", "0.171.0"),
        install_hint="npm install -g @openai/codex",
        home_env="CODEX_HOME",
        home_default=".codex",
        user_skill_dir="skills",
        project_skill_dirs=(".agents/skills", ".codex/skills"),
        scopes=("user", "project"),
        source="codex",
        installer="codex",
        backend="codex",
        model_hosts=("api.openai.com", "auth.openai.com", "chatgpt.com", "*.openai.azure.com"),
    ),
    AgentTool.COPILOT: ToolSpec(
        tool=AgentTool.COPILOT,
        executables=("copilot",),
        tested_versions=("1.0.0", "1.0.102"),
        install_hint="npm install -g @github/copilot",
        home_env="COPILOT_HOME",
        home_default=".copilot",
        user_skill_dir="skills",
        project_skill_dirs=(".github/skills", ".claude/skills", ".agents/skills"),
        scopes=("user", "project"),
        source="copilot",
        installer="copilot",
        backend="copilot",
        extra_sources=("copilot_vscode",),
    ),
    AgentTool.CURSOR: ToolSpec(
        tool=AgentTool.CURSOR,
        executables=("cursor-agent", "agent"),
        tested_versions=("2025.1.0", "2026.12.31"),
        install_hint="see https://cursor.com/cli",
        home_env="CURSOR_CONFIG_DIR",
        home_default=".cursor",
        user_skill_dir="skills",
        project_skill_dirs=(".cursor/skills",),
        scopes=("user", "project"),
        source="cursor",
        installer="cursor",
        backend="cursor",
    ),
    AgentTool.DEVIN: ToolSpec(
        tool=AgentTool.DEVIN,
        executables=("devin",),
        tested_versions=None,
        install_hint="see https://docs.devin.ai",
        home_env=None,
        home_default=".local/share/devin",
        user_skill_dir=None,
        project_skill_dirs=(".devin/skills",),
        scopes=("project",),
        source="devin",
        installer="devin",
        backend=None,
    ),
    AgentTool.OPENCLAW: ToolSpec(
        tool=AgentTool.OPENCLAW,
        executables=("openclaw",),
        tested_versions=("2026.9.6", "2026.9.6"),
        install_hint="npm install -g openclaw",
        home_env="OPENCLAW_STATE_DIR",
        home_default=".openclaw",
        user_skill_dir="skills",
        project_skill_dirs=("skills", ".agents/skills"),
        scopes=("user", "project"),
        source="openclaw",
        installer="openclaw",
        backend=None,
    ),
}


def spec(tool: AgentTool) -> ToolSpec:
    """The row for `tool` (every AgentTool has one)."""
    return TOOLS[tool]


def tool_for_backend(backend: str) -> AgentTool | None:
    """The agent tool an exec backend drives, or None for a chat backend."""
    for row in TOOLS.values():
        if row.backend == backend:
            return row.tool
    return None
