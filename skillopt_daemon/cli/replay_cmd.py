"""`skillopt replay`: run your own agent CLI on a task in a sandbox with a chosen skill; see what happened.

The agent works in a throwaway workspace under skillopt's workspaces folder (a detached worktree at the
given commit, or a copy of the project), with an isolated config home, so neither your repository nor your
installed skills are touched. Afterwards the check commands run in the workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from skillopt_daemon.cli.output import console, err_console, literal, print_json, print_table
from skillopt_daemon.core import paths
from skillopt_daemon.core.config import load_settings
from skillopt_daemon.night.agents import make_agent
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConfigError
from skillopt_lib.execution import ExecLimits, ExecResult
from skillopt_lib.sandbox import ReplayTask, SandboxConfig, replay
from skillopt_lib.skill import SkillBundle
from skillopt_lib.usage import format_cost

_STATUS_STYLE = {"ok": "green", "timeout": "yellow", "max_turns": "yellow"}


def replay_command(
    prompt: str = typer.Option(..., "--prompt", "-p", help="the task, as you would type it to the agent"),
    tool: str = typer.Option(
        "claude-code", "--tool", "-t", help="a tool with an exec backend (see `skillopt plugins`)"
    ),
    repo: Optional[Path] = typer.Option(None, "--repo", "-r", help="your project (never modified)"),
    commit: Optional[str] = typer.Option(
        None, "--commit", help="start from this commit (a detached worktree)"
    ),
    skill: Optional[Path] = typer.Option(
        None, "--skill", "-s", help="a SKILL.md file or skill folder to install"
    ),
    check: list[str] = typer.Option(
        [], "--check", "-c", help="a command that must pass afterwards (repeatable)"
    ),
    max_turns: Optional[int] = typer.Option(None, "--max-turns", help="default: replay.max_turns"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds; default: replay.timeout_s"),
    model: Optional[str] = typer.Option(None, "--model", help="the agent's model (default: the tool's own)"),
    keep: bool = typer.Option(False, "--keep", help="keep the workspace for inspection"),
    show_diff: bool = typer.Option(False, "--diff", help="print the full diff of changed files"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Run an agent on a task in a sandbox with a candidate skill, and report what happened."""
    try:
        agent_tool = AgentTool.parse(tool)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    settings = load_settings()
    rs = settings.replay
    limits = ExecLimits(
        max_turns=max_turns if max_turns is not None else rs.max_turns,
        timeout_s=timeout if timeout is not None else rs.timeout_s,
        model=model,
        max_output_bytes=rs.max_output_bytes,
    )
    backend = make_agent(
        settings, agent_tool, max_turns=limits.max_turns, timeout_s=limits.timeout_s, model=model
    )
    bundle = SkillBundle.from_path(skill) if skill is not None else None
    if bundle is not None and not bundle.name:
        raise ConfigError(
            f"{skill} has no 'name' in its frontmatter", hint="skills need a name and a description"
        )
    for warning in backend.preflight():
        err_console.print(f"[yellow]warning:[/] {literal(warning)}", highlight=False)
    config = SandboxConfig(
        root=paths.ensure_private_dir(paths.workspaces_dir()),
        env_allowlist=tuple(rs.env_allowlist),
        keep=keep or rs.keep_workspaces,
        max_parallel=rs.max_parallel,
        allow_unconfined=rs.allow_unconfined,
    )
    task = ReplayTask(prompt=prompt, repo=repo, commit=commit, checks=list(check), id="cli")
    labels = {
        "workspace": "preparing the workspace",
        "agent": f"running {agent_tool.value}",
        "diff": "collecting changed files",
        "checks": "running checks",
    }
    with err_console.status("starting", spinner="dots") as status:
        result = replay(
            task,
            backend,
            config,
            skill=bundle,
            limits=limits,
            on_stage=lambda s: status.update(labels.get(s, s)),
        )
    if as_json:
        print_json(result.to_dict())
        return
    _show(result, show_diff=show_diff, kept=config.keep)


def _show(result: ExecResult, *, show_diff: bool, kept: bool) -> None:
    style = _STATUS_STYLE.get(result.status.value, "red")
    console.print(
        f"[bold]status:[/] [{style}]{result.status.value}[/]  ({result.duration_s:.1f} s, "
        f"{result.usage.total_tokens} tokens"
        + (f", {format_cost(result.usage.cost_usd)}" if result.cost_reported else "")
        + ")"
    )
    if result.error:
        console.print(f"[bold]reason:[/] {literal(result.error)}")
    for w in result.warnings:
        err_console.print(f"[yellow]note:[/] {literal(w)}", highlight=False)
    if result.tool_calls:
        rows = []
        for c in result.tool_calls:
            arg = c.input.get("command") or c.input.get("file_path") if isinstance(c.input, dict) else c.input
            if result.workspace and isinstance(arg, str):
                arg = arg.replace(result.workspace + "/", "")
            outcome = "denied" if c.denied else ("error" if c.is_error else "")
            rows.append((c.name, str(arg or "")[:80], "" if c.exit_code is None else c.exit_code, outcome))
        print_table("tool calls", ["tool", "input", "exit", ""], rows)
    if result.files_changed:
        console.print("[bold]files changed:[/] " + literal(", ".join(result.files_changed)))
    else:
        console.print("[bold]files changed:[/] none")
    if show_diff and result.diff:
        console.print(result.diff, markup=False)
    if result.final_message:
        console.print("[bold]final message:[/]")
        console.print(result.final_message, markup=False)
    if result.checks:
        print_table(
            "checks",
            ["command", "result", "exit"],
            [
                (c.command, "pass" if c.passed else ("timed out" if c.timed_out else "FAIL"), c.exit_code)
                for c in result.checks
            ],
        )
        for check in result.checks:
            if not check.passed and check.output:
                console.print(f"[dim]{literal(check.command)}:[/]")
                console.print(check.output, markup=False)
        verdict = "[green]all checks passed[/]" if result.checks_passed else "[red]checks failed[/]"
        console.print(verdict)
    if kept and result.workspace:
        console.print(f"[bold]workspace kept:[/] {literal(result.workspace)}")


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_command)
