"""`skillopt skills list|show|import`: the skills skillopt knows and where they came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import Progress

from skillopt_daemon.cli.output import console, err_console, print_json, print_table
from skillopt_daemon.cli.review import JSON_OPT, cli_registry
from skillopt_daemon.core.timeutil import local_display
from skillopt_daemon.registry import ImportResult
from skillopt_daemon.registry.installers import INSTALLERS, InstallTarget, get_installer
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConflictError, NotFoundError, SkillFormatError, SkillOptError

skills_app = typer.Typer(help="The skills skillopt knows: list, show, import.", no_args_is_help=True)


@skills_app.command("list")
def list_skills(json_out: bool = JSON_OPT) -> None:
    """Every registered skill, its active version at each target and its pending proposals."""
    reg = cli_registry()
    pending: dict[str, int] = {}
    for p in reg.list_pending():
        pending[p.skill] = pending.get(p.skill, 0) + 1
    rows: list[dict[str, Any]] = []
    for name in reg.skill_names():
        versions = reg.versions(name)
        labels = {v.id: f"v{v.seq}" for v in versions}
        targets = [
            {"target": ts.target.key, "active": labels.get(ts.active_version_id or ""), "enabled": ts.enabled}
            for ts in reg.targets(name)
        ]
        rows.append(
            {"skill": name, "versions": len(versions), "pending": pending.get(name, 0), "targets": targets}
        )
    if json_out:
        print_json(rows)
        return
    if not rows:
        console.print("No skills registered yet. Import yours: skillopt skills import")
        return
    print_table(
        None,
        ["skill", "versions", "pending", "installed at"],
        [
            (
                r["skill"],
                r["versions"],
                r["pending"] or "",
                ", ".join(f"{t['target']} ({t['active'] or '-'})" for t in r["targets"]) or "-",
            )
            for r in rows
        ],
    )


@skills_app.command("show")
def show(
    skill: str = typer.Argument(..., help="The skill."),
    version: str = typer.Option(
        None, "--version", "-v", help="Which version (vN or an id); default: the current one."
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """A skill's versions, targets and the text of one version."""
    reg = cli_registry()
    versions = reg.versions(skill)
    if not versions:
        raise NotFoundError(f"{skill} has no versions yet", hint="import it: skillopt skills import")
    if version:
        v = reg.resolve_id(
            version if "@" in version or not version.lstrip("vV").isdigit() else f"{skill}@{version}"
        )
    else:
        v = reg.current_version(skill) or versions[-1]
    bundle = reg.load_bundle(v.id)
    targets = reg.targets(skill)
    if json_out:
        print_json(
            {
                "skill": skill,
                "version": v.to_dict(),
                "files": sorted(bundle.files),
                "text": bundle.text_files().get("SKILL.md"),
                "targets": [t.to_dict() for t in targets],
                "versions": [x.to_dict() for x in versions],
            }
        )
        return
    console.print(f"[bold]{v.label}[/] ({v.id}) {v.origin}, {v.state}, created {local_display(v.created_at)}")
    if targets:
        for ts in targets:
            active = next((x.label for x in versions if x.id == ts.active_version_id), "-")
            console.print(f"  {ts.target}: {active}" + ("" if ts.enabled else " (disabled)"), markup=False)
    console.print(f"  files: {', '.join(sorted(bundle.files))}", markup=False)
    console.rule()
    console.print(bundle.text_files().get("SKILL.md", ""), markup=False, highlight=False, end="")


def _set_enabled(skill: str, target: str, enabled: bool) -> None:
    from skillopt_daemon.registry.installers.base import InstallTarget

    reg = cli_registry()
    reg.require_skill(skill)
    where = InstallTarget.parse(target)
    if enabled:
        reg.ensure_target(skill, where, enabled=True)
        if reg.target_state(skill, where) is not None:
            reg.set_target_enabled(skill, where, True)
        console.print(f"{skill}: approved versions now install at {where}", markup=False)
    else:
        reg.set_target_enabled(skill, where, False)
        console.print(
            f"{skill}: approvals no longer install at {where}; what is there stays "
            f"(to take it back: skillopt rollback {skill})",
            markup=False,
        )


@skills_app.command("enable")
def enable(
    skill: str = typer.Argument(..., help="The skill."),
    target: str = typer.Option(
        ...,
        "--target",
        "-t",
        help="claude-code:user, codex:project:PATH, ... (see `skillopt approve --help`).",
    ),
) -> None:
    """Install this skill's approved versions at a target from now on."""
    _set_enabled(skill, target, True)


@skills_app.command("disable")
def disable(
    skill: str = typer.Argument(..., help="The skill."),
    target: str = typer.Option(..., "--target", "-t", help="A target the skill has (see `skills show`)."),
) -> None:
    """Stop installing this skill's approved versions at a target; the files there are left alone.

    To take a skill back from where it is installed, use `skillopt rollback SKILL` instead.
    """
    _set_enabled(skill, target, False)


@skills_app.command("import")
def import_skills(
    path: Path = typer.Argument(None, help="A skill folder, a SKILL.md, or a folder of skills."),
    tool: str = typer.Option(None, "--tool", help="Import from one tool's skill folders (e.g. claude-code)."),
    project: Path = typer.Option(
        None,
        "--project",
        help="Also import the project skills of this repository (default: the current folder).",
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Register existing skills so they can be optimized: by default every tool's user and project folders."""
    if path is not None and tool is not None:
        raise ConflictError("give a PATH or --tool, not both")
    reg = cli_registry()
    results: list[ImportResult] = []
    notes: list[str] = []
    if path is not None:
        results = reg.import_path(path)
    else:
        try:
            tools = [AgentTool.parse(tool)] if tool else list(INSTALLERS)
        except ValueError as exc:
            raise ConflictError(str(exc)) from None
        repo = (project or Path.cwd()).absolute()
        settings = None
        if not tool:
            try:
                from skillopt_daemon.core.config import load_settings

                settings = load_settings()
            except SkillOptError:
                settings = None
        seen: set[Path] = set()
        targets = [
            target
            for t in tools
            if settings is None or settings.tool(t).enabled
            for target in (InstallTarget(t, "user"), InstallTarget(t, "project", repo))
        ]
        with Progress(console=err_console, transient=True, disable=json_out) as progress:
            task = progress.add_task("importing skills", total=len(targets))
            for target in targets:
                progress.update(task, description=f"importing {target.tool.value} ({target.scope})")
                try:
                    get_installer(target.tool).locations(target)
                except SkillOptError:
                    if tool:
                        raise
                    progress.advance(task)
                    continue  # the tool has no such scope (Devin has no user folder): nothing to import
                try:
                    results += reg.import_target(target, seen)
                except SkillOptError as exc:
                    if tool:  # asked for this tool explicitly: say what is wrong
                        raise
                    notes.append(f"{target}: {exc.message}")
                progress.advance(task)
    if json_out:
        print_json([r.to_dict() for r in results])
    else:
        for note in notes:
            err_console.print(f"[dim]skipped {escape(note)}[/]", highlight=False)
        if not results:
            console.print("No skills found.")
        for r in results:
            where = f" ({r.target})" if r.target else ""
            if r.status == "invalid":
                err_console.print(
                    f"[red]skipped[/] {escape(r.skill + where)}: {escape(r.message)}", highlight=False
                )
            elif r.status == "hand-edit":
                console.print(f"[yellow]{escape(r.skill + where)}: {escape(r.message)}[/]")
            else:
                console.print(f"{r.skill}{where}: {r.message}", markup=False, highlight=False)
    bad = [r for r in results if r.status == "invalid"]
    if bad:
        raise SkillFormatError(
            f"{len(bad)} skill(s) could not be imported because their SKILL.md is invalid",
            hint="fix the lines named above, then run the import again",
        )


def register(app: typer.Typer) -> None:
    app.add_typer(skills_app, name="skills")
