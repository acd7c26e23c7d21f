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

import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import Settings
from skillopt_daemon.night import seeding
from skillopt_daemon.night.agents import _chat_config, make_agent, missing_for_replays, replay_missing
from skillopt_daemon.night.budgets import BudgetedAgent, BudgetedChat, NightBudget, NightBudgetExceeded
from skillopt_daemon.night.evidence import evidence
from skillopt_daemon.night.pending import load_pending, store_pending
from skillopt_daemon.night.progress import planned_replays
from skillopt_daemon.night.replay import ReplayEnvironment, tasks_for_families, tasks_for_skill
from skillopt_daemon.night.report import CycleReport, SkillOutcome
from skillopt_daemon.night.runs import night_dir
from skillopt_daemon.registry import Registry
from skillopt_lib.agents import AgentTool
from skillopt_lib.backends import create_backend
from skillopt_lib.config import TrainConfig
from skillopt_lib.gate import GateConfig, plan_gate
from skillopt_lib.judge import LeakGuard
from skillopt_lib.skill import SkillBundle
from skillopt_lib.trainer import Trainer, TrainResult

if TYPE_CHECKING:
    from skillopt_daemon.night.mining import Family
    from skillopt_daemon.night.progress import NightProgress

Progress = Callable[[str], None]
# Loads a skill's (or a new skill's family's) replayable tasks of one tool: (db, skill name, tool) -> task dicts.
TaskLoader = Callable[[sqlite_utils.Database, str, str], list[dict[str, Any]]]


@dataclass
class NightContext:
    """What every skill's training in one night shares."""

    db: sqlite_utils.Database
    settings: Settings
    report: CycleReport
    budget: NightBudget
    dry_run: bool
    say: Progress
    registry: Any = None
    optimizer: Any = None
    judge: Any = None
    tracker: NightProgress | None = None  # what `skillopt status` shows of the night while it runs


def mining_installed(db: sqlite_utils.Database) -> dict[str, str]:
    """The registered skills' names and descriptions (mining's view of what is installed)."""
    # mining pulls in scikit-learn and scipy: imported when a night runs, not when this module loads.
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
    skill covers; one outcome per skill in the night's report."""
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
        ctx.say("no task family relates to an installed skill or is ready for a new one")
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
    _open_backends(ctx)
    total = len(targets) + len(new)
    for index, (name, fams) in enumerate(targets.items(), 1):
        if ctx.tracker is not None:
            ctx.tracker.skill(name, index=index, total=total)
        report.skills.append(train_one(ctx, name, fams))
    taken = set(mining_installed(ctx.db))
    for index, fam in enumerate(new, len(targets) + 1):
        if ctx.tracker is not None:
            ctx.tracker.skill(fam.name, index=index, total=total, family=fam.name)
        outcome = train_new(ctx, fam, taken)
        taken.add(outcome.skill)
        report.skills.append(outcome)


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
    )
    ctx.report.families = [n.to_dict() for n in notes]
    return chosen


def _open_backends(ctx: NightContext) -> None:
    """The registry and the budgeted optimizer and judge (the judge defaults to the optimizer's settings)."""
    settings = ctx.settings
    ctx.registry = Registry(ctx.db, actor="night")
    root = str(paths.workspaces_dir())
    optimizer = create_backend(_chat_config(settings, settings.optimizer), "optimizer", workspaces_root=root)
    judge_settings = settings.judge if settings.judge.backend else settings.optimizer
    judge = create_backend(_chat_config(settings, judge_settings), "judge", workspaces_root=root)
    ctx.optimizer = BudgetedChat(optimizer, ctx.budget)
    ctx.judge = BudgetedChat(judge, ctx.budget)


def train_one(ctx: NightContext, name: str, fams: list[Family]) -> SkillOutcome:
    """Train one installed skill on replays of its tasks; a gated, leak-free winner becomes a proposal."""
    picked = _replay_tasks(ctx, name, fams, tasks_for_skill)
    if isinstance(picked, SkillOutcome):
        return picked
    tool, tasks = picked
    current = ctx.registry.current_version(name)
    if current is None:
        return SkillOutcome(name, "error", "the skill has no active version to improve", tasks=len(tasks))
    incumbent = ctx.registry.load_bundle(current.id)
    return _train_and_propose(ctx, name, tool, tasks, incumbent, current.id, None)


def train_new(ctx: NightContext, fam: Family, taken: set[str]) -> SkillOutcome:
    """Draft a new skill for a family no skill covers, train it from the draft, and propose it as new."""

    def family_tasks(db: sqlite_utils.Database, _name: str, tool: str) -> list[dict[str, Any]]:
        return tasks_for_families(db, [fam.id], tool)

    picked = _replay_tasks(ctx, fam.name, [fam], family_tasks)
    if isinstance(picked, SkillOutcome):
        picked.family, picked.new = fam.id, True
        return picked
    tool, tasks = picked
    try:
        draft, note = seeding.draft(ctx.optimizer, fam, taken)
    except NightBudgetExceeded as exc:
        return SkillOutcome(fam.name, "budget", exc.message, tasks=len(tasks), family=fam.id, new=True)
    name = draft.doc.name
    ctx.say(f"drafted a new skill {name} for the recurring task family '{fam.name}'")
    outcome = _train_and_propose(ctx, name, tool, tasks, draft, None, fam)
    if note:
        outcome.reason = f"{outcome.reason}; {note}" if outcome.reason else note
    return outcome


def _train_and_propose(
    ctx: NightContext,
    name: str,
    tool: AgentTool,
    tasks: list[dict[str, Any]],
    incumbent: SkillBundle,
    parent: str | None,
    new_family: Family | None,
) -> SkillOutcome:
    """Train from `incumbent` (the installed version, or a new skill's draft) and propose a gated winner."""
    used = sorted({str(t.get("tool") or tool.value) for t in tasks} | {tool.value})
    agents = {t: BudgetedAgent(make_agent(ctx.settings, AgentTool.parse(t)), ctx.budget) for t in used}
    env = ReplayEnvironment(
        tasks,
        seed_skill=incumbent,
        workspaces_root=paths.workspaces_dir(),
        judge=ctx.judge,
        env_allowlist=ctx.settings.replay.env_allowlist,
        keep=ctx.settings.replay.keep_workspaces,
        agents=agents,
    )
    run_dir = night_dir(ctx.report.run_id) / name
    ctx.say(f"training {name} on {len(tasks)} replayed tasks with {', '.join(used)}")
    new = new_family is not None
    family = new_family.id if new_family is not None else None
    try:
        result = _train(ctx, name, env, agents[tool.value], incumbent, tasks, run_dir)
    except NightBudgetExceeded as exc:
        why = exc.message + "; nothing was registered"
        return SkillOutcome(
            name, "budget", why, tasks=len(tasks), run_dir=str(run_dir), new=new, family=family
        )
    summary = result.summary
    outcome = SkillOutcome(
        name,
        "no-improvement",
        tasks=len(tasks),
        run_dir=str(run_dir),
        baseline=summary.get("initial_val"),
        candidate=summary.get("best_val"),
        new=new,
        family=family,
        gate_plan=plan_gate(sum(1 for t in tasks if t["split"] == "val"), env_gate(ctx.settings)).to_dict(),
    )
    best = result.best_skill
    if best.content_hash == incumbent.content_hash or not summary.get("accepted_steps"):
        outcome.reason = "no candidate passed the gate"
        gamed = env.gaming()
        if gamed:
            outcome.reason += "; replays that gamed their check failed: " + "; ".join(gamed[:3])
        return outcome
    ok, why = _leak_guard(ctx.settings, tasks).check(_bundle_text(best), _bundle_text(incumbent))
    if not ok:
        outcome.status, outcome.reason = "leak", why
        return outcome
    found = evidence(result, env, incumbent, best, tasks, ctx.budget, tool)
    if new_family is not None:
        found.update(new_skill=True, family=seeding.family_record(new_family))
        found["install_to"] = _install_to(ctx.settings, new_family)
    if ctx.dry_run:
        outcome.status = "dry-run"
        outcome.reason = "a proposal would have been registered (dry run)"
        return outcome
    return _propose(ctx, outcome, best, found, parent)


def _install_to(settings: Settings, fam: Family) -> list[str]:
    """Where a new skill installs: every tool its family was seen in, in user scope; in the project when the
    user chose project scope and the family lives in one repository."""
    project = fam.projects[0] if len(fam.projects) == 1 else None
    if settings.night.new_skill_scope == "project" and project:
        return [f"{tool}:project:{project}" for tool in fam.tools]
    return [f"{tool}:user" for tool in fam.tools]


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
) -> tuple[AgentTool, list[dict[str, Any]]] | SkillOutcome:
    """The tool most of the skill's tasks were done with and the replayable tasks of every tool that can
    replay them, or why there are too few."""
    tools = replay_tools(ctx.settings, fams)
    if not tools:
        return SkillOutcome(name, "too-few-tasks", "no mined task relates to this skill")
    tool = tools[0]
    loaded = [t for each in tools for t in load(ctx.db, name, each.value)]
    tasks = sorted(loaded, key=lambda t: (str(t.get("started_at") or ""), str(t["id"])))
    splits = Counter(t["split"] for t in tasks)
    least = ctx.settings.night.min_tasks
    if len(tasks) < least or not splits.get("train") or not splits.get("val"):
        return SkillOutcome(
            name,
            "too-few-tasks",
            f"{len(tasks)} tasks (train {splits.get('train', 0)}, val {splits.get('val', 0)}); "
            f"needs at least {least} with train and validation tasks",
            tasks=len(tasks),
        )
    plan = plan_gate(splits["val"], env_gate(ctx.settings))
    if not plan.decidable and load_pending(name) is None:
        # Say it before spending it: replays that can never lead to a decision are not run.
        return SkillOutcome(
            name,
            "undecidable",
            f"{plan.reason}; more sessions of this work will make it decidable",
            tasks=len(tasks),
            gate_plan=plan.to_dict(),
        )
    ctx.say(
        f"{name}: {plan.n_items} validation tasks; a decision needs {plan.min_items} that change, "
        f"about {plan.replays_min}–{plan.replays_max} replays"
    )
    if ctx.tracker is not None:
        ctx.tracker.plan(planned_replays(splits, plan, ctx.settings))
    return tool, tasks


def env_gate(settings: Settings) -> GateConfig:
    """The night's gate, from `night.gate`, `gate_repeats` and `gate_confidence`."""
    night = settings.night
    return GateConfig(kind=night.gate, repeats=night.gate_repeats, confidence=night.gate_confidence)


def train_config(settings: Settings, train_tasks: int) -> TrainConfig:
    """The trainer's configuration for a night: the night's seed, epochs and gate, every train task a batch."""
    night = settings.night
    return TrainConfig(
        env="replay",
        seed=night.seed,
        epochs=night.epochs,
        batch_size=max(1, train_tasks),
        gate=env_gate(settings),
        slow_update=False,
        meta_skill=False,
        patience=None,
        concurrency=max(1, settings.replay.max_parallel),
        evaluate_test=True,
    )


def _train(
    ctx: NightContext,
    name: str,
    env: ReplayEnvironment,
    agent: BudgetedAgent,
    incumbent: SkillBundle,
    tasks: list[dict[str, Any]],
    run_dir: Path,
) -> TrainResult:
    """Train from the incumbent, or resume the interrupted night's checkpoint of this skill when it has one.
    `agent` replays the tasks of the most used tool; the environment holds one agent per tool."""
    cfg = train_config(ctx.settings, sum(1 for t in tasks if t["split"] == "train"))
    resumed = ctx.report.resumed_from
    prev = night_dir(resumed) / name if resumed else None
    if prev is not None and (prev / "state.json").is_file():
        shutil.copytree(prev, run_dir, dirs_exist_ok=True)
        trainer = Trainer.resume(run_dir, config=cfg, env=env, agent=agent, optimizer=ctx.optimizer)
    else:
        trainer = Trainer(
            cfg,
            env,
            run_dir,
            agent=agent,
            optimizer=ctx.optimizer,
            initial_skill=incumbent,
            pending=load_pending(name),
        )
    result = trainer.train()
    if not ctx.dry_run:
        store_pending(name, result.pending)
    return result


def _leak_guard(settings: Settings, tasks: list[dict[str, Any]]) -> LeakGuard:
    """Refuses a candidate that addresses the judge or copies its instructions. Quoting a check command or
    a user's rule is allowed: replays run the checks and judge the work, so "run `make lint` before you
    finish" is a good rule; gaming the checks is caught per replay (`skillopt_lib.gaming`)."""
    return LeakGuard(
        checks=sorted({c for t in tasks for c in t["checks"]}),
        rubric=sorted({r for t in tasks for r in t["rubric"]}),
        threshold=settings.night.leak_threshold,
        literal=False,
    )


def _propose(
    ctx: NightContext, outcome: SkillOutcome, best: SkillBundle, found: dict[str, Any], parent: str | None
) -> SkillOutcome:
    """Register the winner as a proposal (approved at once when the user opted in for this skill)."""
    name = outcome.skill
    note = f"night {ctx.report.run_id}" + (" (new skill)" if outcome.new else "")
    version = ctx.registry.propose(name, best, found, origin="trained", parent=parent, note=note)
    outcome.status = "proposed"
    outcome.proposal_id = version.id
    outcome.reason = f"validation {outcome.baseline:.3f} → {outcome.candidate:.3f}"
    if name in ctx.settings.night.auto_approve:
        ctx.registry.approve(version.id)
        outcome.status = "approved"
        outcome.reason += " (auto-approved)"
    return outcome


def _bundle_text(bundle: SkillBundle) -> str:
    return "\n".join(bundle.text_files().values())
