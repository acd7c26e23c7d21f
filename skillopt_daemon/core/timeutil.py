"""Time is UTC everywhere it is stored or compared; local time only when shown to a person."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone

# How far ahead of this machine's clock a logged moment may be and still be believed. Clocks drift and
# zoneless local times are read as UTC (up to 14 h off), so the margin is generous; anything beyond it
# (a year 2099 from a broken clock, a mangled field) is dropped rather than allowed to become a session's
# start or end, which sorting, "recent" queries and mining windows all rely on.
FUTURE_TOLERANCE = timedelta(hours=24)

# The earliest logged moment believed. No agent tool that writes transcripts existed before this, so an
# earlier value is a mangled field or a clock reset (a number such as 12345 read as epoch seconds, the
# year 1 a tool writes for "unset") and is dropped like one too far ahead.
EARLIEST_PLAUSIBLE = "2010-01-01T00:00:00.000Z"

# The form `to_iso` writes; two values in this form compare correctly as text.
CANONICAL_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def utcnow_iso() -> str:
    return to_iso(utcnow())


def to_iso(dt: datetime) -> str:
    """ISO 8601 in UTC with a 'Z' and millisecond precision: sorts correctly as text in SQLite."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def parse_iso(value: str) -> tuple[datetime, bool]:
    """Parse a timestamp; returns (utc datetime, had_zone). A zoneless value is taken as UTC and flagged."""
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc), False
    return dt.astimezone(timezone.utc), True


def from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def humanize_age(iso: str | None, now: datetime | None = None) -> str:
    if not iso:
        return "never"
    dt, _ = parse_iso(iso)
    delta = (now or utcnow()) - dt
    secs = int(delta.total_seconds())
    if secs < 0:
        return "in the future"
    if secs < 60:
        return f"{secs}s ago"
    if secs < 3600:
        return f"{secs // 60}m ago"
    if secs < 86400:
        return f"{secs // 3600}h ago"
    return f"{secs // 86400}d ago"


def local_display(iso: str | None) -> str:
    if not iso:
        return "-"
    dt, _ = parse_iso(iso)
    return dt.astimezone().strftime("%Y-%m-%d %H:%M %Z")


_limit_cache: tuple[float, str] = (-1e9, "")


def _latest_plausible_iso() -> str:
    """Now plus FUTURE_TOLERANCE as canonical text, recomputed at most every 30 s (against a 24 h margin)."""
    global _limit_cache
    now = time.monotonic()
    if now - _limit_cache[0] > 30.0:
        _limit_cache = (now, to_iso(utcnow() + FUTURE_TOLERANCE))
    return _limit_cache[1]


def too_early(value: datetime | str) -> bool:
    """True for a moment before EARLIEST_PLAUSIBLE (a string must be canonical, as for `plausible_timestamp`)."""
    if isinstance(value, str):
        return value < EARLIEST_PLAUSIBLE
    return to_iso(value) < EARLIEST_PLAUSIBLE


def plausible_timestamp(value: datetime | str) -> bool:
    """The one rule for logged moments: False before EARLIEST_PLAUSIBLE or more than FUTURE_TOLERANCE ahead.

    Sources drop such a timestamp (the record is kept without it) and the ingest pipeline applies the same
    rule to whatever a source hands over, so both report the same values ("future-timestamp" or
    "implausible-timestamp"). A string must be canonical (`to_iso`'s form): it is compared as text, without
    parsing, on the hot path.
    """
    if isinstance(value, str):
        return EARLIEST_PLAUSIBLE <= value <= _latest_plausible_iso()
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return not too_early(value) and value <= utcnow() + FUTURE_TOLERANCE
