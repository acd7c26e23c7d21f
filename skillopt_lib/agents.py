"""The agent tools skillopt knows, and the facts about them that both halves of the project share.

One place for each fact: the daemon's sources, installers, integrations and `doctor`, and the library's exec
backends all read `TOOLS` (executables, tested versions, homes, scopes, skill folders, and which reader,
installer and backend belong to the tool). The rows come from the `skillopt_agent_tools` hook: this module
registers the built-in ones as a plugin like any other (`skillopt_lib.plugins`), so a package adds a tool
the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from skillopt_lib import plugins
from skillopt_lib.errors import did_you_mean

# The built-in tools' rows by name. A built-in wins a clash of names, so a built-in name is answered from
# here without loading the plugins: looking for those reads every installed package's metadata, which
# `skillopt status` would otherwise pay for on every run. Filled below, after the rows.
_BUILTIN_ROWS: dict[str, ToolSpec] = {}


class _ToolsMeta(type):
    """Iterating `AgentTool` (or `in AgentTool`) goes over the tools loaded now, built-ins and plugins."""

    def __iter__(cls) -> Iterator[AgentTool]:
        return iter(list(_registry().rows))

    def __len__(cls) -> int:
        return len(_registry().rows)

    def __contains__(cls, value: object) -> bool:
        return isinstance(value, str) and value in _registry().rows


class AgentTool(str, metaclass=_ToolsMeta):
    """An agent tool's name (`claude-code`): a string, one object per name, open to plugins.

    The built-in tools are class attributes (`AgentTool.CODEX`); a plugin's tool exists once its row is
    loaded. `AgentTool("codex")` returns the one object for a loaded tool (so `is` compares tools) and
    raises ValueError for a name no plugin provides, like an Enum; `.value` is the name.
    """

    CLAUDE_CODE: ClassVar[AgentTool]
    CODEX: ClassVar[AgentTool]
    COPILOT: ClassVar[AgentTool]
    CURSOR: ClassVar[AgentTool]
    DEVIN: ClassVar[AgentTool]
    GEMINI: ClassVar[AgentTool]
    OPENCLAW: ClassVar[AgentTool]

    _declared: ClassVar[dict[str, AgentTool]] = {}

    def __new__(cls, value: str) -> AgentTool:
        if isinstance(value, AgentTool):
            return value
        builtin = _BUILTIN_ROWS.get(value)
        if builtin is not None:
            return builtin.tool
        rows = _registry().rows
        for tool in rows:
            if tool == value:
                return tool
        raise ValueError(f"{value!r} is not a known agent tool; known tools: {', '.join(rows)}")

    @classmethod
    def declare(cls, value: str) -> AgentTool:
        """The one object for `value`, made on first use (a plugin's row declares its tool this way)."""
        known = cls._declared.get(value)
        if known is None:
            norm = value.strip().lower()
            if not norm or norm != value or not all(c.isalnum() or c == "-" for c in norm):
                raise ValueError(f"agent tool names are lower-case letters, digits and '-', not {value!r}")
            known = str.__new__(cls, value)
            cls._declared[value] = known
        return known

    @property
    def value(self) -> str:
        return str.__str__(self)

    @property
    def name(self) -> str:
        return self.value.upper().replace("-", "_")

    def __repr__(self) -> str:
        return f"AgentTool({self.value!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (AgentTool.declare, (self.value,))

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(
            cls.parse,
            core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(str.__str__),
        )

    @classmethod
    def parse(cls, value: str) -> AgentTool:
        """Accept `claude-code`, `claude_code` or an alias (`claude`); raise ValueError naming the known tools."""
        if isinstance(value, AgentTool):
            return value
        norm = value.strip().lower().replace("_", "-")
        for row in _BUILTIN_ROWS.values():  # the registry's first rows: the same answer, without plugins
            if row.tool == norm or norm in row.aliases:
                return row.tool
        rows = _registry().rows
        for tool, row in rows.items():
            if tool == norm or norm in row.aliases:
                return tool
        names = [t.value for t in rows]
        known = ", ".join(names)
        guess = did_you_mean(norm, names)
        raise ValueError(
            f"unknown agent tool {value!r}" + (f" ({guess})" if guess else "") + f"; known tools: {known}"
        )


for _name in ("claude-code", "codex", "copilot", "cursor", "devin", "gemini", "openclaw"):
    setattr(AgentTool, _name.upper().replace("-", "_"), AgentTool.declare(_name))


Scope = Literal["user", "project"]


@dataclass(frozen=True)
class ToolSpec:
    """Everything skillopt knows about one agent tool, in one row: what a `skillopt_agent_tools` hook returns.

    The row names the tool's own parts instead of importing them: its reader (`source`), its installer
    (`installer`), its exec backend (`backend`, a registered backend name) and what `skillopt install` places
    besides skills (`integration`). Built-in rows use short module names under skillopt's own packages
    (`skillopt_daemon.ingest.sources.<source>`, `skillopt_daemon.registry.installers.<installer>`,
    `skillopt_daemon.integrations.tools.<integration>`); a plugin's row gives full ``"module:Name"`` paths.
    Named, not imported, so the library stays free of the daemon and each layer loads only its own part.
    """

    tool: AgentTool  # a plain string is declared as a tool name
    executables: tuple[str, ...]  # CLI names, tried in order (the first is the one users know)
    tested_versions: tuple[str, str] | None  # oldest and newest CLI version the formats were checked with
    install_hint: str  # how to install the CLI, for error messages
    home_env: str | None  # variable that moves the tool's home folder
    home_default: str  # the home folder relative to the user's home
    user_skill_dir: str | None  # where the tool reads user skills, relative to its home (None: none)
    project_skill_dirs: tuple[str, ...]  # inside a repository; the first is where skillopt writes
    scopes: tuple[Scope, ...]  # scopes skillopt installs to, the default first
    source: str  # the session reader: a module under skillopt_daemon.ingest.sources, or "module:Class"
    installer: str  # the installer: a module under skillopt_daemon.registry.installers, or "module:Class"
    backend: str | None  # exec backend name, when skillopt can replay with the tool
    extra_sources: tuple[str, ...] = ()  # further readers (e.g. VS Code's Copilot Chat beside Copilot CLI)
    aliases: tuple[str, ...] = ()  # other names users type (`claude`)
    chat_backend: str | None = None  # a backend that uses the tool's CLI as the optimizer's model
    # Options the exec backend gets on every replay; `tools.<tool>.replay_options` in the settings override.
    replay_options: Mapping[str, Any] = field(default_factory=dict)
    integration: str | None = None  # what `skillopt install` places besides skills ("module:function")
    doctor: str | None = None  # the tool's own `skillopt doctor` checks ("module:function")
    # True when `home_env` names the folder that holds `home_default` (Gemini's GEMINI_CLI_HOME stands for
    # the user's home), not the tool's home itself.
    home_env_is_parent: bool = False
    # Hosts a replay of this tool may reach besides the endpoints its settings name (`skillopt_lib.netjail`):
    # its provider's API and sign-in, which the CLI reaches through HTTPS_PROXY. None: not known to use the
    # proxy, so its replays are confined only when every endpoint they name is on this machine.
    model_hosts: tuple[str, ...] | None = None
    # The tool's name as its users write it ("Claude Code"), for sentences; empty: its id.
    title: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.tool, AgentTool):
            object.__setattr__(self, "tool", AgentTool.declare(str(self.tool)))
        if not self.executables:
            raise ValueError(f"{self.tool.value}: a tool row needs at least one executable name")
        if not self.scopes:
            raise ValueError(f"{self.tool.value}: a tool row needs at least one install scope")

    @property
    def executable(self) -> str:
        """The CLI name users type."""
        return self.executables[0]

    def default_home(self, environ: Mapping[str, str], user_home: Path) -> Path:
        """The tool's home folder from its own variable, else `home_default` under the user's home."""
        moved = environ.get(self.home_env) if self.home_env else None
        if moved:
            base = Path(moved).expanduser()
            return base / self.home_default if self.home_env_is_parent else base
        return user_home / self.home_default


BUILTIN_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=AgentTool.CLAUDE_CODE,
        title="Claude Code",
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
        aliases=("claude",),
        chat_backend="claude-code-chat",
        replay_options={
            "permission_mode": "acceptEdits",
            "allowed_tools": ["Bash", "Read", "Write", "Edit", "Glob", "Grep"],
        },
        integration="claude_code",
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
    ToolSpec(
        tool=AgentTool.CODEX,
        title="Codex",
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
        chat_backend="codex-chat",
        integration="codex",
        model_hosts=("api.openai.com", "auth.openai.com", "chatgpt.com", "*.openai.azure.com"),
    ),
    ToolSpec(
        tool=AgentTool.COPILOT,
        title="GitHub Copilot",
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
        aliases=("copilot-cli",),
        integration="copilot",
    ),
    ToolSpec(
        tool=AgentTool.CURSOR,
        title="Cursor",
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
        aliases=("cursor-agent",),
        integration="cursor",
    ),
    ToolSpec(
        tool=AgentTool.DEVIN,
        title="Devin",
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
        integration="devin",
    ),
    ToolSpec(
        tool=AgentTool.GEMINI,
        title="Gemini CLI",
        executables=("gemini",),
        tested_versions=("0.61.0", "0.61.0"),
        install_hint="npm install -g @google/gemini-cli",
        home_env="GEMINI_CLI_HOME",  # Gemini CLI's own variable names the folder that holds `.gemini`
        home_default=".gemini",
        user_skill_dir="skills",
        project_skill_dirs=(".gemini/skills", ".agents/skills"),
        scopes=("user", "project"),
        source="gemini",
        installer="gemini",
        backend="gemini",
        aliases=("gemini-cli",),
        home_env_is_parent=True,
        doctor="skillopt_daemon.registry.installers.gemini:doctor",
    ),
    ToolSpec(
        tool=AgentTool.OPENCLAW,
        title="OpenClaw",
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
)


_BUILTIN_ROWS.update((row.tool.value, row) for row in BUILTIN_TOOLS)


def skillopt_agent_tools(register: plugins.Register) -> None:
    """The built-in tools, registered through the hook every plugin uses (a built-in needs no marker)."""
    for row in BUILTIN_TOOLS:
        register(row)


@dataclass
class _Registry:
    rows: dict[AgentTool, ToolSpec]
    plugin_of: dict[AgentTool, str]


_lock = threading.RLock()
_cache: list[_Registry] = []


def _registry() -> _Registry:
    """Every loaded tool's row, built-ins first; a second row for a name already taken is reported."""
    with _lock:
        if _cache:
            return _cache[0]
        # Built-in rows answer at once while the plugins load (a plugin's module may parse a tool name).
        _cache.append(_Registry({r.tool: r for r in BUILTIN_TOOLS}, {}))
        try:
            found = plugins.catalog(
                "skillopt_agent_tools", "agent tool", _row, "skillopt_lib.agents.ToolSpec rows"
            )
        finally:
            _cache.clear()
        rows = {row.tool: row for row in found.items.values()}
        owner = {row.tool: found.owners[name] for name, row in found.items.items()}
        _cache.append(_Registry(rows, owner))
        return _cache[0]


def _row(item: Any) -> tuple[str, ToolSpec]:
    """A registered agent tool's row, checked (`plugins.catalog`)."""
    if not isinstance(item, ToolSpec):
        raise TypeError(f"not a ToolSpec: {type(item).__name__}")
    return item.tool.value, item


def _forget() -> None:
    with _lock:
        _cache.clear()


plugins.on_change(_forget)


class _Tools(Mapping[AgentTool, ToolSpec]):
    """`TOOLS`: every loaded tool's row, read afresh when plugins change."""

    def __getitem__(self, tool: AgentTool) -> ToolSpec:
        builtin = _BUILTIN_ROWS.get(tool)  # a built-in's row is the registry's, with no plugin loaded
        return builtin if builtin is not None else _registry().rows[tool]

    def __iter__(self) -> Iterator[AgentTool]:
        return iter(list(_registry().rows))

    def __len__(self) -> int:
        return len(_registry().rows)

    def __repr__(self) -> str:
        return f"TOOLS({', '.join(self)})"


TOOLS: Mapping[AgentTool, ToolSpec] = _Tools()


def plugin_of(tool: AgentTool) -> str:
    """The plugin that provides `tool` (a built-in module's name for skillopt's own)."""
    return _registry().plugin_of.get(tool, "skillopt_lib.agents")


def spec(tool: AgentTool) -> ToolSpec:
    """The row for `tool` (every AgentTool has one)."""
    return TOOLS[tool]
