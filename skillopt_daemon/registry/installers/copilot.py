"""GitHub Copilot reads skills from `<repo>/.github/skills/<name>/` and `~/.copilot/skills/<name>/`.

Setups without skills support (older editors) only read instruction files. A project whose Copilot
integration was installed with `--instructions` gets each approved skill as
`.github/instructions/<name>.instructions.md` instead: the SKILL.md body under an `applyTo` glob (from the
skill's `metadata.copilot-apply-to`, default every file) and its description. Files other than SKILL.md
have no place in an instruction file and are left out. Which projects those are is registry data (where the
integration was installed, and how), handed to the installer as `instruction_projects`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from skillopt_daemon.core.fsio import atomic_write, sha256_bytes
from skillopt_daemon.registry.installers.base import (
    FolderInstaller,
    InstallPlan,
    InstallTarget,
    Location,
    PlannedFile,
    check_inside,
    check_writable,
)
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConflictError
from skillopt_lib.skill import SkillBundle

APPLY_TO_KEY = "copilot-apply-to"


def instructions_text(bundle: SkillBundle) -> str:
    """A SKILL.md as a Copilot instruction file (`applyTo` frontmatter, then the body)."""
    doc = bundle.doc
    meta = doc.frontmatter.get("metadata")
    apply_to = str(meta.get(APPLY_TO_KEY, "**")) if isinstance(meta, dict) else "**"
    description = json.dumps(doc.description, ensure_ascii=False)
    head = f"---\napplyTo: {json.dumps(apply_to)}\ndescription: {description}\n---\n"
    body = doc.body if doc.body.startswith("\n") else "\n" + doc.body
    return head + body


class CopilotInstaller(FolderInstaller):
    tool = AgentTool.COPILOT

    def user_locations(self) -> list[Location]:
        home = self.home()
        return [Location(home / "skills", home)]

    # -- instruction-only projects -----------------------------------------------------------------------

    def instructions_only(self, target: InstallTarget) -> bool:
        """True for a project whose integration was installed with `--instructions` (the registry says)."""
        return target.scope == "project" and target.project in self.instruction_projects

    def instructions_path(self, target: InstallTarget, name: str) -> Path:
        assert target.project is not None
        return target.project / ".github" / "instructions" / f"{name}.instructions.md"

    def locations(self, target: InstallTarget) -> list[Location]:
        if self.instructions_only(target):
            return []
        return super().locations(target)

    def scan(self, target: InstallTarget, name: str) -> dict[str, str]:
        out = super().scan(target, name)
        if self.instructions_only(target):
            path = self.instructions_path(target, name)
            if path.is_file():
                out[str(path)] = sha256_bytes(path.read_bytes())
        return out

    def expected(self, target: InstallTarget, name: str, bundle: SkillBundle) -> dict[str, str]:
        if self.instructions_only(target):
            data = instructions_text(bundle).encode("utf-8")
            return {str(self.instructions_path(target, name)): sha256_bytes(data)}
        return super().expected(target, name, bundle)

    def check_writable(self, target: InstallTarget, name: str) -> None:
        if not self.instructions_only(target):
            super().check_writable(target, name)
            return
        path = self.instructions_path(target, name)
        assert target.project is not None
        check_inside(target.project, path)
        check_writable(path)

    def plan(self, target: InstallTarget, name: str, bundle: SkillBundle, backup: Path | None) -> InstallPlan:
        if not self.instructions_only(target):
            return super().plan(target, name, bundle, backup)
        plan = InstallPlan(target=target, name=name, backup=backup)
        path = self.instructions_path(target, name)
        want = sha256_bytes(instructions_text(bundle).encode("utf-8"))
        have = sha256_bytes(path.read_bytes()) if path.is_file() else None
        action = "create" if have is None else ("unchanged" if have == want else "replace")
        plan.files.append(PlannedFile(path, action))  # type: ignore[arg-type]
        return plan

    def install(
        self, target: InstallTarget, name: str, bundle: SkillBundle, install_id: str, backup: Path | None
    ) -> dict[str, str]:
        if not self.instructions_only(target):
            return super().install(target, name, bundle, install_id, backup)
        self.check_writable(target, name)
        path = self.instructions_path(target, name)
        if backup is not None and path.is_file():
            atomic_write(backup / "0" / path.name, path.read_bytes())
        atomic_write(path, instructions_text(bundle).encode("utf-8"))
        return self.scan(target, name)

    def recover(self, target: InstallTarget, name: str, install_id: str, new: Mapping[str, str]) -> bool:
        if not self.instructions_only(target):
            return super().recover(target, name, install_id, new)
        return bool(new) and self.scan(target, name) == dict(new)

    def uninstall(
        self,
        target: InstallTarget,
        name: str,
        installed: Mapping[str, str],
        restore: SkillBundle | None,
        force: bool = False,
    ) -> list[Path]:
        if not self.instructions_only(target):
            return super().uninstall(target, name, installed, restore, force)
        path = self.instructions_path(target, name)
        current = self.scan(target, name)
        key = str(path)
        if key in current and key in installed and current[key] != installed[key] and not force:
            raise ConflictError(
                f"{path} was edited since skillopt installed it",
                hint="import the edit first (skillopt skills import), or pass --force",
            )
        removed: list[Path] = []
        if path.is_file() and str(path) in installed:
            path.unlink()
            removed.append(path)
        if restore is not None:
            atomic_write(path, instructions_text(restore).encode("utf-8"))
        return removed
