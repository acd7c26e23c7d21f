"""Hook commands and MCP server entries: what an integration merges into a tool's JSON settings.

A hook runs `skillopt notify EVENT` quickly and quietly and never fails the session; it is recognised as
skillopt's by its command (`HOOK_MARKER`), so it is replaced in place on reinstall and removed on uninstall
while the user's own hooks stay as they were.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from skillopt_daemon.integrations.placements import JsonMerge
from skillopt_daemon.integrations.shipped import SKILL_NAME
from skillopt_lib.agents import AgentTool

HOOK_TIMEOUT_S = 10


HOOK_MARKER = "notify session-"


def skillopt_executable() -> str:
    """The absolute path of the `skillopt` command running now (hooks call it), or plain `skillopt`."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "skillopt" and argv0.is_file() and os.access(argv0, os.X_OK):
        return str(argv0.resolve())
    found = shutil.which("skillopt")
    if found:
        return str(Path(found).resolve())
    beside = Path(sys.executable).parent / "skillopt"
    return str(beside) if beside.exists() else "skillopt"


def hook_command(event: str, tool: AgentTool, executable: str | None = None) -> str:
    """A shell command for a hook: run `skillopt notify EVENT` quickly and quietly, never failing the session.

    The absolute path recorded at install time is tried first, then PATH, so moving skillopt does not
    silently break the hook; when neither exists it says so on stderr and exits 0. The hook's input is read
    at once and skillopt runs in the background: the tool may not wait for a slow SessionEnd hook.
    """
    exe = shlex.quote(executable or skillopt_executable())
    script = (
        f'b={exe}; [ -f "$b" ] && [ -x "$b" ] || b=$(command -v skillopt 2>/dev/null) || '
        '{ echo "skillopt: skillopt command not found; this session was not recorded" >&2; exit 0; }; '
        f'p=$(cat); ( printf "%s\\n" "$p" | "$b" notify {event} --tool {tool.value} >/dev/null 2>&1 & ) '
        ">/dev/null 2>&1; exit 0"
    )
    return "sh -c " + shlex.quote(script)


def is_our_hook(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("command"), str)
        and (HOOK_MARKER in entry["command"] and "skillopt" in entry["command"])
    )


def hooks_add(events: dict[str, str], *, wrapped: bool) -> JsonMerge:
    """Add one hook group per event (Claude Code nests them under "hooks"; Devin's hooks.v1.json does not)."""

    def add(doc: dict[str, Any]) -> dict[str, Any]:
        container = doc.setdefault("hooks", {}) if wrapped else doc
        for event, command in events.items():
            groups = container.setdefault(event, [])
            mine = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}
            found = False
            for group in groups:
                hooks = group.get("hooks", []) if isinstance(group, dict) else []
                for i, h in enumerate(hooks):
                    if is_our_hook(h):
                        hooks[i] = mine
                        found = True
            if not found:
                groups.append({"matcher": "*" if wrapped else "", "hooks": [mine]})
        return doc

    return add


def hooks_strip(*, wrapped: bool) -> JsonMerge:
    def strip(doc: dict[str, Any]) -> dict[str, Any]:
        container = doc.get("hooks") if wrapped else doc
        if not isinstance(container, dict):
            return doc
        for event in list(container):
            groups = container[event]
            if not isinstance(groups, list):
                continue
            kept = []
            for group in groups:
                if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                    group["hooks"] = [h for h in group["hooks"] if not is_our_hook(h)]
                    if not group["hooks"]:
                        continue
                kept.append(group)
            if kept:
                container[event] = kept
            else:
                del container[event]
        if wrapped and not container:
            del doc["hooks"]
        return doc

    return strip


def mcp_add(entry: dict[str, Any]) -> JsonMerge:
    def add(doc: dict[str, Any]) -> dict[str, Any]:
        doc.setdefault("mcpServers", {})[SKILL_NAME] = entry
        return doc

    return add


def mcp_strip(doc: dict[str, Any]) -> dict[str, Any]:
    servers = doc.get("mcpServers")
    if isinstance(servers, dict) and SKILL_NAME in servers:
        del servers[SKILL_NAME]
        if not servers:
            del doc["mcpServers"]
    return doc


def mcp_entry(tool: AgentTool, executable: str | None = None) -> dict[str, Any]:
    """The `mcpServers` entry that starts skillopt's MCP server; a tool's integration adds its own keys."""
    return {"command": executable or skillopt_executable(), "args": ["mcp"]}


def strip_any(doc: dict[str, Any]) -> dict[str, Any]:
    return mcp_strip(hooks_strip(wrapped=False)(hooks_strip(wrapped=True)(doc)))


def json_has_our_hook(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    found = False

    def walk(node: Any) -> None:
        nonlocal found
        if is_our_hook(node):
            found = True
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    return found
