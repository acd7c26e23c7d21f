"""What a night tells the user: the nightly section of `skillopt status`, and a desktop notification when a
night leaves proposals to review.

The section first settles nights that were killed (`runs.settle_stale`), so a `kill -9` never reads as
"running" for longer than it takes to look. It leads with what needs the user: a night running now (on
which skill or family, replays done of planned), or the reason the last night trained nothing; then the
last night's result, the next one, and before the first night that spends money on an API key, what a
night may cost at most.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import sqlite_utils

from skillopt_daemon.core import fsio
from skillopt_daemon.core.config import Settings, load_settings
from skillopt_daemon.core.timeutil import humanize_age, local_display
from skillopt_daemon.night import runs, schedule
from skillopt_daemon.night.agents import cost_ceiling, night_model, role_keys, tools_by_sessions
from skillopt_daemon.night.mining import grouping
from skillopt_daemon.night.pending import pending_lines
from skillopt_daemon.night.report import CycleReport
from skillopt_daemon.registry import Registry
from skillopt_lib.errors import SkillOptError
from skillopt_lib.skill import NAME_RE
from skillopt_lib.usage import format_cost


def notify(report: CycleReport) -> None:
    """A desktop notification where one is available; the status line is always there. Never raises."""
    if not report.proposals:
        return
    desktop("skillopt", f"{len(report.proposals)} new skill proposal(s): run `skillopt status` to review")


def desktop(title: str, body: str) -> None:
    """Show `body` as a desktop notification (notify-send, osascript) where one is available. Never raises;
    `SKILLOPT_NO_DESKTOP_NOTIFY` turns it off."""
    body = body.replace('"', "'")
    cmd: list[str] | None = None
    if shutil.which("notify-send"):
        cmd = ["notify-send", title, body]
    elif shutil.which("osascript"):
        cmd = ["osascript", "-e", f'display notification "{body}" with title "{title}"']
    if cmd is None or os.environ.get("SKILLOPT_NO_DESKTOP_NOTIFY"):
        return
    try:
        subprocess.run(cmd, timeout=5, check=False, capture_output=True)
    except (OSError, subprocess.SubprocessError):
        pass


def _running_lines(row: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """The night running now: what it is on and its replays, from the progress it records."""
    prog = runs.read_progress(row["id"]) or {}
    data["running"] = {"id": row["id"], "pid": row["pid"], "started_at": row["started_at"], **prog}
    text = f"Tonight (running): started {humanize_age(row['started_at'])}, pid {row['pid']}"
    if prog.get("family"):
        text += f": a new skill for the family '{prog['family']}'"
    elif prog.get("skill"):
        text += f": training {prog['skill']}"
    elif prog.get("step"):
        text += f": {prog['step']}"
    if prog.get("total"):
        text += f" ({prog.get('index')} of {prog['total']})"
    done, planned = prog.get("replays_done"), prog.get("replays_planned")
    if planned:
        text += f"; {done or 0} of about {planned} replays planned"
    elif done is not None:
        text += f"; {done} replays so far"
    if prog.get("cost_usd"):
        priced = ", ".join(prog.get("priced_by") or [])
        text += f"; {format_cost(prog['cost_usd'])}" + (f" ({priced})" if priced else "") + " so far"
    return [text]


def _last_lines(
    last: dict[str, Any],
    data: dict[str, Any],
    family_names: dict[str, str] | None = None,
    nowhere: set[str] | None = None,
    provisional: bool = False,
) -> list[str]:
    """Fill `data` with the last night's result; returns its lines, the reason it trained nothing first.
    `family_names`: the mined families' descriptions by id, to tell a family that got no draft from a
    drafted skill. `nowhere`: the skills installed nowhere now (the registry's state), to tell a skill last
    night skipped as uninstalled that is installed again since. `provisional`: the families are grouped by
    words, so what they wait for is marked provisional (`grouping.py`)."""
    summary = json.loads(last.get("summary_json") or "{}")
    data["last"] = {
        k: last[k] for k in ("id", "trigger", "status", "dry_run", "started_at", "finished_at", "error")
    }
    data["last"]["proposals"] = [
        s.get("proposal_id") for s in summary.get("skills", []) if s.get("proposal_id")
    ]
    data["last"]["skills"] = summary.get("skills", [])
    data["missing"] = summary.get("missing") or []
    data["families"] = summary.get("families") or []
    lines: list[str] = []
    # Labelled with its date, apart from a night running now: its notes are not tonight's progress.
    text = f"{last_label(last)}: {last['status']} ({humanize_age(last['started_at'])})"
    if data["last"]["proposals"]:
        text += f", {len(data['last']['proposals'])} proposal(s)"
    stopped = summary.get("stopped")
    data["last"]["stopped"] = stopped
    if last["status"] == "failed" and data["missing"]:
        # What stopped it, in full; the night's own error repeats it at length.
        data["attention"] = f"last night trained nothing: {data['missing'][0]}"
        text += f", trained nothing: {data['missing'][0]}"
    elif last.get("error"):
        text += f": {last['error']}"
    elif isinstance(stopped, dict) and stopped.get("note"):
        # Which cap stopped it, what was spent, and the command that raises that cap.
        text += f": {stopped['note']}"
    lines.append(text)
    for s in data["last"]["skills"]:
        if _undrafted_family(s, family_names):
            # Tonight's candidate for a new skill that was never drafted: its `skill` is still the family's
            # mined description, not a skill's name.
            what = _undrafted(s)
            lines.append(family_line(s["skill"], s.get("tasks") or 0, _provisional(what, provisional)))
        elif s.get("new") or s.get("status") in ("pending", "waited", "retracted", "screened"):
            what = "new skill" if s.get("new") else "skill"
            line = f"{what} {s['skill']}: {s['status']}" + (f" ({s['reason']})" if s.get("reason") else "")
            if s.get("needs"):
                line += f"; needs {s['needs']}"
            expected = (s.get("projected") or {}).get("expected")
            if s.get("status") == "waited" and expected:
                line += f"; expected to run {expected}"
            lines.append(line)
        elif s.get("status") == "skipped":
            again = nowhere is not None and _was_nowhere(s) and s["skill"] not in nowhere
            why = "skipped, installed nowhere then; installed again since" if again else s.get("reason")
            lines.append(f"{s['skill']}: {why or 'skipped'}")
    data["warnings"] = summary.get("warnings") or []
    lines.extend(f"warning: {w}" for w in data["warnings"])
    for f in data["families"]:
        what = f"waiting for {f['needs']}" if f.get("needs") else f["reason"]
        f["provisional"] = provisional and bool(f.get("needs"))
        lines.append(family_line(f["name"], f["tasks"], _provisional(what, f["provisional"])))
    return lines


def _provisional(what: str, provisional: bool) -> str:
    """`what` a family waits for, marked provisional while labelling may still regroup the families."""
    return grouping.provisional(what) if provisional and what.startswith("waiting for") else what


def _was_nowhere(outcome: dict[str, Any]) -> bool:
    """Whether the night skipped a skill as installed nowhere (`training.INSTALLED_NOWHERE`, not imported:
    training pulls in what `status` does not need)."""
    return str(outcome.get("reason") or "").startswith("installed nowhere:")


def last_label(last: dict[str, Any]) -> str:
    """`Last night (2026-12-02)`: the finished night's local date, as status tells it from tonight's."""
    day = local_display(last.get("started_at"))[:10]
    return f"Last night ({day})"


FAMILY_CHARS = 60


def family_line(description: str, tasks: int, what: str) -> str:
    """A family of recurring work that has no skill, as status shows it: by its description, never as if it
    were a skill (`no skill for the family 'make test is failing…' (6 recurring tasks): waiting for …`)."""
    text = " ".join(str(description).split())
    if len(text) > FAMILY_CHARS:
        text = text[: FAMILY_CHARS - 1] + "…"
    return f"no skill for the family '{text}' ({tasks} recurring task{'' if tasks == 1 else 's'}): {what}"


def _undrafted_family(outcome: dict[str, Any], family_names: dict[str, str] | None) -> bool:
    """Whether a night's outcome is a family that was never drafted into a skill: its `skill` is then the
    family's description (a drafted skill has a name of its own, always a valid skill name)."""
    family = outcome.get("family")
    if not family:
        return False
    known = (family_names or {}).get(str(family))
    if known is not None:
        return str(outcome.get("skill")) == known
    return not NAME_RE.match(str(outcome.get("skill") or ""))


def _family_names(db: sqlite_utils.Database) -> dict[str, str]:
    if "task_families" not in db.table_names():
        return {}
    return {r["id"]: r["name"] for r in db.query("SELECT id, name FROM task_families")}


def _undrafted(outcome: dict[str, Any]) -> str:
    """Why a family picked for a new skill got no draft tonight, in the words of a wait or a stop."""
    reason = outcome.get("reason") or ""
    if outcome.get("needs"):
        return f"waiting for {outcome['needs']}"
    if outcome.get("status") in ("too-few-tasks", "undecidable"):
        return "waiting for more sessions of this kind" + (f" ({reason})" if reason else "")
    return "not drafted" + (f": {reason}" if reason else "")


def _key_found_since(settings: Settings, data: dict[str, Any]) -> str | None:
    """When the last night lacked a key that the keys file holds now: the next night will find it."""
    if "attention" not in data:
        return None
    for k in role_keys(settings):
        if k.source == "keys file" and k.variable in data["attention"]:
            return f"{k.variable} is in the keys file now: the next night will find it"
    return None


def _cost_line(db: sqlite_utils.Database, settings: Settings, data: dict[str, Any]) -> str | None:
    """Before the first night that spends money on an API key: what a night may cost at most."""
    ceiling = cost_ceiling(settings)
    if ceiling is None or runs.has_spent(db):
        return None
    data["cost_ceiling"] = ceiling.to_dict()
    return ceiling.line()


def _next_line(settings: Settings, data: dict[str, Any]) -> str:
    """When the next night runs, if it runs at all; fills `data["next"]`."""
    if not settings.night.enabled:
        return "next night: disabled (night.enabled = false)"
    if not fsio.daemon_running():
        return "next night: not running (start the daemon: skillopt daemon start)"
    try:
        data["next"] = schedule.next_fire(settings.night.schedule)
    except SkillOptError as exc:
        return f"next night: {exc.message}"
    return f"next night: {local_display(data['next'])} ({settings.night.schedule})"


# How many kinds of work status names before the first night (the dashboard's tasks page lists them all).
WORK_SHOWN = 3


def work_lines(
    db: sqlite_utils.Database, settings: Settings, data: dict[str, Any], *, provisional: bool = False
) -> list[str]:
    """Before the first night: the kinds of work mined so far, the largest first, and which are close to
    enough evidence to be trained (a family with a skill trains once it has tasks to learn from and judge
    on; one without waits for `night.min_tasks` sessions). Read from the store, never mined here: mining
    belongs to the night and to `skillopt tasks mine`. `provisional`: the families are grouped by words, so
    the sessions a new skill still needs are marked provisional (`grouping.py`)."""
    if "task_families" not in db.table_names():
        rows: list[dict[str, Any]] = []
    else:
        rows = list(db.query("SELECT id, name, skill_name, size FROM task_families ORDER BY size DESC, id"))
    least = settings.night.min_tasks
    # A family trains an installed skill only when that skill is registered; else it waits to seed one.
    known = (
        {r["name"] for r in db.query("SELECT name FROM skills")} if "skills" in db.table_names() else set()
    )
    work = [
        {
            "id": r["id"],
            "name": r["name"],
            "skill": r["skill_name"] if r["skill_name"] in known else None,
            "tasks": r["size"],
            "needs": max(least - int(r["size"] or 0), 0),
        }
        for r in rows
    ]
    for w in work:
        w["close"] = w["needs"] <= 1
        w["provisional"] = provisional and not w["skill"]
    data["work"] = work
    if not work:
        return [
            "kinds of work: none mined yet (the first night mines your sessions; "
            "`skillopt tasks mine` shows them now)"
        ]
    close = [w for w in work if w["close"]]
    parts = []
    for w in work[:WORK_SHOWN]:
        name = " ".join(str(w["name"]).split())[:FAMILY_CHARS]
        what = (
            f"for {w['skill']}"
            if w["skill"]
            else (
                "enough for a new skill"
                if not w["needs"]
                else f"{w['needs']} more session(s) for a new skill"
            )
        )
        parts.append(
            f"'{name}' ({w['tasks']} tasks, {grouping.provisional(what) if w['provisional'] else what})"
        )
    return [
        f"kinds of work found so far: {len(work)}, {len(close)} close to enough evidence: " + ", ".join(parts)
    ]


def status_section(db: sqlite_utils.Database) -> dict[str, Any]:
    """The nightly section of `skillopt status`: a night running now, the last one's result (the reason it
    trained nothing first), the next one, what is missing, what a paid night may cost."""
    settings = load_settings()
    data: dict[str, Any] = {"last": None, "running": None, "next": None, "missing": [], "families": []}
    data["settled"] = runs.settle_stale(db)
    running, last = runs.running_run(db), runs.last_finished(db)
    lines = _running_lines(running, data) if running else []
    model = night_model(settings, tools_by_sessions(db))
    grouped_by = grouping.stored_grouping(db)
    provisional = grouped_by == grouping.WORDS
    nowhere = Registry(db, actor="status").installed_nowhere() if last else None
    if last is not None:
        lines.extend(_last_lines(last, data, _family_names(db), nowhere, provisional))
    else:
        lines.append("Last night: never run")
        lines.extend(work_lines(db, settings, data, provisional=provisional))
    note = grouping.regroup_note(model) if provisional else None
    data["grouping"] = {"by": grouped_by, "provisional": provisional, "note": note}
    if note is not None:
        lines.append(note)
    if (found := _key_found_since(settings, data)) is not None:
        lines.append(found)
    data["model"] = model.to_dict()
    if model.asks:
        data["model"]["question"] = model.question()
    lines.append(model.line())
    lines.append(_next_line(settings, data))
    lines.extend(f"missing for replays: {m}" for m in data["missing"][1 if "attention" in data else 0 :])
    if (cost := _cost_line(db, settings, data)) is not None:
        lines.append(cost)
    lines.extend(pending_lines(db))
    data["lines"] = lines
    return data
