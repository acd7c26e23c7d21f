"""One target's night, phase by phase: what tonight replays (`_plan`), the replays and the trainer's run
(`_train`), why nothing changed (`_unchanged`), the vetoes on a gated winner (`_vetoes`: leaked answers,
the screen, hosts its replays reached for, a rule the user took back), and the proposal with its evidence
and scope (`_proposal`, after the no-harm check for user scope). `train_and_propose` runs them; each ends
the target's night with an outcome when it has nothing more to do.

It is the same `skillopt_lib.Trainer` that trains on benchmarks, driven on a `ReplayEnvironment` of the
user's own recurring tasks, with the user's own agent CLI as the frozen agent and the installed version as
the incumbent. A proposal is registered in one transaction at the end of a target's training, so a crash
never leaves half of one."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.repos import repository_of
from skillopt_daemon.night.budgets import BudgetedAgent, NightBudgetExceeded
from skillopt_daemon.night.learning import noharm, planning, seeding, shared_rules
from skillopt_daemon.night.learning.carried_findings import with_step_findings
from skillopt_daemon.night.learning.evidence import evidence
from skillopt_daemon.night.learning.recorded import recorded_work
from skillopt_daemon.night.learning.replay import ReplayEnvironment, tasks_for_families
from skillopt_daemon.night.learning.retracted import Retraction, blocks, retracted
from skillopt_daemon.night.learning.screening import candidate_screen
from skillopt_daemon.night.ledger import DryLedger, StoreLedger
from skillopt_daemon.night.mining import conflicts, scope
from skillopt_daemon.night.mining.nearcopies import fingerprint, regroup
from skillopt_daemon.night.pending import Carried, load_pending, store_pending
from skillopt_daemon.night.report import SkillOutcome
from skillopt_daemon.night.runs import night_dir
from skillopt_daemon.night.tasks import NightTask
from skillopt_daemon.registry.evidence import NightEvidence
from skillopt_daemon.registry.scope import placement
from skillopt_lib.agents import AgentTool
from skillopt_lib.envs.base import ItemResult
from skillopt_lib.gate import (
    Gate,
    GateConfig,
    PairedEvidence,
    Request,
    item_score,
    plan_gate,
    sequential_decision,
)
from skillopt_lib.judge import LeakGuard
from skillopt_lib.screen import CandidateScreen, ScreenResult, auto_approve_refusal, provenance_missing
from skillopt_lib.skill import SkillBundle
from skillopt_lib.trainer import PendingCandidate, Trainer, TrainResult
from skillopt_lib.training.records import HistoryRecord

if TYPE_CHECKING:
    from skillopt_daemon.night.mining.mine import Family
from skillopt_daemon.night.learning.context import (
    NightContext,
    budget_wait,
    env_gate,
    noharm_reserve,
    replay_tools,
    replays,
    tonight_plan,
    train_config,
)


def train_and_propose(
    ctx: NightContext,
    name: str,
    target: str,
    tool: AgentTool,
    tasks: list[NightTask],
    incumbent: SkillBundle,
    parent: str | None,
    new_family: Family | None,
    carried: Carried | None = None,
    lineage: str = "",
) -> SkillOutcome:
    """Train from `incumbent` (the installed version, or a new skill's draft) and propose a gated winner.

    `target` names what is improved in the gate's ledger and the pending evidence, `lineage` which of its
    error budgets is spent (`night/ledger.py`). A dry run reads the ledger and writes nothing to it.

    The phases, each ending the target's night with an outcome when it has nothing more to do: plan what
    tonight replays (`_plan`), replay and train (`_train`), say why nothing changed (`_unchanged`), veto a
    winner that must not be proposed (`_vetoes`), and propose it with its evidence and scope (`_proposal`).
    """
    job = TargetJob(name, target, tool, incumbent, parent, new_family, lineage)
    planned = _plan(ctx, job, tasks, carried)
    if isinstance(planned, SkillOutcome):
        return planned
    trained = _train(ctx, job, planned)
    if isinstance(trained, SkillOutcome):
        return trained
    outcome = trained.outcome(job, planned)
    if trained.best.content_hash == incumbent.content_hash or not trained.result.summary.get(
        "accepted_steps"
    ):
        return _unchanged(job, planned, trained, outcome)
    vetted = _vetoes(ctx, job, planned, trained, outcome)
    if isinstance(vetted, SkillOutcome):
        return vetted
    return _proposal(ctx, job, planned, trained, outcome, vetted)


@dataclass(frozen=True)
class TargetJob:
    """What is trained tonight: a skill (or a new skill's family) from its incumbent."""

    name: str
    target: str
    tool: AgentTool
    incumbent: SkillBundle
    parent: str | None
    new_family: Family | None
    lineage: str

    @property
    def new(self) -> bool:
        return self.new_family is not None

    @property
    def family(self) -> str | None:
        return self.new_family.id if self.new_family is not None else None


@dataclass
class Planned:
    """Tonight's plan for a target: the tasks it replays, the candidate it carries, its gate and ledger."""

    tasks: list[NightTask]
    carried: Carried | None
    took_back: dict[str, Retraction]
    n_tasks: int  # the family's, even when tonight replays part of it
    ledger: StoreLedger | DryLedger
    gate: GateConfig
    planned: int
    parted: str
    gate_plan: dict[str, Any]
    reason: str  # what the gate's plan says of the validation split


def _plan(
    ctx: NightContext, job: TargetJob, tasks: list[NightTask], carried: Carried | None
) -> Planned | SkillOutcome:
    """Which candidate the target carries (its pending one, or a teammate's rule), its ledger and gate, and
    what tonight replays; an outcome instead when it waits for new sessions or for budget."""
    name, target, incumbent = job.name, job.target, job.incumbent
    if carried is None and not job.new:
        carried = load_pending(
            ctx.db, target, ctx.report.warnings, lineage=job.lineage, write=not ctx.dry_run
        )
    if carried is not None and carried.pending.incumbent_hash != incumbent.content_hash:
        carried = None  # measured against a version that is no longer the incumbent
    if carried is None and not job.new and not ctx.dry_run:
        # A rule a teammate shared (`skillopt team pull`) enters as a carried candidate: re-proved here.
        carried = shared_rules.carried(ctx.db, name, incumbent)
    took_back = retracted(ctx.registry)
    n_tasks = len(tasks)

    def may_reopen(candidate_hash: str) -> bool:
        found = took_back.get(candidate_hash)
        return found is not None and not blocks(found, n_tasks)

    ledger = (DryLedger if ctx.dry_run else StoreLedger)(ctx.db, target, may_reopen, job.lineage)
    night = ctx.settings.night
    gate = env_gate(ctx.settings, *ledger.pinned(night.gate_confidence, night.gate_likely_confidence))
    # Near-copies of a request measured on an earlier night count in its cluster.
    tasks = regroup(tasks, carried.pending.evidence if carried is not None else None)
    tasks, planned, parted = tonight_plan(ctx, tasks, gate, carried, job.tool)
    planned += noharm_reserve(ctx.settings, job.new_family)
    fresh = len(planning.new_groups(tasks, carried))
    n_val = len({t.group_key for t in tasks if t.split == "val"})
    plan = plan_gate(n_val, gate)
    gate_plan = {**plan.to_dict(), "parted": parted} if parted else plan.to_dict()
    base = SkillOutcome(
        name, "pending", tasks=len(tasks), new=job.new, family=job.family, gate_plan=gate_plan
    )
    if carried is not None and not fresh:
        base.reason = f"waiting for new sessions of this work: {carried.pending.reason}"
        base.needs = _needs_text(carried.pending.evidence.to_dict(), gate)
        return base
    if ctx.tracker is not None:
        ctx.tracker.plan(planned)
    wait = budget_wait(ctx, planned, job.tool.value)
    if wait:
        base.status, base.reason = "waited", f"{wait}; it goes first next night"
        return base
    return Planned(tasks, carried, took_back, n_tasks, ledger, gate, planned, parted, gate_plan, plan.reason)


@dataclass
class Trained:
    """What tonight's replays and training left: the run's result, the replays, the screen, what the
    optimizer was shown, and the teammate's rule the run decided on (if any)."""

    result: TrainResult
    env: ReplayEnvironment
    screen: CandidateScreen
    shown: list[ItemResult]
    shared: shared_rules.SharedRule | None
    run_dir: Path

    @property
    def best(self) -> SkillBundle:
        return self.result.best_skill

    def outcome(self, job: TargetJob, planned: Planned) -> SkillOutcome:
        """The target's outcome as training left it (no improvement until a later phase says otherwise)."""
        summary = self.result.summary
        return SkillOutcome(
            job.name,
            "no-improvement",
            tasks=len(planned.tasks),
            run_dir=str(self.run_dir),
            baseline=summary.get("initial_val"),
            candidate=summary.get("best_val"),
            new=job.new,
            family=job.family,
            gate_plan=planned.gate_plan,
        )


def _train(ctx: NightContext, job: TargetJob, planned: Planned) -> Trained | SkillOutcome:
    """Replay and train: the replay environment and candidate screen for tonight's tasks (a new skill's
    draft screened before any replay), the trainer's run, and what it leaves pending for the next nights.
    A night's cap reached mid-run keeps the pairs already paid for."""
    name, tool, incumbent, tasks = job.name, job.tool, job.incumbent, planned.tasks
    used = sorted({t.tool or tool.value for t in tasks} | {tool.value})
    env, agents = replays(ctx, tasks, incumbent, used, recorded=recorded_work(ctx.db, tasks))
    run_dir = night_dir(ctx.report.run_id) / name
    # The candidate screen: the tasks' words, their sessions' tool output and their repositories' hosts.
    screen = candidate_screen(ctx.db, tasks)
    if job.new:
        # A new skill's draft was written by the optimizer too: every line of it is screened before a replay.
        drafted = screen.check(NOTHING, incumbent)
        if drafted.rejected:
            base = SkillOutcome(
                name, "pending", tasks=len(tasks), new=True, family=job.family, gate_plan=planned.gate_plan
            )
            return _screened(base, drafted)
    ctx.say(f"training {name} on {len(tasks)} replayed tasks with {', '.join(used)}; {planned.reason}")
    if planned.parted:
        ctx.say(f"{name}: {planned.parted}")
    trainer = _trainer(
        ctx,
        env,
        agents[tool.value],
        incumbent,
        tasks,
        run_dir,
        planned.gate,
        planned.ledger,
        planned.carried,
        screen,
    )
    keep_draft = incumbent if job.new else None
    try:
        result = trainer.train()
    except NightBudgetExceeded as exc:
        kept = trainer.interrupted
        why = exc.message + "; nothing was proposed"
        if kept is not None and not ctx.dry_run:
            # The pairs measured before the cap were paid for and stay valid evidence: the next night
            # continues this candidate where tonight stopped.
            _fingerprint(kept, tasks)
            store_pending(ctx.db, job.target, kept, keep_draft, job.lineage)
            why += (
                f"; the {len(kept.evidence.pairs)} validation task(s) measured so far are kept as pending "
                "evidence for the next night"
            )
        return SkillOutcome(
            name, "budget", why, tasks=len(tasks), run_dir=str(run_dir), new=job.new, family=job.family
        )
    if result.pending is not None:
        _fingerprint(result.pending, tasks)
    if not ctx.dry_run:
        store_pending(ctx.db, job.target, result.pending, keep_draft, job.lineage)
    shared = None if ctx.dry_run else shared_rules.settle(ctx.db, name, result.steps)
    return Trained(result, env, screen, trainer.shown, shared, run_dir)


def _unchanged(job: TargetJob, planned: Planned, trained: Trained, outcome: SkillOutcome) -> SkillOutcome:
    """Why training left the incumbent as it was: evidence still pending, the screen's rejection (never
    replayed, so it leads), a candidate the user took back, or no candidate passing the gate."""
    result = trained.result
    screened = _screened_tonight(result.steps)
    if result.pending is not None:
        outcome.status = "pending"
        outcome.reason = f"evidence kept for the next nights: {result.pending.reason}"
        if planned.parted:
            outcome.reason += f"; {planned.parted}"
        outcome.needs = _needs_text(result.pending.evidence.to_dict(), planned.gate)
        if screened:
            outcome.reason += f"; {screened[0]['reason']}"
        return outcome
    outcome.reason = "no candidate passed the gate"
    if screened:
        # What the screen rejected (never replayed) leads: it is why nothing was proposed.
        outcome.status = "screened"
        outcome.reason = f"{screened[0]['reason']}; nothing was proposed ({outcome.reason})"
        outcome.screen = {"rejected": True, "findings": [f for s in screened for f in s["findings"]]}
        return outcome
    retried = _retried(planned.took_back, result.steps)
    if retried:
        outcome.status = "retracted"
        outcome.reason = f"{retried}; not proposed again until its tasks grow"
    gamed = trained.env.gaming()
    if gamed:
        outcome.reason += "; replays that gamed their check failed: " + "; ".join(gamed[:3])
    return outcome


@dataclass(frozen=True)
class Vetted:
    """A winner no veto stopped: the screen's verdict on the lines it adds, and the retraction it repeats
    (a user's take-back its tasks have since outgrown), if any."""

    verdict: ScreenResult
    again: Retraction | None


def _vetoes(
    ctx: NightContext, job: TargetJob, planned: Planned, trained: Trained, outcome: SkillOutcome
) -> Vetted | SkillOutcome:
    """What stops a gated winner from being proposed: an answer leaked from the checks, a line the screen
    rejects, replays that reached for hosts the incumbent's never did, or a rule the user took back."""
    incumbent, best = job.incumbent, trained.best
    ok, why = _leak_guard(ctx.settings, planned.tasks).check(_bundle_text(best), _bundle_text(incumbent))
    if not ok:
        outcome.status, outcome.reason = "leak", why
        return outcome
    # Screened again before it is proposed: every line the proposal adds over what the user approved, against
    # the sessions and everything the optimizer was shown tonight (the replays' transcripts and the files they
    # read), with what the steps found on those lines.
    verdict = trained.screen.check(incumbent if not job.new else NOTHING, best, trained.shown)
    verdict = with_step_findings(verdict, trained.result.steps)
    if verdict.rejected:
        return _screened(outcome, verdict)
    phoned = refused_hosts(trained.env, best.content_hash) - refused_hosts(
        trained.env, incumbent.content_hash
    )
    if phoned:
        outcome.status = "screened"
        outcome.reason = (
            "its replays tried to reach hosts the installed skill's replays never did, and were refused: "
            + ", ".join(sorted(phoned)[:5])
        )
        outcome.screen = {"network_blocked": sorted(phoned)}
        return outcome
    again = planned.took_back.get(best.content_hash)
    if again is not None and blocks(again, planned.n_tasks):
        outcome.status = "retracted"
        outcome.reason = f"{again.describe()}; not proposed again until its tasks grow"
        return outcome
    return Vetted(verdict, again)


def _proposal(
    ctx: NightContext,
    job: TargetJob,
    planned: Planned,
    trained: Trained,
    outcome: SkillOutcome,
    vetted: Vetted,
) -> SkillOutcome:
    """Propose the winner with its evidence: the gate's figures and provenance, the screen's verdict, a new
    skill's scope (user scope only after the no-harm check), and where a teammate's rule came from."""
    best, tasks, verdict = trained.best, planned.tasks, vetted.verdict
    found = evidence(trained.result, trained.env, job.incumbent, best, tasks, ctx.budget, job.tool)
    found.screen = verdict.to_dict()
    found.provenance_missing = provenance_missing(verdict.lines, found.provenance)
    if verdict.flagged:
        outcome.screen = verdict.to_dict()
    if vetted.again is not None:
        found.same_as_retracted = vetted.again.describe()
    outcome.tier = found.tier
    fam = job.new_family
    if fam is not None:
        found.new_skill, found.family = True, seeding.family_record(fam)
        placed = scope.decide(ctx.settings.night.new_skill_scope, fam, tasks, found.tasks)
        if placed["scope"] == scope.USER and ctx.settings.night.new_skill_scope == scope.AUTO:
            placed = noharm.user_scope(placed, _no_harm(ctx, fam, placed, best, job.tool))
        found.scope, found.install_to = placed, placed["targets"]
    if ctx.dry_run:
        outcome.status = "dry-run"
        outcome.reason = "a proposal would have been registered (dry run)"
        return outcome
    shared = trained.shared
    if shared is None:
        return _propose(ctx, outcome, best, found, job.parent)
    note = shared_rules.proposal_note(shared, shared.better)
    found.team = {**shared.to_dict(), "note": note}
    proposed = _propose(ctx, outcome, best, found, job.parent)
    proposed.reason = f"{note}; {proposed.reason}"
    return proposed


def _no_harm(
    ctx: NightContext, fam: Family, placed: dict[str, Any], best: SkillBundle, tool: AgentTool
) -> noharm.Verdict:
    """Replay a sample of other families' held-out tasks from repositories outside the rule's evidence,
    without any skill and with the rule, paired by the night's gate (`night/learning/noharm.py`): what user scope
    would do to the work it was not learned on. Never raises for a budget or a tool that cannot replay: the
    verdict then says it was not measured (and the rule stays in its repositories)."""
    own = set(placed["evidence_repositories"])
    rows = ctx.db.query(
        "SELECT DISTINCT family_id, project_path FROM tasks WHERE family_id != ? AND split IN ('val', 'test') "
        "AND project_path IS NOT NULL",
        [fam.id],
    )
    # Only the families with held-out work elsewhere are loaded (loading settles their checks).
    others = sorted({r["family_id"] for r in rows if repository_of(r["project_path"]).root not in own})
    usable = {t.value for t in replay_tools(ctx.settings, [fam])} | {tool.value}
    loaded = [t for t in tasks_for_families(ctx.db, others) if (t.tool or tool.value) in usable]
    sample = noharm.other_tasks(loaded, fam.id, placed["evidence_repositories"])
    if not sample:
        return noharm.Verdict(False, "no other repository's held-out work to measure it on")
    gate = Gate(env_gate(ctx.settings))
    wait = budget_wait(ctx, 2 * gate.repeats * len(sample), tool.value)
    if wait or ctx.dry_run:
        return noharm.Verdict(False, f"not measured tonight: {wait or 'a dry run replays no more'}")
    used = sorted({t.tool or tool.value for t in sample})
    env, agents = replays(ctx, sample, best, used)
    splits = env.splits()
    items = {i.id: i for i in [*splits.val, *splits.test]}
    arms = {"incumbent": NOTHING, "candidate": best}
    agent = agents[used[0]]

    def measure(requests: Sequence[Request]) -> list[float]:
        jobs = [(items[item], arms[arm]) for item, arm in requests]
        with ThreadPoolExecutor(max_workers=max(1, ctx.settings.replay.max_parallel)) as pool:
            results = list(pool.map(lambda job: env.run(job[0], job[1], agent), jobs))
        return [item_score(res.hard, res.soft, gate.cfg) for res in results]

    ctx.say(f"replaying {len(sample)} task(s) of other repositories with and without {best.doc.name}")
    try:
        return noharm.check(gate, measure, sample)
    except NightBudgetExceeded as exc:
        return noharm.Verdict(False, f"not measured: {exc.message}")


def _fingerprint(pending: PendingCandidate, tasks: list[NightTask]) -> None:
    """Record each measured request's fingerprint in the evidence, so a near-copy arriving on a later night
    counts in its cluster (`night/mining/nearcopies.py`)."""
    texts = {t.id: t.prompt for t in tasks}
    ev = pending.evidence
    ev.fingerprints.update(
        {i: fingerprint(texts[i]) for i in ev.pairs if i in texts and i not in ev.fingerprints}
    )


def _screened_tonight(steps: Sequence[HistoryRecord]) -> list[dict[str, Any]]:
    """The candidate screen's rejections in tonight's training (the trainer's `screened` records)."""
    return [s for rec in steps for s in rec.get("screened") or [] if isinstance(s, dict)]


def _retried(took_back: dict[str, Retraction], steps: Sequence[HistoryRecord]) -> str | None:
    """When tonight's candidate was one the user already took back (the ledger refused to test it again):
    what it was, in the user's terms."""
    for rec in steps:
        found = took_back.get(str(rec.get("candidate_hash") or ""))
        if found is not None:
            return found.describe()
    return None


def _needs_text(evidence: dict[str, Any], gate: GateConfig) -> str:
    """What a pending candidate still needs, for status: "about 2 more sessions of this work"."""
    stats = sequential_decision(PairedEvidence.from_dict(evidence), gate).stats
    more = int(stats.get("more_items_needed") or 0)
    if more <= 0:
        return ""
    return f"about {more} more session(s) of this work whose replays improve"


def _trainer(
    ctx: NightContext,
    env: ReplayEnvironment,
    agent: BudgetedAgent,
    incumbent: SkillBundle,
    tasks: list[NightTask],
    run_dir: Path,
    gate: GateConfig,
    ledger: StoreLedger,
    carried: Carried | None,
    screen: CandidateScreen | None = None,
) -> Trainer:
    """The trainer from the incumbent, or resuming the interrupted night's checkpoint of this skill when it
    has one. `agent` replays the tasks of the most used tool; the environment holds one agent per tool."""
    cfg = train_config(ctx.settings, sum(1 for t in tasks if t.split == "train"), gate)
    resumed = ctx.report.resumed_from
    prev = night_dir(resumed) / run_dir.name if resumed else None
    if prev is not None and (prev / "state.json").is_file():
        shutil.copytree(prev, run_dir, dirs_exist_ok=True)
        trainer = Trainer.resume(run_dir, config=cfg, env=env, agent=agent, optimizer=ctx.chat())
        trainer.ledger = ledger
        trainer.screen = screen
    else:
        trainer = Trainer(
            cfg,
            env,
            run_dir,
            agent=agent,
            optimizer=ctx.chat(),
            initial_skill=incumbent,
            pending=carried.pending if carried is not None else None,
            ledger=ledger,
            screen=screen,
        )
    return trainer


def _leak_guard(settings: Settings, tasks: list[NightTask]) -> LeakGuard:
    """Refuses a candidate that addresses the judge or copies its instructions. Quoting a check command or
    a user's rule is allowed: replays run the checks and judge the work, so "run `make lint` before you
    finish" is a good rule; gaming the checks is caught per replay (`skillopt_lib.gaming`)."""
    return LeakGuard(
        checks=sorted({c for t in tasks for c in t.checks}),
        rubric=sorted({r for t in tasks for r in t.rubric}),
        threshold=settings.night.leak_threshold,
        literal=False,
    )


def _propose(
    ctx: NightContext, outcome: SkillOutcome, best: SkillBundle, found: NightEvidence, parent: str | None
) -> SkillOutcome:
    """Register the winner as a proposal (approved at once when the user opted in for this skill)."""
    name = outcome.skill
    note = f"night {ctx.report.run_id}" + (" (new skill)" if outcome.new else "")
    # A rule installed in another scope that it says the opposite of: which one wins where is the report's.
    clash = conflicts.of_proposal(ctx.registry, name, best.doc.body, placement(found.stored()))
    if clash:
        found.conflicts = [c.to_dict() for c in clash]
    version = ctx.registry.propose(name, best, found, origin="trained", parent=parent, note=note)
    outcome.status = "proposed"
    outcome.proposal_id = version.id
    outcome.reason = f"validation {outcome.baseline:.3f} → {outcome.candidate:.3f}"
    if found.tier == "likely":
        outcome.reason += f"; {found.tier_note or 'likely, not yet proven'}"
    if found.same_as_retracted:
        outcome.reason += f"; {found.same_as_retracted}"
    if found.screen and ScreenResult.from_dict(found.screen).flagged:
        outcome.reason += "; " + ScreenResult.from_dict(found.screen).reason()
    for c in clash:
        outcome.reason += f"; {c.describe()}"
    if name not in ctx.settings.night.auto_approve:
        return outcome
    # A likely proposal is shown to the user, never installed unreviewed; nor is one the screen flagged, nor
    # one that adds a line no correction of the user's stands behind.
    refusal = "it is likely, not yet proven" if found.tier == "likely" else None
    refusal = refusal or auto_approve_refusal(found.screen) or _unasked(found)
    if refusal:
        outcome.reason += f" (not auto-approved: {refusal})"
        return outcome
    ctx.registry.approve(version.id)
    outcome.status = "approved"
    outcome.reason += " (auto-approved)"
    return outcome


def _unasked(found: NightEvidence) -> str | None:
    """Why a proposal with lines nobody asked for may not be approved automatically, or None."""
    missing = found.provenance_missing
    if not missing:
        return None
    return f"{len(missing)} added line(s) have no provenance (no correction of yours says them)"


# What a new skill's lines are screened against: nothing the user approved.
NOTHING = SkillBundle(files={})


def _screened(outcome: SkillOutcome, verdict: ScreenResult) -> SkillOutcome:
    """The outcome of a candidate the screen rejected: nothing proposed, the lines and reasons said."""
    outcome.status = "screened"
    outcome.reason = verdict.reason() + "; nothing was proposed"
    outcome.screen = verdict.to_dict()
    return outcome


def refused_hosts(env: ReplayEnvironment, skill_hash: str) -> set[str]:
    """The hosts the replays of `skill_hash` tried to reach and were refused (`ExecResult.network_blocked`)."""
    return {h for runs in env.runs_of(skill_hash) for run in runs for h in run.get("network_blocked") or []}


def _bundle_text(bundle: SkillBundle) -> str:
    return "\n".join(bundle.text_files().values())
