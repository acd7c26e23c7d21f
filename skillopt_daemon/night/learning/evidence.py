"""The evidence a night attaches to a proposal: scores, the gate's verdict, per-task runs and the spend.

A reviewer decides from this alone (`skillopt diff`, the dashboard's proposal page), so it says what was
measured on which tasks, how sure the gate was, and what it cost, in the registry's `Evidence` fields plus
the per-task baseline and candidate runs, and for every line the candidate adds, what the user said that
motivated it (`provenance`, from `preferences.provenance`).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.mining import preferences
from skillopt_daemon.registry.evidence import NightEvidence
from skillopt_lib.agents import AgentTool
from skillopt_lib.gate import GateStats
from skillopt_lib.skill import SkillBundle
from skillopt_lib.training.records import HistoryRecord

if TYPE_CHECKING:
    from skillopt_daemon.night.learning.replay import ReplayEnvironment
    from skillopt_daemon.night.tasks import NightTask
    from skillopt_lib.trainer import TrainResult


def last_accepted_gate(steps: Sequence[HistoryRecord]) -> dict[str, Any] | None:
    """The gate's record of the last step it accepted in a training run, or None when it accepted none."""
    gate: dict[str, Any] | None = None
    for rec in steps:
        if rec.get("accepted") and rec.get("gate"):
            gate = rec["gate"]
    return gate


def per_task_runs(
    env: ReplayEnvironment, incumbent: SkillBundle, best: SkillBundle, tasks: list[NightTask]
) -> list[dict[str, Any]]:
    """Each replayed task with its runs under the installed skill and under the candidate."""
    base_runs = env.outcomes(incumbent.content_hash)
    cand_runs = env.outcomes(best.content_hash)
    by_id = {t.id: t for t in tasks}
    return [
        {
            "task_id": iid,
            "family": by_id[iid].family if iid in by_id else None,
            "prompt": by_id[iid].prompt[:200] if iid in by_id else "",
            "baseline": base_runs.get(iid, []),
            "candidate": cand_runs.get(iid, []),
        }
        for iid in sorted(set(base_runs) | set(cand_runs))
    ]


def added_lines(incumbent: SkillBundle, best: SkillBundle) -> list[str]:
    """The lines of the candidate's files that the incumbent does not have, in order."""
    old = "\n".join(incumbent.text_files().values()).splitlines()
    new = "\n".join(best.text_files().values()).splitlines()
    out: list[str] = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            out.extend(line for line in new[j1:j2] if line.strip())
    return out


def line_provenance(
    env: ReplayEnvironment, incumbent: SkillBundle, best: SkillBundle, tasks: list[NightTask]
) -> list[dict[str, Any]]:
    """Per added line: the train corrections and sessions behind it, and the train replays that failed."""
    train_runs = env.outcomes(incumbent.content_hash, "train")
    failed = sorted(iid for iid, runs in train_runs.items() if any(r.get("hard", 0) < 1 for r in runs))
    return preferences.provenance(added_lines(incumbent, best), preferences.train_preferences(tasks), failed)


def usage_spend(usage: dict[str, Any]) -> tuple[int, float]:
    """(tokens, dollars) over every role of a run's usage record (`{role: {input_tokens, ...}}`)."""
    roles = [u for u in usage.values() if isinstance(u, dict)]
    tokens = sum(int(u.get("input_tokens", 0)) + int(u.get("output_tokens", 0)) for u in roles)
    cost = sum(float(u.get("cost_usd", 0.0)) for u in roles)
    return tokens, cost


def tier_note(tier: str, stats: GateStats) -> str:
    """The proposal's tier in the reviewer's terms: how many validation tasks improved and what that means."""
    n, better = stats.n or 0, stats.improved_items or 0
    head = f"{better} of {n} independent validation task(s) improved"
    if stats.test != "e-value":
        return f"{head}; p={stats.p_value} <= {stats.alpha}" if stats.p_value is not None else head
    if tier == "likely":
        need = 1 / stats.alpha if stats.alpha else float("inf")
        rate = stats.likely_alpha or 0.0
        return (
            f"{head}; e-value {stats.e_value or 0:.1f}: likely, not yet proven (false proposals at this tier "
            f"<= {rate:.0%}; proven needs {need:.1f})"
        )
    return f"{head}; e-value {stats.e_value or 0:.1f}: proven (false proposals <= {stats.alpha or 0:.1%})"


def evidence(
    result: TrainResult,
    env: ReplayEnvironment,
    incumbent: SkillBundle,
    best: SkillBundle,
    tasks: list[NightTask],
    budget: NightBudget,
    tool: AgentTool,
) -> NightEvidence:
    """The proposal's evidence from a finished training `result` on the replay `env`."""
    summary = result.summary
    gate = last_accepted_gate(result.steps)
    stats = GateStats.model_validate((gate or {}).get("stats") or {})
    tokens, cost = usage_spend(summary.get("usage") or {})
    tier = str(summary.get("tier") or stats.tier or "proven")
    return NightEvidence(
        baseline_score=summary.get("initial_val"),
        candidate_score=summary.get("best_val"),
        delta=(summary.get("best_val") or 0.0) - (summary.get("initial_val") or 0.0),
        confidence=stats.confidence,
        ci_low=stats.lower_bound,
        p_value=stats.p_value,
        alpha=stats.alpha,
        gate_session=stats.session,
        tier=tier,
        tier_note=tier_note(tier, stats),
        task_ids=[t.id for t in tasks],
        gate=gate,
        tokens=tokens,
        cost_usd=round(cost, 6),
        # What priced the money figures (an estimate): the chat models, and the CLI's own figure for replays.
        priced_by=sorted(budget.priced_by),
        tasks=per_task_runs(env, incumbent, best, tasks),
        test=summary.get("test"),
        tool=tool.value,
        replays=budget.replays,
        wall_s=round(budget.wall_s(), 2),
        run_dir=str(result.run_dir),
        provenance=line_provenance(env, incumbent, best, tasks),
    )
