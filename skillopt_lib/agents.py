"""The agent tools skillopt knows, and the facts about them that both halves of the project share.

One place for each fact: the daemon's sources and installers and the library's exec backends all read the
tool ids and project-level skill folders from here.
"""

from __future__ import annotations

from enum import Enum


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
        raise ValueError(f"unknown agent tool {value!r}; known tools: {known}")


# Where a tool reads skills inside a project (relative to the repository root). The first entry is where
# skillopt writes; later entries are also read by the tool.
PROJECT_SKILL_DIRS: dict[AgentTool, tuple[str, ...]] = {
    AgentTool.CLAUDE_CODE: (".claude/skills",),
    AgentTool.CODEX: (".agents/skills", ".codex/skills"),
    AgentTool.COPILOT: (".github/skills", ".claude/skills", ".agents/skills"),
    AgentTool.CURSOR: (".cursor/skills",),
    AgentTool.DEVIN: (".devin/skills",),
    AgentTool.OPENCLAW: ("skills", ".agents/skills"),
}

# Environment variable that moves each tool's home folder, and the default relative to the user's home.
TOOL_HOME_ENV: dict[AgentTool, tuple[str | None, str]] = {
    AgentTool.CLAUDE_CODE: ("CLAUDE_CONFIG_DIR", ".claude"),
    AgentTool.CODEX: ("CODEX_HOME", ".codex"),
    AgentTool.COPILOT: ("COPILOT_HOME", ".copilot"),
    AgentTool.CURSOR: ("CURSOR_CONFIG_DIR", ".cursor"),
    AgentTool.DEVIN: (None, ".local/share/devin"),
    AgentTool.OPENCLAW: ("OPENCLAW_STATE_DIR", ".openclaw"),
}

# The npm package or page that installs each tool's CLI, for error messages.
CLI_INSTALL_HINT: dict[AgentTool, str] = {
    AgentTool.CLAUDE_CODE: "npm install -g @anthropic-ai/claude-code",
    AgentTool.CODEX: "npm install -g @openai/codex",
    AgentTool.COPILOT: "npm install -g @github/copilot",
    AgentTool.CURSOR: "see https://cursor.com/cli",
    AgentTool.DEVIN: "see https://docs.devin.ai",
    AgentTool.OPENCLAW: "npm install -g openclaw",
}
