"""Helpers shared by the integration tests (a module of its own: pytest imports each conftest.py as
`conftest`, so tests cannot import from theirs reliably)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Env:
    home: Path
    skillopt_home: Path
    project: Path


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and folder (None) under `root`: compare two to see that nothing changed."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = Path(p).read_bytes()
    return out


def approve_skill(name: str, description: str, body: str, target: str) -> str:
    """Register and approve a skill version installed at `target` (as the nightly cycle + a user would)."""
    from skillopt_daemon.registry import open_registry
    from skillopt_lib.skill import SkillBundle, SkillDoc

    reg, _ = open_registry()
    try:
        bundle = SkillBundle.from_doc(SkillDoc.new(name, description, body))
        version = reg.propose(name, bundle)
        reg.approve(version.id, targets=[target])
        return version.id
    finally:
        reg.db.conn.close()


def propose_skill(name: str, description: str, body: str) -> str:
    from skillopt_daemon.registry import open_registry
    from skillopt_lib.skill import SkillBundle, SkillDoc

    reg, _ = open_registry()
    try:
        return reg.propose(name, SkillBundle.from_doc(SkillDoc.new(name, description, body))).id
    finally:
        reg.db.conn.close()
