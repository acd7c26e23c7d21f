"""`skillopt team init|publish|pull|status`: share a verified rule with a team through git.

The face only: the channel, policy, sanitiser, pull and verdicts are `skillopt_daemon.team`'s. See
`docs/team.md` for what leaves a machine and how the team's evidence combines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from skillopt_daemon.cli.output import console, err_console, literal, print_json, print_table
from skillopt_daemon.cli.review import JSON_OPT, cli_registry
from skillopt_lib.errors import ConflictError

team_app = typer.Typer(
    help="Share verified rules with your team through a git repository; each teammate's night re-proves them.",
    no_args_is_help=True,
)


@team_app.command("init")
def init_cmd(
    remote: str = typer.Argument(..., help="the team repository's git remote (URL or path)"),
    branch: str = typer.Option("main", "--branch", help="the team's main branch"),
    folder: str = typer.Option(
        ".skillopt/rules", "--folder", help="where merged rules live on the main branch"
    ),
    publisher: list[str] = typer.Option(
        [], "--publisher", help="an email or name allowed to publish (repeat; none: anyone who can push)"
    ),
    scope: list[str] = typer.Option(
        [], "--scope", help="a scope shared rules may have: project or user (repeat; default both)"
    ),
    no_reverify: bool = typer.Option(
        False,
        "--no-reverify",
        help="receivers need not re-prove a rule for a skill they have: it is proposed, for review, when pulled",
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Record the team repository and write its policy (.skillopt/team.toml) when it has none."""
    from skillopt_daemon.team.channel import TeamSettings
    from skillopt_daemon.team.policy import SCOPES, TeamPolicy
    from skillopt_daemon.team.publish import init

    policy = TeamPolicy.parse(
        TeamPolicy(tuple(publisher), tuple(scope) or SCOPES, not no_reverify, folder).to_toml()
    )  # parsed back: what init writes is what a receiver will read
    channel, wrote = init(TeamSettings(remote, branch), policy)
    effective = channel.policy()
    data = {
        "remote": remote,
        "branch": branch,
        "policy_written": wrote,
        "policy": {
            "publishers": list(effective.publishers),
            "scopes": list(effective.scopes),
            "reverify": effective.reverify,
            "folder": effective.folder,
        },
    }
    if json_out:
        print_json(data)
        return
    console.print(f"team repository set: {literal(remote)} (branch {literal(branch)})", highlight=False)
    if wrote:
        console.print("wrote the team policy .skillopt/team.toml on the main branch", highlight=False)
    else:
        console.print("the team already has a policy (.skillopt/team.toml): kept as it is", highlight=False)


@team_app.command("publish")
def publish_cmd(
    skill: str = typer.Argument(None, help="the skill whose approved version to share"),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="print exactly what would be committed; commit nothing"
    ),
    with_words: bool = typer.Option(False, "--with-words", help="include your own correction words"),
    scope: str = typer.Option(
        None, "--scope", help="project or user (default: where the skill is installed)"
    ),
    verdicts: bool = typer.Option(
        False, "--verdicts", help="publish your night's verdicts on teammates' rules"
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Share a skill's approved version with the team: its text, the gate's figures and provenance counts."""
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.team.channel import Channel, TeamSettings

    if verdicts:
        _publish_verdicts(json_out)
        return
    if not skill:
        raise ConflictError("name the skill to publish", hint="skillopt team publish SKILL (or --verdicts)")
    if scope is not None and scope not in ("project", "user"):
        raise ConflictError(f"unknown scope {scope!r}", hint="use project or user")
    from skillopt_daemon.team.publish import prepare, publish
    from skillopt_daemon.team.review_request import open_request

    reg = cli_registry()
    publication, scope = prepare(
        reg, skill, scope=scope, with_words=with_words, redact_patterns=load_settings().ingest.redact_patterns
    )
    if dry_run:
        if json_out:
            print_json({"skill": skill, "scope": scope, "files": publication.files, "committed": False})
        else:
            console.print(
                f"would publish {literal(skill)} ({scope} scope); nothing committed:", highlight=False
            )
            console.print(literal(publication.describe()), highlight=False, soft_wrap=True)
        return
    settings = TeamSettings.load()
    channel = Channel(settings)
    done = publish(channel, publication, scope)
    request = None
    if done.pushed:
        request = open_request(
            channel.root,
            done.branch,
            settings.branch,
            f"skillopt rule: {skill}",
            f"A rule shared by skillopt. Each teammate's night re-proves it on their own work.\n\n"
            f"```\n{publication.files.get('skillopt-rule.json', '')}```\n",
        )
    data: dict[str, Any] = {
        "skill": skill,
        "branch": done.branch,
        "pushed": done.pushed,
        "already_published": done.already,
        "review": None if request is None else {"url": request.url, "how": request.how},
    }
    if json_out:
        print_json(data)
        return
    for note in done.notes:
        console.print(literal(note), highlight=False)
    if done.pushed:
        console.print(f"published {literal(skill)} on branch {literal(done.branch)}", highlight=False)
    if request is not None:
        console.print(
            f"review: {literal(request.url)}" if request.url else f"next: {literal(request.how)}",
            highlight=False,
        )


def _publish_verdicts(json_out: bool) -> None:
    from skillopt_daemon.team.channel import Channel, TeamSettings
    from skillopt_daemon.team.verdicts import publish_verdicts

    reg = cli_registry()
    branch, n, pushed = publish_verdicts(Channel(TeamSettings.load()), reg.db)
    if json_out:
        print_json({"branch": branch, "verdicts": n, "pushed": pushed})
    elif not n:
        console.print("no verdicts yet: your nights have not measured a teammate's rule", highlight=False)
    else:
        state = "published" if pushed else "already published"
        console.print(f"{n} verdict(s) {state} on branch {literal(branch)}", highlight=False)


@team_app.command("pull")
def pull_cmd(json_out: bool = JSON_OPT) -> None:
    """Fetch the rules teammates published; each becomes a candidate for your next night, screened first."""
    from skillopt_daemon.team.channel import Channel, TeamSettings
    from skillopt_daemon.team.pull import pull

    reg = cli_registry()
    found = pull(Channel(TeamSettings.load()), reg.db, reg)
    if json_out:
        print_json([p.to_dict() for p in found])
        return
    if not found:
        console.print("no rules from teammates yet", highlight=False)
        return
    print_table(
        "Rules from the team",
        ["skill", "published by", "here", "note"],
        [[p.skill, p.published_by, _said(p.status), p.note] for p in found],
    )


def _said(status: str) -> str:
    return {
        "new": "queued for the next night",
        "changed": "changed: queued again",
        "unchanged": "already received",
        "refused": "refused",
        "proposed": "proposed for your review (skillopt status)",
    }.get(status, status)


@team_app.command("status")
def status_cmd(json_out: bool = JSON_OPT) -> None:
    """Per shared rule: how many members it helped, hurt, or could not be measured for; and yours here."""
    from skillopt_daemon.night.learning import shared_rules
    from skillopt_daemon.team.channel import Channel, TeamSettings
    from skillopt_daemon.team.git import TeamError
    from skillopt_daemon.team.verdicts import tally

    channel = Channel(TeamSettings.load())
    warning = None
    try:
        channel.fetch()
    except TeamError as exc:
        warning = f"{exc.message}; showing what was fetched before"
    tallies = tally(channel) if (channel.root / ".git").is_dir() else []
    team = [t.to_dict() for t in tallies]
    reg = cli_registry()
    mine = [r.to_dict() for r in shared_rules.rules(reg.db)]
    if json_out:
        print_json({"team": team, "received": mine, "warning": warning})
        return
    if warning:
        err_console.print(f"[yellow]warning:[/] {literal(warning)}", highlight=False)
    if team:
        print_table(
            "The team's verdicts",
            ["rule", "published by", "publisher's gate", "helped", "hurt", "not measured", "members"],
            [
                [t.rule, t.published_by, t.publisher_said(), t.helped, t.hurt, t.unmeasured, len(t.members)]
                for t in tallies
            ],
        )
    else:
        console.print("no rules or verdicts from the team yet", highlight=False)
    if mine:
        print_table(
            "Rules received here",
            ["skill", "published by", "state", "verdict", "note"],
            [[r["skill"], r["published_by"], r["state"], r["verdict"] or "", r["note"]] for r in mine],
        )


@team_app.command("recognise")
def recognise_cmd(
    project: Path = typer.Argument(None, help="the repository to look in (default: the current folder)"),
    json_out: bool = JSON_OPT,
) -> None:
    """Register team rules committed in a repository (skill folders with skillopt-rule.json) as yours.

    skillopt never writes over them, and later edits are recorded as hand edits."""
    from skillopt_daemon.team.recognise import recognise

    found = recognise(cli_registry(), project or Path.cwd())
    if json_out:
        print_json([r.to_dict() for r in found])
        return
    if not found:
        console.print(
            "no team rules committed here (no skill folder holds skillopt-rule.json)", highlight=False
        )
        return
    print_table(
        "Team rules in this repository",
        ["skill", "target", "here"],
        [[r.skill, r.target.key if r.target else "", r.message] for r in found],
    )


def register(app: typer.Typer) -> None:
    app.add_typer(team_app, name="team")
