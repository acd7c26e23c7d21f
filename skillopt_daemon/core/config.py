"""skillopt's settings: one pydantic model, read from `config.toml`, overridable by `SKILLOPT_*` variables.

Precedence (highest first): environment (`SKILLOPT_NIGHT__SCHEDULE="0 4 * * *"`, nested keys joined by
`__`), the TOML file in the config folder, the defaults below. Every section forbids unknown keys so that a
typo is an error naming the key, not a setting silently ignored.

pydantic-settings reads the variables. Importing it (asyncio, python-dotenv, its many sources) is a tenth of
what `skillopt status` spends starting, so `Settings` is a plain model and pydantic-settings is loaded only
when a variable of ours names a setting, or the file holds something it reads differently from a plain
validation (`_file_alone`): otherwise both give the same settings from the file's own table.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from skillopt_daemon.core import paths
from skillopt_daemon.core.tool_homes import RETIRED_REPLAY
from skillopt_lib.agents import AgentTool
from skillopt_lib.backends import backend_names, is_backend, unknown_backend
from skillopt_lib.config import BackendConfig, Price, masked_dump
from skillopt_lib.config import is_secret_key as is_secret_key
from skillopt_lib.errors import ConfigError
from skillopt_lib.gate import GateConfig

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ToolSettings(_Section):
    """Per agent tool: where its home is (None: the tool's own variable or default) and whether to use it."""

    enabled: bool = True
    home: Path | None = None
    cli: str | None = Field(default=None, description="path or name of the tool's CLI executable")
    extra_dirs: list[Path] = Field(
        default_factory=list,
        description="more folders to read this tool's session logs from (e.g. Devin exports)",
    )
    replay_options: dict[str, Any] = Field(
        default_factory=dict,
        description="options for the tool's exec backend on replays, over the tool's own defaults "
        "(e.g. permission_mode and allowed_tools for claude-code)",
    )


class BackendSettings(BackendConfig):
    """A model backend for one role: the library's `BackendConfig`, so a setting means the same in
    `config.toml` and in a training config. An empty `backend` means the role is not configured.

    Keys are never stored here: `api_key_env` names the variable that holds one (set in the environment, or
    kept for the daemon in skillopt's keys file with `skillopt keys set`).
    """

    backend: str = Field(
        default="", description="openai | azure | anthropic | claude-code | codex | a preset name"
    )

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        """A mistyped backend is refused where it is set (`config set`, the file, the environment), with the
        valid names, rather than by the night that tries to use it."""
        if value and not is_backend(value):
            raise ValueError(f"{unknown_backend(value)}; valid backends: {', '.join(backend_names())}")
        return value

    @field_validator("api_key")
    @classmethod
    def _no_literal_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            raise ValueError(
                "keys are never stored in skillopt's settings; put the key in an environment variable "
                "or store it with `skillopt keys set NAME`, and name that variable in api_key_env"
            )
        return value


class OptimizerSettings(BackendSettings):
    """The optimizer's model (the judge's too, unless `[judge]` sets its own). With no `backend` set, the night
    uses the agent CLI the user is already signed in to (`claude-code-chat` or `codex-chat`), once the user
    said yes to it: `consent` keeps that answer, so it is asked once and can be read and changed like any
    setting (`skillopt config set optimizer.consent yes`)."""

    consent: Literal["yes", "no"] | None = Field(
        default=None,
        description="whether the night may use your agent CLI's login as its optimizer when no backend is "
        "set: yes, no, or unset (not asked yet)",
    )


class IngestSettings(_Section):
    rescan_interval_s: float = 30.0
    keep_automation: bool = Field(
        default=True, description="keep `claude -p` sessions from other programs, flagged"
    )
    redact_patterns: list[str] = Field(
        default_factory=list, description="extra regexes whose matches are redacted"
    )
    excerpt_chars: int = 2000
    batch_lines: int = 2000
    group_commit_s: float = Field(
        default=0.5,
        description="reading many files at once (a backfill), commit at least this often; 0: every batch",
    )
    max_line_bytes: int = Field(default=16 << 20, description="longer log lines are skipped, with an error")
    max_document_bytes: int = Field(default=64 << 20, description="larger whole-JSON transcripts are skipped")


class ReplaySettings(_Section):
    max_parallel: int = 2
    timeout_s: float = 600.0
    max_turns: int = 30
    keep_workspaces: bool = False
    max_output_bytes: int = 5_000_000
    allow_unconfined: bool = Field(
        default=False,
        description="where this machine cannot jail a replay (no network, mount and process namespaces), "
        "replay anyway with only the recording proxy: replays can then reach this machine's ports, its Unix "
        "sockets and the network, and the night's report, status and doctor say so",
    )
    env_allowlist: list[str] = Field(
        default_factory=lambda: ["PATH", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR", "SHELL", "USER", "LOGNAME"]
    )


class ExcludeSettings(_Section):
    """Sessions mining never reads, besides the automation it always recognises (see `night/mining/exclude.py`)."""

    projects: list[str] = Field(
        default_factory=list, description="project folders (glob patterns allowed) whose sessions are skipped"
    )
    prompts: list[str] = Field(
        default_factory=list, description="regexes: a session whose first request matches one is skipped"
    )
    entrypoints: list[str] = Field(
        default_factory=list,
        description="entrypoints to skip, e.g. sdk-cli (`claude -p`) or exec (`codex exec`)",
    )

    @field_validator("prompts")
    @classmethod
    def _regexes_compile(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"night.exclude.prompts: {pattern!r} is not a valid regex ({exc})") from None
        return value


# The night's gate: the library's anytime-valid sequential gate (`GateConfig.anytime()`); the settings below
# take their defaults from it, so the gate the night runs is the one benchmarks/gate.py measures.
_NIGHT_GATE = GateConfig.anytime()


class NightSettings(_Section):
    enabled: bool = True
    schedule: str = Field(
        default="17 3 * * *", description="cron expression, local time (a sixth leading field sets seconds)"
    )
    misfire_grace_s: int = 6 * 3600
    # Sized from benchmarks/night.py: 20 tasks replayed through Claude Code used about 2.4M tokens. Token caps
    # count tokens at what they cost, in uncached input tokens (a cache read at its price ratio, a tenth on
    # Anthropic's models): see "Budget" in docs/nightly.md.
    max_tokens: int = Field(
        default=5_000_000,
        description="input-equivalent tokens per night (cache reads count at their price, a tenth on Anthropic)",
    )
    max_cost_usd: float = Field(
        default=20.0,
        description="estimated dollars per night (not applied on a subscription login unless you set it)",
    )
    max_wall_s: float = 3 * 3600
    max_replays: int = 200
    # The caps of a night on the embedded default (the user's agent login as the optimizer, usually a
    # subscription): sized in docs/nightly.md from the nights corpus, about 68k raw tokens per replay (about
    # 30k at what they cost), so one 8-session family (50 replays) fits and a night cannot use up a plan.
    login_max_replays: int = Field(
        default=60, ge=1, description="replays per night when the optimizer is your agent login by default"
    )
    login_max_tokens: int = Field(
        default=4_000_000,
        ge=1,
        description="input-equivalent tokens per night when the optimizer is your agent login by default",
    )
    min_tasks: int = 4
    auto_approve: list[str] = Field(
        default_factory=list, description="skills whose gated proposals install at once"
    )
    local_only: bool = Field(default=False, description="refuse any model endpoint that is not on loopback")
    seed: int = 42
    include_automation: bool = Field(
        default=False,
        description="also mine sessions recognised as automation (Agent SDK, other tools' harnesses, night.exclude)",
    )
    exclude: ExcludeSettings = Field(default_factory=ExcludeSettings)
    label_with_model: bool = Field(
        default=True,
        description="label requests with the optimizer's model while mining, when one is configured",
    )
    label_batch: int = Field(default=40, ge=1, le=200, description="requests per labelling call")
    test_share: float = Field(
        default=0.2,
        ge=0,
        lt=1,
        description="share of a large family's requests (16 or more distinct ones) held out as a test split, "
        "reported and never gated on; smaller families keep every request that does not teach for the gate",
    )
    epochs: int = Field(
        default=1, ge=1, description="training epochs over a skill's replayed tasks per night"
    )
    gate: Literal["sequential", "paired", "strict"] = "sequential"
    gate_repeats: int = Field(
        default=_NIGHT_GATE.repeats,
        ge=1,
        description="replays per validation task and skill at the gate (sequential: the cap; one pair "
        "first, more only where the skills tied: more power per night for more replays)",
    )
    gate_confidence: float = Field(
        default=_NIGHT_GATE.confidence,
        gt=0.5,
        lt=1.0,
        description="1 - the false-proposal rate of a proven proposal, over every night and candidate",
    )
    gate_likely_confidence: float | None = Field(
        default=_NIGHT_GATE.likely_confidence,
        gt=0.5,
        lt=1.0,
        description="a lower tier shown for review as 'likely, not yet proven' (never auto-approved); "
        "unset it to propose proven candidates only",
    )
    leak_threshold: float = Field(
        default=0.6,
        gt=0,
        le=1,
        description="share of a check's or rubric item's wording that counts as a leak",
    )
    new_skills: bool = Field(
        default=True,
        description="seed a new skill for a recurring task family that no installed skill covers",
    )
    new_skill_scope: Literal["auto", "user", "project"] = Field(
        default="auto",
        description="where an approved new skill installs: auto (the repository its corrections and "
        "winning replays come from; user scope only when they span repositories), or user / project to "
        "force one",
    )

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data: Any) -> Any:
        """`split_ratios` is retired (splits follow what each session teaches, `night/mining/mine.py`): a config
        file that still sets it loads, with a warning."""
        if isinstance(data, dict) and "split_ratios" in data:
            data = {k: v for k, v in data.items() if k != "split_ratios"}
            logging.getLogger("skillopt.config").warning(
                "night.split_ratios is no longer used (a family's splits follow what each session teaches); "
                "remove it from the config file"
            )
        return data


class ReportSettings(_Section):
    """How `skillopt report` and the night judge a rule once it is installed (`night/installed/outcomes.py`)."""

    min_sessions: int = Field(
        default=3,
        ge=1,
        description="sessions of a rule's family after its install before it is called working or not",
    )
    working_share: float = Field(
        default=0.5,
        gt=0,
        lt=1,
        description="a rule works when its correction recurs at most at this share of the rate before it",
    )
    stale_after_days: float = Field(
        default=60,
        gt=0,
        description="a rule whose family has not been seen for this many days is proposed for removal",
    )
    weekly: str = Field(
        default="0 9 * * 1",
        description="when the daemon sends the weekly summary as a desktop notification (cron, local time; "
        "empty: never)",
    )


class UISettings(_Section):
    enabled: bool = Field(default=True, description="serve the dashboard from the daemon")
    host: str = Field(
        default="127.0.0.1", description="address to bind; anything but loopback exposes the dashboard"
    )
    port: int = Field(default=8765, ge=0, le=65535, description="0 picks a free port")


class Settings(BaseModel):
    """Every setting. `load_settings()` reads them from the file and the variables; `Settings()` is the
    defaults."""

    # As pydantic-settings' own models are configured, so that a value validates the same on either path.
    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, validate_default=True, arbitrary_types_allowed=True
    )

    tools: dict[AgentTool, ToolSettings] = Field(default_factory=dict)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    agent: BackendSettings = Field(default_factory=BackendSettings)
    optimizer: OptimizerSettings = Field(default_factory=OptimizerSettings)
    judge: BackendSettings = Field(default_factory=BackendSettings)
    replay: ReplaySettings = Field(default_factory=ReplaySettings)
    night: NightSettings = Field(default_factory=NightSettings)
    ui: UISettings = Field(default_factory=UISettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    prices: dict[str, Price] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _retired_replay_keys(cls, data: Any) -> Any:
        """`replay.claude_permission_mode` and `replay.claude_allowed_tools` are per tool now
        (`tools.claude-code.replay_options`): a config that still sets them loads, moved there, with a
        warning saying what to write instead."""
        if not isinstance(data, dict) or not isinstance(data.get("replay"), dict):
            return data
        replay = dict(data["replay"])
        moved = {new: replay.pop(old) for old, new in RETIRED_REPLAY.items() if old in replay}
        if not moved:
            return data
        tools = dict(data.get("tools") or {})
        claude = dict(tools.get("claude-code") or {})
        claude["replay_options"] = {**moved, **(claude.get("replay_options") or {})}
        tools["claude-code"] = claude
        logging.getLogger("skillopt.config").warning(
            "replay.claude_permission_mode and replay.claude_allowed_tools moved to "
            "tools.claude-code.replay_options (permission_mode, allowed_tools); the old keys still work "
            "for now: write the new ones to keep them working"
        )
        return {**data, "replay": replay, "tools": tools}

    def tool(self, tool: AgentTool) -> ToolSettings:
        return self.tools.get(tool) or ToolSettings()

    def enabled_tools(self) -> list[AgentTool]:
        """The agent tools skillopt uses (`tools.<tool>.enabled`, on by default)."""
        return [t for t in AgentTool if self.tool(t).enabled]


# Environment variables of ours that are not settings (they locate things before settings load).
_NON_SETTING_ENV = {"SKILLOPT_HOME", "SKILLOPT_AGENT_CLI_DIR"}


_CONFIG_FILE_OVERRIDE: list[Path] = []


@functools.cache
def _from_environment() -> type[Settings]:
    """`Settings` as pydantic-settings reads it: the variables over the file over the defaults. Built at
    the first load that needs it (see the module's docstring)."""
    from pydantic_settings import BaseSettings, SettingsConfigDict, TomlConfigSettingsSource

    class SettingsFromEnvironment(Settings, BaseSettings):  # type: ignore[misc]
        model_config = SettingsConfigDict(
            env_prefix="SKILLOPT_",
            env_nested_delimiter="__",
            extra="forbid",
            validate_assignment=True,
        )

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            toml_file = _CONFIG_FILE_OVERRIDE[-1] if _CONFIG_FILE_OVERRIDE else paths.config_file()
            return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_file))

    return SettingsFromEnvironment


def _file_alone(config_file: Path) -> dict[str, Any] | None:
    """The config file's table when it alone decides the settings, or None when pydantic-settings must read
    them: a variable of ours names a setting (`SKILLOPT_NIGHT`, `SKILLOPT_NIGHT__…`, in any case), the file
    cannot be read or parsed (its error is then pydantic-settings' own), or a top-level key is not a
    setting's exact name (pydantic-settings matches those regardless of case). A missing file is an empty
    table, as it is to pydantic-settings."""
    prefixes = tuple(f"skillopt_{field}" for field in Settings.model_fields)
    if any(n.lower().startswith(prefixes) for n in os.environ if n not in _NON_SETTING_ENV):
        return None
    path = config_file.expanduser()
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except (OSError, ValueError):
        return None
    return data if all(key in Settings.model_fields for key in data) else None


def load_settings() -> Settings:
    """Load and validate; a mistake becomes a ConfigError naming the key and the file or variable."""
    # Locate the file first: SKILLOPT_HOME is set aside below (it is not a setting) but decides the path.
    config_file = paths.config_file()
    alone = _file_alone(config_file)
    _CONFIG_FILE_OVERRIDE.append(config_file)
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k in _NON_SETTING_ENV}
    try:
        if alone is not None:
            return Settings.model_validate(alone)
        read = _from_environment()()
        # The values pydantic-settings validated, in a `Settings` like the other path's (equal settings
        # compare equal whichever path read them).
        return Settings.model_construct(read.model_fields_set, **dict(read))
    except ValidationError as exc:
        raise ConfigError(
            _explain(exc), hint=f"fix it in {config_file} or with `skillopt config set`"
        ) from None
    except (OSError, ValueError) as exc:  # TOML syntax errors are ValueErrors
        raise ConfigError(f"cannot read {config_file}: {exc}") from None
    finally:
        os.environ.update(saved)
        _CONFIG_FILE_OVERRIDE.pop()


def _explain(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            lines.append(f"unknown configuration key '{key}'")
        else:
            # pydantic prefixes a validator's own words with "Value error, ": the words are enough
            lines.append(f"configuration key '{key}': {err['msg'].removeprefix('Value error, ')}")
    return "; ".join(lines)


def tool_home(tool: AgentTool, settings: Settings | None = None) -> Path:
    """The tool's home: config first, then the tool's own variable, then its default folder."""
    settings = settings or load_settings()
    configured = settings.tool(tool).home
    return configured.expanduser() if configured else paths.default_tool_home(tool)


def masked(data: Any) -> Any:
    """A copy of settings data for display, with every value under a secret-looking key masked (the same rules
    as everything the trainer writes: `skillopt_lib.config.masked_dump`)."""
    return masked_dump(data)


Scope = Literal["user", "project"]
