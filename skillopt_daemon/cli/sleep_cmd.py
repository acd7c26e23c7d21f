"""`skillopt sleep`: the nightly cycle, run now or on its schedule.

The command keeps the name users know; in the code the cycle is "night" (`skillopt_daemon.night`).
"""

from __future__ import annotations

import json
from typing import Any

import typer

from skillopt_daemon.cli.output import console, err_console, literal, print_json, print_table
from skillopt_daemon.core import fsio
from skillopt_daemon.core.config import load_settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import local_display
from skillopt_daemon.night import agents as night_agents
from skillopt_daemon.night import cycle, runs, schedule
from skillopt_lib.usage import format_cost

night_app = typer.Typer(
    help="The nightly cycle: mine, replay, train, and propose better skills.", no_args_is_help=True
)
schedule_app = typer.Typer(help="When the daemon runs the nightly cycle.", no_args_is_help=True)
night_app.add_typer(schedule_app, name="schedule")
JSON_OPT = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


@night_app.command("run")
def run(
    now: bool = typer.Option(
        False, "--now", help="Run even when nothing new was ingested since the last night (else it skips)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Do everything but register proposals."),
    skill: str = typer.Option(None, "--skill", help="Only this skill."),
    json_out: bool = JSON_OPT,
) -> None:
    """Run one nightly cycle here: catch up ingest, mine tasks, replay and train, register gated proposals."""
    if not now and not skill and not runs.new_since_last(open_db()):
        if json_out:
            print_json({"status": "skipped", "reason": "nothing new was ingested since the last night"})
        else:
            console.print("Nothing new was ingested since the last night; use --now to run anyway.")
        return
    settings = load_settings()
    model = night_agents.night_model(settings, night_agents.tools_by_sessions(open_db()))
    shown = _model_before_the_night(model)
    if shown is None:
        if json_out:
            print_json(
                {"status": "skipped", "reason": "you said no to using your agent login as the optimizer"}
            )
        else:
            console.print("No night ran: you said no to using your agent login as the optimizer.")
        return
    ceiling = night_agents.cost_ceiling(settings)
    if ceiling is not None and not runs.has_spent(open_db()):
        err_console.print(f"note: {ceiling.line()}", markup=False, highlight=False, soft_wrap=True)
    if not dry_run:  # a dry run touches nothing, the team's queue included
        from skillopt_daemon.team.nightly import pull_before_night

        pulled = pull_before_night()  # teammates' rules, as before a scheduled night
        if pulled:
            err_console.print(f"note: {pulled}", markup=False, highlight=False, soft_wrap=True)
    status = err_console.status("starting the nightly cycle", spinner="dots")
    with status:
        report = cycle.run_cycle(
            trigger="manual", dry_run=dry_run, skill=skill, progress=lambda m: status.update(literal(m))
        )
    if json_out:
        print_json(report.to_dict())
    else:
        if report.start_note:
            console.print(report.start_note, markup=False)
        why = report.error or report.reason
        if why and shown:
            why = why.replace(
                f"; and then the night needs a model: {shown}",
                "; and then the night needs a model (see above)",
            )
        console.print(f"Night {report.run_id}: {report.status}" + (f" ({why})" if why else ""), markup=False)
        m = report.mining
        if m:
            console.print(f"mined {m.get('families', 0)} task families with {m.get('tasks', 0)} tasks")
        for missing in report.missing:
            if missing == shown:
                continue  # the advice printed before the night
            console.print(f"[yellow]missing for replays:[/] {literal(missing)}")
        if report.skills:
            print_table(
                "Skills",
                ["skill", "result", "tasks", "baseline", "candidate", "proposal", "why"],
                [
                    (
                        s.skill,
                        s.status,
                        s.tasks,
                        "-" if s.baseline is None else f"{s.baseline:.3f}",
                        "-" if s.candidate is None else f"{s.candidate:.3f}",
                        (s.proposal_id or "-")[:8],
                        s.reason,
                    )
                    for s in report.skills
                ],
            )
        console.print(spend_line(report.spend), markup=False)
        if report.proposals:
            console.print("Review with `skillopt status` and `skillopt diff ID`.")
    if report.failure:
        err_console.print(f"[red]error:[/] {literal(report.failure)}")
        raise typer.Exit(1)


def _model_before_the_night(model: night_agents.NightModel) -> str | None:
    """Before a night starts: which model it will use and the most it may use. With no optimizer set and
    no answer yet about the user's agent login, the night is what spends it: at a terminal the user is asked
    (the same question as `skillopt install`, no by default), and a no stops the night (None is returned);
    elsewhere the question and how to answer are printed once. Returns the advice already printed, which the
    night's own summary does not repeat ("" when none was)."""
    from skillopt_daemon.cli import consent

    if model.asks:
        answer = consent.ask(model)
        if answer is None:
            return model.problem or ""  # not at a terminal: the note above says how to answer
        if answer == "no":
            return None
        model = night_agents.night_model(load_settings(), [model.tool] if model.tool else [])
    # Every night says which model it will use and the most it may use, before it starts.
    err_console.print(model.line(), markup=False, highlight=False, soft_wrap=True)
    return model.problem or ""


def spend_line(sp: dict[str, Any]) -> str:
    """What a night spent: tokens at what they cost (with the cache reads among the raw counts), money as an
    estimate with what priced it, replays and time."""
    priced = ", ".join(sp.get("priced_by") or [])
    money = format_cost(sp.get("cost_usd", 0)) + (f" ({priced})" if priced else "")
    raw = (
        f" (fresh {sp.get('fresh_tokens', 0):,}, cache writes {sp.get('cache_write_tokens', 0):,}, "
        f"cache reads {sp.get('cache_read_tokens', 0):,}, output {sp.get('output_tokens', 0):,})"
        if "cache_read_tokens" in sp
        else ""
    )
    return (
        f"spent {sp.get('tokens', 0):,} tokens at what they cost{raw}, {money}, "
        f"{sp.get('replays', 0)} replays, {sp.get('wall_s', 0):.1f} s"
    )


@night_app.command("history")
def history(limit: int = typer.Option(20, "--limit"), json_out: bool = JSON_OPT) -> None:
    """Past nightly cycles, newest first."""
    db = open_db()
    rows = list(db.query("SELECT * FROM night_runs ORDER BY started_at DESC LIMIT ?", [limit]))
    for r in rows:
        r["summary"] = json.loads(r.pop("summary_json") or "{}")
    if json_out:
        print_json(rows)
        return
    if not rows:
        console.print("No nightly cycle has run yet.")
        return
    print_table(
        "Nightly cycles",
        ["id", "trigger", "status", "started", "proposals", "note"],
        [
            (
                r["id"],
                r["trigger"],
                r["status"],
                r["started_at"],
                len([s for s in r["summary"].get("skills", []) if s.get("proposal_id")]),
                r["error"] or r["summary"].get("reason", ""),
            )
            for r in rows
        ],
    )


@schedule_app.command("show")
def schedule_show(json_out: bool = JSON_OPT) -> None:
    """The cron expression (local time) and the next time it fires."""
    s = load_settings().night
    data = {
        "schedule": s.schedule,
        "enabled": s.enabled,
        "next": schedule.next_fire(s.schedule) if s.enabled else None,
        "daemon_running": fsio.daemon_running(),
        "misfire_grace_s": s.misfire_grace_s,
    }
    if json_out:
        print_json(data)
        return
    console.print(f"schedule: {s.schedule} (local time){'' if s.enabled else ' — disabled'}")
    if data["next"]:
        console.print(f"next run: {local_display(str(data['next']))}")
    if not data["daemon_running"]:
        console.print("the daemon is not running: nothing runs on schedule until `skillopt daemon start`")


@schedule_app.command("set")
def schedule_set(expr: str = typer.Argument(..., help="Five cron fields, e.g. '17 3 * * *'.")) -> None:
    """Change when the nightly cycle runs (takes effect when the daemon restarts)."""
    from skillopt_daemon.cli.config_cmd import set_cmd

    schedule.trigger(expr)  # validate before writing
    set_cmd("night.schedule", expr)
    console.print(f"next run {schedule.next_fire(expr)}")
    console.print("restart the daemon to apply it: skillopt daemon stop && skillopt daemon start")


def register(app: typer.Typer) -> None:
    app.add_typer(night_app, name="sleep")
