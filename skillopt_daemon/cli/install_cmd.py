"""`skillopt install TOOL`, `skillopt uninstall TOOL` and `skillopt mcp`.

Installing an integration places skillopt's own files for a tool (its `skillopt` skill, hooks, an MCP
entry, an optional instruction pointer) and makes the tool an install target for approved skills. Both
commands are idempotent and take `--dry-run`, which lists every file they would touch and changes nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from skillopt_daemon.cli.output import console, err_console, literal, print_json
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import SkillOptError

_OPS_STYLE = {
    "create": "green",
    "replace": "yellow",
    "update": "cyan",
    "merge": "cyan",
    "unmerge": "cyan",
    "remove": "red",
    "restore": "magenta",
    "keep": "yellow",
    "unchanged": "dim",
    "skip": "dim",
}


def _tool(value: str) -> AgentTool:
    try:
        return AgentTool.parse(value)
    except ValueError as exc:
        raise SkillOptError(str(exc), hint="`skillopt install --help` lists the tools") from None


def _scope(value: Optional[str]) -> Any:
    if value is None:
        return None
    if value not in ("user", "project"):
        raise SkillOptError(f"unknown scope {value!r}", hint="use --scope user or --scope project")
    return value


def _show(report_dict: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(report_dict)
        return
    where = report_dict["tool"] + (f" ({report_dict['project']})" if report_dict["project"] else " (user)")
    verb = report_dict["action"]
    prefix = "would " if report_dict["dry_run"] else ""
    for f in report_dict["files"]:
        style = _OPS_STYLE.get(f["op"], "")
        detail = f"  [dim]{literal(f['detail'])}[/]" if f["detail"] else ""
        console.print(
            f"[{style}]{f['op']:9}[/] {literal(f['path'])}{detail}", highlight=False, soft_wrap=True
        )
    for note in report_dict["notes"]:
        err_console.print(f"[yellow]note:[/] {literal(note)}", highlight=False)
    if report_dict["dry_run"]:
        console.print(f"[bold]dry run:[/] nothing was changed ({prefix}{verb} {literal(where)})")
    else:
        console.print(f"[bold green]{verb}ed[/] skillopt for {literal(where)}")


@contextmanager
def _skills_progress() -> Iterator[Callable[[int, int, str], None]]:
    """A progress bar on stderr while approved skills are installed or removed, started only once there is
    work: a bar started and stopped with nothing in it leaves an empty line before the command's output."""
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,  # a pipe or a log gets no bar, and no blank line from it
    )
    task: list[TaskID] = []

    def update(done: int, total: int, what: str) -> None:
        if not task:
            bar.start()
            task.append(bar.add_task("skills", total=total))
        bar.update(task[0], completed=done, description=literal(what))

    try:
        yield update
    finally:
        if task:
            bar.stop()


def _ask_consent(tool: AgentTool) -> None:
    """After installing for Claude Code or Codex: whether the night may use that login as its optimizer
    (asked once; nothing is asked when an optimizer is configured or the answer is known)."""
    from skillopt_daemon.cli import consent
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.night.agents import night_model

    try:
        model = night_model(load_settings(), [tool])
    except SkillOptError:
        return  # the install is done; `skillopt status` says what the settings lack
    consent.ask(model)


def register(app: typer.Typer) -> None:
    @app.command("install")
    def install_cmd(
        tool: str = typer.Argument(
            ..., help="claude-code, codex, copilot, cursor, devin, gemini or openclaw"
        ),
        scope: Optional[str] = typer.Option(None, "--scope", help="user (default) or project"),
        project: Optional[Path] = typer.Option(
            None, "--project", help="the project folder for --scope project (default: the current folder)"
        ),
        instructions: bool = typer.Option(
            False,
            "--instructions",
            help="also add a pointer to the tool's instructions (AGENTS.md, copilot-instructions.md, a "
            "Cursor rule); for Copilot projects, install approved skills as .instructions.md files",
        ),
        force: bool = typer.Option(
            False,
            "--force",
            help="replace files skillopt did not write (backed up), or install for a tool not detected",
        ),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="list every file it would touch; change nothing"
        ),
        as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
        print_plugin_dir: bool = typer.Option(
            False,
            "--print-plugin-dir",
            help="claude-code only: print the folder of the Claude Code plugin and marketplace shipped in "
            "this installation (for `claude --plugin-dir DIR` or `/plugin marketplace add DIR`), install nothing",
        ),
    ) -> None:
        """Install skillopt's integration for an agent tool, and send approved skills there from now on."""
        from skillopt_daemon import integrations

        if print_plugin_dir:
            folder = integrations.plugin_dir(_tool(tool))
            console.print(str(folder), highlight=False, soft_wrap=True, markup=False)
            return
        with _skills_progress() as progress:
            report = integrations.install(
                _tool(tool),
                _scope(scope),
                project,
                force=force,
                dry_run=dry_run,
                instructions=instructions,
                progress=progress,
            )
        _show(report.as_dict(), as_json)
        if not dry_run and not as_json:
            _ask_consent(_tool(tool))

    @app.command("uninstall")
    def uninstall_cmd(
        tool: str = typer.Argument(
            ..., help="claude-code, codex, copilot, cursor, devin, gemini or openclaw"
        ),
        scope: Optional[str] = typer.Option(None, "--scope", help="user (default) or project"),
        project: Optional[Path] = typer.Option(
            None, "--project", help="the project folder for --scope project"
        ),
        force: bool = typer.Option(
            False, "--force", help="also remove files you edited since skillopt wrote them"
        ),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="list every file it would touch; change nothing"
        ),
        as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    ) -> None:
        """Remove what `skillopt install` placed and restore what it replaced; your edits are kept."""
        from skillopt_daemon import integrations

        with _skills_progress() as progress:
            report = integrations.uninstall(
                _tool(tool), _scope(scope), project, force=force, dry_run=dry_run, progress=progress
            )
        _show(report.as_dict(), as_json)

    @app.command("devin-export")
    def devin_export_cmd(
        skills: Optional[list[str]] = typer.Argument(
            None, help="skills to export (default: every approved one)"
        ),
        out: Path = typer.Option(Path("devin-export"), "--out", help="folder for knowledge/ and playbooks/"),
        pinned_repo: Optional[str] = typer.Option(
            None, "--pinned-repo", help="pin the Knowledge entries to a repository (owner/name)"
        ),
        as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    ) -> None:
        """Write approved skills as Devin Knowledge entries and Playbooks (JSON bodies for Devin's API)."""
        from skillopt_daemon.integrations.devin_export import export_approved, send_commands

        done = export_approved(out, skills or (), pinned_repo=pinned_repo)
        if as_json:
            print_json([d.to_dict() for d in done])
            return
        for d in done:
            console.print(
                f"{d.skill} ({d.label}): {d.knowledge}  {d.playbook}",
                highlight=False,
                soft_wrap=True,
                markup=False,
            )
        console.print(f"exported {len(done)} skill(s); send them to Devin with:")
        for command in send_commands(out):
            console.print(command, highlight=False, soft_wrap=True, markup=False)

    @app.command("mcp")
    def mcp_cmd() -> None:
        """Serve the review tools (status, diff, reject, rollback, sleep) over MCP on stdio.

        There is no approve tool: only the user approves, in their own terminal.
        """
        # The MCP server is a face of its own: this process becomes it (same stdio, same environment), so
        # the CLI never imports another face.
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, "-m", "skillopt_daemon.mcp"])
