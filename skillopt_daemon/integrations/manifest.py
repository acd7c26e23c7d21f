"""The manifests: one JSON file per tool and scope recording what skillopt's integration placed there.

Each placed file is recorded with the hash of what was written, so `uninstall` removes exactly what skillopt
placed, restores what it replaced, and leaves alone anything the user edited since. Where the integration is
installed is the registry's data (`Registry.integration_targets`), read here by `install_targets`; the
manifests keep only which files each integration placed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillopt_daemon.core import paths
from skillopt_daemon.core.fsio import sha256_bytes, write_private
from skillopt_daemon.registry import Registry, open_registry
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_lib.errors import SkillOptError

Target = InstallTarget


def target_file_key(target: InstallTarget) -> str:
    """A file-name-safe key for a target: `user`, or `project-<hash of the path>`."""
    if target.scope == "user" or target.project is None:
        return "user"
    return "project-" + sha256_bytes(str(target.project).encode("utf-8"))[:12]


def target_dict(target: InstallTarget) -> dict[str, Any]:
    return {"tool": target.tool.value, "scope": target.scope, "project": target.project_str}


def manifests_dir() -> Path:
    return paths.data_dir() / "integrations"


def manifest_path(target: Target) -> Path:
    return manifests_dir() / target.tool.value / f"{target_file_key(target)}.json"


def load_manifest(target: Target) -> dict[str, Any] | None:
    """The manifest of the integration at `target`, None when there is none; unreadable is an error."""
    path = manifest_path(target)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SkillOptError(
            f"the record of skillopt's {target} integration ({path}) is unreadable: {exc}",
            hint="remove that file and the integration's files by hand, then install again",
        ) from None
    return data if isinstance(data, dict) else None


def save_manifest(target: Target, data: dict[str, Any]) -> None:
    write_private(manifest_path(target), json.dumps(data, indent=2, sort_keys=True) + "\n")


def install_targets(reg: Registry | None = None) -> list[Target]:
    """Every tool and scope whose integration is installed: where approved skill versions are installed."""
    if reg is not None:
        return [i.target for i in reg.integration_targets()]
    opened, _notes = open_registry(actor="install", reconcile=False)
    try:
        return [i.target for i in opened.integration_targets()]
    finally:
        opened.db.conn.close()
