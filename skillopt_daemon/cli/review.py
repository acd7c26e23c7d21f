"""Reviewing what skillopt proposes: status, propose, diff, approve, reject, rollback, history.

Only presentation lives here; every rule is in `skillopt_daemon.registry`, which the dashboard calls too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from skillopt_daemon.cli.output import console, err_console, print_json, print_table
from skillopt_daemon.core.timeutil import humanize_age, local_display
from skillopt_daemon.night import preferences
from skillopt_daemon.registry import Registry, open_registry
from skillopt_lib.errors import ConflictError, NotFoundError
from skillopt_lib.skill import SkillBundle

JSON_OPT = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


def cli_registry() -> Registry:
    """Open the registry for a command, telling the user about any interrupted install it settled."""
    reg, notes = open_registry(actor="cli")
    for note in notes:
        err_console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    return reg


def _fmt_change(change: float | None, confidence: float | None) -> str:
    if change is None:
        return "-"
    text = f"{change:+.3f}"
    if confidence is not None:
        text += f" ({confidence:.0%} conf.)"
    return text


def status(json_out: bool = JSON_OPT) -> None:
    """Pending proposals, active versions and where they are installed, daemon and nightly state."""
    from skillopt_daemon.service.status import collect_status

    reg = cli_registry()
    data = collect_status(reg.db)
    if json_out:
        print_json(data)
        return
    pending = data.get("pending", {}).get("items", [])
    if pending:
        print_table(
            "Pending proposals",
            ["id", "skill", "version", "score change", "age"],
            [
                (
                    p["short_id"],
                    p["skill"] + (" (new)" if p.get("new") else ""),
                    f"v{p['version']}",
                    _fmt_change(p["score_change"], p["confidence"]),
                    p["age"],
                )
                for p in pending
            ],
        )
    else:
        console.print("No pending proposals.")
    active = data.get("active", {}).get("items", [])
    if active:
        print_table(
            "Active versions",
            ["skill", "target", "active", "since"],
            [
                (
                    a["skill"],
                    a["target"] + ("" if a["enabled"] else " (disabled)"),
                    a["active"] or "-",
                    humanize_age(a["since"]),
                )
                for a in active
            ],
        )
    else:
        console.print("No skills installed through skillopt yet (skillopt skills import).")
    for name, section in data.items():
        if name in ("pending", "active"):
            continue
        lines = section.get("lines") or [f"{k}: {v}" for k, v in section.items() if k != "lines"]
        console.print(f"[bold]{name.capitalize()}:[/] " + escape("; ".join(str(x) for x in lines)))


def _read_evidence(value: str | None) -> dict[str, Any]:
    if not value:
        return {}
    text = value
    if value.startswith("@"):
        try:
            text = Path(value[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise NotFoundError(f"cannot read the evidence file {value[1:]}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConflictError(
            f"--evidence is not valid JSON: {exc}", hint="pass a JSON object, or @FILE"
        ) from None
    if not isinstance(data, dict):
        raise ConflictError("--evidence must be a JSON object")
    return data


def propose(
    skill: str = typer.Argument(..., help="The skill's name (must match the SKILL.md name)."),
    source: Path = typer.Argument(..., help="A skill folder, or a SKILL.md file.", show_default=False),
    evidence: str = typer.Option(
        None, "--evidence", help="A JSON object (or @FILE) with scores, tasks, cost."
    ),
    note: str = typer.Option(None, "--note", help="A short note shown in the history."),
    parent: str = typer.Option(
        None, "--parent", help="The version this one edits (default: the active one)."
    ),
    trained: bool = typer.Option(False, "--trained", help="Mark it as produced by training, not by hand."),
    json_out: bool = JSON_OPT,
) -> None:
    """Register a candidate version by hand, for review with diff / approve / reject."""
    reg = cli_registry()
    if not source.exists():
        raise NotFoundError(f"no skill at {source}", hint="give a skill folder or a SKILL.md file")
    bundle = SkillBundle.from_path(source)
    v = reg.propose(
        skill,
        bundle,
        _read_evidence(evidence),
        origin="trained" if trained else "proposed",
        parent=parent,
        note=note,
    )
    if json_out:
        print_json(v.to_dict())
        return
    console.print(f"Proposed {v.label} as [bold]{v.short_id}[/]. Review it: skillopt diff {v.short_id}")


def diff(
    ref: str = typer.Argument(..., help="A proposal id (against its parent) or SKILL@V1..V2."),
    context: int = typer.Option(3, "-U", "--context", help="Lines of context."),
) -> None:
    """Show what a proposal changes, or the difference between two versions."""
    reg = cli_registry()
    title, text = reg.diff(ref, context)
    err_console.print(f"[bold]{escape(title)}[/]", highlight=False)
    if not text:
        err_console.print("(no differences)")
        return
    if ".." not in ref:
        # A night's proposal says what the user said that motivated each line it adds.
        text = preferences.annotate_diff(text, reg.resolve_id(ref).evidence.get("provenance") or [])
    if sys.stdout.isatty():
        from rich.syntax import Syntax

        console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
    else:
        sys.stdout.write(text)


TARGET_OPT = typer.Option(
    None,
    "--target",
    "-t",
    help="Where to install: claude-code:user or claude-code:project:PATH (repeatable). "
    "Default: every target the skill is enabled for.",
)


def approve(
    ref: str = typer.Argument(..., help="The proposal id (a unique prefix is enough)."),
    target: list[str] = TARGET_OPT,
    force: bool = typer.Option(False, "--force", help="Replace files that were edited by hand."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="List every file that would be touched; change nothing."
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Accept a proposal and install it."""
    reg = cli_registry()
    result = reg.approve(ref, targets=target or None, force=force, dry_run=dry_run)
    if json_out:
        print_json(result.to_dict())
        return
    if dry_run:
        console.print(f"Approving {result.version.label} would:")
        for lines in result.plans:
            for line in lines:
                console.print(f"  {line}", markup=False)
        return
    for he in result.hand_edits:
        err_console.print(f"[yellow]hand edit:[/] {escape(he.describe())} (replaced because of --force)")
    console.print(f"Approved {result.version.label} ({result.version.short_id}).")
    for inst in result.installs:
        how = "installed" if inst.changed else "already in place"
        console.print(f"  {how} at {inst.target}", markup=False)


def reject(
    ref: str = typer.Argument(..., help="The proposal id (a unique prefix is enough)."),
    reason: str = typer.Option(..., "--reason", help="Why: kept in the history."),
    json_out: bool = JSON_OPT,
) -> None:
    """Turn a proposal down. Nothing is installed; the version stays in the history."""
    reg = cli_registry()
    v = reg.reject(ref, reason)
    if json_out:
        print_json(v.to_dict())
        return
    console.print(f"Rejected {v.label} ({v.short_id}).")


def rollback(
    skill: str = typer.Argument(..., help="The skill to roll back."),
    to: str = typer.Option(
        None,
        "--to",
        help="The version to make active (vN, an id, or SKILL@vN). "
        "Default: the parent of the active version.",
    ),
    target: list[str] = TARGET_OPT,
    force: bool = typer.Option(False, "--force", help="Replace files that were edited by hand."),
    json_out: bool = JSON_OPT,
) -> None:
    """Make an older version active again. Recorded as a new event; nothing is deleted."""
    reg = cli_registry()
    outcomes = reg.rollback(skill, to=to, targets=target or None, force=force)
    if json_out:
        print_json([o.to_dict() for o in outcomes])
        return
    for o in outcomes:
        console.print(
            f"{o.version.label} ({o.version.short_id}) is active again at {o.target}.", markup=False
        )


def history(
    skill: str = typer.Argument(..., help="The skill."),
    json_out: bool = JSON_OPT,
) -> None:
    """Every version of a skill and everything that happened to it, oldest first."""
    reg = cli_registry()
    versions = reg.versions(skill)
    events = reg.history(skill)
    if json_out:
        print_json({"versions": [v.to_dict() for v in versions], "events": [e.to_dict() for e in events]})
        return
    labels = {v.id: v.label for v in versions}
    print_table(
        f"Versions of {skill}",
        ["version", "id", "origin", "state", "parent", "created"],
        [
            (
                f"v{v.seq}",
                v.short_id,
                v.origin,
                v.state,
                labels.get(v.parent_id or "", "-"),
                local_display(v.created_at),
            )
            for v in versions
        ],
    )
    print_table(
        "Events",
        ["when", "action", "version", "target", "by", "what"],
        [
            (
                local_display(e.at),
                e.action,
                labels.get(e.version_id or "", "-"),
                e.target or "-",
                e.actor,
                e.message,
            )
            for e in events
        ],
    )


def register(app: typer.Typer) -> None:
    app.command("status")(status)
    app.command("propose")(propose)
    app.command("diff")(diff)
    app.command("approve")(approve)
    app.command("reject")(reject)
    app.command("rollback")(rollback)
    app.command("history")(history)
