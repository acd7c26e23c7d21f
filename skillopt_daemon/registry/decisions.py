"""Deciding about skills: proposing a version, approving, rejecting, rolling back and uninstalling it.

Deciding a proposal is a compare-and-set inside one IMMEDIATE transaction (`Versions.transition`): two
processes approving the same proposal get one install and one refusal. An approval commits one install
intent per target in the same transaction, then installs under the install lock (`Installs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillopt_daemon.core import paths
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.registry.drift import Drift
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_daemon.registry.installs import Installs
from skillopt_daemon.registry.models import (
    ApproveResult,
    HandEdit,
    InstallOutcome,
    Origin,
    RollbackPlan,
    TargetState,
    Version,
    new_skill_targets,
)
from skillopt_daemon.registry.scope import require_present
from skillopt_daemon.registry.targets import Targets
from skillopt_daemon.registry.versions import Versions, new_id
from skillopt_lib.errors import ConflictError, NotFoundError, SkillOptError
from skillopt_lib.skill import SKILL_FILE, SkillBundle

if TYPE_CHECKING:
    from skillopt_daemon.registry.evidence import Evidence


class Decisions:
    """The decisions a person or the nightly cycle makes about a skill, each one audited."""

    def __init__(self, versions: Versions, targets: Targets, drift: Drift, installs: Installs) -> None:
        self.versions = versions
        self.targets = targets
        self.drift = drift
        self.installs = installs
        self.db = versions.db

    # -- proposing -----------------------------------------------------------------------------------------

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
        # Imported here: the model (and pydantic with it) is for what proposes, not for every registry reader.
        from skillopt_daemon.registry.evidence import Evidence

        if origin not in ("proposed", "trained"):
            raise ConflictError(f"a proposal's origin is 'proposed' or 'trained', not {origin!r}")
        bundle.require_valid(folder_name=skill)
        ev = evidence.stored() if isinstance(evidence, Evidence) else dict(evidence or {})
        try:
            Evidence.model_validate(ev)
        except Exception as exc:
            raise ConflictError(
                f"the evidence is not valid: {exc}", hint="see Evidence in the registry docs"
            ) from None
        parent_id = self._proposal_parent(skill, parent)
        if parent_id is not None and self.versions.get_version(parent_id).content_hash == bundle.content_hash:
            raise ConflictError(
                f"the proposed {skill} is identical to its parent {self.versions.get_version(parent_id).label}",
                hint="change something first",
            )
        for p in self.versions.list_pending():
            if p.skill == skill and p.content_hash == bundle.content_hash:
                raise ConflictError(
                    f"an identical proposal for {skill} is already pending: {p.short_id}",
                    hint=f"review it: skillopt diff {p.short_id}",
                )
        with self.db.conn:
            v = self.versions.insert_version(
                skill, bundle, origin=origin, state="proposed", parent_id=parent_id, evidence=ev, note=note
            )
            self.versions.audit(
                "propose",
                skill=skill,
                version_id=v.id,
                message=f"proposed {v.label} ({origin})" + (f": {note}" if note else ""),
                detail={"parent_id": parent_id, "content_hash": v.content_hash},
            )
        return v

    def _proposal_parent(self, skill: str, parent: str | None) -> str | None:
        if parent is None:
            cur = self.versions.current_version(skill) if self.versions.skill_id(skill) is not None else None
            return cur.id if cur else None
        pv = self.versions.resolve_id(parent)
        if pv.skill != skill:
            raise ConflictError(f"the parent {pv.label} belongs to another skill than {skill}")
        return pv.id

    # -- deciding ------------------------------------------------------------------------------------------

    def _resolve_targets(
        self, skill: str, targets: Sequence[InstallTarget | str] | None, version: Version | None = None
    ) -> list[InstallTarget]:
        if targets:
            return [t if isinstance(t, InstallTarget) else InstallTarget.parse(t) for t in targets]
        found = [ts.target for ts in self.targets.targets(skill) if ts.enabled]
        if not found and not self.targets.targets(skill):
            # A new skill: where its evidence says its work happens (a night's new skill installs wherever
            # its family's sessions came from), else wherever the user installed skillopt's integration.
            found = new_skill_targets(version.evidence if version else {})
            if found and version is not None:
                require_present(found, version.short_id)  # its repository may have moved since
            found = found or [i.target for i in self.targets.integration_targets()]
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
        with self.installs.lock():
            self.installs.reconcile_locked()
            v = self.versions.resolve_id(ref)
            self._require_pending(v)
            chosen = self._resolve_targets(v.skill, targets, v)
            if dry_run:
                return ApproveResult(v, plans=self._plans(v, chosen))
            edits = self.installs.preflight(v.skill, chosen, force, incoming=v)
            intents = self._decide_approval(v, chosen, force=force, forced_over_edits=bool(edits))
            result = ApproveResult(self.versions.get_version(v.id), hand_edits=edits)
            failure: SkillOptError | None = None
            for iid, ts in intents:
                try:
                    result.installs.append(
                        self.installs.install_version(v, ts, "install", force=force, intent_id=iid)
                    )
                except SkillOptError as exc:
                    failure = failure or exc
            if failure is not None:
                if not result.installs:
                    self._undo_approval(v)
                raise failure
            return result

    def _plans(self, v: Version, targets: list[InstallTarget]) -> list[list[str]]:
        bundle = self.versions.load_bundle(v.id)
        backup = paths.backups_dir() / "<install id>"
        return [self.targets.installer(t.tool).plan(t, v.skill, bundle, backup).lines() for t in targets]

    def _decide_approval(
        self, v: Version, chosen: list[InstallTarget], *, force: bool, forced_over_edits: bool
    ) -> list[tuple[str, TargetState]]:
        """Mark `v` approved and commit one install intent per target, in one transaction."""
        states = [self.targets.ensure_target(v.skill, t) for t in chosen]
        bundle = self.versions.load_bundle(v.id)
        intents: list[tuple[str, TargetState]] = []
        with self.db.conn:
            if not self.versions.transition(v.id, "proposed", state="approved", decided_at=utcnow_iso()):
                self._require_pending(self.versions.get_version(v.id))
            for ts in states:
                iid = new_id()
                want = self.targets.installer(ts.target.tool).expected(ts.target, v.skill, bundle)
                self.installs.record_intent(iid, v, ts, "approve", want)
                intents.append((iid, ts))
            self.versions.audit(
                "approve",
                skill=v.skill,
                version_id=v.id,
                message=f"approved {v.label}" + (" (--force over hand edits)" if forced_over_edits else ""),
                detail={"targets": [t.key for t in chosen], "force": force},
            )
        return intents

    def _undo_approval(self, v: Version) -> None:
        with self.db.conn:
            self.versions.transition(v.id, "approved", state="proposed", decided_at=None)
            self.versions.audit(
                "approve-undone",
                skill=v.skill,
                version_id=v.id,
                message=f"{v.label} could not be installed; it is pending again",
            )

    def _require_pending(self, v: Version) -> None:
        if v.state != "proposed":
            when = f" at {v.decided_at}" if v.decided_at else ""
            hint = f"see: skillopt history {v.skill}"
            if v.state == "approved":
                hint = f"to make it active again: skillopt rollback {v.skill} --to v{v.seq}; {hint}"
            raise ConflictError(f"{v.label} ({v.short_id}) was already {v.state}{when}", hint=hint)

    def reject(self, ref: str, reason: str) -> Version:
        """Decline a proposal; the reason is kept in the audit log (and read by later nights)."""
        if not reason.strip():
            raise ConflictError("a rejection needs a reason", hint="pass --reason TEXT")
        v = self.versions.resolve_id(ref)
        with self.db.conn:
            if not self.versions.transition(
                v.id, "proposed", state="rejected", decided_at=utcnow_iso(), decision_reason=reason
            ):
                self._require_pending(self.versions.get_version(v.id))
            self.versions.audit(
                "reject", skill=v.skill, version_id=v.id, message=f"rejected {v.label}: {reason}"
            )
        return self.versions.get_version(v.id)

    def rollback(
        self,
        skill: str,
        to: str | None = None,
        targets: Sequence[InstallTarget | str] | None = None,
        force: bool = False,
        reason: str | None = None,
    ) -> list[InstallOutcome]:
        """Make an older version active again (the parent of the active one, or `to`), as a new event.

        A skill whose active version is its first, installed by skillopt (an approved new skill), has no
        older version: rolling it back removes it from the target, restoring whatever the user had there
        before, and `rollback --to vN` (or approving a later proposal) installs it again.
        """
        self.versions.require_skill(skill)
        reason = (reason or "").strip() or None
        with self.installs.lock():
            self.installs.reconcile_locked()
            chosen = self._resolve_targets(skill, targets)
            # Hand edits first: one found now becomes the active version the rollback steps back from.
            self.installs.preflight(skill, chosen, force)
            dest_for = [self._rollback_destination(skill, t, to) for t in chosen]
            out: list[InstallOutcome] = []
            for ts, current, dest in dest_for:
                assert ts is not None  # created above
                fresh = self.targets.target_state(skill, ts.target)
                assert fresh is not None
                if dest is None:
                    assert current is not None
                    out.append(self._remove_first_version(fresh, current, reason))
                    continue
                out.append(
                    self.installs.install_version(
                        dest,
                        fresh,
                        "rollback",
                        force=force,
                        detail={"from": current.id if current else None, "reason": reason},
                        note=f"; rolled back from {current.label}" if current else "",
                    )
                )
            return out

    def rollback_plan(
        self,
        skill: str,
        to: str | None = None,
        targets: Sequence[InstallTarget | str] | None = None,
    ) -> list[RollbackPlan]:
        """What `rollback` would do at each target, file by file, changing nothing (`rollback --dry-run`).

        Raises what `rollback` would raise for the same arguments (no earlier version, already active...).
        Hand edits are not looked for: recording one is a write; the real rollback still refuses them.
        """
        self.versions.require_skill(skill)
        chosen = self._resolve_targets(skill, targets)
        plans: list[RollbackPlan] = []
        for t in chosen:
            ts, current, dest = self._rollback_destination(skill, t, to, create=False)
            if dest is not None:
                bundle = self.versions.load_bundle(dest.id)
                backup = paths.backups_dir() / "<install id>"
                lines = self.targets.installer(t.tool).plan(t, skill, bundle, backup).lines()
            else:
                files = sorted(ts.installed) if ts else []
                lines = [f"remove {f}" for f in files] or [f"remove {skill} from {t}"]
                if ts and ts.baseline_backup and Path(ts.baseline_backup, "0", SKILL_FILE).is_file():
                    lines.append(f"put back the files that were there before, from {ts.baseline_backup}")
            plans.append(RollbackPlan(t, current, dest, lines))
        return plans

    def _rollback_destination(
        self, skill: str, t: InstallTarget, to: str | None, create: bool = True
    ) -> tuple[TargetState | None, Version | None, Version | None]:
        """(target, active version, version to make active); no destination: remove the first version.

        With `create` (a real rollback) a target skillopt has no record of yet is recorded; a dry run
        leaves the registry as it is (the target may then be None)."""
        ts = self.targets.target_state(skill, t)
        current = self.versions.get_version(ts.active_version_id) if ts and ts.active_version_id else None
        if to is not None:
            dest = self.versions.resolve_id(
                to if "@" in to or not to.lstrip("vV").isdigit() else f"{skill}@{to}"
            )
            if dest.skill != skill:
                raise ConflictError(f"{dest.label} is a version of another skill than {skill}")
            if dest.state != "approved":
                raise ConflictError(
                    f"{dest.label} was never approved (it is {dest.state})",
                    hint=f"approve it instead: skillopt approve {dest.short_id}",
                )
        elif current is None:
            raise NotFoundError(
                f"{skill} has no earlier version to roll back to at {t}: no version of it is active there",
                hint=f"make one active again: skillopt rollback {skill} --to vN (see skillopt history {skill})",
            )
        elif current.parent_id is None:
            if current.origin in ("proposed", "trained"):
                # The first version, and skillopt put it there: stepping back from it means taking it away.
                return ts or (self.targets.ensure_target(skill, t) if create else None), current, None
            raise NotFoundError(
                f"{skill} has no earlier version to roll back to at {t}",
                hint=f"see the versions: skillopt history {skill}",
            )
        else:
            dest = self.versions.get_version(current.parent_id)
        if current is not None and dest.id == current.id:
            raise ConflictError(f"{dest.label} is already active at {t}")
        return ts or (self.targets.ensure_target(skill, t) if create else None), current, dest

    def _remove_first_version(self, ts: TargetState, current: Version, reason: str | None) -> InstallOutcome:
        """Roll a skill's first version back: remove its files from the target, put back what the user had
        there before skillopt's first install (if anything), and leave no version active. Under the lock."""
        skill, target = ts.skill, ts.target
        restore = None
        if ts.baseline_backup and Path(ts.baseline_backup, "0", SKILL_FILE).is_file():
            restore = SkillBundle.from_path(Path(ts.baseline_backup, "0"))
        installer = self.targets.installer(target.tool)
        removed = installer.uninstall(target, skill, ts.installed, restore, force=True)
        message = (
            f"rolled back {current.label} at {target}: it was the first version, so {skill} was removed "
            f"from there" + (" and the files that were there before were put back" if restore else "")
        )
        # What the user had there may be a version already (imported when skillopt met it): then it is the
        # version active there again, so the registry says what the folder holds.
        theirs = self.versions.find_content(skill, restore.content_hash) if restore is not None else None
        with self.db.conn:
            self.targets.set_active(ts.id, theirs.id if theirs else None, installer.scan(target, skill))
            self.versions.audit(
                "rollback",
                skill=skill,
                version_id=current.id,
                target=target,
                message=message + (f": {reason}" if reason else ""),
                detail={
                    "from": current.id,
                    "reason": reason,
                    "removed": [str(p) for p in removed],
                    "restored": restore is not None,
                },
            )
        return InstallOutcome(target, current, bool(removed) or restore is not None, {}, removed=True)

    def record_hand_edits(self, skill: str) -> list[HandEdit]:
        """Compare every enabled target of `skill` with what skillopt wrote there and record each difference
        as the skill's `hand-edit` version, active at that target: what the agent actually reads. The night
        calls this before it replays, so it never trains from a version the user edited away."""
        found: list[HandEdit] = []
        with self.installs.lock():
            for ts in self.targets.targets(skill):
                if not ts.enabled or ts.active_version_id is None:
                    continue
                changed = self.drift.check_drift(skill, ts.target)
                if changed is not None:
                    found.append(self.drift.import_drift(skill, ts.target, changed))
        return found

    def uninstall(self, skill: str, target: InstallTarget, force: bool = False) -> list[Path]:
        """Remove what skillopt placed at `target` and restore what was there before its first install."""
        with self.installs.lock():
            ts = self.targets.target_state(skill, target)
            if ts is None:
                raise NotFoundError(f"{skill} is not installed at {target}")
            changed = self.drift.check_drift(skill, target)
            if changed is not None and not force:
                self.drift.import_drift(skill, target, changed)
                raise ConflictError(
                    f"{skill} at {target} was edited by hand; the edit is kept as a version",
                    hint="pass --force to remove it anyway",
                )
            ts = self.targets.target_state(skill, target) or ts  # the record may have followed a moved home
            restore = None
            if ts.baseline_backup and Path(ts.baseline_backup, "0", SKILL_FILE).is_file():
                restore = SkillBundle.from_path(Path(ts.baseline_backup, "0"))
            installer = self.targets.installer(target.tool)
            removed = installer.uninstall(target, skill, ts.installed, restore, force=True)
            with self.db.conn:
                self.targets.set_active(ts.id, None, installer.scan(target, skill))
                self.db.table("targets").update(ts.id, {"enabled": 0})
                self.versions.audit(
                    "uninstall",
                    skill=skill,
                    target=target,
                    message=f"removed {skill} from {target}"
                    + (" and restored the earlier files" if restore else ""),
                    detail={"removed": [str(p) for p in removed]},
                )
            return removed
