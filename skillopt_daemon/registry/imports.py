"""Bringing skills a user already has into the registry: one folder, a tool's target, or any path.

A folder found at a target becomes that target's active version (or a hand edit of it, when skillopt had
installed something else there); a folder outside any target is registered as a version only.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from skillopt_daemon.registry.drift import Drift
from skillopt_daemon.registry.installers import INSTALLERS, get_installer
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_daemon.registry.installs import Installs
from skillopt_daemon.registry.models import ImportResult
from skillopt_daemon.registry.targets import Targets
from skillopt_daemon.registry.versions import Versions
from skillopt_lib.agents import AgentTool, spec
from skillopt_lib.errors import NotFoundError, SkillFormatError, SkillOptError
from skillopt_lib.skill import SKILL_FILE, SkillBundle, iter_skill_dirs

# The skill skillopt's own integration places in each tool's skill folder (it teaches the agent the CLI). It is
# skillopt's, not the user's: importing a tool's skills leaves it out, so it never becomes a target to train.
OWN_SKILL = "skillopt"


class Imports:
    """Importing skill folders, targets and paths."""

    def __init__(self, versions: Versions, targets: Targets, drift: Drift, installs: Installs) -> None:
        self.versions = versions
        self.targets = targets
        self.drift = drift
        self.installs = installs
        self.db = versions.db

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
            return self._import_untargeted(folder, bundle)
        return self._import_at(folder, target)

    def _import_untargeted(self, folder: Path, bundle: SkillBundle) -> ImportResult:
        name = folder.name
        existing = (
            self.versions.find_content(name, bundle.content_hash) if self.versions.skill_id(name) else None
        )
        if existing:
            return ImportResult(name, "existing", str(folder), None, existing, "already registered")
        with self.db.conn:
            v = self.versions.insert_version(
                name,
                bundle,
                origin="imported",
                state="approved",
                parent_id=None,
                evidence={"found_at": str(folder)},
                note=f"imported from {folder}",
            )
            self.versions.audit(
                "import", skill=name, version_id=v.id, message=f"imported {v.label} from {folder}"
            )
        return ImportResult(name, "new", str(folder), None, v, f"imported as {v.label}")

    def _import_at(self, folder: Path, target: InstallTarget) -> ImportResult:
        name = folder.name
        with self.installs.lock():
            changed = self.drift.check_drift(name, target)
            ts = self.targets.target_state(name, target)
            if changed is None and ts is not None and ts.active_version_id:
                active = self.versions.get_version(ts.active_version_id)
                return ImportResult(name, "unchanged", str(folder), target, active, "already tracked")
            was_tracked = ts is not None and bool(ts.active_version_id or ts.installed)
            he = self.drift.import_drift(name, target, changed or [])
        status: Literal["hand-edit", "new"] = "hand-edit" if was_tracked else "new"
        if he.version is None:
            msg = "imported"
        elif was_tracked:
            msg = f"hand edit found: recorded as {he.version.label}"
        else:
            msg = f"imported as {he.version.label}"
        return ImportResult(name, status, str(folder), target, he.version, msg)

    def import_target(self, target: InstallTarget, seen: set[Path] | None = None) -> list[ImportResult]:
        """Import every skill folder at `target` but skillopt's own (`OWN_SKILL`). Folders in `seen` (resolved)
        are skipped and new ones added: tools share folders (`~/.agents/skills`), and one folder must belong
        to one target only."""
        out: list[ImportResult] = []
        for d in self.targets.installer(target.tool).discover(target):
            if d.name == OWN_SKILL:
                continue
            real = d.resolve()
            if seen is not None:
                if real in seen:
                    continue
                seen.add(real)
            out.append(self.import_folder(d, target))
        return out

    def names_on_disk(self, tools: Iterable[AgentTool], projects: Iterable[Path | str] = ()) -> set[str]:
        """Every skill folder name present in the skill folders of `tools`, in user scope and in each of
        `projects`, registered or not: names a new skill must not take, or approving it would land on a
        folder that is the user's (and be refused as a hand edit). Only reads; a tool without such a scope,
        or a folder that cannot be listed, adds nothing."""
        folders = [Path(p) for p in projects]
        roots: list[Path] = []
        for tool in tools:
            # Every folder the tool reads: its installer's (which knows where the tool's home is now) and,
            # in a project, each of the row's project folders (Codex reads two, Copilot three).
            roots += [p / rel for p in folders for rel in spec(tool).project_skill_dirs]
            for target in [
                InstallTarget(tool, "user"),
                *(InstallTarget(tool, "project", p) for p in folders),
            ]:
                try:
                    installer = self.targets.installer(tool)
                    locations = installer.locations(target) + installer.retired_locations(target)
                except (SkillOptError, ValueError, NotImplementedError):
                    continue  # Devin has no user folder; a tool that cannot load has no names to give
                roots += [loc.root for loc in locations]
        names: set[str] = set()
        for root in dict.fromkeys(roots):
            try:
                names |= {d.name for d in root.iterdir() if not d.name.startswith(".") and d.is_dir()}
            except OSError:
                continue  # no such folder yet: nothing is taken there
        return names

    def import_path(self, path: Path) -> list[ImportResult]:
        """A skill folder, a SKILL.md or a folder of skills; a tool's skills folder implies the target."""
        path = Path(path).expanduser().absolute()
        if path.is_file():
            path = path.parent
        if not path.is_dir():
            raise NotFoundError(f"no skill folder at {path}")
        if (path / SKILL_FILE).is_file():
            return [self.import_folder(path, self.infer_target(path))]
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
