"""Installing a version at a target, crash-safely, one process at a time.

An `intent` row is committed before the first byte is written and completed after the swap; `reconcile()`
(run when a registry is opened) settles intents left by a killed process by looking at the disk, so the
registry always agrees with the files. Installs are serialized by a lock file (`install.lock` in the data
folder): two processes approving the same proposal get one install and one refusal.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from skillopt_daemon.core import fsio, paths
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.registry.drift import Drift
from skillopt_daemon.registry.installers.base import InstallTarget, pause_point
from skillopt_daemon.registry.models import HandEdit, InstallOutcome, TargetState, Version
from skillopt_daemon.registry.targets import Targets
from skillopt_daemon.registry.versions import Versions, new_id, to_json
from skillopt_lib.errors import ConflictError, NotFoundError, SkillOptError

LOCK_TIMEOUT_S = 60.0


class Installs:
    """Intents, preflight checks, installing one version at one target, and recovery after a kill."""

    def __init__(self, versions: Versions, targets: Targets, drift: Drift) -> None:
        self.versions = versions
        self.targets = targets
        self.drift = drift
        self.db = versions.db

    @contextlib.contextmanager
    def lock(self, blocking: bool = True) -> Iterator[bool]:
        """One installing process at a time per SKILLOPT_HOME; yields False if not blocking and busy."""
        try:
            with fsio.file_lock(paths.data_dir() / "install.lock", timeout=LOCK_TIMEOUT_S if blocking else 0):
                yield True
        except fsio.Busy:
            if blocking:
                raise ConflictError(
                    "another skillopt process has been installing skills for over a minute",
                    hint="wait for it to finish, then try again",
                ) from None
            yield False

    def install_to(
        self, skill: str, target: InstallTarget, *, version: str | None = None, force: bool = False
    ) -> InstallOutcome:
        """Make `version` (default: the skill's current approved version) active at `target`.

        Hand edits found there are recorded as versions and refuse the install unless `force`. Files that
        already match are left alone (`changed` is False). Raises NotFoundError for an unknown skill or a
        skill with no approved version, ConflictError for a version of another skill or one not approved.
        """
        self.versions.require_skill(skill)
        with self.lock():
            self.reconcile_locked()
            v = self.versions.resolve_id(version) if version else self.versions.current_version(skill)
            if v is None:
                raise NotFoundError(
                    f"{skill} has no approved version to install", hint=f"see: skillopt history {skill}"
                )
            if v.skill != skill:
                raise ConflictError(f"{v.label} is a version of another skill than {skill}")
            if v.state != "approved":
                raise ConflictError(
                    f"{v.label} is {v.state}, not approved", hint=f"approve it: skillopt approve {v.short_id}"
                )
            self.preflight(skill, [target], force)
            ts = self.targets.ensure_target(skill, target)
            if ts.active_version_id == v.id and self.drift.check_drift(skill, target) is None:
                return InstallOutcome(target, v, False, dict(ts.installed))
            return self.install_version(v, ts, "install", force=force)

    def install_version(
        self,
        version: Version,
        ts: TargetState,
        kind: str,
        *,
        force: bool,
        intent_id: str | None = None,
        detail: Mapping[str, Any] | None = None,
        note: str = "",
    ) -> InstallOutcome:
        """Write `version` to one target whose intent row (`intent_id`) is committed. Call under the lock.

        `detail` and `note` go into the audit event (a rollback records the version it stepped back from,
        and the user's reason)."""
        installer = self.targets.installer(ts.target.tool)
        bundle = self.versions.load_bundle(version.id)
        install_id = intent_id or new_id()
        want = installer.expected(ts.target, version.skill, bundle)
        if intent_id is None:
            self.record_intent(install_id, version, ts, kind, want)
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
                self.versions.audit(
                    "install-failed",
                    skill=version.skill,
                    version_id=version.id,
                    target=ts.target,
                    message=exc.message,
                )
            raise
        with self.db.conn:
            self._finish_intent(install_id, "installed")
            self.targets.set_active(ts.id, version.id, actual)
            if ts.baseline_backup is None and backup.is_dir() and not self._placed_before(ts.id, install_id):
                self.db.table("targets").update(ts.id, {"baseline_backup": str(backup)})
            self.versions.audit(
                kind,
                skill=version.skill,
                version_id=version.id,
                target=ts.target,
                message=f"{version.label} is active at {ts.target}"
                + ("" if changed else " (files already matched)")
                + note,
                detail={
                    **dict(detail or {}),
                    "files": sorted(actual),
                    "backup": str(backup) if backup.is_dir() else None,
                },
            )
        return InstallOutcome(ts.target, version, changed, actual)

    def _placed_before(self, target_id: int, install_id: str) -> bool:
        """Whether skillopt had installed files at this target before `install_id`: then what the install
        replaced was skillopt's own, not the user's, and is no baseline for uninstall to restore."""
        return bool(
            self.db.execute(
                "SELECT 1 FROM installs WHERE target_id = ? AND state = 'installed' AND id != ? LIMIT 1",
                [target_id, install_id],
            ).fetchone()
        )

    def record_intent(
        self, install_id: str, version: Version, ts: TargetState, kind: str, want: Mapping[str, str]
    ) -> None:
        """Commit the intent to write `want` at a target before the first byte: what recovery reads after a kill."""
        with self.db.conn:
            self.db.table("installs").insert(
                {
                    "id": install_id,
                    "target_id": ts.id,
                    "version_id": version.id,
                    "kind": kind,
                    "state": "intent",
                    "plan": to_json({"skill": version.skill, "new": dict(want), "prior": ts.installed}),
                    "pid": os.getpid(),
                    "started_at": utcnow_iso(),
                }
            )

    def _finish_intent(self, install_id: str, state: str, error: str | None = None) -> None:
        with self.db.conn:
            row = next(self.db.query("SELECT state FROM installs WHERE id = ?", [install_id]), None)
            if row is not None and row["state"] == "intent":
                self.db.table("installs").update(
                    install_id, {"state": state, "finished_at": utcnow_iso(), "error": error}
                )

    def preflight(
        self, skill: str, targets: Sequence[InstallTarget], force: bool, incoming: Version | None = None
    ) -> list[HandEdit]:
        """Import hand edits at each target, then refuse unless forced; check every folder is writable.

        With `incoming` (a proposal being approved), a hand edit recorded earlier still counts while the
        proposal does not descend from it: approving twice must not quietly replace what the user wrote.
        """
        edits: list[HandEdit] = []
        for target in targets:
            changed = self.drift.check_drift(skill, target)
            if changed is not None:
                edits.append(self.drift.import_drift(skill, target, changed))
            elif incoming is not None:
                active = self.targets.active_version(skill, target)
                if (
                    active is not None
                    and active.origin == "hand-edit"
                    and not self.versions.descends(incoming, active.id)
                ):
                    edits.append(HandEdit(target, [], active))
        if edits and not force:
            raise ConflictError(
                "skillopt will not overwrite files edited by hand:\n  "
                + "\n  ".join(e.describe() for e in edits),
                hint=f"the edits are kept as versions (see skillopt history {skill}); pass --force to replace them anyway",
            )
        for target in targets:
            self.targets.installer(target.tool).check_writable(target, skill)
        return edits

    # -- crash recovery ------------------------------------------------------------------------------------

    def reconcile(self) -> list[str]:
        """Settle installs interrupted by a crash. Skipped while another process is installing."""
        if not self.db.execute("SELECT 1 FROM installs WHERE state = 'intent' LIMIT 1").fetchone():
            return []
        with self.lock(blocking=False) as got:
            if not got:
                return []
            return self.reconcile_locked()

    def reconcile_locked(self) -> list[str]:
        """Settle every open intent by looking at the disk; one note for each. Call under the lock."""
        notes: list[str] = []
        rows = list(self.db.query("SELECT * FROM installs WHERE state = 'intent' ORDER BY started_at"))
        for row in rows:
            v = self.versions.get_version(row["version_id"])
            ts = self.targets.target_by_id(row["target_id"])
            plan = json.loads(row["plan"] or "{}")
            try:
                installer = self.targets.installer(ts.target.tool)
                done = installer.recover(ts.target, v.skill, row["id"], plan.get("new") or {})
            except (SkillOptError, OSError) as exc:
                # Leave the intent for the next start rather than guess; say why.
                notes.append(f"could not settle the interrupted install of {v.label} at {ts.target}: {exc}")
                continue
            with self.db.conn:
                if done:
                    self._finish_intent(row["id"], "installed")
                    self.targets.set_active(ts.id, v.id, installer.scan(ts.target, v.skill))
                    msg = f"an interrupted install of {v.label} at {ts.target} had finished; recorded it"
                    self.versions.audit(
                        "install", skill=v.skill, version_id=v.id, target=ts.target, message=msg
                    )
                else:
                    msg = self._undo_interrupted(row["id"], row["kind"], v, ts)
            notes.append(msg)
        return notes

    def _undo_interrupted(self, install_id: str, kind: str, v: Version, ts: TargetState) -> str:
        """Record an interrupted install whose old files are back; an approval no install kept is pending again."""
        self._finish_intent(install_id, "rolled-back", error="interrupted")
        msg = f"an interrupted install of {v.label} at {ts.target} was undone; the earlier files are back"
        self.versions.audit(
            "install-interrupted", skill=v.skill, version_id=v.id, target=ts.target, message=msg
        )
        if kind == "approve":
            others = self.db.execute(
                "SELECT 1 FROM installs WHERE version_id = ? AND kind = 'approve' AND state IN "
                "('installed', 'intent') AND id != ?",
                [v.id, install_id],
            ).fetchone()
            if not others and self.versions.transition(v.id, "approved", state="proposed", decided_at=None):
                msg += f"; {v.label} is pending again"
        return msg
