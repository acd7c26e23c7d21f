"""Where skills are installed (targets) and where skillopt's integration is installed (integration targets).

A target row holds the version active there and the hash of every file skillopt last wrote or recognised
there: what hand edits are detected against. Integration targets say where new skills go (wherever the user
ran `skillopt install TOOL`), and how a tool's installer must behave there (`Registry.installer`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.registry.installers import Installer, get_installer
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_daemon.registry.models import TARGET_SQL, IntegrationTarget, TargetState, Version
from skillopt_daemon.registry.versions import Versions, to_json
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import NotFoundError

_TARGET_KEY = ("tool", "scope", "project")


def _key(target: InstallTarget) -> dict[str, str]:
    return {"tool": target.tool.value, "scope": target.scope, "project": target.project_str}


class Targets:
    """Install targets of each skill, and the targets of skillopt's own integration.

    `settle` runs before a target is read for a caller: the registry passes its crash recovery
    (`Installs.reconcile`), so an install killed between its two renames is settled at the next read, not
    only at the next start; this part cannot import that one, which builds on it."""

    def __init__(self, versions: Versions, settle: Callable[[], object] = lambda: None) -> None:
        self.versions = versions
        self.db = versions.db
        self._settle = settle

    # -- skill targets -------------------------------------------------------------------------------------

    def _targets_where(self, where: str, args: list[object]) -> list[TargetState]:
        return [TargetState.from_row(r) for r in self.db.query(f"{TARGET_SQL} {where}", args)]

    def targets(self, skill: str | None = None) -> list[TargetState]:
        self._settle()
        where, args = ("WHERE s.name = ?", [skill]) if skill is not None else ("", [])
        return self._targets_where(f"{where} ORDER BY s.name, t.tool, t.scope, t.project", list(args))

    def target_state(self, skill: str, target: InstallTarget) -> TargetState | None:
        found = self._targets_where(
            "WHERE s.name = ? AND t.tool = ? AND t.scope = ? AND t.project = ?",
            [skill, target.tool.value, target.scope, target.project_str],
        )
        return found[0] if found else None

    def target_by_id(self, target_id: int) -> TargetState:
        """The target an install row names (recovery reads targets by id, not by skill)."""
        return self._targets_where("WHERE t.id = ?", [target_id])[0]

    def ensure_target(self, skill: str, target: InstallTarget, enabled: bool = True) -> TargetState:
        """The skill's row for `target`, created if missing; `enabled` can switch it on, never off."""
        with self.db.conn:
            sid = self.versions.skill_id(skill, create=True)
            ts = self.target_state(skill, target)
            if ts is None:
                now = utcnow_iso()
                self.db.table("targets").insert(
                    {
                        "skill_id": sid,
                        **_key(target),
                        "enabled": int(enabled),
                        "created_at": now,
                        "updated_at": now,
                    }
                )
            elif enabled and not ts.enabled:
                self.db.table("targets").update(ts.id, {"enabled": 1})
        found = self.target_state(skill, target)
        assert found is not None
        return found

    def set_target_enabled(self, skill: str, target: InstallTarget, enabled: bool) -> None:
        ts = self.target_state(skill, target)
        if ts is None:
            raise NotFoundError(f"{skill} has no target {target}")
        with self.db.conn:
            self.db.table("targets").update(ts.id, {"enabled": int(enabled)})
            self.versions.audit("enable" if enabled else "disable", skill=skill, target=target)

    def installed_nowhere(self) -> set[str]:
        """Skills that had targets and are active at none of them any more (uninstalled from every tool):
        nothing an agent reads comes from them, so nights do not train them."""
        rows = self.db.execute(
            "SELECT s.name FROM skills s WHERE EXISTS (SELECT 1 FROM targets t WHERE t.skill_id = s.id) "
            "AND NOT EXISTS (SELECT 1 FROM targets t WHERE t.skill_id = s.id "
            "AND t.active_version_id IS NOT NULL)"
        ).fetchall()
        return {str(r[0]) for r in rows}

    def active_version(self, skill: str, target: InstallTarget) -> Version | None:
        self._settle()
        ts = self.target_state(skill, target)
        if ts is None or ts.active_version_id is None:
            return None
        return self.versions.get_version(ts.active_version_id)

    def set_active(self, ts_id: int, version_id: str | None, installed: Mapping[str, str]) -> None:
        """Record what is active at a target and the hash of each file there: what hand edits are found against."""
        self.db.table("targets").update(
            ts_id,
            {
                "active_version_id": version_id,
                "installed": to_json(dict(installed)),
                "updated_at": utcnow_iso(),
            },
        )

    # -- integration targets -------------------------------------------------------------------------------

    def integration_targets(self) -> list[IntegrationTarget]:
        """Where skillopt's integration is installed, by tool, scope and project."""
        rows = self.db.query("SELECT * FROM integration_targets ORDER BY tool, scope, project")
        return [IntegrationTarget.from_row(r) for r in rows]

    def record_integration(self, target: InstallTarget, *, instructions: bool = False) -> IntegrationTarget:
        """Note that the integration is installed at `target`: new skills will be installed there too."""
        with self.db.conn:
            self.db.table("integration_targets").upsert(
                {**_key(target), "instructions": instructions, "recorded_at": utcnow_iso()},
                pk=_TARGET_KEY,
            )
            self.versions.audit(
                "integration-install",
                target=target,
                message=f"skillopt's integration is installed at {target}",
                detail={"instructions": instructions},
            )
        return next(i for i in self.integration_targets() if i.target == target)

    def forget_integration(self, target: InstallTarget) -> bool:
        """Stop installing new skills at `target`; False when the integration was not recorded there."""
        with self.db.conn:
            cur = self.db.execute(
                "DELETE FROM integration_targets WHERE tool = ? AND scope = ? AND project = ?",
                [target.tool.value, target.scope, target.project_str],
            )
            if cur.rowcount:
                self.versions.audit(
                    "integration-uninstall",
                    target=target,
                    message=f"skillopt's integration was removed from {target}",
                )
        return bool(cur.rowcount)

    def installer(self, tool: AgentTool) -> Installer:
        """The installer for `tool`, told which projects' integrations asked for instruction files."""
        projects = [
            i.target.project
            for i in self.integration_targets()
            if i.instructions and i.target.tool is tool and i.target.project is not None
        ]
        return get_installer(tool, instruction_projects=projects)
