"""Whether the settings could give an agent tool another home than its own default, answered without
loading them.

Installing (`skillopt approve`, `rollback`, `--dry-run` included) asks each tool's installer where the tool
reads skills: its own default folder unless `tools.<tool>.home` says otherwise (`config.tool_home`).
Loading the settings to learn that costs `approve` a fifth of its start-up (pydantic-settings and every
settings model). When neither the config file nor one of skillopt's variables names a tool's home, the
answer is the default whatever else they hold (a config that does not load falls back to the default too),
so the installers do not load them (`may_set_tool_home`).

Loading a config that still uses a retired key logs a warning saying what to write instead; such a config is
loaded as before, so that the warning is still shown (the retired replay keys are defined here, for
`config.py`; `night.split_ratios` is its `NightSettings._retired`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from skillopt_daemon.core import paths

# Replay settings that were Claude Code's alone, now `tools.claude-code.replay_options.<option>`.
RETIRED_REPLAY = {"claude_permission_mode": "permission_mode", "claude_allowed_tools": "allowed_tools"}
# Night settings that are no longer used (`NightSettings._retired` warns).
RETIRED_NIGHT = ("split_ratios",)
# The settings' sections that hold a tool's home or a retired key: a variable for any of them (a nested
# `SKILLOPT_TOOLS__CLAUDE_CODE__HOME`, or a whole section as JSON) means loading the settings.
_SECTIONS_READ = ("tools", "replay", "night")


def may_set_tool_home() -> bool:
    """False when loading the settings would give every tool its default home and log nothing: no variable
    of skillopt's for the tools, the replay or the night settings, and a config file that is missing, or TOML
    naming no tool's home and none of the retired keys. True (load them) whenever in doubt."""
    for name in os.environ:
        low = name.lower()
        if any(low.startswith(f"skillopt_{section}") for section in _SECTIONS_READ):
            return True
    try:
        with open(paths.config_file(), "rb") as f:
            data = _toml().load(f)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):  # unreadable, or not TOML (TOMLDecodeError is a ValueError)
        return True
    return _names_home_or_retired(data)


def _names_home_or_retired(data: dict[str, Any]) -> bool:
    tools = data.get("tools", {})
    if not isinstance(tools, dict) or any(not isinstance(t, dict) or "home" in t for t in tools.values()):
        return True
    replay = data.get("replay", {})
    if not isinstance(replay, dict) or any(k in replay for k in RETIRED_REPLAY):
        return True
    night = data.get("night", {})
    return not isinstance(night, dict) or any(k in night for k in RETIRED_NIGHT)


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib
