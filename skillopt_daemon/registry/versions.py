"""The book of versions: skills, their immutable versions, and the audit log, which every other part builds on.

Versions are content-addressed (their files live in the content store) and never change once written; a
version's review `state` moves proposed → approved | rejected only through `transition`, a compare-and-set
inside one IMMEDIATE transaction, so two processes deciding the same proposal get one decision. Every
action appends an event; nothing is deleted.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from skillopt_daemon.core.fsio import sha256_bytes
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.registry import content
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_daemon.registry.models import ORIGINS, VERSION_SQL, Event, Version
from skillopt_lib.errors import ConflictError, NotFoundError
from skillopt_lib.skill import SkillBundle, unified_diff

if TYPE_CHECKING:
    import sqlite_utils


def to_json(data: Any) -> str:
    """The registry's JSON columns: sorted keys, so equal data is stored as equal text."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


def new_id() -> str:
    """A version or install id: 16 hex digits, unique enough and short enough to type a prefix of."""
    return secrets.token_hex(8)


class Versions:
    """Skills, versions and events over one open database. `actor` names who acted, for the audit log.

    The other parts of the registry take this one in their constructor and write through it, so every row
    and event has one writer and one actor."""

    def __init__(self, db: sqlite_utils.Database, actor: str = "cli") -> None:
        self.db = db
        self.actor = actor

    # -- audit ---------------------------------------------------------------------------------------------

    def audit(
        self,
        action: str,
        *,
        skill: str | None = None,
        version_id: str | None = None,
        target: InstallTarget | None = None,
        message: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one event: every change the registry makes is recorded with who made it, and never removed."""
        self.db.table("events").insert(
            {
                "at": utcnow_iso(),
                "action": action,
                "skill": skill,
                "version_id": version_id,
                "target": target.key if target else None,
                "actor": self.actor,
                "message": message,
                "detail": to_json(dict(detail or {})),
            }
        )

    def events(self, skill: str | None = None, limit: int | None = None) -> list[Event]:
        """The audit log, oldest first; with `limit`, only the newest `limit` events."""
        where, args = ("WHERE skill = ?", [skill]) if skill is not None else ("", [])
        sql = f"SELECT * FROM events {where} ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [Event.from_row(r) for r in reversed(list(self.db.query(sql, args)))]

    # -- skills --------------------------------------------------------------------------------------------

    def skill_id(self, name: str, create: bool = False) -> int | None:
        """The skill's row id, None when unknown; with `create`, the row is made when missing."""
        row = next(self.db.query("SELECT id FROM skills WHERE name = ?", [name]), None)
        if row:
            return int(row["id"])
        if not create:
            return None
        pk = self.db.table("skills").insert({"name": name, "created_at": utcnow_iso()}).last_pk
        assert pk is not None
        return int(pk)

    def require_skill(self, name: str) -> int:
        sid = self.skill_id(name)
        if sid is None:
            known = self.skill_names()
            raise NotFoundError(
                f"no skill named {name!r}",
                hint=f"known skills: {', '.join(known)}"
                if known
                else "import your skills: skillopt skills import",
            )
        return sid

    def skill_names(self) -> list[str]:
        return [r["name"] for r in self.db.query("SELECT name FROM skills ORDER BY name")]

    # -- versions ------------------------------------------------------------------------------------------

    def _versions_where(self, where: str, args: list[Any]) -> list[Version]:
        return [Version.from_row(r) for r in self.db.query(f"{VERSION_SQL} {where}", args)]

    def get_version(self, version_id: str) -> Version:
        found = self._versions_where("WHERE v.id = ?", [version_id])
        if not found:
            raise NotFoundError(f"no version {version_id!r}")
        return found[0]

    def versions(self, skill: str) -> list[Version]:
        self.require_skill(skill)
        return self._versions_where("WHERE s.name = ? ORDER BY v.seq", [skill])

    def list_pending(self) -> list[Version]:
        return self._versions_where("WHERE v.state = 'proposed' ORDER BY v.created_at, v.id", [])

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
            by_seq = (
                self._versions_where("WHERE s.name = ? AND v.seq = ?", [skill, int(num)])
                if num.isdigit()
                else []
            )
            if explicit and not by_seq:
                raise NotFoundError(f"{skill} has no version {which}", hint=f"see: skillopt history {skill}")
            if by_seq:
                return by_seq[0]
            found = self._versions_where("WHERE s.name = ? AND v.id LIKE ?", [skill, which.lower() + "%"])
        else:
            if not all(c in "0123456789abcdef" for c in ref.lower()):
                raise NotFoundError(
                    f"{ref!r} is not a version id", hint="ids are hex, e.g. 3f2a9c1d; or SKILL@vN"
                )
            found = self._versions_where("WHERE v.id LIKE ?", [ref.lower() + "%"])
        if not found:
            raise NotFoundError(f"no version or proposal matches {ref!r}", hint="see: skillopt status")
        if len(found) > 1:
            options = ", ".join(f"{v.id[:12]} ({v.label})" for v in found[:6])
            raise ConflictError(
                f"{ref!r} matches {len(found)} versions: {options}", hint="give more of the id"
            )
        return found[0]

    def insert_version(
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
        """Store the bundle's files, then add it as the skill's next immutable version (files before rows: a
        crash leaves at most an unreferenced object)."""
        if origin not in ORIGINS:
            raise ConflictError(f"unknown origin {origin!r}", hint=f"one of: {', '.join(ORIGINS)}")
        content.store_bundle(bundle)
        now = utcnow_iso()
        vid = new_id()
        with self.db.conn:
            sid = self.skill_id(skill, create=True)
            seq = self.db.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM versions WHERE skill_id = ?", [sid]
            ).fetchone()[0]
            self.db.table("versions").insert(
                {
                    "id": vid,
                    "skill_id": sid,
                    "seq": int(seq),
                    "content_hash": bundle.content_hash,
                    "parent_id": parent_id,
                    "origin": origin,
                    "state": state,
                    "evidence": to_json(dict(evidence or {})),
                    "note": note,
                    "created_at": now,
                    "decided_at": now if state != "proposed" else None,
                }
            )
            self.db.table("version_files").insert_all(
                {"version_id": vid, "path": path, "sha256": sha256_bytes(data), "size": len(data)}
                for path, data in sorted(bundle.files.items())
            )
        return self.get_version(vid)

    def transition(self, version_id: str, from_state: str, **fields: Any) -> bool:
        """Set `fields` on a version only while its state is `from_state`; False when it had moved on.

        Read and write happen in one IMMEDIATE transaction, which holds the database's write lock, so this
        is a compare-and-set across processes.
        """
        with self.db.conn:
            row = next(self.db.query("SELECT state FROM versions WHERE id = ?", [version_id]), None)
            if row is None or row["state"] != from_state:
                return False
            self.db.table("versions").update(version_id, fields)
        return True

    def find_content(self, skill: str, content_hash: str) -> Version | None:
        """The newest approved version of `skill` holding exactly this content: content found again at a
        target reuses its version instead of adding a copy."""
        found = self._versions_where(
            "WHERE s.name = ? AND v.content_hash = ? AND v.state = 'approved' ORDER BY v.seq DESC LIMIT 1",
            [skill, content_hash],
        )
        return found[0] if found else None

    def current_version(self, skill: str) -> Version | None:
        """The version most recently made active on any target, else the newest approved one."""
        found = self._versions_where(
            "JOIN targets t ON t.active_version_id = v.id WHERE s.name = ? ORDER BY t.updated_at DESC LIMIT 1",
            [skill],
        ) or self._versions_where(
            "WHERE s.name = ? AND v.state = 'approved' ORDER BY v.seq DESC LIMIT 1", [skill]
        )
        return found[0] if found else None

    def descends(self, version: Version, ancestor_id: str) -> bool:
        """Whether `version` is `ancestor_id` or built on it (a proposal trained from a hand edit keeps it)."""
        seen: set[str] = set()
        cur: str | None = version.id
        while cur and cur not in seen:
            if cur == ancestor_id:
                return True
            seen.add(cur)
            row = next(self.db.query("SELECT parent_id FROM versions WHERE id = ?", [cur]), None)
            cur = row["parent_id"] if row else None
        return False

    # -- content -------------------------------------------------------------------------------------------

    object_path = staticmethod(content.object_path)

    def load_bundle(self, version_id: str) -> SkillBundle:
        return content.load_bundle(self.db, version_id)

    # -- reading -------------------------------------------------------------------------------------------

    def diff(self, ref: str, context: int = 3) -> tuple[str, str]:
        """(title, unified diff) for `ID` (against its parent) or `SKILL@V1..V2`."""
        if ".." in ref:
            left, _, right = ref.partition("..")
            a = self.resolve_id(left)
            b = self.resolve_id(right if "@" in right else f"{a.skill}@{right}")
            old: SkillBundle | None = self.load_bundle(a.id)
            title, a_label = f"{a.label} → {b.label}", a.label
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
        """Every event of `skill`, oldest first; an unknown skill is an error, not an empty list."""
        self.require_skill(skill)
        return self.events(skill)
