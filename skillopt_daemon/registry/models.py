"""What the registry hands out: versions, targets, events and the results of its operations.

Each row type is built from a database row by column name (`from_row`), so a new column or a reordered
query never shifts a value into the wrong field.

`Evidence`, a pydantic model, lives in `evidence.py`, imported where evidence is validated: reading versions
(`skillopt diff`) does not build it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from skillopt_daemon.registry.installers.base import InstallTarget

Origin = Literal["imported", "hand-edit", "proposed", "trained"]
State = Literal["proposed", "approved", "rejected"]
ORIGINS: tuple[str, ...] = ("imported", "hand-edit", "proposed", "trained")

# Columns of a version joined with its skill's name, as `Version.from_row` reads them.
VERSION_SQL = (
    "SELECT v.id, s.name AS skill, v.seq, v.content_hash, v.parent_id, v.origin, v.state, v.evidence, v.note, "
    "v.created_at, v.decided_at, v.decision_reason FROM versions v JOIN skills s ON s.id = v.skill_id"
)
# Columns of a target joined with its skill's name, as `TargetState.from_row` reads them.
TARGET_SQL = (
    "SELECT t.id, s.name AS skill, t.tool, t.scope, t.project, t.enabled, t.active_version_id, t.installed, "
    "t.baseline_backup, t.updated_at FROM targets t JOIN skills s ON s.id = t.skill_id"
)


@dataclass(frozen=True)
class Version:
    id: str
    skill: str
    seq: int
    content_hash: str
    parent_id: str | None
    origin: str
    state: str
    evidence: dict[str, Any]
    note: str | None
    created_at: str
    decided_at: str | None
    decision_reason: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Version:
        """A row of `VERSION_SQL`, by column name."""
        return cls(
            id=row["id"],
            skill=row["skill"],
            seq=int(row["seq"]),
            content_hash=row["content_hash"],
            parent_id=row["parent_id"],
            origin=row["origin"],
            state=row["state"],
            evidence=json.loads(row["evidence"] or "{}"),
            note=row["note"],
            created_at=row["created_at"],
            decided_at=row["decided_at"],
            decision_reason=row["decision_reason"],
        )

    @property
    def label(self) -> str:
        return f"{self.skill}@v{self.seq}"

    @property
    def short_id(self) -> str:
        return self.id[:8]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "skill": self.skill,
            "version": self.seq,
            "label": self.label,
            "content_hash": self.content_hash,
            "parent_id": self.parent_id,
            "origin": self.origin,
            "state": self.state,
            "evidence": self.evidence,
            "note": self.note,
            "created_at": self.created_at,
            "decided_at": self.decided_at,
            "decision_reason": self.decision_reason,
        }


@dataclass(frozen=True)
class TargetState:
    id: int
    skill: str
    target: InstallTarget
    enabled: bool
    active_version_id: str | None
    installed: dict[str, str]
    baseline_backup: str | None
    updated_at: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TargetState:
        """A row of `TARGET_SQL`, by column name."""
        return cls(
            id=int(row["id"]),
            skill=row["skill"],
            target=InstallTarget.from_row(row["tool"], row["scope"], row["project"]),
            enabled=bool(row["enabled"]),
            active_version_id=row["active_version_id"],
            installed=json.loads(row["installed"] or "{}"),
            baseline_backup=row["baseline_backup"],
            updated_at=row["updated_at"],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.key,
            "tool": self.target.tool.value,
            "scope": self.target.scope,
            "project": self.target.project_str or None,
            "enabled": self.enabled,
            "active_version_id": self.active_version_id,
            "files": self.installed,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True)
class Event:
    id: int
    at: str
    action: str
    skill: str | None
    version_id: str | None
    target: str | None
    actor: str
    message: str
    detail: dict[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Event:
        """A row of the `events` table, by column name."""
        fields = {
            k: row[k] for k in ("id", "at", "action", "skill", "version_id", "target", "actor", "message")
        }
        return cls(**fields, detail=json.loads(row["detail"] or "{}"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at,
            "action": self.action,
            "skill": self.skill,
            "version_id": self.version_id,
            "target": self.target,
            "actor": self.actor,
            "message": self.message,
            "detail": self.detail,
        }


@dataclass
class InstallOutcome:
    """What one install or rollback did at one target. `removed`: a rollback of a skill's first version,
    which took `version` away from the target (no version is active there now)."""

    target: InstallTarget
    version: Version
    changed: bool
    files: dict[str, str]
    removed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.key,
            "version_id": self.version.id,
            "label": self.version.label,
            "changed": self.changed,
            "files": sorted(self.files),
            "removed": self.removed,
        }


@dataclass
class HandEdit:
    """Files at a target that differ from what skillopt last wrote there, and the version they became."""

    target: InstallTarget
    changed: list[str]
    version: Version | None  # None when the skill's folder was deleted (nothing to import)

    def describe(self) -> str:
        if self.version is None:
            return f"{self.target}: the skill's folder was removed by hand"
        if not self.changed:
            return (
                f"{self.target}: the active version {self.version.label} is a hand edit "
                "the proposal does not include"
            )
        return (
            f"{self.target}: hand-edited ({', '.join(self.changed)}), "
            f"imported as {self.version.label} ({self.version.short_id})"
        )


@dataclass
class ApproveResult:
    version: Version
    installs: list[InstallOutcome] = field(default_factory=list)
    hand_edits: list[HandEdit] = field(default_factory=list)
    plans: list[list[str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version.to_dict(),
            "installs": [i.to_dict() for i in self.installs],
            "hand_edits": [h.describe() for h in self.hand_edits],
            "plan": self.plans,
        }


@dataclass
class RollbackPlan:
    """What a rollback would do at one target (`rollback --dry-run`): the version active there, the one it
    would make active (None: the skill's first version would be removed) and each file it would touch."""

    target: InstallTarget
    current: Version | None
    dest: Version | None
    lines: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.key,
            "from": self.current.label if self.current else None,
            "to": self.dest.label if self.dest else None,
            "removed": self.dest is None,
            "plan": self.lines,
        }


@dataclass
class ImportResult:
    skill: str
    status: Literal["new", "unchanged", "hand-edit", "invalid", "existing"]
    source: str
    target: InstallTarget | None = None
    version: Version | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "status": self.status,
            "source": self.source,
            "target": self.target.key if self.target else None,
            "version_id": self.version.id if self.version else None,
            "label": self.version.label if self.version else None,
            "message": self.message,
        }


@dataclass(frozen=True)
class IntegrationTarget:
    """A tool and scope where skillopt's integration is installed: where new skills are installed too.

    `instructions`: installed with `--instructions` (a Copilot project then gets instruction files).
    """

    target: InstallTarget
    instructions: bool
    recorded_at: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> IntegrationTarget:
        """A row of the `integration_targets` table, by column name."""
        return cls(
            target=InstallTarget.from_row(row["tool"], row["scope"], row["project"]),
            instructions=bool(row["instructions"]),
            recorded_at=row["recorded_at"],
        )


def new_skill_targets(evidence: Mapping[str, Any]) -> list[InstallTarget]:
    """Where a new skill installs when the user names no target: its evidence's `install_to`, if any."""
    if not evidence.get("new_skill"):
        return []
    return [InstallTarget.parse(str(t)) for t in evidence.get("install_to") or []]


def evidence_figures(evidence: Mapping[str, Any]) -> tuple[bool, float | None, float | None]:
    """The evidence's `new_skill`, `score_change()` and `confidence`, as `Evidence.model_validate` gives them.

    Stored evidence was validated when it was proposed (`Decisions.propose`) and comes back from JSON with
    the types it went in with, so validating it again changes nothing but the types pydantic converts. The
    figures are read as they are when they already have the model's types (a bool; floats or None); anything
    else (an int, a string) goes through the model, which converts or refuses it exactly as before.
    """
    numbers = [evidence.get(k) for k in ("baseline_score", "candidate_score", "delta", "confidence")]
    new = evidence.get("new_skill", False)
    if type(new) is not bool or any(x is not None and type(x) is not float for x in numbers):
        from skillopt_daemon.registry.evidence import Evidence

        ev = Evidence.model_validate(evidence)
        return ev.new_skill, ev.score_change(), ev.confidence
    baseline, candidate, delta, confidence = numbers
    if delta is not None:
        change: float | None = delta
    elif baseline is not None and candidate is not None:
        change = candidate - baseline
    else:
        change = None
    return new, change, confidence
