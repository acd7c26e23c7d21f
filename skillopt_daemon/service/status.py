"""What `skillopt status` (and the dashboard's overview) shows, collected as plain data.

Each section is produced by a provider `fn(db) -> dict`; other parts of skillopt add theirs with
`register_section` (or replace a built-in one, e.g. the daemon's own richer "daemon" section). Every
section is JSON-ready, and may carry a `lines` list: the human-readable summary the CLI prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.store.db import corrupt, corrupt_error
from skillopt_daemon.night import status as night_status

SectionProvider = Callable[[sqlite_utils.Database], dict[str, Any]]

_SECTIONS: dict[str, SectionProvider] = {}
_ORDER: list[str] = []


def register_section(name: str, provider: SectionProvider) -> None:
    """Add (or replace) a status section. Order is the order of first registration."""
    if name not in _SECTIONS:
        _ORDER.append(name)
    _SECTIONS[name] = provider


def collect_status(db: sqlite_utils.Database) -> dict[str, dict[str, Any]]:
    """Every section, in order. A failing section reports its error instead of hiding the others, except
    a damaged database: that is no section's problem, and the one error says how to repair it."""
    out: dict[str, dict[str, Any]] = {}
    for name in _ORDER:
        try:
            out[name] = _SECTIONS[name](db)
        except Exception as exc:  # one broken section must not take `skillopt status` down
            if corrupt(exc):
                raise corrupt_error(detail=exc) from None
            out[name] = {"error": f"{type(exc).__name__}: {exc}", "lines": [f"unavailable: {exc}"]}
    return out


def _pending(db: sqlite_utils.Database) -> dict[str, Any]:
    from skillopt_daemon.registry import Registry
    from skillopt_daemon.service.proposals import pending_items

    return {"items": pending_items(Registry(db))}


# How many decided proposals `skillopt status` lists (the dashboard's proposals page shows more).
DECIDED_SHOWN = 5


def _decided(db: sqlite_utils.Database) -> dict[str, Any]:
    """The newest decisions on proposals: approved, rejected or rolled back, each with its reason."""
    from skillopt_daemon.registry import Registry
    from skillopt_daemon.service.proposals import decided_items

    return {"items": decided_items(Registry(db), limit=DECIDED_SHOWN)}


def _active(db: sqlite_utils.Database) -> dict[str, Any]:
    from skillopt_daemon.registry import Registry

    reg = Registry(db)
    items = []
    labels: dict[str, str] = {}
    for ts in reg.targets():
        label = None
        if ts.active_version_id:
            label = labels.get(ts.active_version_id)
            if label is None:
                label = labels[ts.active_version_id] = reg.get_version(ts.active_version_id).label
        items.append(
            {
                "skill": ts.skill,
                "target": ts.target.key,
                "enabled": ts.enabled,
                "active_version_id": ts.active_version_id,
                "active": label,
                "since": ts.updated_at,
            }
        )
    return {"items": items}


def daemon_state() -> dict[str, Any]:
    """Running or not, from the pid file (a stale file, left by a crash, reads as not running)."""
    pid_file = paths.pid_file()
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return {"running": False, "pid": None, "lines": ["not running"]}
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return {"running": False, "pid": pid, "lines": [f"not running (stale pid file for {pid})"]}
    except PermissionError:
        pass  # exists, owned by someone else
    return {"running": True, "pid": pid, "lines": [f"running (pid {pid})"]}


def _daemon(db: sqlite_utils.Database) -> dict[str, Any]:
    return daemon_state()


register_section("pending", _pending)
register_section("decided", _decided)
register_section("active", _active)
register_section("daemon", _daemon)


def _sessions(db: sqlite_utils.Database) -> dict[str, Any]:
    from skillopt_daemon.ingest.status import status_section
    from skillopt_daemon.service.sessions import flagged_kinds, flagged_phrase

    counts: dict[str, int] = {}

    def flagged(db: sqlite_utils.Database) -> str:
        counts.update(flagged_kinds(db))
        return flagged_phrase(counts)

    section = status_section(db, flagged)
    if counts:
        section["flagged_kinds"] = counts  # headless (mined), automation and skipped (not mined)
    return section


register_section("sessions", _sessions)


register_section("nightly", night_status.status_section)
