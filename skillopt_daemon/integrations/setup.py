"""Installing and removing skillopt's own integration with an agent tool (`skillopt install TOOL`).

The integration is what lets a tool talk to skillopt: the `skillopt` skill that teaches the agent the CLI, the
hooks that tell the daemon when a session ends, an MCP server entry, an optional pointer in the tool's
instruction file (see `plan`). Installing it also makes the tool an install target: the registry records it
(`Registry.record_integration`), each approved skill is installed there now, and later approvals of new
skills go there too. Uninstalling removes the approved skills placed there, then the integration's files
(see `placements`), then the registry's record.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.integrations.hooks import skillopt_executable, strip_any
from skillopt_daemon.integrations.manifest import load_manifest, manifest_path, save_manifest, target_dict
from skillopt_daemon.integrations.placements import (
    Action,
    Backups,
    Context,
    FilePlacement,
    JsonPlacement,
    Placement,
    Progress,
    Report,
    SectionPlacement,
    check_placements,
    placement_for_record,
    root_of,
)
from skillopt_daemon.integrations.plan import (
    Scope,
    detect,
    integration_part,
    plan_placements,
    resolve_target,
    tool_home_or_default,
)
from skillopt_daemon.integrations.shipped import SKILL_NAME
from skillopt_daemon.registry import Registry, open_registry
from skillopt_daemon.registry.installers import check_inside
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_lib import __version__ as _skillopt_version
from skillopt_lib.agents import AgentTool, spec
from skillopt_lib.errors import ConflictError, ExternalToolError, NotFoundError, SkillOptError


@contextlib.contextmanager
def _registry() -> Iterator[Registry]:
    reg, _notes = open_registry(actor="install")
    try:
        yield reg
    finally:
        reg.db.conn.close()


def _recorded_instructions(reg: Registry, target: InstallTarget) -> bool:
    """Whether the integration at `target` was installed with `--instructions` (the registry's record)."""
    return any(i.instructions for i in reg.integration_targets() if i.target == target)


def install(
    tool: AgentTool,
    scope: Scope | None = None,
    project: str | Path | None = None,
    *,
    force: bool = False,
    dry_run: bool = False,
    instructions: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Place the integration for a tool (idempotent). Refuses a tool not on this machine at user scope."""
    target = resolve_target(tool, scope, project)
    if target.scope == "user" and not detect(tool)["detected"] and not force:
        raise ExternalToolError(
            f"{tool.value} does not seem to be installed here (no {tool_home_or_default(tool)} and no "
            f"`{spec(tool).executable}` on PATH)",
            hint=f"install it first ({spec(tool).install_hint}), or pass --force to install the integration",
        )
    _refuse_beside_plugin(tool)
    with _registry() as reg:
        instructions = instructions or _recorded_instructions(reg, target)
        report = Report(target=target, action="install", dry_run=dry_run)
        ctx = Context(target, force, dry_run, report, Backups(target), progress)
        _place(ctx, instructions)
        if not dry_run:
            reg.record_integration(target, instructions=instructions)
        _sync_approved_skills(ctx, reg)
    return report


def _refuse_beside_plugin(tool: AgentTool) -> None:
    """Refuse to install beside the tool's skillopt plugin (Claude Code's): the plugin already brings the
    commands, the `skillopt` skill and the hooks, and both routes together give the agent each of them
    twice. Either route is whole on its own; the user keeps one."""
    plugin_state = integration_part(tool, "plugin_state")
    version = plugin_state(tool_home_or_default(tool)) if plugin_state is not None else None
    if not version:
        return
    raise ConflictError(
        f"the skillopt plugin of {tool.value} is installed ({version}): it already gives {tool.value} the "
        f"skillopt commands, skill and hooks, and `skillopt install {tool.value}` would add each of them a "
        "second time; nothing was changed",
        hint="keep the plugin (nothing more to do), or remove it first "
        f"(`{spec(tool).executable} plugin uninstall skillopt@skillopt`) and run this again",
    )


def _place(ctx: Context, instructions: bool) -> None:
    """Write every placement of the integration at `ctx.target` and its manifest (checked first, all of them)."""
    target = ctx.target
    previous = load_manifest(target) or {}
    prev_records = {
        r["path"]: r for r in previous.get("placements", []) if isinstance(r, dict) and "path" in r
    }
    placements = plan_placements(target, instructions=instructions)
    # Check every placement before writing anything, so a refusal leaves the disk as it was.
    check_placements(placements, prev_records, ctx.force)
    created_dirs = set(previous.get("created_dirs", []))
    for pl in placements:
        top = _topmost_missing(pl.path.parent, pl.root)
        if top is not None:
            created_dirs.add(str(top))
    records = [pl.install(ctx, prev_records.get(str(pl.path))) for pl in placements]
    planned = {str(pl.path) for pl in placements}
    for path, r in prev_records.items():
        if path not in planned:  # placed by an older skillopt, no longer part of the integration
            _uninstall_record(ctx, r, placements)
            if not ctx.dry_run:  # its folder goes too when nothing else is in it (Codex's second folder)
                _prune_empty_dirs(Path(path).parent, Path(path).parent.parent)
    if not ctx.dry_run:
        save_manifest(
            target,
            {
                **target_dict(target),
                "installed_at": previous.get("installed_at") or utcnow_iso(),
                "updated_at": utcnow_iso(),
                "skillopt_version": _skillopt_version,
                "executable": skillopt_executable(),
                "placements": records,
                "created_dirs": sorted(created_dirs),
            },
        )


def _uninstall_record(ctx: Context, record: dict[str, Any], placements: list[Placement]) -> None:
    kind = record.get("kind")
    if kind == "file":
        FilePlacement.uninstall(ctx, record)
    elif kind == "section":
        SectionPlacement.uninstall(ctx, record)
    elif kind == "json":
        pl = placement_for_record(placements, record)
        if not isinstance(pl, JsonPlacement):
            path = Path(record["path"])
            pl = JsonPlacement(path.parent, path, lambda d: d, strip_any, record.get("what", ""))
        pl.uninstall(ctx, record)


def uninstall(
    tool: AgentTool,
    scope: Scope | None = None,
    project: str | Path | None = None,
    *,
    force: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Remove what `install` placed, restore what it replaced, keep what the user edited since."""
    target = resolve_target(tool, scope, project)
    manifest = load_manifest(target)
    if manifest is None:
        raise NotFoundError(
            f"skillopt's integration is not installed for {target}",
            hint="`skillopt doctor` lists where it is installed",
        )
    report = Report(target=target, action="uninstall", dry_run=dry_run)
    ctx = Context(target, force, dry_run, report, Backups(target), progress)
    with _registry() as reg:
        placements = plan_placements(target, instructions=_recorded_instructions(reg, target))
        records = [r for r in manifest.get("placements", []) if isinstance(r, dict)]
        _remove_approved_skills(ctx, reg)
        for r in reversed(records):
            root = root_of(r, placements)
            if root is not None:
                check_inside(root, Path(r["path"]))
            _uninstall_record(ctx, r, placements)
        if not dry_run:
            for r in records:
                _prune_empty_dirs(Path(r["path"]).parent, root_of(r, placements))
            for d in sorted(manifest.get("created_dirs", []), key=lambda x: len(Path(x).parts), reverse=True):
                _remove_empty_tree(Path(d))
            manifest_path(target).unlink(missing_ok=True)
            reg.forget_integration(target)
    return report


def _sync_approved_skills(ctx: Context, reg: Registry) -> None:
    """Put each skill's current approved version at the new target and enable it there for later approvals.

    A skill whose files at the target were edited by hand (or written by someone else) is left alone and
    reported: the registry keeps that edit as a version, as for any install.
    """
    target = ctx.target
    installer = reg.installer(target.tool)
    names = [n for n in reg.skill_names() if n != SKILL_NAME]
    for done, skill in enumerate(names):
        if ctx.progress is not None:
            ctx.progress(done, len(names), skill)
        version = reg.current_version(skill)
        if version is None or version.state != "approved":
            continue
        # The dry run and the real run report the same plan, file by file.
        plan = installer.plan(target, skill, reg.load_bundle(version.id), None)
        if not ctx.dry_run:
            try:
                reg.install_to(skill, target, version=version.id, force=ctx.force)
            except SkillOptError as exc:
                ctx.report.notes.append(f"{skill} was not installed for {target}: {exc.message}")
                continue
        ctx.report.actions.extend(Action(f.action, f.path, version.label) for f in plan.files)


def _remove_approved_skills(ctx: Context, reg: Registry) -> None:
    """Remove the approved skills skillopt installed at this target, and stop installing there."""
    target = ctx.target
    installer = reg.installer(target.tool)
    states = [ts for ts in reg.targets() if ts.target == target and ts.skill != SKILL_NAME]
    for done, ts in enumerate(states):
        if ctx.progress is not None:
            ctx.progress(done, len(states), ts.skill)
        if ts.active_version_id is None:
            if ts.enabled and not ctx.dry_run:
                reg.set_target_enabled(ts.skill, target, False)
            continue
        if ctx.dry_run:
            for path in sorted(installer.scan(target, ts.skill)):
                ctx.report.actions.append(Action("remove", Path(path), ts.skill))
            continue
        try:
            removed = reg.uninstall(ts.skill, target, force=ctx.force)
        except SkillOptError as exc:
            locations = installer.locations(target)
            where = locations[0].skill_dir(ts.skill) if locations else Path(target.project_str)
            ctx.report.actions.append(Action("keep", where))
            ctx.report.notes.append(f"kept {ts.skill} at {target}: {exc.message}")
            continue
        # A file the user had there before skillopt's first install is back: it was restored, not removed.
        ctx.report.actions.extend(Action("restore" if p.exists() else "remove", p, ts.skill) for p in removed)


def _prune_empty_dirs(folder: Path, stop: Path | None) -> None:
    """Remove folders left empty by uninstall, up to (not including) the tool's root."""
    if stop is None:
        return
    current = folder
    while current != stop and stop in current.parents:
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent


def _topmost_missing(folder: Path, root: Path) -> Path | None:
    """The highest folder on the way to `folder` that does not exist yet (what install will create).

    Never above the tool's base folder's parent: a user's home is never recorded as created by skillopt.
    """
    top = None
    current = folder
    while not current.exists() and current.parent != current:
        top = current
        current = current.parent
    if top is not None and top != root and root not in top.parents and top not in root.parents:
        return None
    return top


def _remove_empty_tree(folder: Path) -> None:
    """Remove `folder` and its sub-folders if they hold no file (created by install, now unused)."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            sub.rmdir()
        except OSError:
            pass
    try:
        folder.rmdir()
    except OSError:
        pass
