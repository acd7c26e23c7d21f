"""The registry of skill versions: what exists, what is proposed, what is installed where, and why.

Every decision a person or the nightly cycle makes about a skill goes through `Registry`, and the CLI and the
dashboard only call it, so the rules live in one place:

- Versions are immutable and content-addressed; approving, installing and rolling back move the per-target
  pointer (`targets.active_version_id`) and append audit events. Nothing is deleted.
- A hand edit wins: before writing to a target, the files there are compared with what skillopt last wrote.
  A difference is imported as a `hand-edit` version and the write is refused unless `force` is given.
- Installs are crash-safe: an `intent` row is committed before the first byte is written and completed after
  the swap; `reconcile()` (run when a registry is opened) settles intents left by a killed process by
  looking at the disk, so the registry always agrees with the files.
- Deciding a proposal is a conditional state change inside one IMMEDIATE transaction, and installs are
  serialized by a lock file: two processes approving the same proposal get one install and one refusal.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import sqlite_utils
from pydantic import BaseModel, ConfigDict

from skillopt_daemon.core import paths
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.registry.installers import INSTALLERS, get_installer
from skillopt_daemon.registry.installers.base import InstallTarget, atomic_write, pause_point, sha256_bytes
from skillopt_lib.agents import spec
from skillopt_lib.errors import ConflictError, NotFoundError, SkillFormatError, SkillOptError, StoreError
from skillopt_lib.skill import SKILL_FILE, SkillBundle, unified_diff

try:  # POSIX advisory locks; elsewhere installs are serialized by the database transaction only
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

Origin = Literal["imported", "hand-edit", "proposed", "trained"]
State = Literal["proposed", "approved", "rejected"]
ORIGINS: tuple[str, ...] = ("imported", "hand-edit", "proposed", "trained")
LOCK_TIMEOUT_S = 60.0
_T = TypeVar("_T")


class Evidence(BaseModel):
    """Why a version was proposed. Known fields are typed; anything else a producer adds is kept.

    `delta` is the candidate's score minus the baseline's on held-out tasks; `confidence` is how sure the
    gate is that the candidate is better (0..1). The nightly cycle adds per-task outcomes under `tasks`.
    """

    model_config = ConfigDict(extra="allow")

    baseline_score: float | None = None
    candidate_score: float | None = None
    delta: float | None = None
    confidence: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    task_ids: list[str | int] = []
    gate: dict[str, Any] | None = None
    tokens: int | None = None
    cost_usd: float | None = None

    def score_change(self) -> float | None:
        if self.delta is not None:
            return self.delta
        if self.baseline_score is not None and self.candidate_score is not None:
            return self.candidate_score - self.baseline_score
        return None


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
    target: InstallTarget
    version: Version
    changed: bool
    files: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.key,
            "version_id": self.version.id,
            "label": self.version.label,
            "changed": self.changed,
            "files": sorted(self.files),
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


def _json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


def _new_id() -> str:
    return secrets.token_hex(8)


def _store_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn SQLite's exceptions into errors a user can act on (exit code 5), at the public surface."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(
                    "the database is locked by another process",
                    hint="another skillopt command may be running a long write; try again in a moment",
                ) from None
            raise StoreError(f"the database cannot be used: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"the database is corrupt: {exc}",
                hint="move it aside and run the command again to start a fresh one, or restore a backup",
            ) from None

    return wrapper


def _guard_public(cls: type[_T]) -> type[_T]:
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(member):
            setattr(cls, name, _store_errors(member))
    return cls


@_guard_public
class Registry:
    """All registry operations over one open database. `actor` names who acted, for the audit log."""

    def __init__(self, db: sqlite_utils.Database, actor: str = "cli") -> None:
        self.db = db
        self.actor = actor

    # -- content store -------------------------------------------------------------------------------------

    @staticmethod
    def object_path(sha: str) -> Path:
        return paths.skill_store_dir() / "objects" / sha[:2] / sha

    def _store_bundle(self, bundle: SkillBundle) -> None:
        """Write each file once under its hash. Done before the rows that name it, so a crash leaves at most
        an unreferenced object, never a row without its bytes."""
        paths.ensure_private_dir(paths.skill_store_dir())
        for data in bundle.files.values():
            obj = self.object_path(sha256_bytes(data))
            if not obj.exists():
                paths.ensure_private_dir(obj.parent)
                atomic_write(obj, data, 0o600)

    def load_bundle(self, version_id: str) -> SkillBundle:
        files: dict[str, bytes] = {}
        for path, sha in self.db.execute(
            "SELECT path, sha256 FROM version_files WHERE version_id = ? ORDER BY path", [version_id]
        ):
            obj = self.object_path(sha)
            try:
                data = obj.read_bytes()
            except OSError:
                raise StoreError(
                    f"the skill store is missing {path} of version {version_id[:8]} ({obj})",
                    hint="restore the skill store folder from a backup",
                ) from None
            if sha256_bytes(data) != sha:
                raise StoreError(
                    f"the skill store copy of {path} (version {version_id[:8]}) is damaged: {obj}",
                    hint="restore the skill store folder from a backup",
                )
            files[path] = data
        return SkillBundle(files=files)

    # -- audit ---------------------------------------------------------------------------------------------

    def _audit(
        self,
        action: str,
        *,
        skill: str | None = None,
        version_id: str | None = None,
        target: InstallTarget | None = None,
        message: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        self.db.execute(
            "INSERT INTO events (at, action, skill, version_id, target, actor, message, detail) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                utcnow_iso(),
                action,
                skill,
                version_id,
                target.key if target else None,
                self.actor,
                message,
                _json(dict(detail or {})),
            ],
        )

    def events(self, skill: str | None = None, limit: int | None = None) -> list[Event]:
        sql = "SELECT id, at, action, skill, version_id, target, actor, message, detail FROM events"
        args: list[Any] = []
        if skill is not None:
            sql += " WHERE skill = ?"
            args.append(skill)
        sql += " ORDER BY id"
        if limit:
            newest = sql.replace(" ORDER BY id", " ORDER BY id DESC")
            sql = f"SELECT * FROM ({newest} LIMIT {int(limit)}) ORDER BY id"
        return [
            Event(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], json.loads(r[8] or "{}"))
            for r in self.db.execute(sql, args)
        ]

    # -- skills and versions -------------------------------------------------------------------------------

    def _skill_id(self, name: str, create: bool = False) -> int | None:
        row = self.db.execute("SELECT id FROM skills WHERE name = ?", [name]).fetchone()
        if row:
            return int(row[0])
        if not create:
            return None
        cur = self.db.execute("INSERT INTO skills (name, created_at) VALUES (?, ?)", [name, utcnow_iso()])
        return int(cur.lastrowid or 0)

    def require_skill(self, name: str) -> int:
        sid = self._skill_id(name)
        if sid is None:
            known = [r[0] for r in self.db.execute("SELECT name FROM skills ORDER BY name")]
            raise NotFoundError(
                f"no skill named {name!r}",
                hint=f"known skills: {', '.join(known)}"
                if known
                else "import your skills: skillopt skills import",
            )
        return sid

    def skill_names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM skills ORDER BY name")]

    _VERSION_SQL = (
        "SELECT v.id, s.name, v.seq, v.content_hash, v.parent_id, v.origin, v.state, v.evidence, v.note, "
        "v.created_at, v.decided_at, v.decision_reason FROM versions v JOIN skills s ON s.id = v.skill_id"
    )

    @staticmethod
    def _version(row: Sequence[Any]) -> Version:
        return Version(
            id=row[0],
            skill=row[1],
            seq=int(row[2]),
            content_hash=row[3],
            parent_id=row[4],
            origin=row[5],
            state=row[6],
            evidence=json.loads(row[7] or "{}"),
            note=row[8],
            created_at=row[9],
            decided_at=row[10],
            decision_reason=row[11],
        )

    def get_version(self, version_id: str) -> Version:
        row = self.db.execute(self._VERSION_SQL + " WHERE v.id = ?", [version_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no version {version_id!r}")
        return self._version(row)

    def versions(self, skill: str) -> list[Version]:
        self.require_skill(skill)
        return [
            self._version(r)
            for r in self.db.execute(self._VERSION_SQL + " WHERE s.name = ? ORDER BY v.seq", [skill])
        ]

    def list_pending(self) -> list[Version]:
        return [
            self._version(r)
            for r in self.db.execute(
                self._VERSION_SQL + " WHERE v.state = 'proposed' ORDER BY v.created_at, v.id"
            )
        ]

    def resolve_id(self, ref: str) -> Version:
        """A version from its id, an unambiguous id prefix, or `SKILL@vN` / `SKILL@N` / `SKILL@PREFIX`."""
        ref = ref.strip()
        if not ref:
            raise NotFoundError("no version named", hint="give a proposal id or SKILL@vN")
        if "@" in ref:
            skill, _, which = ref.partition("@")
            self.require_skill(skill)
            explicit = which[:1] in ("v", "V") and which[1:].isdigit()
            num = which[1:] if explicit else which
            row = None
            if num.isdigit():
                row = self.db.execute(
                    self._VERSION_SQL + " WHERE s.name = ? AND v.seq = ?", [skill, int(num)]
                ).fetchone()
            if explicit or (row is not None):
                if row is None:
                    raise NotFoundError(
                        f"{skill} has no version {which}", hint=f"see: skillopt history {skill}"
                    )
                return self._version(row)
            rows = self.db.execute(
                self._VERSION_SQL + " WHERE s.name = ? AND v.id LIKE ?", [skill, which.lower() + "%"]
            ).fetchall()
        else:
            if not all(c in "0123456789abcdef" for c in ref.lower()):
                raise NotFoundError(
                    f"{ref!r} is not a version id", hint="ids are hex, e.g. 3f2a9c1d; or SKILL@vN"
                )
            rows = self.db.execute(self._VERSION_SQL + " WHERE v.id LIKE ?", [ref.lower() + "%"]).fetchall()
        if not rows:
            raise NotFoundError(f"no version or proposal matches {ref!r}", hint="see: skillopt status")
        if len(rows) > 1:
            options = ", ".join(f"{r[0][:12]} ({r[1]}@v{r[2]})" for r in rows[:6])
            raise ConflictError(
                f"{ref!r} matches {len(rows)} versions: {options}", hint="give more of the id"
            )
        return self._version(rows[0])

    def _insert_version(
        self,
        skill: str,
        bundle: SkillBundle,
        *,
        origin: str,
        state: str,
        parent_id: str | None,
        evidence: Mapping[str, Any] | None,
        note: str | None,
    ) -> Version:
        if origin not in ORIGINS:
            raise ConflictError(f"unknown origin {origin!r}", hint=f"one of: {', '.join(ORIGINS)}")
        self._store_bundle(bundle)
        now = utcnow_iso()
        vid = _new_id()
        with self.db.conn:
            sid = self._skill_id(skill, create=True)
            seq = int(
                self.db.execute(
                    "SELECT coalesce(max(seq), 0) + 1 FROM versions WHERE skill_id = ?", [sid]
                ).fetchone()[0]
            )
            self.db.execute(
                "INSERT INTO versions (id, skill_id, seq, content_hash, parent_id, origin, state, evidence, "
                "note, created_at, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    vid,
                    sid,
                    seq,
                    bundle.content_hash,
                    parent_id,
                    origin,
                    state,
                    _json(dict(evidence or {})),
                    note,
                    now,
                    now if state != "proposed" else None,
                ],
            )
            for path, data in sorted(bundle.files.items()):
                self.db.execute(
                    "INSERT INTO version_files (version_id, path, sha256, size) VALUES (?, ?, ?, ?)",
                    [vid, path, sha256_bytes(data), len(data)],
                )
        return self.get_version(vid)

    def _find_content(self, skill: str, content_hash: str) -> Version | None:
        row = self.db.execute(
            self._VERSION_SQL + " WHERE s.name = ? AND v.content_hash = ? AND v.state = 'approved' "
            "ORDER BY v.seq DESC LIMIT 1",
            [skill, content_hash],
        ).fetchone()
        return self._version(row) if row else None

    def current_version(self, skill: str) -> Version | None:
        """The version most recently made active on any target, else the newest approved one."""
        row = self.db.execute(
            self._VERSION_SQL + " JOIN targets t ON t.active_version_id = v.id WHERE s.name = ? "
            "ORDER BY t.updated_at DESC LIMIT 1",
            [skill],
        ).fetchone()
        if row is None:
            row = self.db.execute(
                self._VERSION_SQL + " WHERE s.name = ? AND v.state = 'approved' ORDER BY v.seq DESC LIMIT 1",
                [skill],
            ).fetchone()
        return self._version(row) if row else None

    def propose(
        self,
        skill: str,
        bundle: SkillBundle,
        evidence: Mapping[str, Any] | Evidence | None = None,
        origin: Origin = "proposed",
        parent: str | None = None,
        note: str | None = None,
    ) -> Version:
        """Register a candidate version for review. It must be a valid skill named `skill`."""
        if origin not in ("proposed", "trained"):
            raise ConflictError(f"a proposal's origin is 'proposed' or 'trained', not {origin!r}")
        bundle.require_valid(folder_name=skill)
        ev = (
            evidence.model_dump(exclude_none=True) if isinstance(evidence, Evidence) else dict(evidence or {})
        )
        try:
            Evidence.model_validate(ev)
        except Exception as exc:
            raise ConflictError(
                f"the evidence is not valid: {exc}", hint="see Evidence in the registry docs"
            ) from None
        parent_id: str | None
        if parent is not None:
            pv = self.resolve_id(parent)
            if pv.skill != skill:
                raise ConflictError(f"the parent {pv.label} belongs to another skill than {skill}")
            parent_id = pv.id
        else:
            cur = self.current_version(skill) if self._skill_id(skill) is not None else None
            parent_id = cur.id if cur else None
        if parent_id is not None and self.get_version(parent_id).content_hash == bundle.content_hash:
            raise ConflictError(
                f"the proposed {skill} is identical to its parent {self.get_version(parent_id).label}",
                hint="change something first",
            )
        for p in self.list_pending():
            if p.skill == skill and p.content_hash == bundle.content_hash:
                raise ConflictError(
                    f"an identical proposal for {skill} is already pending: {p.short_id}",
                    hint=f"review it: skillopt diff {p.short_id}",
                )
        with self.db.conn:
            v = self._insert_version(
                skill, bundle, origin=origin, state="proposed", parent_id=parent_id, evidence=ev, note=note
            )
            self._audit(
                "propose",
                skill=skill,
                version_id=v.id,
                message=f"proposed {v.label} ({origin})" + (f": {note}" if note else ""),
                detail={"parent_id": parent_id, "content_hash": v.content_hash},
            )
        return v

    # -- targets -------------------------------------------------------------------------------------------

    _TARGET_SQL = (
        "SELECT t.id, s.name, t.tool, t.scope, t.project, t.enabled, t.active_version_id, t.installed, "
        "t.baseline_backup, t.updated_at FROM targets t JOIN skills s ON s.id = t.skill_id"
    )

    @staticmethod
    def _target(row: Sequence[Any]) -> TargetState:
        return TargetState(
            id=int(row[0]),
            skill=row[1],
            target=InstallTarget.from_row(row[2], row[3], row[4]),
            enabled=bool(row[5]),
            active_version_id=row[6],
            installed=json.loads(row[7] or "{}"),
            baseline_backup=row[8],
            updated_at=row[9],
        )

    def targets(self, skill: str | None = None) -> list[TargetState]:
        sql, args = self._TARGET_SQL, []
        if skill is not None:
            sql += " WHERE s.name = ?"
            args.append(skill)
        sql += " ORDER BY s.name, t.tool, t.scope, t.project"
        return [self._target(r) for r in self.db.execute(sql, args)]

    def target_state(self, skill: str, target: InstallTarget) -> TargetState | None:
        row = self.db.execute(
            self._TARGET_SQL + " WHERE s.name = ? AND t.tool = ? AND t.scope = ? AND t.project = ?",
            [skill, target.tool.value, target.scope, target.project_str],
        ).fetchone()
        return self._target(row) if row else None

    def ensure_target(self, skill: str, target: InstallTarget, enabled: bool = True) -> TargetState:
        with self.db.conn:
            sid = self._skill_id(skill, create=True)
            now = utcnow_iso()
            self.db.execute(
                "INSERT INTO targets (skill_id, tool, scope, project, enabled, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (skill_id, tool, scope, project) "
                "DO UPDATE SET enabled = max(enabled, excluded.enabled)",
                [sid, target.tool.value, target.scope, target.project_str, int(enabled), now, now],
            )
        ts = self.target_state(skill, target)
        assert ts is not None
        return ts

    def set_target_enabled(self, skill: str, target: InstallTarget, enabled: bool) -> None:
        ts = self.target_state(skill, target)
        if ts is None:
            raise NotFoundError(f"{skill} has no target {target}")
        with self.db.conn:
            self.db.execute("UPDATE targets SET enabled = ? WHERE id = ?", [int(enabled), ts.id])
            self._audit("enable" if enabled else "disable", skill=skill, target=target)

    def active_version(self, skill: str, target: InstallTarget) -> Version | None:
        ts = self.target_state(skill, target)
        if ts is None or ts.active_version_id is None:
            return None
        return self.get_version(ts.active_version_id)

    def _set_active(self, ts_id: int, version_id: str | None, installed: Mapping[str, str]) -> None:
        self.db.execute(
            "UPDATE targets SET active_version_id = ?, installed = ?, updated_at = ? WHERE id = ?",
            [version_id, _json(dict(installed)), utcnow_iso(), ts_id],
        )

    # -- drift (hand edits) --------------------------------------------------------------------------------

    def check_drift(self, skill: str, target: InstallTarget) -> list[str] | None:
        """Paths at `target` that differ from what skillopt last wrote there; None when nothing differs.

        With no record for the target, anything present counts: skillopt never replaces files it did not
        write without asking.
        """
        installer = get_installer(target.tool)
        current = installer.scan(target, skill)
        ts = self.target_state(skill, target)
        recorded = ts.installed if ts else {}
        if current == recorded:
            return None
        return sorted(p for p in set(current) | set(recorded) if current.get(p) != recorded.get(p))

    def _import_drift(self, skill: str, target: InstallTarget, changed: list[str]) -> HandEdit:
        """Record what is on disk at `target` as the skill's `hand-edit` version, active there."""
        installer = get_installer(target.tool)
        current = installer.scan(target, skill)
        ts = self.ensure_target(skill, target)
        folder = None
        for loc in installer.locations(target):
            d = loc.skill_dir(skill)
            prefix = str(d) + os.sep
            if (d / SKILL_FILE).is_file() and any(p.startswith(prefix) for p in changed):
                folder = d
                break
        if folder is None:
            for loc in installer.locations(target):
                if (loc.skill_dir(skill) / SKILL_FILE).is_file():
                    folder = loc.skill_dir(skill)
                    break
        if folder is None:
            with self.db.conn:
                self._audit(
                    "hand-edit",
                    skill=skill,
                    target=target,
                    message=f"{skill} was removed from {target} outside skillopt",
                    detail={"changed": changed},
                )
            return HandEdit(target, changed, None)
        try:
            bundle = SkillBundle.from_path(folder)
        except (SkillFormatError, OSError) as exc:
            raise ConflictError(
                f"{folder} was edited outside skillopt and cannot be read as a skill: {exc}",
                hint="fix or remove the folder, then try again",
            ) from None
        tracked = bool(ts.active_version_id or ts.installed)
        with self.db.conn:
            existing = self._find_content(skill, bundle.content_hash)
            rel_changed = [os.path.relpath(p, folder) if p.startswith(str(folder)) else p for p in changed]
            if existing is not None:
                v = existing
            else:
                issues = [str(i) for i in bundle.validate(folder_name=skill)]
                evidence: dict[str, Any] = {"found_at": target.key}
                if tracked:
                    evidence["changed"] = rel_changed
                if issues:
                    evidence["issues"] = issues
                v = self._insert_version(
                    skill,
                    bundle,
                    origin="hand-edit" if tracked else "imported",
                    state="approved",
                    parent_id=ts.active_version_id,
                    evidence=evidence,
                    note=f"found in {folder}",
                )
            self._set_active(ts.id, v.id, current)
            if tracked:
                message = f"files at {target} differ from what skillopt installed; recorded as {v.label}"
            else:
                message = f"imported {v.label} from {folder}"
            self._audit(
                "hand-edit" if tracked else "import",
                skill=skill,
                version_id=v.id,
                target=target,
                message=message,
                detail={"changed": rel_changed} if tracked else {"folder": str(folder)},
            )
        return HandEdit(target, rel_changed, v)

    # -- importing -----------------------------------------------------------------------------------------

    def import_folder(self, folder: Path, target: InstallTarget | None = None) -> ImportResult:
        """Register the skill in `folder`; with a target, it becomes that target's active version."""
        folder = Path(folder)
        name = folder.name
        try:
            bundle = SkillBundle.from_path(folder)
        except SkillFormatError as exc:
            return ImportResult(name, "invalid", str(folder), target, message=exc.message)
        except OSError as exc:
            return ImportResult(name, "invalid", str(folder), target, message=f"cannot read it: {exc}")
        issues = bundle.validate(folder_name=name)
        if issues:
            return ImportResult(
                name, "invalid", str(folder), target, message="; ".join(str(i) for i in issues)
            )
        if target is None:
            existing = self._find_content(name, bundle.content_hash) if self._skill_id(name) else None
            if existing:
                return ImportResult(name, "existing", str(folder), None, existing, "already registered")
            with self.db.conn:
                v = self._insert_version(
                    name,
                    bundle,
                    origin="imported",
                    state="approved",
                    parent_id=None,
                    evidence={"found_at": str(folder)},
                    note=f"imported from {folder}",
                )
                self._audit(
                    "import", skill=name, version_id=v.id, message=f"imported {v.label} from {folder}"
                )
            return ImportResult(name, "new", str(folder), None, v, f"imported as {v.label}")
        with self._install_lock():
            changed = self.check_drift(name, target)
            ts = self.target_state(name, target)
            if changed is None and ts is not None and ts.active_version_id:
                return ImportResult(
                    name,
                    "unchanged",
                    str(folder),
                    target,
                    self.get_version(ts.active_version_id),
                    "already tracked",
                )
            was_tracked = ts is not None and bool(ts.active_version_id or ts.installed)
            he = self._import_drift(name, target, changed or [])
            status: Literal["hand-edit", "new"] = "hand-edit" if was_tracked else "new"
            msg = (
                f"hand edit found: recorded as {he.version.label}"
                if was_tracked and he.version
                else "imported"
            )
            if he.version and not was_tracked:
                msg = f"imported as {he.version.label}"
            return ImportResult(name, status, str(folder), target, he.version, msg)

    def import_target(self, target: InstallTarget, seen: set[Path] | None = None) -> list[ImportResult]:
        """Import every skill folder at `target`. Folders in `seen` (resolved) are skipped and new ones added:
        tools share folders (`~/.agents/skills`), and one folder must belong to one target only."""
        installer = get_installer(target.tool)
        out: list[ImportResult] = []
        for d in installer.discover(target):
            real = d.resolve()
            if seen is not None:
                if real in seen:
                    continue
                seen.add(real)
            out.append(self.import_folder(d, target))
        return out

    def import_path(self, path: Path) -> list[ImportResult]:
        """A skill folder, a SKILL.md or a folder of skills; a tool's skills folder implies the target."""
        path = Path(path).expanduser().absolute()
        if path.is_file():
            path = path.parent
        if not path.is_dir():
            raise NotFoundError(f"no skill folder at {path}")
        if (path / SKILL_FILE).is_file():
            return [self.import_folder(path, self.infer_target(path))]
        from skillopt_lib.skill import iter_skill_dirs

        dirs = list(iter_skill_dirs(path))
        if not dirs:
            raise NotFoundError(f"{path} holds no skill (no SKILL.md in it or in its sub-folders)")
        return [self.import_folder(d, self.infer_target(d)) for d in dirs]

    @staticmethod
    def infer_target(folder: Path) -> InstallTarget | None:
        """The install target whose skills root holds `folder`, if it is one skillopt knows."""
        parent = folder.absolute().parent
        real_parent = parent.resolve()
        for tool in INSTALLERS:
            try:
                user_locs = get_installer(tool).locations(InstallTarget(tool, "user"))
            except SkillOptError:  # a tool without a user scope, or one that cannot load
                user_locs = []
            for loc in user_locs:
                if loc.root.absolute() == parent or loc.root.resolve() == real_parent:
                    return InstallTarget(tool, "user")
            for rel in spec(tool).project_skill_dirs[:1]:
                parts = tuple(Path(rel).parts)
                if parent.parts[-len(parts) :] == parts:
                    return InstallTarget(tool, "project", Path(*parent.parts[: -len(parts)]))
        return None

    # -- install machinery ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _install_lock(self, blocking: bool = True) -> Iterator[bool]:
        """One installing process at a time per SKILLOPT_HOME; yields False if not blocking and busy."""
        if fcntl is None:  # pragma: no cover
            yield True
            return
        lock_path = paths.data_dir() / "install.lock"
        paths.ensure_private_dir(lock_path.parent)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + LOCK_TIMEOUT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not blocking:
                        yield False
                        return
                    if time.monotonic() > deadline:
                        raise ConflictError(
                            "another skillopt process has been installing skills for over a minute",
                            hint="wait for it to finish, then try again",
                        ) from None
                    time.sleep(0.05)
            yield True
        finally:
            os.close(fd)

    def _install_version(
        self, version: Version, ts: TargetState, kind: str, *, force: bool, intent_id: str | None = None
    ) -> InstallOutcome:
        """Write `version` to one target whose intent row (`intent_id`) is committed. Call under the lock."""
        installer = get_installer(ts.target.tool)
        bundle = self.load_bundle(version.id)
        install_id = intent_id or _new_id()
        want = installer.expected(ts.target, version.skill, bundle)
        if intent_id is None:
            self._record_intent(install_id, version, ts, kind, want)
        pause_point("intent")
        backup = paths.backups_dir() / install_id
        try:
            if installer.scan(ts.target, version.skill) == want:
                actual, changed = want, False
            else:
                paths.ensure_private_dir(paths.backups_dir())
                actual = installer.install(ts.target, version.skill, bundle, install_id, backup)
                changed = True
        except SkillOptError as exc:
            with self.db.conn:
                self._finish_intent(install_id, "failed", error=exc.message)
                self._audit(
                    "install-failed",
                    skill=version.skill,
                    version_id=version.id,
                    target=ts.target,
                    message=exc.message,
                )
            raise
        with self.db.conn:
            self._finish_intent(install_id, "installed")
            self._set_active(ts.id, version.id, actual)
            if ts.baseline_backup is None and backup.is_dir():
                self.db.execute("UPDATE targets SET baseline_backup = ? WHERE id = ?", [str(backup), ts.id])
            self._audit(
                kind,
                skill=version.skill,
                version_id=version.id,
                target=ts.target,
                message=f"{version.label} is active at {ts.target}"
                + ("" if changed else " (files already matched)"),
                detail={"files": sorted(actual), "backup": str(backup) if backup.is_dir() else None},
            )
        return InstallOutcome(ts.target, version, changed, actual)

    def _record_intent(
        self, install_id: str, version: Version, ts: TargetState, kind: str, want: Mapping[str, str]
    ) -> None:
        with self.db.conn:
            self.db.execute(
                "INSERT INTO installs (id, target_id, version_id, kind, state, plan, pid, started_at) "
                "VALUES (?, ?, ?, ?, 'intent', ?, ?, ?)",
                [
                    install_id,
                    ts.id,
                    version.id,
                    kind,
                    _json({"skill": version.skill, "new": dict(want), "prior": ts.installed}),
                    os.getpid(),
                    utcnow_iso(),
                ],
            )

    def _finish_intent(self, install_id: str, state: str, error: str | None = None) -> None:
        self.db.execute(
            "UPDATE installs SET state = ?, finished_at = ?, error = ? WHERE id = ? AND state = 'intent'",
            [state, utcnow_iso(), error, install_id],
        )

    def _preflight(
        self, skill: str, targets: Sequence[InstallTarget], force: bool, incoming: Version | None = None
    ) -> list[HandEdit]:
        """Import hand edits at each target, then refuse unless forced; check every folder is writable.

        With `incoming` (a proposal being approved), a hand edit recorded earlier still counts while the
        proposal does not descend from it: approving twice must not quietly replace what the user wrote.
        """
        edits: list[HandEdit] = []
        for target in targets:
            changed = self.check_drift(skill, target)
            if changed is not None:
                edits.append(self._import_drift(skill, target, changed))
            elif incoming is not None:
                active = self.active_version(skill, target)
                if (
                    active is not None
                    and active.origin == "hand-edit"
                    and not self._descends(incoming, active.id)
                ):
                    edits.append(HandEdit(target, [], active))
        if edits and not force:
            raise ConflictError(
                "skillopt will not overwrite files edited by hand:\n  "
                + "\n  ".join(e.describe() for e in edits),
                hint="the edits are kept as versions (see skillopt history "
                f"{skill}); pass --force to replace them anyway",
            )
        for target in targets:
            get_installer(target.tool).check_writable(target, skill)
        return edits

    def _descends(self, version: Version, ancestor_id: str) -> bool:
        seen: set[str] = set()
        cur: str | None = version.id
        while cur and cur not in seen:
            if cur == ancestor_id:
                return True
            seen.add(cur)
            row = self.db.execute("SELECT parent_id FROM versions WHERE id = ?", [cur]).fetchone()
            cur = row[0] if row else None
        return False

    # -- decisions -----------------------------------------------------------------------------------------

    def _resolve_targets(
        self, skill: str, targets: Sequence[InstallTarget | str] | None
    ) -> list[InstallTarget]:
        if targets:
            return [t if isinstance(t, InstallTarget) else InstallTarget.parse(t) for t in targets]
        found = [ts.target for ts in self.targets(skill) if ts.enabled]
        if not found and not self.targets(skill):
            # A new skill: send it wherever the user installed skillopt's integration (`skillopt install`).
            from skillopt_daemon.integrations import install_targets

            found = list(install_targets())
        if not found:
            raise ConflictError(
                f"{skill} is not installed anywhere yet, so skillopt does not know where to install it",
                hint="say where: --target claude-code:user or --target claude-code:project:PATH",
            )
        return found

    def approve(
        self,
        ref: str,
        targets: Sequence[InstallTarget | str] | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> ApproveResult:
        """Accept a proposal and install it to its targets (every enabled target when none are named)."""
        with self._install_lock():
            self._reconcile_locked()
            v = self.resolve_id(ref)
            self._require_pending(v)
            chosen = self._resolve_targets(v.skill, targets)
            if dry_run:
                bundle = self.load_bundle(v.id)
                plans = []
                for t in chosen:
                    inst = get_installer(t.tool)
                    plans.append(inst.plan(t, v.skill, bundle, paths.backups_dir() / "<install id>").lines())
                return ApproveResult(v, plans=plans)
            edits = self._preflight(v.skill, chosen, force, incoming=v)
            states = [self.ensure_target(v.skill, t) for t in chosen]
            bundle = self.load_bundle(v.id)
            intents: list[tuple[str, TargetState]] = []
            with self.db.conn:
                cur = self.db.execute(
                    "UPDATE versions SET state = 'approved', decided_at = ? "
                    "WHERE id = ? AND state = 'proposed'",
                    [utcnow_iso(), v.id],
                )
                if cur.rowcount != 1:
                    self._require_pending(self.get_version(v.id))
                for ts in states:
                    iid = _new_id()
                    want = get_installer(ts.target.tool).expected(ts.target, v.skill, bundle)
                    self._record_intent(iid, v, ts, "approve", want)
                    intents.append((iid, ts))
                self._audit(
                    "approve",
                    skill=v.skill,
                    version_id=v.id,
                    message=f"approved {v.label}" + (" (--force over hand edits)" if edits else ""),
                    detail={"targets": [t.key for t in chosen], "force": force},
                )
            result = ApproveResult(self.get_version(v.id), hand_edits=edits)
            failure: SkillOptError | None = None
            for iid, ts in intents:
                try:
                    result.installs.append(
                        self._install_version(v, ts, "install", force=force, intent_id=iid)
                    )
                except SkillOptError as exc:
                    failure = failure or exc
            if failure is not None:
                if not result.installs:
                    with self.db.conn:
                        self.db.execute(
                            "UPDATE versions SET state = 'proposed', decided_at = NULL WHERE id = ? "
                            "AND state = 'approved'",
                            [v.id],
                        )
                        self._audit(
                            "approve-undone",
                            skill=v.skill,
                            version_id=v.id,
                            message=f"{v.label} could not be installed; it is pending again",
                        )
                raise failure
            return result

    def _require_pending(self, v: Version) -> None:
        if v.state != "proposed":
            when = f" at {v.decided_at}" if v.decided_at else ""
            raise ConflictError(
                f"{v.label} ({v.short_id}) was already {v.state}{when}",
                hint=f"see: skillopt history {v.skill}",
            )

    def reject(self, ref: str, reason: str) -> Version:
        if not reason.strip():
            raise ConflictError("a rejection needs a reason", hint="pass --reason TEXT")
        v = self.resolve_id(ref)
        with self.db.conn:
            cur = self.db.execute(
                "UPDATE versions SET state = 'rejected', decided_at = ?, decision_reason = ? "
                "WHERE id = ? AND state = 'proposed'",
                [utcnow_iso(), reason, v.id],
            )
            if cur.rowcount != 1:
                self._require_pending(self.get_version(v.id))
            self._audit("reject", skill=v.skill, version_id=v.id, message=f"rejected {v.label}: {reason}")
        return self.get_version(v.id)

    def rollback(
        self,
        skill: str,
        to: str | None = None,
        targets: Sequence[InstallTarget | str] | None = None,
        force: bool = False,
    ) -> list[InstallOutcome]:
        """Make an older version active again (the parent of the active one, or `to`), as a new event."""
        self.require_skill(skill)
        with self._install_lock():
            self._reconcile_locked()
            chosen = self._resolve_targets(skill, targets)
            # Hand edits first: one found now becomes the active version the rollback steps back from.
            self._preflight(skill, chosen, force)
            dest_for: list[tuple[TargetState, Version]] = []
            for t in chosen:
                ts = self.target_state(skill, t)
                current = self.get_version(ts.active_version_id) if ts and ts.active_version_id else None
                if to is not None:
                    dest = self.resolve_id(
                        to if "@" in to or not to.lstrip("vV").isdigit() else f"{skill}@{to}"
                    )
                    if dest.skill != skill:
                        raise ConflictError(f"{dest.label} is a version of another skill than {skill}")
                    if dest.state != "approved":
                        raise ConflictError(
                            f"{dest.label} was never approved (it is {dest.state})",
                            hint=f"approve it instead: skillopt approve {dest.short_id}",
                        )
                else:
                    if current is None or current.parent_id is None:
                        raise NotFoundError(
                            f"{skill} has no earlier version to roll back to at {t}",
                            hint=f"see the versions: skillopt history {skill}",
                        )
                    dest = self.get_version(current.parent_id)
                if current is not None and dest.id == current.id:
                    raise ConflictError(f"{dest.label} is already active at {t}")
                dest_for.append((ts or self.ensure_target(skill, t), dest))
            out: list[InstallOutcome] = []
            for ts, dest in dest_for:
                fresh = self.target_state(skill, ts.target)
                assert fresh is not None
                out.append(self._install_version(dest, fresh, "rollback", force=force))
            return out

    def uninstall(self, skill: str, target: InstallTarget, force: bool = False) -> list[Path]:
        """Remove what skillopt placed at `target` and restore what was there before its first install."""
        with self._install_lock():
            ts = self.target_state(skill, target)
            if ts is None:
                raise NotFoundError(f"{skill} is not installed at {target}")
            changed = self.check_drift(skill, target)
            if changed is not None and not force:
                self._import_drift(skill, target, changed)
                raise ConflictError(
                    f"{skill} at {target} was edited by hand; the edit is kept as a version",
                    hint="pass --force to remove it anyway",
                )
            restore = None
            if ts.baseline_backup and Path(ts.baseline_backup, "0", SKILL_FILE).is_file():
                restore = SkillBundle.from_path(Path(ts.baseline_backup, "0"))
            removed = get_installer(target.tool).uninstall(target, skill, ts.installed, restore, force=True)
            with self.db.conn:
                now_files = get_installer(target.tool).scan(target, skill)
                self._set_active(ts.id, None, now_files)
                self.db.execute("UPDATE targets SET enabled = 0 WHERE id = ?", [ts.id])
                self._audit(
                    "uninstall",
                    skill=skill,
                    target=target,
                    message=f"removed {skill} from {target}"
                    + (" and restored the earlier files" if restore else ""),
                    detail={"removed": [str(p) for p in removed]},
                )
            return removed

    # -- crash recovery ------------------------------------------------------------------------------------

    def reconcile(self) -> list[str]:
        """Settle installs interrupted by a crash. Skipped while another process is installing."""
        if not self.db.execute("SELECT 1 FROM installs WHERE state = 'intent' LIMIT 1").fetchone():
            return []
        with self._install_lock(blocking=False) as got:
            if not got:
                return []
            return self._reconcile_locked()

    def _reconcile_locked(self) -> list[str]:
        notes: list[str] = []
        rows = self.db.execute(
            "SELECT i.id, i.target_id, i.version_id, i.kind, i.plan FROM installs i WHERE i.state = 'intent' "
            "ORDER BY i.started_at"
        ).fetchall()
        for iid, target_id, version_id, kind, plan_text in rows:
            plan = json.loads(plan_text or "{}")
            trow = self.db.execute(self._TARGET_SQL + " WHERE t.id = ?", [target_id]).fetchone()
            v = self.get_version(version_id)
            ts = self._target(trow)
            try:
                installer = get_installer(ts.target.tool)
                done = installer.recover(ts.target, v.skill, iid, plan.get("new") or {})
            except (SkillOptError, OSError) as exc:
                # Leave the intent for the next start rather than guess; say why.
                notes.append(f"could not settle the interrupted install of {v.label} at {ts.target}: {exc}")
                continue
            with self.db.conn:
                if done:
                    self._finish_intent(iid, "installed")
                    self._set_active(ts.id, v.id, installer.scan(ts.target, v.skill))
                    msg = f"an interrupted install of {v.label} at {ts.target} had finished; recorded it"
                    self._audit("install", skill=v.skill, version_id=v.id, target=ts.target, message=msg)
                else:
                    self._finish_intent(iid, "rolled-back", error="interrupted")
                    msg = (
                        f"an interrupted install of {v.label} at {ts.target} was undone; "
                        "the earlier files are back"
                    )
                    self._audit(
                        "install-interrupted", skill=v.skill, version_id=v.id, target=ts.target, message=msg
                    )
                    if kind == "approve":
                        others = self.db.execute(
                            "SELECT 1 FROM installs WHERE version_id = ? AND kind = 'approve' AND state IN "
                            "('installed', 'intent') AND id != ?",
                            [v.id, iid],
                        ).fetchone()
                        if not others:
                            self.db.execute(
                                "UPDATE versions SET state = 'proposed', decided_at = NULL WHERE id = ? AND "
                                "state = 'approved'",
                                [v.id],
                            )
                            msg += f"; {v.label} is pending again"
            notes.append(msg)
        return notes

    # -- reading -------------------------------------------------------------------------------------------

    def diff(self, ref: str, context: int = 3) -> tuple[str, str]:
        """(title, unified diff) for `ID` (against its parent) or `SKILL@V1..V2`."""
        if ".." in ref:
            left, _, right = ref.partition("..")
            a = self.resolve_id(left)
            if "@" not in right:
                right = f"{a.skill}@{right}"
            b = self.resolve_id(right)
            old: SkillBundle | None = self.load_bundle(a.id)
            title = f"{a.label} → {b.label}"
            a_label = a.label
        else:
            b = self.resolve_id(ref)
            if b.parent_id:
                a = self.get_version(b.parent_id)
                old, a_label = self.load_bundle(a.id), a.label
                title = f"{b.label} ({b.short_id}) against its parent {a.label}"
            else:
                old, a_label = None, "empty"
                title = f"{b.label} ({b.short_id}), which has no parent"
        return title, unified_diff(old, self.load_bundle(b.id), a_label, b.label, context)

    def history(self, skill: str) -> list[Event]:
        self.require_skill(skill)
        return self.events(skill)


def open_registry(actor: str = "cli", reconcile: bool = True) -> tuple[Registry, list[str]]:
    """Open the database and settle interrupted installs: what every command does first."""
    from skillopt_daemon.core.store import open_db

    reg = Registry(open_db(), actor=actor)
    notes = reg.reconcile() if reconcile else []
    return reg, notes
