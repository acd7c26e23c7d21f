"""Time is UTC everywhere it is stored or compared; local time only when shown to a person."""

from __future__ import annotations

from datetime import datetime, timezone


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
