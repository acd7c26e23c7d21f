"""What kind of work a session is, as every face names it: `interactive`, `headless`, `automation`,
`skipped` or `replay`, with the reason for the last three.

Ingest flags every run without a terminal (`claude -p`, `codex exec`, `copilot -p`, `opencode run`) with
`is_automation`, but mining counts a person's headless runs as work (`night/mining/exclude.py`, docs/nightly.md
"Which sessions"): showing that flag as "automation" reads as "ignored". So a face asks here, where the answer
is the one mining gives: `headless` is mined like the TUI's sessions; `automation` is what mining always skips
(Agent SDK programs, other tools' harnesses); `skipped` is what the user's `night.exclude` leaves out;
`replay` is skillopt's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlite_utils

from skillopt_daemon.ingest.queries import first_prompt, flagged_sessions
from skillopt_daemon.night.mining.exclude import ExcludeRules, exclusion

INTERACTIVE, HEADLESS, AUTOMATION, SKIPPED, REPLAY = (
    "interactive",
    "headless",
    "automation",
    "skipped",
    "replay",
)


def user_rules() -> ExcludeRules:
    """The user's `night.exclude` as mining reads it; the built-in rules alone when the config is unreadable
    (`skillopt status` says what is wrong with it)."""
    from skillopt_daemon.core.config import load_settings
    from skillopt_lib.errors import SkillOptError

    try:
        return ExcludeRules.from_settings(load_settings().night)
    except SkillOptError:
        return ExcludeRules()


def session_kind(session: dict[str, Any], prompt: str, rules: ExcludeRules) -> tuple[str, str | None]:
    """(kind, why) for one session (a row of `ingest.queries`) whose first request is `prompt`."""
    if session.get("is_replay"):
        return REPLAY, "a skillopt replay: never mined"
    why = exclusion(session, prompt, rules)
    if why is None:
        return (HEADLESS if session.get("is_automation") else INTERACTIVE), None
    if exclusion(session, prompt, ExcludeRules()) is not None:
        return AUTOMATION, f"{why}: not mined"
    return SKIPPED, f"{why}: not mined"


def with_kinds(
    db: sqlite_utils.Database, rows: Iterable[dict[str, Any]], rules: ExcludeRules | None = None
) -> list[dict[str, Any]]:
    """`rows` with `kind` and `kind_reason` added (each row's `first_prompt` is read when it has none)."""
    rules = user_rules() if rules is None else rules
    out = []
    for r in rows:
        prompt = r["first_prompt"] if "first_prompt" in r else first_prompt(db, r["id"])
        r["kind"], r["kind_reason"] = session_kind(r, prompt, rules)
        out.append(r)
    return out


def flagged_kinds(db: sqlite_utils.Database) -> dict[str, int]:
    """How the sessions ingest flagged as run without a terminal divide: headless work (mined), automation
    and skipped (not mined). Only those sessions are read, for `skillopt status`."""
    rules = user_rules()
    counts = {HEADLESS: 0, AUTOMATION: 0, SKIPPED: 0}
    for s in flagged_sessions(db):
        kind, _ = session_kind(s, first_prompt(db, s["id"]), rules)
        if kind in counts:
            counts[kind] += 1
    return counts


def flagged_phrase(counts: dict[str, int]) -> str:
    """`flagged_kinds` in the words of the sessions line of `skillopt status` ('' when none)."""
    parts = []
    if counts[HEADLESS]:
        parts.append(f"{counts[HEADLESS]} headless (claude -p, codex exec: mined as work)")
    if counts[AUTOMATION]:
        parts.append(f"{counts[AUTOMATION]} automation (Agent SDK programs, harnesses: not mined)")
    if counts[SKIPPED]:
        parts.append(f"{counts[SKIPPED]} skipped by night.exclude")
    return ", ".join(parts)
