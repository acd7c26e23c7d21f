"""A night's training: for each installed skill that mined task families relate to, train on replays of
those tasks, check the winner for leaked answers, and register it as a proposal with its evidence.

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
from skillopt_daemon.night.agents import _chat_config, make_agent, missing_for_replays
from skillopt_daemon.night.budgets import BudgetedAgent, BudgetedChat, NightBudget, NightBudgetExceeded
from skillopt_daemon.night.evidence import evidence
from skillopt_daemon.night.pending import load_pending, store_pending
from skillopt_daemon.night.replay import ReplayEnvironment, tasks_for_skill
from skillopt_daemon.night.report import CycleReport, SkillOutcome
from skillopt_daemon.night.runs import night_dir
from skillopt_daemon.registry import Registry, Version
from skillopt_lib.agents import AgentTool
from skillopt_lib.backends import create_backend
from skillopt_lib.config import TrainConfig
from skillopt_lib.gate import GateConfig
from skillopt_lib.judge import LeakGuard
from skillopt_lib.skill import SkillBundle
from skillopt_lib.trainer import Trainer, TrainResult

if TYPE_CHECKING:
    from skillopt_daemon.night.mining import Family

Progress = Callable[[str], None]


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


def targets_for(
    db: sqlite_utils.Database, families: list[Family], skill: str | None
) -> dict[str, list[Family]]:
    """The installed skills the mined families relate to (only `skill` when given), with their families."""
    # mining pulls in scikit-learn and scipy: imported when a night runs, not when this module loads.
    from skillopt_daemon.night import mining

    out: dict[str, list[Family]] = {}
    known = set(mining.installed_skills(db))
    for fam in families:
        if fam.skill_name and fam.skill_name in known and (skill is None or fam.skill_name == skill):
            out.setdefault(fam.skill_name, []).append(fam)
    if skill is not None and skill not in out:
        out[skill] = []
    return out


def train_skills(ctx: NightContext, families: list[Family], *, skill: str | None) -> None:
    """Train every target skill in turn, adding one outcome per skill to the night's report."""
    report = ctx.report
    targets = targets_for(ctx.db, families, skill)
    if not targets:
        report.status = "nothing-to-do"
        report.skills = []
        ctx.say("no task family relates to an installed skill yet")
        return
    tools = sorted({AgentTool.parse(t) for fams in targets.values() for f in fams for t in f.tools}, key=str)
    report.missing = missing_for_replays(ctx.settings, tools)
    if report.missing:
        why = "replays cannot run: " + "; ".join(report.missing)
        for name, fams in targets.items():
            report.skills.append(SkillOutcome(name, "error", why, tasks=sum(len(f.attempts) for f in fams)))
        report.status = "completed"
        return
    _open_backends(ctx)
    for name, fams in targets.items():
        report.skills.append(train_one(ctx, name, fams))


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
    """Train one skill on replays of its tasks; a gated, leak-free winner becomes a proposal."""
    picked = _replay_tasks(ctx, name, fams)
    if isinstance(picked, SkillOutcome):
        return picked
    tool, tasks = picked
    current = ctx.registry.current_version(name)
    if current is None:
        return SkillOutcome(name, "error", "the skill has no active version to improve", tasks=len(tasks))
    incumbent = ctx.registry.load_bundle(current.id)
    env = ReplayEnvironment(
        tasks,
        seed_skill=incumbent,
        workspaces_root=paths.workspaces_dir(),
        judge=ctx.judge,
        env_allowlist=ctx.settings.replay.env_allowlist,
        keep=ctx.settings.replay.keep_workspaces,
    )
    run_dir = night_dir(ctx.report.run_id) / name
    ctx.say(f"training {name} on {len(tasks)} replayed tasks with {tool.value}")
    try:
        result = _train(ctx, name, env, tool, incumbent, tasks, run_dir)
    except NightBudgetExceeded as exc:
        why = exc.message + "; nothing was registered"
        return SkillOutcome(name, "budget", why, tasks=len(tasks), run_dir=str(run_dir))
    summary = result.summary
    outcome = SkillOutcome(
        name,
        "no-improvement",
        tasks=len(tasks),
        run_dir=str(run_dir),
        baseline=summary.get("initial_val"),
        candidate=summary.get("best_val"),
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
    if ctx.dry_run:
        outcome.status = "dry-run"
        outcome.reason = "a proposal would have been registered (dry run)"
        return outcome
    return _propose(ctx, outcome, best, found, current)


def _replay_tasks(
    ctx: NightContext, name: str, fams: list[Family]
) -> tuple[AgentTool, list[dict[str, Any]]] | SkillOutcome:
    """The tool most of the skill's tasks were done with and its replayable tasks, or why there are too few."""
    tool_counts = Counter(a.tool for f in fams for a in f.attempts)
    if not tool_counts:
        return SkillOutcome(name, "too-few-tasks", "no mined task relates to this skill")
    tool = AgentTool.parse(tool_counts.most_common(1)[0][0])
    tasks = tasks_for_skill(ctx.db, name, tool.value)
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
    return tool, tasks


def train_config(settings: Settings, train_tasks: int) -> TrainConfig:
    """The trainer's configuration for a night: the night's seed, epochs and gate, every train task a batch."""
    night = settings.night
    return TrainConfig(
        env="replay",
        seed=night.seed,
        epochs=night.epochs,
        batch_size=max(1, train_tasks),
        gate=GateConfig(kind=night.gate, repeats=night.gate_repeats, confidence=night.gate_confidence),
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
    tool: AgentTool,
    incumbent: SkillBundle,
    tasks: list[dict[str, Any]],
    run_dir: Path,
) -> TrainResult:
    """Train from the incumbent, or resume the interrupted night's checkpoint of this skill when it has one."""
    cfg = train_config(ctx.settings, sum(1 for t in tasks if t["split"] == "train"))
    agent = BudgetedAgent(make_agent(ctx.settings, tool), ctx.budget)
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
    ctx: NightContext, outcome: SkillOutcome, best: SkillBundle, found: dict[str, Any], current: Version
) -> SkillOutcome:
    """Register the winner as a proposal (approved at once when the user opted in for this skill)."""
    name = outcome.skill
    version = ctx.registry.propose(
        name, best, found, origin="trained", parent=current.id, note=f"night {ctx.report.run_id}"
    )
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
