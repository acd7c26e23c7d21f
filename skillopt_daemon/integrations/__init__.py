"""skillopt's own integration with each agent tool: what `skillopt install TOOL` places, and undoing it.

Import from here. Behind it: `shipped` (the files skillopt ships), `manifest` (what each integration
placed), `placements` (the kinds of change and how each is undone), `hooks` (hook commands and MCP
entries), `plan` (what each tool gets), `setup` (install and uninstall) and `doctor` (status checks).
Integrations use only the registry's public API.
"""

from skillopt_daemon.integrations.doctor import (
    IntegrationStatus,
    doctor_checks,
    doctor_report,
    doctor_section,
    status,
    tool_version,
)
from skillopt_daemon.integrations.hooks import (
    HOOK_MARKER,
    HOOK_TIMEOUT_S,
    hook_command,
    mcp_entry,
    skillopt_executable,
)
from skillopt_daemon.integrations.manifest import (
    Target,
    install_targets,
    manifest_path,
    manifests_dir,
    target_dict,
    target_file_key,
)
from skillopt_daemon.integrations.placements import (
    Action,
    FilePlacement,
    JsonMerge,
    JsonPlacement,
    Op,
    Placement,
    Progress,
    Report,
    SectionPlacement,
)
from skillopt_daemon.integrations.plan import (
    DEFAULT_SCOPE,
    SUPPORTED_SCOPES,
    Scope,
    detect,
    plan_placements,
    plugin_dir,
    resolve_target,
    skill_roots,
)
from skillopt_daemon.integrations.setup import install, uninstall
from skillopt_daemon.integrations.shipped import (
    SECTION_NAME,
    SKILL_NAME,
    integration_dir,
    integrations_root,
    shipped_skill,
)

__all__ = [
    "Scope",
    "Progress",
    "SKILL_NAME",
    "SECTION_NAME",
    "HOOK_TIMEOUT_S",
    "SUPPORTED_SCOPES",
    "DEFAULT_SCOPE",
    "integrations_root",
    "integration_dir",
    "plugin_dir",
    "shipped_skill",
    "Target",
    "target_file_key",
    "target_dict",
    "Op",
    "Action",
    "Report",
    "manifests_dir",
    "manifest_path",
    "install_targets",
    "FilePlacement",
    "SectionPlacement",
    "JsonMerge",
    "JsonPlacement",
    "Placement",
    "HOOK_MARKER",
    "skillopt_executable",
    "hook_command",
    "mcp_entry",
    "skill_roots",
    "plan_placements",
    "resolve_target",
    "detect",
    "install",
    "uninstall",
    "tool_version",
    "IntegrationStatus",
    "status",
    "doctor_report",
    "doctor_section",
    "doctor_checks",
]
