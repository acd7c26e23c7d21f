"""Hand edits: files at a target that differ from what skillopt last wrote there.

A hand edit wins. Before anything is written to a target its files are compared with the recorded hashes;
a difference is imported as a `hand-edit` version (or `imported`, for a target skillopt never wrote), made
active there, and the write is refused unless forced. So an edit is never lost, only superseded by choice.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skillopt_daemon.registry.installers.base import Installer, InstallTarget, Location, scan_folder
from skillopt_daemon.registry.models import HandEdit, TargetState, Version
from skillopt_daemon.registry.targets import Targets
from skillopt_daemon.registry.versions import Versions
from skillopt_lib.errors import ConflictError, SkillFormatError
from skillopt_lib.skill import SKILL_FILE, SkillBundle


def _home_relative(locations: Sequence[Location], name: str, path: str) -> str:
    """`path` from the tool's home on (`skills/NAME/SKILL.md`), wherever that home was when it was recorded;
    the path unchanged when it is not inside a skill folder of these locations."""
    for loc in locations:
        tail = os.sep + str(loc.skill_dir(name).relative_to(loc.base)) + os.sep
        at = path.find(tail)
        if at >= 0:
            return path[at + 1 :]
    return path


def same_content(
    locations: Sequence[Location], name: str, a: Mapping[str, str], b: Mapping[str, str]
) -> bool:
    """Whether two `{path: sha256}` maps hold the same files relative to the tool's home: true when the home
    moved (another `CLAUDE_CONFIG_DIR`, a new user folder) but no byte changed."""

    def content(files: Mapping[str, str]) -> Counter[tuple[str, str]]:
        return Counter((_home_relative(locations, name, p), sha) for p, sha in files.items())

    return content(a) == content(b)


class Drift:
    """Detecting hand edits at a target and recording them as versions."""

    def __init__(self, versions: Versions, targets: Targets) -> None:
        self.versions = versions
        self.targets = targets
        self.db = versions.db

    def check_drift(self, skill: str, target: InstallTarget) -> list[str] | None:
        """Paths at `target` that differ from what skillopt last wrote there; None when nothing differs.

        With no record for the target, anything present counts: skillopt never replaces files it did not
        write without asking. Files that are byte-identical to the record under a tool home that moved are
        no edit: the record follows them to their new paths (so uninstall and rollback find them there).
        """
        installer = self.targets.installer(target.tool)
        current = installer.scan(target, skill)
        ts = self.targets.target_state(skill, target)
        if ts is not None:
            ts = self._retire(ts, installer)
        recorded = ts.installed if ts else {}
        if current == recorded:
            return None
        if (
            ts is not None
            and recorded
            and same_content(installer.locations(target), skill, current, recorded)
        ):
            with self.db.conn:
                self.targets.set_active(ts.id, ts.active_version_id, current)
            return None
        return sorted(p for p in set(current) | set(recorded) if current.get(p) != recorded.get(p))

    def _retire(self, ts: TargetState, installer: Installer) -> TargetState:
        """Take out of the record of `ts` the files in folders skillopt no longer writes for this tool (Codex's
        `.agents/skills`), deleting them where they still hold exactly what skillopt wrote; a copy edited
        since stays on disk as the user's. Call under the install lock."""
        kept = dict(ts.installed)
        for loc in installer.retired_locations(ts.target):
            folder = loc.skill_dir(ts.skill)
            prefix = str(folder) + os.sep
            ours = {p: sha for p, sha in ts.installed.items() if p.startswith(prefix)}
            if not ours:
                continue
            for p in ours:
                del kept[p]
            if scan_folder(folder) == ours:
                shutil.rmtree(folder)
        if kept == ts.installed:
            return ts
        with self.db.conn:
            self.targets.set_active(ts.id, ts.active_version_id, kept)
            self.versions.audit(
                "migrate",
                skill=ts.skill,
                target=ts.target,
                message=f"{ts.skill} at {ts.target} is kept in one folder only; the copy in a folder "
                "skillopt no longer writes was taken out",
            )
        return self.targets.target_by_id(ts.id)

    def _edited_folder(self, skill: str, target: InstallTarget, changed: list[str]) -> Path | None:
        """The skill folder at `target` holding the changed files (else any with a SKILL.md), if one is left."""
        folders = [loc.skill_dir(skill) for loc in self.targets.installer(target.tool).locations(target)]
        present = [d for d in folders if (d / SKILL_FILE).is_file()]
        for d in present:
            prefix = str(d) + os.sep
            if any(p.startswith(prefix) for p in changed):
                return d
        return present[0] if present else None

    def import_drift(self, skill: str, target: InstallTarget, changed: list[str]) -> HandEdit:
        """Record what is on disk at `target` as the skill's `hand-edit` version, active there."""
        ts = self.targets.ensure_target(skill, target)
        folder = self._edited_folder(skill, target, changed)
        if folder is None:
            with self.db.conn:
                self.versions.audit(
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
        rel_changed = [os.path.relpath(p, folder) if p.startswith(str(folder)) else p for p in changed]
        v = self._record_found(ts, folder, bundle, rel_changed)
        return HandEdit(target, rel_changed, v)

    def _record_found(
        self, ts: TargetState, folder: Path, bundle: SkillBundle, rel_changed: list[str]
    ) -> Version:
        """Make the bundle found in `folder` the active version at `ts` (a known version is reused)."""
        skill, target = ts.skill, ts.target
        tracked = bool(ts.active_version_id or ts.installed)
        current = self.targets.installer(target.tool).scan(target, skill)
        with self.db.conn:
            v = self.versions.find_content(skill, bundle.content_hash)
            if v is None:
                evidence: dict[str, Any] = {"found_at": target.key}
                if tracked:
                    evidence["changed"] = rel_changed
                issues = [str(i) for i in bundle.validate(folder_name=skill)]
                if issues:
                    evidence["issues"] = issues
                v = self.versions.insert_version(
                    skill,
                    bundle,
                    origin="hand-edit" if tracked else "imported",
                    state="approved",
                    parent_id=ts.active_version_id,
                    evidence=evidence,
                    note=f"found in {folder}",
                )
            self.targets.set_active(ts.id, v.id, current)
            if tracked:
                message = f"files at {target} differ from what skillopt installed; recorded as {v.label}"
            else:
                message = f"imported {v.label} from {folder}"
            self.versions.audit(
                "hand-edit" if tracked else "import",
                skill=skill,
                version_id=v.id,
                target=target,
                message=message,
                detail={"changed": rel_changed} if tracked else {"folder": str(folder)},
            )
        return v
