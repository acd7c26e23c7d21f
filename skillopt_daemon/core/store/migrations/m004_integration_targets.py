"""Where skillopt's own integration is installed: the targets new skills are installed to.

`skillopt install TOOL` records its tool and scope here (and `skillopt uninstall TOOL` removes the row), so
the registry can answer "where do new skills go" from its own data. `instructions` is true for an
integration installed with `--instructions` (a Copilot project then gets instruction files, not skill
folders). The per-target manifests under the data folder keep which files each integration placed.

Integrations installed before this table existed are read from those manifests once, here.
"""

from __future__ import annotations

import json

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.timeutil import utcnow_iso


def migrate(db: sqlite_utils.Database) -> None:
    table = db.table("integration_targets")
    table.create(
        {"id": int, "tool": str, "scope": str, "project": str, "instructions": bool, "recorded_at": str},
        pk="id",
        not_null={"tool", "scope", "project", "instructions", "recorded_at"},
        defaults={"project": "", "instructions": False},
    )
    table.create_index(["tool", "scope", "project"], unique=True)
    table.insert_all(_from_manifests(), ignore=True)


def _from_manifests() -> list[dict[str, object]]:
    """The integrations recorded by older versions, one manifest file per tool and scope."""
    rows: list[dict[str, object]] = []
    root = paths.data_dir() / "integrations"
    for file in sorted(root.glob("*/*.json")) if root.is_dir() else []:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        rows.append(
            {
                "tool": file.parent.name,
                "scope": "project" if data.get("scope") == "project" else "user",
                "project": str(data.get("project") or ""),
                "instructions": bool(data.get("instructions")),
                "recorded_at": str(data.get("installed_at") or utcnow_iso()),
            }
        )
    return rows
