"""`skillopt doctor`'s integrations part: for each tool, whether it is here, where the integration is
installed, whether its files are intact, and whether skillopt's hooks are active.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skillopt_daemon.core.fsio import sha256_file
from skillopt_daemon.integrations.hooks import json_has_our_hook
from skillopt_daemon.integrations.manifest import Target, install_targets, load_manifest, target_dict
from skillopt_daemon.integrations.plan import detect, integration_part, tool_home_or_default
from skillopt_lib.agents import AgentTool, spec
from skillopt_lib.errors import StoreError


def tool_version(tool: AgentTool, timeout: float = 5.0) -> str | None:
    cli = shutil.which(spec(tool).executable)
    if not cli:
        return None
    try:
        out = subprocess.run(
            [cli, "--version"], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else None


@dataclass
class IntegrationStatus:
    """One tool's line in `skillopt doctor`."""

    tool: str
    detected: bool
    cli: str | None
    version: str | None
    installed: list[dict[str, Any]]
    hooks_active: bool | None
    plugin: str | None
    problems: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def status(
    tool: AgentTool, *, with_version: bool = True, targets: list[Target] | None = None
) -> IntegrationStatus:
    """One tool's line; `targets` (where the integration is installed) is read from the registry if not given."""
    det = detect(tool)
    installed: list[dict[str, Any]] = []
    problems: list[str] = []
    hooks_active: bool | None = None
    for target in install_targets() if targets is None else targets:
        if target.tool is not tool:
            continue
        manifest = load_manifest(target) or {}
        missing, edited = [], []
        for r in manifest.get("placements", []):
            path = Path(r.get("path", ""))
            if r.get("kind") == "file":
                h = sha256_file(path)
                if h is None:
                    missing.append(str(path))
                elif h != r.get("hash"):
                    edited.append(str(path))
            elif r.get("kind") == "json" and r.get("what") == "hooks":
                active = json_has_our_hook(path)
                hooks_active = bool(hooks_active) or active
                if not active:
                    problems.append(
                        f"the skillopt hooks are gone from {path}; run `skillopt install {tool.value}`"
                    )
            elif not path.exists():
                missing.append(str(path))
        for m in missing:
            problems.append(f"{m} is missing; run `skillopt install {tool.value}` again")
        installed.append(
            {
                **target_dict(target),
                "skillopt_version": manifest.get("skillopt_version"),
                "missing": missing,
                "edited": edited,
            }
        )
    # a tool whose skillopt plugin brings the hooks (Claude Code's) says whether it is enabled
    plugin_state = integration_part(tool, "plugin_state")
    plugin = plugin_state(tool_home_or_default(tool)) if plugin_state is not None else None
    if plugin:
        hooks_active = True
        if installed:
            problems.append(
                f"installed twice: the skillopt plugin of {tool.value} and `skillopt install {tool.value}` "
                "both add the skillopt commands, skill and hooks, so the agent sees each of them twice; keep "
                f"one (`skillopt uninstall {tool.value}` removes the direct install, "
                f"`{spec(tool).executable} plugin uninstall skillopt@skillopt` the plugin)"
            )
    return IntegrationStatus(
        tool=tool.value,
        detected=bool(det["detected"]),
        cli=det["cli"],
        version=tool_version(tool) if with_version and det["cli"] else None,
        installed=installed,
        hooks_active=hooks_active,
        plugin=plugin,
        problems=problems,
    )


def doctor_report(*, with_versions: bool = True) -> list[IntegrationStatus]:
    """Every tool's integration status, for `skillopt doctor`."""
    try:
        targets = install_targets()
    except StoreError:
        # Where the integration is installed is registry data; doctor's database check says what is wrong.
        targets = []
    return [status(tool, with_version=with_versions, targets=targets) for tool in AgentTool]


def doctor_section(*, with_versions: bool = True) -> dict[str, Any]:
    """`skillopt doctor`'s integrations part: JSON-ready, with the human lines under "lines".

    For each tool: detected (home folder or CLI), installed (where, and whether files went missing or were
    edited), hooks active (skillopt's hooks in the tool's settings, or the Claude Code plugin enabled), and
    versions (the tool's CLI, the skillopt that installed the integration, the plugin).
    """
    tools = doctor_report(with_versions=with_versions)
    lines: list[str] = []
    for st in tools:
        where = ", ".join(
            (i["scope"] if not i["project"] else f"project {i['project']}")
            + f" (skillopt {i['skillopt_version']})"
            for i in st.installed
        )
        parts = [
            "detected" if st.detected else "not detected",
            st.version or "",
            f"installed: {where}" if where else "not installed",
        ]
        if st.plugin:
            parts.append(f"plugin {st.plugin}")
        if st.hooks_active is not None:
            parts.append("hooks active" if st.hooks_active else "hooks missing")
        lines.append(f"{st.tool}: " + "; ".join(p for p in parts if p))
        lines.extend(f"  ! {p}" for p in st.problems)
    return {"tools": [t.as_dict() for t in tools], "lines": lines, "ok": not any(t.problems for t in tools)}


def doctor_checks(*, with_versions: bool = True) -> list[tuple[str, str, str, str]]:
    """Rows `(group, name, level, detail)` for `skillopt doctor`'s table, one per tool plus one per problem."""
    section = doctor_section(with_versions=with_versions)
    rows: list[tuple[str, str, str, str]] = []
    for tool, line in zip(
        section["tools"], [ln for ln in section["lines"] if not ln.startswith("  ! ")], strict=True
    ):
        level = "warn" if tool["problems"] else ("ok" if tool["installed"] or tool["plugin"] else "info")
        rows.append(("integrations", tool["tool"], level, line.split(": ", 1)[1]))
        rows.extend(("integrations", tool["tool"], "warn", problem) for problem in tool["problems"])
    return rows
