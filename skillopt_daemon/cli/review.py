"""Reviewing what skillopt proposes: status, propose, diff, approve, reject, rollback, history.

Only presentation lives here; every rule is in `skillopt_daemon.registry`, which the dashboard calls too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from skillopt_daemon.cli.output import (
    console,
    err_console,
    literal,
    print_json,
    print_table,
    write_text,
)
from skillopt_daemon.core.timeutil import humanize_age, local_display
from skillopt_daemon.registry import Registry, open_registry, project_folder
from skillopt_daemon.registry.models import InstallOutcome
from skillopt_daemon.registry.scope import describe as describe_scope
from skillopt_lib.errors import ConflictError, NotFoundError, SkillOptError
from skillopt_lib.skill import SkillBundle

JSON_OPT = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


def cli_registry() -> Registry:
    """Open the registry for a command, telling the user about any interrupted install it settled."""
    reg, notes = open_registry(actor="cli")
    for note in notes:
        err_console.print(f"[yellow]note:[/] {literal(note)}", highlight=False)
    return reg


def _fmt_change(change: float | None, confidence: float | None) -> str:
    if change is None:
        return "-"
    text = f"{change:+.3f}"
    if confidence is not None:
        text += f" ({confidence:.0%} conf.)"
    return text


def _tier_cell(p: dict[str, Any]) -> Any:
    """The tier as the proposals table shows it: a `likely` proposal is never mistaken for a proven one."""
    from rich.text import Text

    if p.get("proven", True):
        return Text("proven", style="green")
    return Text(p["tier_label"], style="bold yellow")


def status(json_out: bool = JSON_OPT) -> None:
    """Pending proposals, recent decisions, active versions and where they are installed, daemon and nightly state."""
    from skillopt_daemon.service.status import collect_status

    reg = cli_registry()
    if not json_out:
        _ask_consent(reg)
    data = collect_status(reg.db)
    if json_out:
        print_json(data)
        return
    pending = data.get("pending", {}).get("items", [])
    if pending:
        print_table(
            "Pending proposals",
            ["id", "skill", "version", "change", "score change", "tier", "age"],
            [
                (
                    p["short_id"],
                    p["skill"] + (" (new)" if p.get("new") else ""),
                    f"v{p['version']}",
                    p.get("summary") or "-",
                    _fmt_change(p["score_change"], p["confidence"]),
                    _tier_cell(p),
                    p["age"],
                )
                for p in pending
            ],
        )
        for p in pending:
            missing = p.get("provenance_missing") or []
            if missing:
                console.print(
                    f"[bold yellow]{literal(p['short_id'])} adds {len(missing)} line(s) with no provenance[/] "
                    "(no correction of yours says them; never auto-approved): "
                    + literal("; ".join(str(x) for x in missing)),
                    highlight=False,
                )
            if p.get("screen_warnings"):
                console.print(
                    f"[bold red]{literal(p['short_id'])} was flagged by the candidate screen[/] "
                    f"(read it with skillopt diff {literal(p['short_id'])}; never auto-approved): "
                    + literal("; ".join(p["screen_warnings"])),
                    highlight=False,
                )
            if p.get("scope"):
                console.print(
                    f"{literal(p['short_id'])} installs in {literal(describe_scope(p['scope']))}",
                    highlight=False,
                )
            if p.get("from_team"):
                console.print(f"{literal(p['short_id'])} is {literal(p['from_team'])}", highlight=False)
            for c in p.get("conflicts") or []:
                console.print(
                    f"[bold yellow]{literal(p['short_id'])} {literal(c['text'])}[/]", highlight=False
                )
            if not p.get("proven", True) and p.get("tier_note"):
                console.print(
                    f"[bold yellow]{literal(p['short_id'])} is {literal(p['tier_label'])}:[/] "
                    + literal(p["tier_note"]),
                    highlight=False,
                )
    else:
        console.print("No pending proposals.")
    decided = data.get("decided", {}).get("items", [])
    if decided:
        print_table(
            "Recently decided",
            ["id", "skill", "version", "decision", "when", "change", "reason"],
            [
                (
                    d["short_id"],
                    d["skill"],
                    f"v{d['version']}",
                    d["decision"],
                    d["decided"],
                    d.get("summary") or "-",
                    d.get("reason") or "-",
                )
                for d in decided
            ],
        )
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
        if name in ("pending", "decided", "active"):
            continue
        lines = section.get("lines") or [f"{k}: {v}" for k, v in section.items() if k != "lines"]
        console.print(f"[bold]{name.capitalize()}:[/] " + literal("; ".join(str(x) for x in lines)))


def _ask_consent(reg: Registry) -> None:
    """At the first `skillopt status` in a terminal: may the night use the user's agent login?"""
    from skillopt_daemon.cli import consent

    if not consent.interactive():
        return  # the nightly section says how to answer
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.night.agents import night_model, tools_by_sessions

    consent.ask(night_model(load_settings(), tools_by_sessions(reg.db)))


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
    from skillopt_daemon.service.proposals import tier

    t = tier(v.evidence, v.origin)
    if not t["proven"]:
        console.print(f"[yellow]{literal(t['label'])}:[/] {literal(t['note'] or '')}", highlight=False)


def _screen_notes(item: dict[str, Any]) -> None:
    """The lines with no provenance, then the screen's warnings, before the diff (on stderr, like the tier):
    a line nobody asked for is the first thing a reviewer reads."""
    missing = item.get("provenance_missing") or []
    if missing:
        err_console.print(
            f"[bold yellow]{len(missing)} added line(s) with no provenance[/] (no correction of yours says "
            "them; never approved automatically; marked ⚠ in the diff):",
            highlight=False,
        )
        for line in missing:
            err_console.print(f"  [yellow]⚠ {literal(str(line))}[/]", highlight=False)
    warnings = item.get("screen_warnings") or []
    if warnings:
        err_console.print(
            "[bold red]flagged by the candidate screen (never auto-approved); read these lines before approving:[/]",
            highlight=False,
        )
        for w in warnings:
            err_console.print(f"  [red]⚠ {literal(w)}[/]", highlight=False)


def diff(
    ref: str = typer.Argument(
        None,
        help="A proposal id (against its parent) or SKILL@V1..V2. Default: the newest pending proposal.",
    ),
    context: int = typer.Option(3, "-U", "--context", help="Lines of context."),
    json_out: bool = JSON_OPT,
) -> None:
    """Show what a proposal changes (the newest pending one by default), or the difference between two versions."""
    from skillopt_daemon.service.proposals import diff_view

    reg = cli_registry()
    view = diff_view(reg, ref, context)
    if json_out:
        print_json(view)
        return
    item = view["proposal"]
    if view["ref"] is None:
        console.print(
            "No pending proposals: nothing to show. "
            "Give a version (skillopt diff ID, or SKILL@V1..V2); skillopt status lists recent ones."
        )
        return
    err_console.print(f"[bold]{literal(view['title'])}[/]", highlight=False)
    if item is not None:
        err_console.print(f"change: {literal(item['summary'])}", highlight=False)
        if item["proven"]:
            err_console.print("[green]tier: proven[/]", highlight=False)
        else:
            note = f": {literal(item['tier_note'])}" if item["tier_note"] else ""
            err_console.print(f"[bold yellow]tier: {literal(item['tier_label'])}[/]{note}", highlight=False)
        if item.get("scope"):
            err_console.print(f"installs in {literal(describe_scope(item['scope']))}", highlight=False)
        for c in item.get("conflicts") or []:
            err_console.print(f"[bold yellow]{literal(c['text'])}[/]", highlight=False)
        _screen_notes(item)
    text = view["diff"]
    if not text:
        err_console.print("(no differences)")
        return
    if sys.stdout.isatty():
        from rich.syntax import Syntax

        from skillopt_lib.safetext import printable

        # Wrapped, never cropped: the end of a long added line is part of what is being approved.
        syntax = Syntax(
            printable(text), "diff", theme="ansi_dark", background_color="default", word_wrap=True
        )
        console.print(syntax)
    else:
        write_text(text)


TARGET_OPT = typer.Option(
    None,
    "--target",
    "-t",
    help="Where to install: claude-code:user or claude-code:project:PATH (repeatable). "
    "Default: every target the skill is enabled for.",
)


class MissingOptionError(SkillOptError):
    """A value the command needs and could not ask for (no terminal): a usage error, exit 2 as before."""

    exit_code = 2


def _at_terminal() -> bool:
    """A person at a terminal can be asked; a pipe, a hook or an agent gets a plain error instead."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def _chosen(reg: Registry, ref: str | None, verb: str, json_out: bool) -> str:
    """The proposal to `verb`: `ref`, or the newest pending one as `skillopt diff` shows it. When several
    are pending, say which was taken, and at a terminal ask before going on."""
    if ref:
        return ref
    from skillopt_daemon.service.proposals import newest_pending

    newest, count = newest_pending(reg)
    if newest is None:
        raise NotFoundError(
            f"no pending proposals to {verb}", hint="give a proposal id; skillopt status lists recent ones"
        )
    if count > 1:
        err_console.print(
            f"{count} proposals are pending; taking the newest, {literal(newest.label)} ({newest.short_id}). "
            f"Read it first with skillopt diff {newest.short_id}; another: skillopt {verb} ID",
            highlight=False,
            soft_wrap=True,
        )
        if (
            _at_terminal()
            and not json_out
            and not typer.confirm(f"{verb.capitalize()} {newest.label}?", err=True)
        ):
            raise typer.Abort()
    return newest.id


def approve(
    ref: str = typer.Argument(
        None, help="The proposal id (a unique prefix is enough). Default: the newest pending proposal."
    ),
    target: list[str] = TARGET_OPT,
    scope: str = typer.Option(
        None,
        "--scope",
        help="Install in project or user scope instead of where its evidence says (for each tool it was "
        "learned with); says first what the evidence supports there.",
    ),
    repo: Path = typer.Option(
        None,
        "--repo",
        help="With --scope project: the repository (default: the one its evidence comes from).",
    ),
    force: bool = typer.Option(False, "--force", help="Replace files that were edited by hand."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="List every file that would be touched; change nothing."
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Accept a proposal (the newest pending one by default, as diff shows) and install it."""
    reg = cli_registry()
    ref = _chosen(reg, ref, "approve", json_out or dry_run)
    verdict = None
    if scope is not None or repo is not None:
        from skillopt_daemon.registry.scope import choose

        if target:
            raise ConflictError("--scope and --target both say where to install", hint="give one of them")
        v = reg.resolve_id(ref)
        choice = choose(v.evidence, scope or "project", repo, v.short_id)
        verdict = choice.verdict
        target = [t.key for t in choice.targets]
        if not json_out:
            err_console.print(f"{scope or 'project'} scope: {literal(verdict)}", highlight=False)
    result = reg.approve(ref, targets=target or None, force=force, dry_run=dry_run)
    notes = [] if dry_run else _project_notes(result.installs)
    if json_out:
        extra = {"project_folders": notes, **({"scope_verdict": verdict} if verdict else {})}
        print_json({**result.to_dict(), **extra})
        return
    if dry_run:
        console.print(f"Approving {result.version.label} would:")
        for lines in result.plans:
            for line in lines:
                console.print(f"  {line}", markup=False)
        return
    for he in result.hand_edits:
        err_console.print(f"[yellow]hand edit:[/] {literal(he.describe())} (replaced because of --force)")
    console.print(f"Approved {result.version.label} ({result.version.short_id}).")
    for inst in result.installs:
        how = "installed" if inst.changed else "already in place"
        console.print(f"  {how} at {inst.target}", markup=False)
    for note in notes:
        console.print(f"  {note}", markup=False)


def _project_notes(installs: list[InstallOutcome]) -> list[str]:
    """For each project install: its folder is the user's to commit or ignore (`registry/project_folder`)."""
    out = []
    for inst in installs:
        where = project_folder.folder(inst.target, inst.files)
        if where is not None and inst.target.project is not None:
            out.append(project_folder.note(where, inst.target.project))
    return out


def reject(
    ref: str = typer.Argument(
        None, help="The proposal id (a unique prefix is enough). Default: the newest pending proposal."
    ),
    reason: str = typer.Option(
        None, "--reason", help="Why: kept in the history, and read by later nights. Asked for at a terminal."
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Turn a proposal down (the newest pending one by default). Nothing is installed; the version stays
    in the history."""
    reg = cli_registry()
    ref = _chosen(reg, ref, "reject", json_out)
    if not (reason or "").strip():
        if not _at_terminal() or json_out:
            raise MissingOptionError(
                "a rejection needs a reason", hint='pass it with --reason "why" (kept in the history)'
            )
        label = reg.resolve_id(ref).label
        reason = typer.prompt(f"Why reject {label}? (kept in the history)", err=True)
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
        "Default: the parent of the active version; for a skill's first version, none (it is removed).",
    ),
    target: list[str] = TARGET_OPT,
    force: bool = typer.Option(False, "--force", help="Replace files that were edited by hand."),
    reason: str = typer.Option(None, "--reason", help="Why: kept in the history and shown by status."),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Say which version would become active and every file touched; change nothing.",
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Make an older version active again; a new skill's first version is taken away. Recorded, nothing deleted."""
    reg = cli_registry()
    if dry_run:
        plans = reg.rollback_plan(skill, to=to, targets=target or None)
        if json_out:
            print_json([{**p.to_dict(), "dry_run": True} for p in plans])
            return
        for p in plans:
            now = p.current.label if p.current else "no version"
            if p.dest is None:
                console.print(
                    f"Rolling back {skill} at {p.target} would remove {now} (its first version):",
                    markup=False,
                )
            else:
                console.print(
                    f"Rolling back {skill} at {p.target} would make {p.dest.label} active instead of {now}:",
                    markup=False,
                )
            for line in p.lines:
                console.print(f"  {line}", markup=False)
        console.print("Nothing was changed (--dry-run).")
        return
    outcomes = reg.rollback(skill, to=to, targets=target or None, force=force, reason=reason)
    if json_out:
        print_json([o.to_dict() for o in outcomes])
        return
    for o in outcomes:
        if o.removed:
            console.print(
                f"{o.version.label} ({o.version.short_id}) was {skill}'s first version: it is removed from "
                f"{o.target}. Put it back with: skillopt rollback {skill} --to v{o.version.seq}",
                markup=False,
            )
        else:
            console.print(
                f"{o.version.label} ({o.version.short_id}) is active again at {o.target}.", markup=False
            )


def history(
    skill: list[str] = typer.Argument(None, help="The skills (default: every skill)."),
    json_out: bool = JSON_OPT,
) -> None:
    """Every version of a skill (of every skill by default) and everything that happened to it, oldest first."""
    reg = cli_registry()
    names = list(skill or [])
    for name in names:
        reg.require_skill(name)
    if len(names) == 1:  # one skill: the shape this command always printed
        _history_one(reg, names[0], json_out)
        return
    names = names or reg.skill_names()
    if json_out:
        print_json(
            {
                "skills": [
                    {
                        "skill": name,
                        "versions": [v.to_dict() for v in reg.versions(name)],
                        "events": [e.to_dict() for e in reg.history(name)],
                        "installed_at": [t for t, _ in _installed_at(reg, name)],
                    }
                    for name in names
                ]
            }
        )
        return
    if not names:
        console.print("No skills registered yet. Import yours: skillopt skills import")
        return
    rows = []
    for name in names:
        versions = reg.versions(name)
        labels = {v.id: v.label for v in versions}
        rows += [
            (
                v.label,
                v.short_id,
                v.origin,
                v.state,
                labels.get(v.parent_id or "", "-"),
                local_display(v.created_at),
            )
            for v in versions
        ]
    print_table("Versions of every skill", ["version", "id", "origin", "state", "parent", "created"], rows)
    for name in names:
        console.print(f"{name}: {_where(reg, name)}", markup=False)
    console.print("Each skill's events: skillopt history SKILL", highlight=False)


def _installed_at(reg: Registry, skill: str) -> list[tuple[str, str]]:
    """Each target where a version of `skill` is active now, with that version's label."""
    labels = {v.id: v.label for v in reg.versions(skill)}
    return [
        (ts.target.key, labels.get(ts.active_version_id, ts.active_version_id))
        for ts in reg.targets(skill)
        if ts.enabled and ts.active_version_id
    ]


def _where(reg: Registry, skill: str) -> str:
    found = _installed_at(reg, skill)
    return "installed at: " + ", ".join(f"{t} ({v})" for t, v in found) if found else "installed nowhere"


def _history_one(reg: Registry, skill: str, json_out: bool) -> None:
    versions = reg.versions(skill)
    events = reg.history(skill)
    if json_out:
        print_json(
            {
                "versions": [v.to_dict() for v in versions],
                "events": [e.to_dict() for e in events],
                "installed_at": [t for t, _ in _installed_at(reg, skill)],
            }
        )
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
    console.print(_where(reg, skill), markup=False)


def register(app: typer.Typer) -> None:
    app.command("status")(status)
    app.command("propose")(propose)
    app.command("diff")(diff)
    app.command("approve")(approve)
    app.command("reject")(reject)
    app.command("rollback")(rollback)
    app.command("history")(history)
