"""A night's training: for each installed skill that mined task families relate to, train on replays of
those tasks and propose a gated winner (`target.py`); a recurring family that no skill covers seeds a new
skill (`seeding`), trained the same way from its draft and proposed as new. The targets are ordered by
what they teach for what they cost, and the ones the night's budget cannot start wait, first in line for
the next night."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlite_utils

from skillopt_daemon.night import replay_cost
from skillopt_daemon.night.agents import missing_for_replays
from skillopt_daemon.night.budgets import NightBudget, NightBudgetExceeded
from skillopt_daemon.night.learning import planning, seeding, shared_rules
from skillopt_daemon.night.learning.replay import tasks_for_families, tasks_for_skill
from skillopt_daemon.night.ledger import lineage_of, new_skill_target
from skillopt_daemon.night.pending import Carried, load_pending
from skillopt_daemon.night.report import SkillOutcome
from skillopt_daemon.night.runs import last_run
from skillopt_daemon.night.tasks import NightTask
from skillopt_daemon.registry import Registry
from skillopt_lib.agents import AgentTool

if TYPE_CHECKING:
    from skillopt_daemon.night.mining.mine import Family
from skillopt_daemon.night.learning.context import (
    NightContext,
    budget_wait,
    env_gate,
    mining_installed,
    noharm_reserve,
    open_backends,
    replay_tool,
    replay_tools,
    tonight_plan,
)
from skillopt_daemon.night.learning.target import train_and_propose

# Loads a skill's (or a new skill's family's) replayable tasks of one tool: (db, skill name, tool) -> tasks.
TaskLoader = Callable[[sqlite_utils.Database, str, str], list[NightTask]]


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
        reserve = noharm_reserve(ctx.settings, fams[0] if is_new else None)
        job.projection = project(ctx, tasks, tool, carried, corrections, reserve)
    return job


def project(
    ctx: NightContext,
    tasks: list[NightTask],
    tool: AgentTool,
    carried: Carried | None,
    corrections: int = 0,
    reserve: int = 0,
) -> Projection:
    """The replays, tokens and dollars a target's whole plan needs (with the `reserve` it keeps for the
    no-harm check), at what a replay of its tool costs (`replay_cost`: tonight's average, the last nights',
    or the defaults)."""
    gate = env_gate(ctx.settings)
    fresh = len(planning.new_groups(tasks, carried))
    replays = (
        planning.planned_replays(tasks, gate, fresh, carried is not None) + reserve
        if fresh or carried is None
        else 0
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
    return train_and_propose(ctx, name, name, tool, tasks, incumbent, current.id, None, lineage=lineage)


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
        wait = budget_wait(ctx, planned + noharm_reserve(ctx.settings, fam), tool.value)
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
    outcome = train_and_propose(ctx, draft.doc.name, target, tool, tasks, draft, None, fam, carried)
    if note:
        outcome.reason = f"{outcome.reason}; {note}" if outcome.reason else note
    return outcome


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
