"""A night's training: for each installed skill that mined task families relate to, train on replays of
those tasks, check the winner for leaked answers, and register it as a proposal with its evidence. A
recurring family that no skill covers seeds a new skill (`seeding`), trained the same way from its draft
and proposed as new.

It is the same `skillopt_lib.Trainer` that trains on benchmarks, driven on a `ReplayEnvironment` of the
user's own recurring tasks, with the user's own agent CLI as the frozen agent and the installed version as
the incumbent. A proposal is registered in one transaction at the end of a skill's training, so a crash
never leaves half of one.
"""

from __future__ import annotations

import json
import math
import shutil
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import NightSettings, Settings
from skillopt_daemon.core.repos import repository_of
from skillopt_daemon.night import conflicts, noharm, planning, replay_cost, scope, seeding, shared_rules
from skillopt_daemon.night.agents import make_agent, make_chat, missing_for_replays, replay_missing
from skillopt_daemon.night.budgets import BudgetedAgent, BudgetedChat, NightBudget, NightBudgetExceeded
from skillopt_daemon.night.carried_findings import with_step_findings
from skillopt_daemon.night.evidence import evidence
from skillopt_daemon.night.ledger import DryLedger, StoreLedger, lineage_of, new_skill_target
from skillopt_daemon.night.nearcopies import fingerprint, regroup
from skillopt_daemon.night.pending import Carried, load_pending, store_pending
from skillopt_daemon.night.recorded import recorded_work
from skillopt_daemon.night.replay import ReplayEnvironment, tasks_for_families, tasks_for_skill
from skillopt_daemon.night.report import CycleReport, SkillOutcome
from skillopt_daemon.night.retracted import Retraction, blocks, retracted
from skillopt_daemon.night.runs import last_run, night_dir
from skillopt_daemon.night.screening import candidate_screen
from skillopt_daemon.night.tasks import NightTask
from skillopt_daemon.registry import Registry
from skillopt_daemon.registry.scope import placement
from skillopt_lib.agents import AgentTool
from skillopt_lib.config import TrainConfig
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
from skillopt_lib.usage import format_cost

if TYPE_CHECKING:
    from skillopt_daemon.night.mining import Family
    from skillopt_daemon.night.progress import NightProgress

Progress = Callable[[str], None]
# Loads a skill's (or a new skill's family's) replayable tasks of one tool: (db, skill name, tool) -> tasks.
TaskLoader = Callable[[sqlite_utils.Database, str, str], list[NightTask]]


@dataclass
class NightContext:
    """What every skill's training in one night shares."""

    db: sqlite_utils.Database
    settings: Settings
    report: CycleReport
    budget: NightBudget
    dry_run: bool
    say: Progress
    # The budgeted optimizer and judge, opened when training starts (`open_backends`): mining and a night
    # with nothing to train never build them.
    optimizer: BudgetedChat | None = None
    judge: BudgetedChat | None = None
    tracker: NightProgress | None = None  # what `skillopt status` shows of the night while it runs
    registry: Registry = field(init=False)

    def __post_init__(self) -> None:
        self.registry = Registry(self.db, actor="night")

    def chat(self) -> BudgetedChat:
        """The night's optimizer; training asks for it only after `open_backends`."""
        if self.optimizer is None:
            raise RuntimeError("the night's optimizer is used before its backends were opened")
        return self.optimizer


def mining_installed(db: sqlite_utils.Database) -> dict[str, str]:
    """The registered skills' names and descriptions (mining's view of what is installed)."""
    # mining pulls in numpy: imported when a night runs, not when this module loads.
    from skillopt_daemon.night import mining

    return mining.installed_skills(db)


INSTALLED_NOWHERE = "installed nowhere: skipped (it was uninstalled from every tool)"


def targets_for(
    db: sqlite_utils.Database,
    families: list[Family],
    skill: str | None,
    nowhere: dict[str, list[Family]] | None = None,
) -> dict[str, list[Family]]:
    """The installed skills the mined families relate to (only `skill` when given), with their families.
    A skill installed nowhere (every target uninstalled) is left out, into `nowhere` when given."""
    out: dict[str, list[Family]] = {}
    known = set(mining_installed(db))
    uninstalled = Registry(db, actor="night").installed_nowhere()
    skipped = nowhere if nowhere is not None else {}
    for fam in families:
        if fam.skill_name and fam.skill_name in known and (skill is None or fam.skill_name == skill):
            (skipped if fam.skill_name in uninstalled else out).setdefault(fam.skill_name, []).append(fam)
    if skill is not None and skill not in out:
        (skipped if skill in uninstalled else out).setdefault(skill, [])
    return out


def train_skills(ctx: NightContext, families: list[Family], *, skill: str | None) -> None:
    """Train every target skill in turn, then seed and train a new skill for each recurring family that no
    skill covers; one outcome per skill in the night's report. Targets that waited for budget last night go
    first, then those with the user's corrections, then the larger ones."""
    report = ctx.report
    nowhere: dict[str, list[Family]] = {}
    targets = targets_for(ctx.db, families, skill, nowhere)
    new = _new_skill_families(ctx, families) if skill is None else []
    skipped = [
        SkillOutcome(n, "skipped", INSTALLED_NOWHERE, tasks=sum(len(f.attempts) for f in fams))
        for n, fams in nowhere.items()
    ]
    if not targets and not new:
        report.status = "nothing-to-do"
        report.skills = skipped
        report.reason = nothing_to_do_reason(ctx, families, skipped)
        ctx.say(report.reason)
        return
    report.skills.extend(skipped)
    groups = [*targets.values(), *([f] for f in new)]
    tools = sorted({t for fams in groups if (t := replay_tool(fams)) is not None}, key=str)
    report.missing = missing_for_replays(ctx.settings, tools)
    if report.missing:
        why = "replays cannot run: " + "; ".join(report.missing)
        for name, fams in targets.items():
            report.skills.append(SkillOutcome(name, "error", why, tasks=sum(len(f.attempts) for f in fams)))
        for fam in new:
            report.skills.append(SkillOutcome(fam.name, "error", why, tasks=len(fam.attempts), family=fam.id))
        report.status = "completed"
        return
    open_backends(ctx)
    waited = _waited_last_night(ctx.db)
    jobs = [_pick(ctx, n, f, False) for n, f in targets.items()]
    jobs += [_pick(ctx, f.name, [f], True) for f in new]
    ordered = sorted(jobs, key=lambda job: job.priority(waited))
    taken = set(mining_installed(ctx.db)) | ctx.registry.names_on_disk(
        ctx.settings.enabled_tools(), {p for f in new for p in f.projects}
    )
    # Rules teammates shared for skills this user lacks seed the new skill of the work they describe.
    team = (
        shared_rules.seeds(ctx.db, new, set(mining_installed(ctx.db)), write=not ctx.dry_run) if new else {}
    )
    for index, job in enumerate(ordered, 1):
        name, fams = job.name, job.fams
        if ctx.tracker is not None:
            ctx.tracker.skill(name, index=index, total=len(jobs), family=name if job.is_new else None)
        if job.is_new:
            outcome = train_new(ctx, fams[0], taken, job.picked, team.get(fams[0].id))
            taken.add(outcome.skill)
        else:
            outcome = train_one(ctx, name, fams, job.picked)
        if job.projection is not None:
            outcome.projected = {**job.projection.to_dict(), **(outcome.projected or {})}
        report.skills.append(outcome)
    expected_runs(ctx.budget, [s for s in report.skills if s.status == "waited"])


Picked = tuple[AgentTool, list[NightTask]] | SkillOutcome


@dataclass
class Projection:
    """What a target's plan is projected to cost before it starts, and the corrections it holds: what
    orders the night's targets when it cannot afford them all."""

    replays: int
    tokens: int  # input-equivalent
    usd: float  # estimated
    corrections: int

    @property
    def value(self) -> float:
        """The user's corrections per projected dollar (at the default price per replay when its replays
        report no cost): the night takes first the work that teaches most for what it costs."""
        usd = self.usd if self.usd > 0 else self.replays * replay_cost.USD_PER_REPLAY
        return self.corrections / usd if usd > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "replays": self.replays,
            "tokens": self.tokens,
            "cost_usd": round(self.usd, 4),
            "corrections": self.corrections,
            "corrections_per_usd": round(self.value, 3),
        }


@dataclass
class Job:
    """One target of the night (an installed skill, or a family for a new skill), its replayable tasks as
    picked once, and what its plan is projected to cost."""

    name: str
    fams: list[Family]
    is_new: bool
    picked: Picked
    projection: Projection | None = None

    @property
    def target(self) -> str:
        return new_skill_target(self.fams[0].id) if self.is_new else self.name

    def priority(self, waited: set[str]) -> tuple[bool, float, int]:
        """Targets that waited for budget last night first, then the most corrections per projected dollar,
        then the larger ones (they decide sooner)."""
        value = self.projection.value if self.projection is not None else 0.0
        return (self.target not in waited, -value, -sum(len(f.attempts) for f in self.fams))


def _pick(ctx: NightContext, name: str, fams: list[Family], is_new: bool) -> Job:
    """A target's replayable tasks, and its plan's projected cost (None when it has too few tasks)."""
    if is_new:
        fam = fams[0]

        def load(db: sqlite_utils.Database, _name: str, tool: str) -> list[NightTask]:
            return tasks_for_families(db, [fam.id], tool)

        picked = _replay_tasks(ctx, name, fams, load)
    else:
        picked = _replay_tasks(ctx, name, fams, tasks_for_skill)
    job = Job(name, fams, is_new, picked)
    if not isinstance(picked, SkillOutcome):
        tool, tasks = picked
        carried = load_pending(ctx.db, job.target, ctx.report.warnings)
        corrections = sum(len(a.corrections) for f in fams for a in f.attempts)
        job.projection = project(ctx, tasks, tool, carried, corrections)
    return job


def project(
    ctx: NightContext, tasks: list[NightTask], tool: AgentTool, carried: Carried | None, corrections: int = 0
) -> Projection:
    """The replays, tokens and dollars a target's whole plan needs, at what a replay of its tool costs
    (`replay_cost`: tonight's average, the last nights', or the defaults)."""
    gate = env_gate(ctx.settings)
    fresh = len(planning.new_groups(tasks, carried))
    replays = (
        planning.planned_replays(tasks, gate, fresh, carried is not None) if fresh or carried is None else 0
    )
    per_tokens = replay_cost.tokens_per_replay(ctx.budget, tool.value)
    per_usd = replay_cost.usd_per_replay(ctx.budget, tool.value)
    return Projection(replays, int(replays * per_tokens), replays * per_usd, corrections)


def expected_runs(budget: NightBudget, waiting: list[SkillOutcome]) -> None:
    """When each target that waited tonight is expected to run: they go first the next nights, in the order
    they waited, so one runs once the nights' caps have paid for it and those before it ("next night", "in
    about 3 nights"). Written into each outcome's `projected`."""
    done = {"replays": 0.0, "tokens": 0.0, "cost_usd": 0.0}
    caps = {
        "replays": float(budget.max_replays),
        "tokens": float(budget.max_tokens),
        "cost_usd": budget.max_cost_usd,
    }
    for outcome in waiting:
        plan = outcome.projected or {}
        for key in done:
            done[key] += float(plan.get(key) or 0)
        nights = max(math.ceil(done[k] / caps[k]) if 0 < caps[k] < math.inf else 1 for k in done)
        outcome.projected = {**plan, "expected": "next night" if nights <= 1 else f"in about {nights} nights"}


def nothing_to_do_reason(ctx: NightContext, families: list[Family], skipped: list[SkillOutcome]) -> str:
    """Why a night has nothing to train, in the user's terms, with what the closest work still needs and
    what stops the night's model when one would be needed."""
    if skipped and not ctx.report.families:
        why = "every skill the mined work relates to is installed nowhere"
    elif not families:
        sessions = ctx.report.mining.get("sessions") if isinstance(ctx.report.mining, dict) else None
        seen = f" in {sessions} session(s)" if sessions else ""
        why = (
            f"no recurring work was found yet{seen}: a kind of work becomes a task family after a few "
            "sessions of it"
        )
    else:
        why = "no task family relates to an installed skill, and none is ready for a new skill yet"
        waiting = sorted(ctx.report.families, key=lambda f: -int(f.get("tasks") or 0))
        if waiting:
            top = waiting[0]
            what = f"waiting for {top['needs']}" if top.get("needs") else str(top.get("reason") or "")
            why += f"; the closest is '{str(top.get('name'))[:60]}' ({top.get('tasks')} tasks): {what}"
    problem = (ctx.report.model or {}).get("problem")
    if problem:
        why += f"; and then the night needs a model: {problem}"
    return why


def _waited_last_night(db: sqlite_utils.Database) -> set[str]:
    """The targets the last night left waiting for budget (they go first tonight)."""
    last = last_run(db)
    if not last:
        return set()
    try:
        skills = json.loads(last.get("summary_json") or "{}").get("skills") or []
    except ValueError:
        return set()
    return {
        new_skill_target(s["family"]) if s.get("new") and s.get("family") else str(s.get("skill"))
        for s in skills
        if isinstance(s, dict) and s.get("status") == "waited"
    }


def _new_skill_families(ctx: NightContext, families: list[Family]) -> list[Family]:
    """The families that seed a new skill tonight; every other family without a skill is noted with why."""
    if not ctx.settings.night.new_skills:
        return []
    registry = Registry(ctx.db, actor="night")
    versions = [v for name in registry.skill_names() for v in registry.versions(name)]
    chosen, notes = seeding.candidates(
        families,
        installed=set(mining_installed(ctx.db)),
        min_tasks=ctx.settings.night.min_tasks,
        rejected=seeding.rejected_sizes(versions),
        awaiting=seeding.awaiting_review(versions),
    )
    ctx.report.families = [n.to_dict() for n in notes]
    return chosen


def replays(
    ctx: NightContext,
    tasks: list[NightTask],
    seed_skill: SkillBundle,
    tools: Sequence[str],
    recorded: Mapping[str, str] | None = None,
) -> tuple[ReplayEnvironment, dict[str, BudgetedAgent]]:
    """The night's replays of `tasks`: the environment (in the night's workspaces, with its judge and the
    user's replay settings) and one agent per tool in `tools`, each counted against the night's budget.
    Training, the no-harm check and gated removals all replay through it."""
    agents = {t: BudgetedAgent(make_agent(ctx.settings, AgentTool.parse(t)), ctx.budget) for t in tools}
    env = ReplayEnvironment(
        tasks,
        seed_skill=seed_skill,
        workspaces_root=paths.workspaces_dir(),
        judge=ctx.judge,
        env_allowlist=ctx.settings.replay.env_allowlist,
        keep=ctx.settings.replay.keep_workspaces,
        agents=agents,
        recorded=recorded,
    )
    return env, agents


def open_backends(ctx: NightContext) -> None:
    """The budgeted optimizer and judge (the judge defaults to the optimizer's settings)."""
    settings = ctx.settings
    optimizer = make_chat(settings, settings.optimizer, "optimizer")
    judge_settings = settings.judge if settings.judge.backend else settings.optimizer
    judge = make_chat(settings, judge_settings, "judge")
    ctx.optimizer = BudgetedChat(optimizer, ctx.budget)
    ctx.judge = BudgetedChat(judge, ctx.budget)


def train_one(ctx: NightContext, name: str, fams: list[Family], picked: Picked | None = None) -> SkillOutcome:
    """Train one installed skill on replays of its tasks; a gated, leak-free winner becomes a proposal."""
    if not ctx.dry_run:
        # Train from what the agent reads: a hand edit at any target becomes the active version first.
        for edit in ctx.registry.record_hand_edits(name):
            ctx.say(f"{name} was edited by hand at {edit.target}; training from the edited version")
    if picked is None:
        picked = _replay_tasks(ctx, name, fams, tasks_for_skill)
    if isinstance(picked, SkillOutcome):
        return picked
    tool, tasks = picked
    current = ctx.registry.current_version(name)
    if current is None:
        waiting = [v for v in ctx.registry.versions(name) if v.state == "proposed"]
        if waiting:
            return SkillOutcome(
                name,
                "awaiting-review",
                f"its proposal {waiting[-1].label} awaits your review (skillopt diff {waiting[-1].short_id})",
                tasks=len(tasks),
            )
        return SkillOutcome(name, "error", "the skill has no active version to improve", tasks=len(tasks))
    incumbent = ctx.registry.load_bundle(current.id)
    lineage = lineage_of(ctx.registry.versions(name), current.id)
    return _train_and_propose(ctx, name, name, tool, tasks, incumbent, current.id, None, lineage=lineage)


def train_new(
    ctx: NightContext,
    fam: Family,
    taken: set[str],
    picked: Picked | None = None,
    team_rule: shared_rules.SharedRule | None = None,
) -> SkillOutcome:
    """Draft a new skill for a family no skill covers, train it from the draft, and propose it as new.

    With `team_rule` (a teammate's rule for a skill this user lacks that describes the family), the draft is
    the rule's name and description with nothing in its body, and the rule is the carried candidate: the
    gate then measures the rule against no instructions on this user's replays, and the optimizer's own
    steps go on from there as for any draft.

    A family whose candidate is still gathering evidence keeps its draft: the next night measures the same
    pair, and the family's error budget is one (`night/ledger.py`), however often it is re-drafted.

    A family the night's budget left cannot finish waits before its draft: it spends nothing, not even the
    optimizer's call that would draft it."""

    def family_tasks(db: sqlite_utils.Database, _name: str, tool: str) -> list[NightTask]:
        return tasks_for_families(db, [fam.id], tool)

    if picked is None:
        picked = _replay_tasks(ctx, fam.name, [fam], family_tasks)
    if isinstance(picked, SkillOutcome):
        picked.family, picked.new = fam.id, True
        return picked
    tool, tasks = picked
    target = new_skill_target(fam.id)
    carried = load_pending(ctx.db, target, ctx.report.warnings, write=not ctx.dry_run)
    note: str | None = None
    if carried is not None and carried.incumbent is not None:
        draft = carried.incumbent
    else:
        _tasks, planned, _parted = tonight_plan(ctx, tasks, env_gate(ctx.settings), carried, tool)
        wait = budget_wait(ctx, planned, tool.value)
        if wait:
            return SkillOutcome(
                fam.name,
                "waited",
                f"{wait}; it goes first next night",
                tasks=len(tasks),
                family=fam.id,
                new=True,
            )
        if team_rule is not None and team_rule.skill not in taken:
            draft = shared_rules.neutral_draft(team_rule)
            carried = shared_rules.seeded(team_rule, draft)
            ctx.say(
                f"a rule from the team, {team_rule.skill}, seeds a new skill for the recurring task family "
                f"'{fam.name}'"
            )
        else:
            try:
                draft, note = seeding.draft(ctx.chat(), fam, taken)
            except NightBudgetExceeded as exc:
                return SkillOutcome(
                    fam.name, "budget", exc.message, tasks=len(tasks), family=fam.id, new=True
                )
            ctx.say(f"drafted a new skill {draft.doc.name} for the recurring task family '{fam.name}'")
    outcome = _train_and_propose(ctx, draft.doc.name, target, tool, tasks, draft, None, fam, carried)
    if note:
        outcome.reason = f"{outcome.reason}; {note}" if outcome.reason else note
    return outcome


def budget_wait(ctx: NightContext, planned: int, tool: str | None = None) -> str | None:
    """Why the night's remaining budget cannot finish this plan, or None: a target is started only when
    what is left under every cap (replays, input-equivalent tokens, money) can decide it, at what a replay
    of `tool` costs (`replay_cost`; before tonight's first replay, the last nights' or the defaults). A
    half-measured candidate is evidence wasted. Each reason names the setting that raises its cap."""
    budget = ctx.budget
    names = budget.settings
    left = budget.max_replays - budget.replays
    if planned > left:
        return f"needs up to {planned} replays and the night has {left} left ({names['replays']})"
    per = planning.tokens_per_replay(budget, tool)
    tokens_left = budget.max_tokens - budget.tokens
    if planned * per > tokens_left:
        return (
            f"needs about {int(planned * per):,} tokens for {planned} replays and the night has "
            f"{max(tokens_left, 0):,} left ({names['tokens']})"
        )
    usd = replay_cost.usd_per_replay(budget, tool)
    if usd > 0 and not math.isinf(budget.max_cost_usd):
        cost = planned * usd
        money_left = budget.max_cost_usd - budget.cost_usd
        if cost > money_left:
            return (
                f"needs about {format_cost(cost)} for {planned} replays and the night has "
                f"{format_cost(max(money_left, 0.0))} left ({names['cost']})"
            )
    return None


def tonight_plan(
    ctx: NightContext, tasks: list[NightTask], gate: GateConfig, carried: Carried | None, tool: AgentTool
) -> tuple[list[NightTask], int, str]:
    """The tasks tonight replays, the replays they plan, and, for a family larger than any whole night's
    budget, the note saying it is replayed in parts (empty otherwise)."""
    fresh = len(planning.new_groups(tasks, carried))
    holding = carried is not None
    planned = planning.planned_replays(tasks, gate, fresh, holding)
    parted = ""
    whole = planning.affordable_replays(ctx.budget, whole_night=True, tool=tool.value)
    if budget_wait(ctx, planned, tool.value) and planned > whole:
        # Larger than any night's budget: waiting would wait forever. Replay the part that fits tonight.
        part = planning.fit_tonight(
            tasks, gate, carried, planning.affordable_replays(ctx.budget, tool=tool.value)
        )
        if part is not None:
            groups = {t.group_key for t in tasks if t.split == "val"}
            tonight = {t.group_key for t in part if t.split == "val"}
            parted = (
                f"its plan ({planned} replays) is larger than a whole night's budget: tonight replays "
                f"{len(tonight)} of its {len(groups)} validation groups, later nights the other "
                f"{len(groups - tonight)} (the evidence adds up)"
            )
            tasks = part
            fresh = len(planning.new_groups(tasks, carried))
            planned = planning.planned_replays(tasks, gate, fresh, holding)
    return tasks, planned, parted


def _train_and_propose(
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
    found["screen"] = verdict.to_dict()
    found["provenance_missing"] = provenance_missing(verdict.lines, found.get("provenance") or [])
    if verdict.flagged:
        outcome.screen = verdict.to_dict()
    if vetted.again is not None:
        found["same_as_retracted"] = vetted.again.describe()
    outcome.tier = found.get("tier")
    fam = job.new_family
    if fam is not None:
        found.update(new_skill=True, family=seeding.family_record(fam))
        placed = scope.decide(ctx.settings.night.new_skill_scope, fam, tasks, found.get("tasks") or [])
        if placed["scope"] == scope.USER and ctx.settings.night.new_skill_scope == scope.AUTO:
            placed = noharm.user_scope(placed, _no_harm(ctx, fam, placed, best, job.tool))
        found.update(scope=placed, install_to=placed["targets"])
    if ctx.dry_run:
        outcome.status = "dry-run"
        outcome.reason = "a proposal would have been registered (dry run)"
        return outcome
    shared = trained.shared
    if shared is None:
        return _propose(ctx, outcome, best, found, job.parent)
    found["team"] = {**shared.to_dict(), "note": shared_rules.proposal_note(shared, shared.better)}
    proposed = _propose(ctx, outcome, best, found, job.parent)
    proposed.reason = f"{found['team']['note']}; {proposed.reason}"
    return proposed


def _no_harm(
    ctx: NightContext, fam: Family, placed: dict[str, Any], best: SkillBundle, tool: AgentTool
) -> noharm.Verdict:
    """Replay a sample of other families' held-out tasks from repositories outside the rule's evidence,
    without any skill and with the rule, paired by the night's gate (`night/noharm.py`): what user scope
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
    counts in its cluster (`night/nearcopies.py`)."""
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


def replay_tool(fams: list[Family]) -> AgentTool | None:
    """The tool most of the families' tasks were done with: what stops it from replaying stops the night."""
    tool_counts = Counter(a.tool for f in fams for a in f.attempts)
    return AgentTool.parse(tool_counts.most_common(1)[0][0]) if tool_counts else None


def replay_tools(settings: Settings, fams: list[Family]) -> list[AgentTool]:
    """Every tool the families' tasks were done with that can replay here, the most used first.

    Each task replays with the tool it was done with, so a family whose sessions mix Claude Code and Codex
    trains and validates on all of them. The most used tool always comes first (what stops it is reported
    before the night spends anything); another tool that cannot replay here only leaves its tasks out.
    """
    counts = Counter(a.tool for f in fams for a in f.attempts)
    ranked = [AgentTool.parse(t) for t, _ in counts.most_common()]
    return ranked[:1] + [t for t in ranked[1:] if replay_missing(settings, t) is None]


def _replay_tasks(
    ctx: NightContext, name: str, fams: list[Family], load: TaskLoader
) -> tuple[AgentTool, list[NightTask]] | SkillOutcome:
    """The tool most of the skill's tasks were done with and the replayable tasks of every tool that can
    replay them, or why there are too few.

    A family too small to decide tonight is still trained when it has a task to learn from and one to
    judge on: its evidence is kept and the next sessions of its kind complete it (`night/pending.py`)."""
    tools = replay_tools(ctx.settings, fams)
    if not tools:
        return SkillOutcome(name, "too-few-tasks", "no mined task relates to this skill")
    tool = tools[0]
    loaded = [t for each in tools for t in load(ctx.db, name, each.value)]
    tasks = sorted(loaded, key=lambda t: (t.started_at, t.id))
    splits = Counter(t.split for t in tasks)
    least = ctx.settings.night.min_tasks
    if len(tasks) < least or not splits.get("train") or not splits.get("val"):
        short = max(least - len(tasks), 0 if splits.get("val") and splits.get("train") else 1)
        out = SkillOutcome(
            name,
            "too-few-tasks",
            f"{len(tasks)} replayable tasks (train {splits.get('train', 0)}, val {splits.get('val', 0)}); "
            f"training needs {least} with one to learn from and one to judge on",
            tasks=len(tasks),
        )
        out.needs = f"{max(short, 1)} more session(s) of this work"
        return out
    return tool, tasks


_SETTING = object()


def env_gate(settings: Settings, confidence: float | None = None, likely: Any = _SETTING) -> GateConfig:
    """The night's gate from the user's settings (`night_gate`)."""
    return night_gate(settings.night, confidence, likely)


def night_gate(night: NightSettings, confidence: float | None = None, likely: Any = _SETTING) -> GateConfig:
    """The night's gate, from `night.gate`, `gate_repeats`, `gate_confidence` and `gate_likely_confidence`:
    with the default `sequential`, the library's anytime-valid gate (`GateConfig.anytime()`). `confidence`
    and `likely` (None: no likely tier) override the settings: the ledger's, pinned when the target's budget
    was first used (`StoreLedger.pinned`). This is the configuration `benchmarks/gate.py` measures."""
    conf = night.gate_confidence if confidence is None else confidence
    if night.gate != "sequential":
        return GateConfig(kind=night.gate, repeats=night.gate_repeats, confidence=conf)
    likely = night.gate_likely_confidence if likely is _SETTING else likely
    return GateConfig.anytime(
        repeats=night.gate_repeats,
        confidence=conf,
        likely_confidence=likely if likely is not None and likely < conf else None,
    )


def train_config(settings: Settings, train_tasks: int, gate: GateConfig | None = None) -> TrainConfig:
    """The trainer's configuration for a night: the night's seed, epochs and gate, every train task a batch,
    and no new candidate while a carried one is still gathering evidence."""
    night = settings.night
    return TrainConfig(
        env="replay",
        seed=night.seed,
        epochs=night.epochs,
        batch_size=max(1, train_tasks),
        gate=gate or env_gate(settings),
        slow_update=False,
        meta_skill=False,
        patience=None,
        concurrency=max(1, settings.replay.max_parallel),
        # What a night pays for is replays: the gate measures the installed skill beside each candidate (no
        # separate baseline), a corrected train task's failure is read from its session, and the test split
        # is replayed only for a candidate that won.
        evaluate_test="if-accepted",
        baseline=False,
        use_recorded=True,
        hold_pending=True,
    )


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
    ctx: NightContext, outcome: SkillOutcome, best: SkillBundle, found: dict[str, Any], parent: str | None
) -> SkillOutcome:
    """Register the winner as a proposal (approved at once when the user opted in for this skill)."""
    name = outcome.skill
    note = f"night {ctx.report.run_id}" + (" (new skill)" if outcome.new else "")
    # A rule installed in another scope that it says the opposite of: which one wins where is the report's.
    clash = conflicts.of_proposal(ctx.registry, name, best.doc.body, placement(found))
    if clash:
        found["conflicts"] = [c.to_dict() for c in clash]
    version = ctx.registry.propose(name, best, found, origin="trained", parent=parent, note=note)
    outcome.status = "proposed"
    outcome.proposal_id = version.id
    outcome.reason = f"validation {outcome.baseline:.3f} → {outcome.candidate:.3f}"
    if found.get("tier") == "likely":
        outcome.reason += f"; {found.get('tier_note') or 'likely, not yet proven'}"
    if found.get("same_as_retracted"):
        outcome.reason += f"; {found['same_as_retracted']}"
    if found.get("screen") and ScreenResult.from_dict(found["screen"]).flagged:
        outcome.reason += "; " + ScreenResult.from_dict(found["screen"]).reason()
    for c in clash:
        outcome.reason += f"; {c.describe()}"
    if name not in ctx.settings.night.auto_approve:
        return outcome
    # A likely proposal is shown to the user, never installed unreviewed; nor is one the screen flagged, nor
    # one that adds a line no correction of the user's stands behind.
    refusal = "it is likely, not yet proven" if found.get("tier") == "likely" else None
    refusal = refusal or auto_approve_refusal(found.get("screen")) or _unasked(found)
    if refusal:
        outcome.reason += f" (not auto-approved: {refusal})"
        return outcome
    ctx.registry.approve(version.id)
    outcome.status = "approved"
    outcome.reason += " (auto-approved)"
    return outcome


def _unasked(found: dict[str, Any]) -> str | None:
    """Why a proposal with lines nobody asked for may not be approved automatically, or None."""
    missing = found.get("provenance_missing") or []
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
