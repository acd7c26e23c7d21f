"""What every target's training in one night shares: the night's context (store, settings, report, budget,
backends), how replays are built and planned within the night's budget, and the gate and training
configuration the night runs with. `training.py` runs the night's targets and `target.py` one target's
phases; both read this."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import NightSettings, Settings
from skillopt_daemon.core.repos import repository_of
from skillopt_daemon.night import replay_cost
from skillopt_daemon.night.agents import make_agent, make_chat, replay_missing
from skillopt_daemon.night.budgets import BudgetedAgent, BudgetedChat, NightBudget
from skillopt_daemon.night.learning import noharm, planning
from skillopt_daemon.night.learning.replay import ReplayEnvironment
from skillopt_daemon.night.mining import scope
from skillopt_daemon.night.pending import Carried
from skillopt_daemon.night.report import CycleReport
from skillopt_daemon.night.tasks import NightTask
from skillopt_daemon.registry import Registry
from skillopt_lib.agents import AgentTool
from skillopt_lib.config import TrainConfig
from skillopt_lib.gate import (
    GateConfig,
)
from skillopt_lib.skill import SkillBundle
from skillopt_lib.usage import format_cost

if TYPE_CHECKING:
    from skillopt_daemon.night.mining.mine import Family
    from skillopt_daemon.night.progress import NightProgress


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
    from skillopt_daemon.night.mining import mine

    return mine.installed_skills(db)


def open_backends(ctx: NightContext) -> None:
    """The budgeted optimizer and judge (the judge defaults to the optimizer's settings)."""
    settings = ctx.settings
    optimizer = make_chat(settings, settings.optimizer, "optimizer")
    judge_settings = settings.judge if settings.judge.backend else settings.optimizer
    judge = make_chat(settings, judge_settings, "judge")
    ctx.optimizer = BudgetedChat(optimizer, ctx.budget)
    ctx.judge = BudgetedChat(judge, ctx.budget)


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


def noharm_reserve(settings: Settings, fam: Family | None) -> int:
    """The replays a new skill's family keeps for the no-harm check (`noharm.SAMPLE_GROUPS` held-out groups
    of other repositories' work, each with and without the rule), planned with its gate: when its work
    spans repositories and its scope follows the evidence (`auto`), a night that starts it must be able to
    finish it, or the rule is left in its repositories for want of a few replays (at the login's caps a
    night once spent all but 4 on the rule's own gate). 0 for every other target."""
    if fam is None or settings.night.new_skill_scope != scope.AUTO:
        return 0
    if len({repository_of(p).root for p in fam.projects}) < 2:
        return 0
    return 2 * env_gate(settings).repeats * noharm.SAMPLE_GROUPS
