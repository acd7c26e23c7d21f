"""The nightly job inside the daemon's APScheduler.

A cron expression from config (local time, default 03:17), coalesced so a backlog of missed nights runs
once, one instance at a time, and a misfire grace period so a laptop that slept through the night runs on
wake. The job is skipped when nothing new was ingested since the last completed night. Manual runs and
the scheduled job share one lock (`skillopt_daemon.night.lock.night_lock`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.timeutil import to_iso, utcnow
from skillopt_lib.errors import ConfigError

if TYPE_CHECKING:
    from apscheduler.triggers.cron import CronTrigger

log = logging.getLogger("skillopt.scheduler")
JOB_ID = "nightly-cycle"
WEEKLY_ID = "weekly-summary"


def local_tz() -> Any:
    """The machine's time zone, as APScheduler wants it (cron times are what the user's clock says)."""
    import tzlocal

    return tzlocal.get_localzone()


def trigger(expr: str) -> CronTrigger:
    """Parse a five-field cron expression (or six, with seconds first), with an error that says what a valid
    one looks like. Seconds exist for tests and for users who want a run a few seconds from now."""
    from apscheduler.triggers.cron import CronTrigger

    fields = expr.split()
    try:
        if len(fields) == 6:
            second, minute, hour, day, month, dow = fields
            return CronTrigger(
                second=second,
                minute=minute,
                hour=hour,
                day=day,
                month=month,
                day_of_week=dow,
                timezone=local_tz(),
            )
        return CronTrigger.from_crontab(expr, timezone=local_tz())
    except ValueError as exc:
        raise ConfigError(
            f"night.schedule {expr!r} is not a valid cron expression: {exc}",
            hint="use five fields: minute hour day month weekday, e.g. '17 3 * * *' for 03:17 every day",
        ) from None


def next_fire(expr: str, now: datetime | None = None) -> str | None:
    fire = trigger(expr).get_next_fire_time(None, (now or utcnow()).astimezone(local_tz()))
    return to_iso(fire) if fire else None


def add_jobs(
    scheduler: Any, settings: Settings, job: Callable[[], Any], weekly: Callable[[], Any] | None = None
) -> None:
    """Put the nightly `job` on the daemon's `scheduler` at the configured times, and the `weekly` summary
    (what the learned rules did: `outcomes.notify_weekly`) at `report.weekly` when both are given.

    The jobs are the caller's (the daemon passes its wrapper of `cycle.run_scheduled`), so the schedule
    never imports the cycle: it only knows when, not what. Coalesced, one instance at a time, with the
    configured misfire grace, so a machine that slept through the hour runs one night, not several.
    """
    if weekly is not None and settings.report.weekly.strip():
        scheduler.add_job(
            weekly,
            trigger(settings.report.weekly),
            id=WEEKLY_ID,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=settings.night.misfire_grace_s,
            replace_existing=True,
        )
    if not settings.night.enabled:
        log.info("nightly cycle disabled (night.enabled = false)")
        return
    scheduler.add_job(
        job,
        trigger(settings.night.schedule),
        id=JOB_ID,
        coalesce=True,
        max_instances=1,
        misfire_grace_time=settings.night.misfire_grace_s,
        replace_existing=True,
    )
    log.info(
        "nightly cycle scheduled: %s (next %s)", settings.night.schedule, next_fire(settings.night.schedule)
    )
