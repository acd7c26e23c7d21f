"""Claude Code: the slash commands and the session hooks that tell skillopt when a session starts and ends,
and the Claude Code plugin skillopt ships (`skillopt install claude-code --print-plugin-dir`, and doctor's
line about it)."""

from __future__ import annotations

import json
from pathlib import Path

from skillopt_daemon.integrations.hooks import hook_command, hooks_add, hooks_strip
from skillopt_daemon.integrations.placements import FilePlacement, JsonPlacement, Placement
from skillopt_daemon.integrations.plan import PlacementContext
from skillopt_daemon.integrations.shipped import SKILL_NAME


def placements(ctx: PlacementContext) -> list[Placement]:
    out: list[Placement] = list(ctx.skills)
    base = ctx.home if ctx.target.scope == "user" else ctx.base / ".claude"
    for cmd in sorted((ctx.src / "commands").glob("*.md")):
        out.append(FilePlacement(base, base / "commands" / cmd.name, cmd.read_bytes()))
    settings = base / ("settings.json" if ctx.target.scope == "user" else "settings.local.json")
    events = {
        ev: hook_command(arg, ctx.tool, ctx.executable)
        for ev, arg in (("SessionStart", "session-start"), ("SessionEnd", "session-end"))
    }
    out.append(
        JsonPlacement(base, settings, hooks_add(events, wrapped=True), hooks_strip(wrapped=True), "hooks")
    )
    return out


def plugin_dir(src: Path) -> Path:
    """The plugin folder, for `claude --plugin-dir DIR` or `/plugin marketplace add DIR`: the shipped
    integration folder itself holds the plugin's manifest and its marketplace."""
    return src


def plugin_state(home: Path) -> str | None:
    """The version of the skillopt plugin when Claude Code has it installed and enabled, else None."""
    try:
        settings = json.loads((home / "settings.json").read_text(encoding="utf-8"))
        enabled = settings.get("enabledPlugins", {})
        if not any(k.split("@")[0] == SKILL_NAME and v for k, v in enabled.items()):
            return None
        installed = json.loads((home / "plugins" / "installed_plugins.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, AttributeError):
        return None
    plugins = installed.get("plugins", {}) if isinstance(installed, dict) else {}
    for key, entries in plugins.items():
        if key.split("@")[0] == SKILL_NAME:
            items = entries if isinstance(entries, list) else [entries]
            for e in items:
                if isinstance(e, dict):
                    return str(e.get("version") or "installed")
    return "enabled"
