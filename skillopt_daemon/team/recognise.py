"""Rules a team committed in a repository, recognised: registered as the user's, never written over.

A team can merge a shared rule into a project's own skill folder (`.claude/skills/<name>/`,
`.agents/skills/<name>/`, ...), keeping skillopt's provenance file beside it: `skillopt-rule.json`, the
evidence summary `skillopt team publish` wrote. A teammate's skillopt finds such folders in a project and
registers each at its project target as an imported skill, with the target disabled for installs: the
folder belongs to the repository, so skillopt never writes there (no approval lands on it), and an edit
committed later is found by the next `recognise` as a hand edit of it (the registry's drift check), as
for any file a user changed by hand. Only the provenance file marks a folder as a team rule: other
skill folders are left to `skillopt skills import`.
"""

from __future__ import annotations

from pathlib import Path

from skillopt_daemon.registry import ImportResult, Registry
from skillopt_daemon.registry.installers import INSTALLERS, InstallTarget
from skillopt_daemon.team.sanitise import RULE_FILE
from skillopt_lib.agents import spec
from skillopt_lib.errors import NotFoundError
from skillopt_lib.skill import SKILL_FILE


def committed_rules(project: Path) -> list[tuple[Path, InstallTarget]]:
    """Every skill folder in `project`'s tool folders that holds skillopt's provenance file, with the
    project target it belongs to (a folder several tools read is reported once, for the first tool)."""
    seen: set[Path] = set()
    out: list[tuple[Path, InstallTarget]] = []
    for tool in INSTALLERS:
        for rel in spec(tool).project_skill_dirs:
            root = project / rel
            try:
                folders = sorted(d for d in root.iterdir() if d.is_dir() and not d.is_symlink())
            except OSError:
                continue
            for folder in folders:
                real = folder.resolve()
                if real in seen or not (folder / SKILL_FILE).is_file() or not (folder / RULE_FILE).is_file():
                    continue
                seen.add(real)
                out.append((folder, InstallTarget(tool, "project", project)))
    return out


def recognise(reg: Registry, project: Path) -> list[ImportResult]:
    """Register every team rule committed in `project` (see the module docstring)."""
    project = Path(project).expanduser().absolute()
    if not project.is_dir():
        raise NotFoundError(f"no folder at {project}", hint="give the repository's folder")
    results: list[ImportResult] = []
    for folder, target in committed_rules(project):
        res = reg.import_folder(folder, target)
        results.append(res)
        if res.status == "invalid":
            continue
        state = reg.target_state(res.skill, target)
        if state is not None and state.enabled:
            reg.set_target_enabled(res.skill, target, False)
    return results
