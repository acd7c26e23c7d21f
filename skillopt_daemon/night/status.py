"""What a night tells the user: the nightly section of `skillopt status`, and a desktop notification when a
night leaves proposals to review."""

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
from skillopt_daemon.night import schedule
from skillopt_daemon.night.pending import pending_lines
from skillopt_daemon.night.report import CycleReport
from skillopt_daemon.night.runs import last_run
from skillopt_lib.errors import SkillOptError
from skillopt_lib.skill import NAME_RE


def notify(report: CycleReport) -> None:
    """A desktop notification where one is available; the status line is always there. Never raises."""
    if not report.proposals:
        return
    title = "skillopt"
    body = f"{len(report.proposals)} new skill proposal(s): run `skillopt status` to review"
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


def _last_lines(
    last: dict[str, Any], data: dict[str, Any], family_names: dict[str, str] | None = None
) -> list[str]:
    """Fill `data` with the last night's result; returns its summary line. `family_names`: the mined
    families' descriptions by id, to tell a family that got no draft from a drafted skill."""
    summary = json.loads(last.get("summary_json") or "{}")
    data["last"] = {k: last[k] for k in ("id", "trigger", "status", "started_at", "finished_at", "error")}
    data["last"]["proposals"] = [
        s.get("proposal_id") for s in summary.get("skills", []) if s.get("proposal_id")
    ]
    data["last"]["skills"] = summary.get("skills", [])
    data["missing"] = summary.get("missing") or []
    data["families"] = summary.get("families") or []
    text = f"last night: {last['status']} ({humanize_age(last['started_at'])})"
    if data["last"]["proposals"]:
        text += f", {len(data['last']['proposals'])} proposal(s)"
    if last.get("error"):
        text += f": {last['error']}"
    lines = [text]
    for s in data["last"]["skills"]:
        if _undrafted_family(s, family_names):
            # Tonight's candidate for a new skill that was never drafted: its `skill` is still the family's
            # mined description, not a skill's name.
            lines.append(family_line(s["skill"], s.get("tasks") or 0, _undrafted(s)))
        elif s.get("new") or s.get("status") in ("pending", "waited", "retracted"):
            what = "new skill" if s.get("new") else "skill"
            line = f"{what} {s['skill']}: {s['status']}" + (f" ({s['reason']})" if s.get("reason") else "")
            if s.get("needs"):
                line += f"; needs {s['needs']}"
            lines.append(line)
    data["warnings"] = summary.get("warnings") or []
    lines.extend(f"warning: {w}" for w in data["warnings"])
    for f in data["families"]:
        what = f"waiting for {f['needs']}" if f.get("needs") else f["reason"]
        lines.append(family_line(f["name"], f["tasks"], what))
    return lines


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


def status_section(db: sqlite_utils.Database) -> dict[str, Any]:
    """The nightly section of `skillopt status`: last run's result, next run, what is missing."""
    settings = load_settings()
    last = last_run(db)
    data: dict[str, Any] = {"last": None, "next": None, "missing": [], "families": []}
    lines = _last_lines(last, data, _family_names(db)) if last else ["last night: never run"]
    lines.append(_next_line(settings, data))
    lines.extend(f"missing for replays: {m}" for m in data["missing"])
    lines.extend(pending_lines())
    data["lines"] = lines
    return data
