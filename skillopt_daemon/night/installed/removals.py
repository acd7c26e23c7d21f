"""A rule's removal is an edit like any other: replayed, gated, then reviewed.

`outcomes.py` calls an installed rule stale (its kind of work is no longer seen) or contradicted (the user
asked for the opposite after it was installed). Taking it out is still a change to what the agents read,
so it must not make their work worse: the rule's family's held-out tasks (validation and test: a removal is
learned from nothing, so no task needs keeping back from it) are replayed with the skill the agents read
now and with the line taken out, interleaved and paired by the night's own gate (`Gate.decide_paired`), and
the removal is proposed only when that evidence says it does not lose (`skillopt_lib.gate.no_loss`: a tie
passes, worse on average does not). Nothing is proven better, so the proposal is `likely` and never
approved unreviewed. Its evidence says why (the user's contradicting words, or when the family was last seen
and its figures), what the gate measured and each task's runs; `skillopt diff` shows it, approve installs it.

- A removal that loses is refused, and the gate's ledger keeps the refusal (target `removal:<skill>`): it is
  not replayed again while the same version is installed.
- A stale rule whose family has no task left to replay is proposed with "not replayed: no task to replay" as
  its tier note. A contradicted one waits instead: the user's contradiction is a session of the family, so
  the next one that can be replayed decides it.
- The replays count toward the night's caps like training's; a night whose budget cannot finish them leaves
  the removal for the next night.
- A dry run replays nothing and proposes nothing (it changes nothing in the store).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillopt_daemon.night.agents import replay_missing
from skillopt_daemon.night.budgets import NightBudgetExceeded
from skillopt_daemon.night.installed.outcomes import CONTRADICTED, STALE, Outcome
from skillopt_daemon.night.learning.context import NightContext, budget_wait, env_gate, open_backends, replays
from skillopt_daemon.night.learning.replay import tasks_for_families
from skillopt_daemon.night.ledger import StoreLedger
from skillopt_daemon.night.tasks import NightTask
from skillopt_daemon.registry import Registry
from skillopt_daemon.registry.evidence import NightEvidence
from skillopt_lib.agents import AgentTool
from skillopt_lib.gate import Gate, GateConfig, GateDecision, PairedMeasure, Request, item_score, no_loss
from skillopt_lib.skill import SkillBundle

if TYPE_CHECKING:
    from skillopt_daemon.registry.models import Version

HELD_OUT = ("val", "test")
NO_TASK = "not replayed: no task to replay"
PROPOSED, REFUSED, WAITING = "proposed", "refused", "waiting"


def ledger_target(skill: str) -> str:
    """The gate ledger's target for a skill's removals (apart from its edits: a removal spends no share of
    the error budget the skill's improvements are tested at)."""
    return f"removal:{skill}"


def removal_bundle_text(text: str, line: str) -> str:
    """`text` without the rule's line (every line that is the same once stripped)."""
    want = line.strip()
    kept = [ln for ln in text.splitlines(keepends=True) if ln.strip() != want]
    return "".join(kept)


@dataclass
class Removal:
    """One stale or contradicted rule, the version the agents read now, and that version without it."""

    outcome: Outcome
    version: Version
    incumbent: SkillBundle
    candidate: SkillBundle

    @property
    def skill(self) -> str:
        return self.outcome.rule.skill

    @property
    def line(self) -> str:
        return self.outcome.rule.line

    def reason(self) -> str:
        o = self.outcome
        if o.verdict == CONTRADICTED:
            return f"the user contradicted it after it was installed ({len(o.contradictions)} time(s))"
        return f"its kind of work was last seen {str(o.last_seen)[:10]}"


def candidates(reg: Registry, found: Sequence[Outcome]) -> list[Removal]:
    """Every stale or contradicted installed rule without a removal proposal yet, with its removal."""
    out: list[Removal] = []
    for o in found:
        if o.verdict not in (STALE, CONTRADICTED) or o.removal_version_id or o.rule.state != "installed":
            continue
        v = reg.current_version(o.rule.skill)  # the version the agents read now, which holds the line
        if v is None:
            continue
        bundle = reg.load_bundle(v.id)
        changed = bundle
        for path, text in bundle.text_files().items():
            new = removal_bundle_text(text, o.rule.line)
            if new != text:
                changed = changed.with_file(path, new)
        if changed.content_hash != bundle.content_hash:
            out.append(Removal(o, v, bundle, changed))
    return out


def held_out(tasks: Sequence[NightTask]) -> list[NightTask]:
    return [t for t in tasks if t.split in HELD_OUT]


def gate_removal(gate: Gate, measure: PairedMeasure, tasks: Sequence[NightTask]) -> GateDecision:
    """The night's gate on (installed skill, skill without the line) over `tasks`; near-duplicates (a task's
    `group`) count once, as in training."""
    ids = [t.id for t in tasks]
    clusters = {t.id: t.group_key for t in tasks}
    return gate.decide_paired(measure, ids, clusters=clusters)


def staleness(o: Outcome, stale_after_days: float) -> dict[str, Any]:
    """The figures that made a rule stale, as its removal's evidence keeps them."""
    fig = o.figures
    return {
        "last_seen": o.last_seen,
        "stale_after_days": stale_after_days,
        "sessions_before": fig.sessions_before,
        "sessions_after": fig.sessions_after,
        "recurred_after": fig.recurred_after,
    }


def _learned_from(o: Outcome) -> list[dict[str, Any]]:
    return [
        {
            "text": c["text"],
            "tool": c["session"].split(":", 1)[0],
            "project": c.get("project") or "",
            "date": str(c["at"])[:10],
            "session": c["session"].split(":", 1)[-1],
            "task_id": c["task_id"],
        }
        for c in o.contradictions[:5]
    ]


def propose(
    reg: Registry,
    r: Removal,
    *,
    tier_note: str,
    replayed: dict[str, Any] | None,
    stale_after_days: float,
) -> str:
    """Register the removal as a proposal with why it goes and what the replays measured (`replayed`: the
    gate's record and each task's runs, None when there was no task to replay). Returns its id."""
    o = r.outcome
    reason = r.reason()
    learned = _learned_from(o)
    evidence = NightEvidence(
        removal=True,
        removes=[o.rule.line],
        reason=o.verdict,
        tier="likely",
        tier_note=f"a removal, {tier_note}: {reason}",
        replayed=replayed is not None,
        family={"id": o.rule.families[0], "name": o.family_names[0]} if o.rule.families else None,
        provenance=[
            {
                "line": o.rule.line,
                "removed": True,
                "why": reason,
                "learned_from": learned,
                "sessions": sorted({c["session"] for c in o.contradictions}),
                "failed_replays": [],
                "matched": bool(learned),
                "rule_version": r.version.id,
            }
        ],
    )
    if o.verdict == STALE:
        evidence.staleness = staleness(o, stale_after_days)
    if replayed is not None:
        evidence = evidence.model_copy(update=replayed)
    # The night made it (a gated removal, or a stale rule's with nothing left to replay): not a hand-made
    # proposal, whose label says nothing measured it.
    p = reg.propose(
        o.rule.skill,
        r.candidate,
        evidence=evidence,
        origin="trained",
        parent=r.version.id,
        note=f"remove: {reason}",
    )
    o.removal_version_id = p.id
    return p.id


# ---------------------------------------------------------------------------------------------- the night


def _measure(
    env: Any, agent: Any, items: dict[str, Any], r: Removal, cfg: GateConfig, parallel: int
) -> PairedMeasure:
    """Interleaved single replays for the gate, started in its order (as the trainer's `_measure_pairs`)."""
    skills = {"incumbent": r.incumbent, "candidate": r.candidate}

    def measure(requests: Sequence[Request]) -> list[float]:
        jobs = [(items[item], skills[arm]) for item, arm in requests]
        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            results = list(pool.map(lambda job: env.run(job[0], job[1], agent), jobs))
        return [item_score(res.hard, res.soft, cfg) for res in results]

    return measure


def _runs(env: Any, r: Removal, tasks: Sequence[NightTask]) -> list[dict[str, Any]]:
    """Each replayed task with its runs under the installed skill ("baseline") and without the line."""
    by_id = {t.id: t for t in tasks}
    base: dict[str, list[dict[str, Any]]] = {}
    cand: dict[str, list[dict[str, Any]]] = {}
    for split in HELD_OUT:
        base.update(env.outcomes(r.incumbent.content_hash, split))
        cand.update(env.outcomes(r.candidate.content_hash, split))
    return [
        {
            "task_id": iid,
            "family": by_id[iid].family if iid in by_id else None,
            "prompt": by_id[iid].prompt[:200] if iid in by_id else "",
            "baseline": base.get(iid, []),
            "candidate": cand.get(iid, []),
        }
        for iid in sorted(set(base) | set(cand))
    ]


TaskLoader = Callable[[Any, list[str]], list[NightTask]]


def night_removals(
    ctx: NightContext, found: Sequence[Outcome], load: TaskLoader | None = None
) -> dict[str, Any]:
    """Replay and gate every removal tonight can decide; propose those that do not lose. Returns what became
    of each (`{proposals: [ids], removals: [{skill, line, verdict, status, why}]}`). `load(db, family ids)`
    gives the replayable tasks (`replay.tasks_for_families`)."""
    loader: TaskLoader = load or (lambda db, fams: tasks_for_families(db, fams))
    reg = ctx.registry
    todo = candidates(reg, found)
    made: list[str] = []
    notes: list[dict[str, Any]] = []
    days = ctx.settings.report.stale_after_days

    def note(r: Removal, status: str, why: str) -> None:
        notes.append(
            {"skill": r.skill, "line": r.line, "verdict": r.outcome.verdict, "status": status, "why": why}
        )
        ctx.say(f"removal of '{r.line[:60]}' from {r.skill}: {status}: {why}")

    if ctx.dry_run:
        for r in todo:
            note(r, WAITING, "a dry run replays and proposes no removal")
        return {"proposals": [], "removals": notes}
    for r in todo:
        tasks = held_out(loader(ctx.db, list(r.outcome.rule.families)))
        if not tasks:
            if r.outcome.verdict == STALE:
                made.append(propose(reg, r, tier_note=NO_TASK, replayed=None, stale_after_days=days))
                note(r, PROPOSED, NO_TASK)
            else:
                note(r, WAITING, "no held-out task of its family can be replayed yet")
            continue
        ledger = StoreLedger(ctx.db, ledger_target(r.skill))
        before = ledger.row(r.incumbent.content_hash, r.candidate.content_hash)
        if before is not None and before["outcome"] != "pending":
            note(r, REFUSED, f"its removal already lost on the replays ({str(before['decided_at'])[:10]})")
            continue
        tools = sorted({t.tool for t in tasks})
        missing = {t: replay_missing(ctx.settings, AgentTool.parse(t)) for t in tools}
        usable = [t for t in tools if missing[t] is None]
        tasks = [t for t in tasks if t.tool in usable]
        if not tasks:
            note(r, WAITING, "replays cannot run: " + "; ".join(m for m in missing.values() if m))
            continue
        gate = Gate(env_gate(ctx.settings))
        wait = budget_wait(ctx, 2 * gate.repeats * len(tasks))
        if wait:
            note(r, WAITING, f"{wait}; it is replayed next night")
            continue
        if ctx.judge is None:
            open_backends(ctx)
            reg = ctx.registry
        env, agents = replays(ctx, tasks, r.incumbent, usable)
        splits = env.splits()
        items = {i.id: i for i in [*splits.val, *splits.test]}
        measure = _measure(env, agents[usable[0]], items, r, gate.cfg, ctx.settings.replay.max_parallel)
        replays_before = ctx.budget.replays
        try:
            decision = gate_removal(gate, measure, tasks)
        except NightBudgetExceeded as exc:
            note(r, WAITING, f"{exc.message}; it is replayed next night")
            continue
        ok, why = no_loss(decision)
        ledger.share(r.incumbent.content_hash, r.candidate.content_hash, gate.cfg)
        ledger.decided(r.incumbent.content_hash, r.candidate.content_hash, "accepted" if ok else "rejected")
        if not ok:
            note(r, REFUSED, why)
            continue
        replayed = {
            "gate": decision.to_dict(),
            "tasks": _runs(env, r, tasks),
            "task_ids": sorted(items),
            "replays": ctx.budget.replays - replays_before,
        }
        made.append(propose(reg, r, tier_note=f"replayed: {why}", replayed=replayed, stale_after_days=days))
        note(r, PROPOSED, why)
    return {"proposals": made, "removals": notes}
