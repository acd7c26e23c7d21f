"""The nightly cycle: catch up ingest → mine → for each target skill, train on replays → gate → proposal.

What comes out is a *proposal* in the registry with its evidence; nothing reaches an agent until the user
approves it (or opted in to auto-approve for that skill). This module is the table of contents: it runs the
phases in order, and each phase is a folder of its own:

1. `mining/`: the user's recurring work, grouped into families of tasks, with what they said about it;
2. `installed/`: whether each installed rule worked since its install (`outcomes`), and which stale or
   contradicted ones to propose removing (`removals`);
3. `learning/`: for each target skill, in the order of what it teaches for what it costs (`training`):
   plan the replays, replay, train, veto, propose (`target`).

Around them: the lock (`lock`), the caps (`budgets`), the backends (`agents`), the record of each night
(`runs`), its progress (`progress`) and what the user is told (`status`).

Safety rules the cycle keeps:
- One night at a time: manual runs and the scheduled job share `night_lock()`.
- Per-night caps on tokens, money, wall time and replays. When one is hit the cycle stops cleanly, records
  what it measured, and registers nothing that the gate did not verify.
- A proposal is registered in one transaction at the end of a skill's training, so a crash or `kill -9`
  never leaves half of one. The next run finds the interrupted night, resumes its training from the
  checkpoints when there are any, and says which it did.
- `local_only` refuses any model endpoint that is not on this machine.
- Replays run jailed (`skillopt_lib.netjail`): where this machine cannot jail them the night replays
  nothing and says why, unless `replay.allow_unconfined` chose otherwise; then its report says they ran
  unconfined.
- Its record says what happened: a rehearsal is `dry-run`, a night that did not do its work (it raised, or
  every skill it took up errored) is `failed` with the reason, whatever its steps set on the way.
- While it runs, its progress is kept where `skillopt status` in another process reads it (`progress`).
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import TYPE_CHECKING, Any

import sqlite_utils

from skillopt_daemon import ingest
from skillopt_daemon.core import fsio
from skillopt_daemon.core.config import Settings, load_settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow, utcnow_iso
from skillopt_daemon.night import replay_cost, runs
from skillopt_daemon.night.agents import (
    NightModel,
    mining_chat,
    night_model,
    tools_by_sessions,
    with_night_model,
)
from skillopt_daemon.night.budgets import NightBudget, NightBudgetExceeded
from skillopt_daemon.night.learning.context import NightContext, Progress
from skillopt_daemon.night.learning.training import train_skills
from skillopt_daemon.night.lock import night_lock
from skillopt_daemon.night.progress import NightProgress
from skillopt_daemon.night.report import CycleReport
from skillopt_daemon.night.status import notify
from skillopt_daemon.registry.installers.base import pause_point
from skillopt_lib.errors import SkillOptError

if TYPE_CHECKING:
    from skillopt_daemon.night.mining.mine import Family

log = logging.getLogger("skillopt.night")


def _catch_up_ingest(settings: Settings, progress: Progress) -> dict[str, Any]:
    """One ingest pass, unless the daemon is running (it already ingests live)."""
    if fsio.daemon_running() and os.getpid() != (fsio.read_pid() or -1):
        return {"skipped": "the daemon ingests live"}
    if fsio.daemon_running():
        return {"skipped": "running inside the daemon"}
    try:
        progress("catching up ingest")
        db = open_db()
        pipeline = ingest.Pipeline(db, ingest.load_sources(settings, None), settings)
        outcomes = pipeline.ingest_paths(pipeline.discover())
        pipeline.pin_sessions(None)
        return ingest.summarize(outcomes)
    except SkillOptError as exc:
        return {"error": exc.message}


def _begin(db: sqlite_utils.Database, trigger: str, dry_run: bool, say: Progress) -> CycleReport:
    """Settle interrupted nights, record this one as running, and return its (empty) report."""
    run_id = utcnow().strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    report = CycleReport(
        run_id=run_id, trigger=trigger, status="running", dry_run=dry_run, started_at=utcnow_iso()
    )
    report.resumed_from, report.start_note = runs.settle_interrupted(db)
    if report.start_note:
        say(report.start_note)
    runs.record_start(db, run_id, trigger, dry_run)
    return report


def _budget(db: sqlite_utils.Database, settings: Settings, model: NightModel) -> NightBudget:
    """The night's caps (the login's on the embedded default, with no money cap on a plan), the setting
    behind each, and what a replay cost on the last nights (planned with before tonight's first)."""
    night = settings.night
    budget = NightBudget(
        max_tokens=night.max_tokens,
        max_cost_usd=night.max_cost_usd,
        max_wall_s=night.max_wall_s,
        max_replays=night.max_replays,
    )
    if model.source == "default" and model.usable:
        budget.settings.update(model.cap_settings)
    budget.past = replay_cost.load_past(db)
    return budget


def record_stop(report: CycleReport, budget: NightBudget) -> None:
    """A night a cap stopped says so: status `budget`, and which cap, what was spent and the setting to
    raise as its reason (what `sleep history`, `status` and the report show)."""
    stopped = budget.stopped()
    if stopped is None or report.status not in ("completed", "budget"):
        return
    report.status = "budget"
    report.stopped = stopped
    report.reason = stopped["note"]


def _steps(ctx: NightContext, *, skill: str | None, ingest_first: bool) -> None:
    """Ingest, then the three phases: what a night does between its start and end records."""
    report = ctx.report
    if ingest_first:
        report.ingest = _catch_up_ingest(ctx.settings, ctx.say)
    report.warnings.extend(confine_replays(ctx.settings))
    pause_point("night-before-mining")
    families = _mine(ctx)
    try:
        report.outcomes = follow_rules(ctx, families)
    except SkillOptError as exc:  # judging last weeks' rules must never cost tonight's training
        report.warnings.append(f"could not follow the installed rules: {exc.message}")
    train_skills(ctx, families, skill=skill)
    if report.status == "running":
        report.status = "completed"


def _mine(ctx: NightContext) -> list[Family]:
    """The mining phase: tonight's families, with mining's own report in the night's."""
    # mining pulls in numpy: imported when a night runs, not when this module loads.
    from skillopt_daemon.night.mining import mine

    settings, report = ctx.settings, ctx.report
    ctx.say("mining recurring tasks")
    # Mining labels requests with the optimizer's model when one is usable (see agents.mining_chat).
    labeller, mining_note = mining_chat(settings, ctx.budget)
    families, mined = mine.mine(
        ctx.db,
        seed=settings.night.seed,
        rules=mine.ExcludeRules.from_settings(settings.night),
        test_share=settings.night.test_share,
        chat=labeller,
        budget=ctx.budget,
        batch=settings.night.label_batch,
    )
    if mining_note:
        mined.notes.insert(0, mining_note)
    report.mining = mined.to_dict()
    return families


def confine_replays(settings: Settings) -> list[str]:
    """Whether tonight's replays can be jailed: nothing to say when they can; where they cannot, the night
    fails with why and what to do (`CannotConfine`), or, when `replay.allow_unconfined` chose to replay
    anyway, the warning its report, and so `skillopt status`, carries."""
    from skillopt_lib import netjail

    netjail.allow_unconfined(settings.replay.allow_unconfined)
    why = netjail.namespace_unavailable()
    if why is None:
        return []
    if not settings.replay.allow_unconfined:
        raise netjail.CannotConfine(
            f"replays cannot be jailed on this machine ({why}), so the night replays nothing; to fix: "
            + netjail.UNCONFINED_HINT,
            hint=netjail.UNCONFINED_HINT,
        )
    return [
        f"replays ran unconfined ({why}; replay.allow_unconfined = true): they could reach this machine's "
        "ports, its Unix sockets and the network"
    ]


def follow_rules(ctx: NightContext, families: list[Family]) -> dict[str, Any]:
    """Judge every installed rule on the sessions since its install (`outcomes.py`): a rule that is not
    working sends the sessions where its correction came back to train tonight; a stale or contradicted
    one's removal is replayed, gated and proposed when it does not lose (`removals.py`). A dry run says
    what would move and changes nothing in the store."""
    from skillopt_daemon.night.installed import outcomes, removals
    from skillopt_daemon.night.mining import mine

    found = outcomes.assess(ctx.db, ctx.settings.report)
    moved = mine.send_to_train(ctx.db, families, outcomes.recurrences_to_train(found), dry_run=ctx.dry_run)
    gone = removals.night_removals(ctx, found)
    if not ctx.dry_run:
        outcomes.record(ctx.db, found)
    counts: dict[str, int] = {}
    for o in found:
        if o.rule.state == "installed":
            counts[o.verdict] = counts.get(o.verdict, 0) + 1
    return {
        "verdicts": counts,
        "sent_to_train": moved,
        "removal_proposals": gone["proposals"],
        "removals": gone["removals"],
    }


def run_cycle(
    *,
    trigger: str = "manual",
    dry_run: bool = False,
    skill: str | None = None,
    settings: Settings | None = None,
    progress: Progress | None = None,
    ingest_first: bool = True,
) -> CycleReport:
    """One night. Returns its report; the same report is stored in `night_runs`.

    Raises ConflictError when another night holds the lock; any other failure ends up in the report
    (status `failed` or `budget`) rather than raised, so the night's row always says how it ended.
    """
    settings = settings or load_settings()
    say = progress or (lambda _m: None)
    with night_lock():
        db = open_db()
        report = _begin(db, trigger, dry_run, say)
        # No optimizer set: the user's own agent login, once they said yes, within its smaller caps.
        model = night_model(settings, tools_by_sessions(db))
        settings = with_night_model(settings, model)
        report.model = model.to_dict()
        budget = _budget(db, settings, model)
        tracker = NightProgress(report.run_id, report.started_at, budget, say).start()
        ctx = NightContext(
            db=db,
            settings=settings,
            report=report,
            budget=budget,
            dry_run=dry_run,
            say=tracker.say,
            tracker=tracker,
        )
        try:
            _steps(ctx, skill=skill, ingest_first=ingest_first)
        except NightBudgetExceeded:
            report.status = "budget"  # which cap, and the setting to raise: `record_stop`
        except SkillOptError as exc:
            report.status = "failed"
            report.error = exc.message
        except Exception as exc:
            report.status = "failed"
            report.error = f"{type(exc).__name__}: {exc}"
            log.exception("nightly cycle failed")
        finally:
            tracker.stop()
            report.spend = budget.to_dict()
            record_stop(report, budget)
            report.finished_at = utcnow_iso()
            report.conclude()
            runs.record_end(db, report)
        notify(report)
        return report


def run_scheduled() -> CycleReport | None:
    """The scheduled job: skipped (and recorded as such) when nothing new was ingested."""
    db = open_db()
    if not runs.new_since_last(db):
        runs.record_skipped(db, "nothing new ingested")
        return None
    return run_cycle(trigger="schedule", ingest_first=False)
