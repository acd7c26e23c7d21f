"""Before a new rule installs in user scope: does it harm the work of the repositories it was not learned in?

In user scope every project's agent loads the rule, but the gate measured it only on the tasks of the
repositories its evidence comes from. So before a night proposes user scope, it replays a sample of other
families' held-out tasks from other repositories with the rule and without any, paired by the night's own
gate (`Gate.decide_paired`), and keeps user scope only when that evidence says the rule does not lose
(`skillopt_lib.gate.no_loss`, as gated removals use it). A pair where both replays failed says nothing about
harm: it is counted as uninformative, never as "not worse" (a night once counted 28 such ties as "0
worse"), and a sample with no informative pair does not show no harm. Otherwise the rule is proposed in
project scope, in each repository its evidence comes from, with the reason; with no other repository's
work to measure it on, likewise (it was measured nowhere else).

"Does not lose" alone is too weak a bar on a sample this small: with one pair on each of 8 items a rule that
costs unrelated work 10 points of pass rate shows a mean difference of zero or more about 40% of the time
(`python -m benchmarks.gate --noharm`, docs/performance.md). So the replays must also show the rule's side:
it did better on at least `NET_WINS` more items than worse, or it did worse on none of at least
`CLEAN_ITEMS` informative items. That keeps harmful rules out of user scope in about 1 case in 10 or fewer
under every noise model measured, at the price of keeping most neutral rules in their repositories (where
they still install).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillopt_daemon.core.repos import repository_of
from skillopt_lib.gate import Gate, GateDecision, PairedMeasure, no_loss

if TYPE_CHECKING:
    from skillopt_daemon.night.tasks import NightTask

HELD_OUT = ("val", "test")
SAMPLE_GROUPS = 8  # independent held-out groups replayed at most per rule: enough to see a harm, cheap
NET_WINS = 2  # items better minus items worse that show the rule's side without any clean sweep
CLEAN_ITEMS = 6  # informative items with none worse that show it too


@dataclass
class Verdict:
    """Whether user scope was shown to do no harm, why, and what the replays measured."""

    ok: bool
    why: str
    measured: int = 0  # held-out items replayed with and without the rule
    informative: int = 0  # of those, items where at least one replay did not fail
    gate: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "why": self.why,
            "measured": self.measured,
            "informative": self.informative,
            "gate": self.gate,
        }


def other_tasks(
    tasks: Sequence[NightTask], family: str, repos: Sequence[str], limit: int = SAMPLE_GROUPS
) -> list[NightTask]:
    """Held-out tasks of other families from repositories not in `repos`, at most `limit` groups of
    near-duplicates, picked by a hash of their group (the same sample every night, spread over families)."""
    own = set(repos)
    chosen = [
        t
        for t in tasks
        if t.family != family and t.split in HELD_OUT and t.repo and repository_of(t.repo).root not in own
    ]
    groups = sorted({t.group_key for t in chosen}, key=lambda g: hashlib.sha1(g.encode()).hexdigest())
    keep = set(groups[:limit])
    return [t for t in chosen if t.group_key in keep]


def judge(decision: GateDecision) -> Verdict:
    """The gate's no-loss verdict on the paired replays, with the pairs where both replays failed set
    aside as uninformative."""
    pairs = decision.evidence.pairs if decision.evidence is not None else {}
    measured = sum(1 for ps in pairs.values() if ps)
    informative = sum(1 for ps in pairs.values() if any(score > 0 for pair in ps for score in pair))
    both_failed = measured - informative
    if informative == 0:
        what = f"all {measured} replayed item(s) failed with it and without it" if measured else "nothing"
        return Verdict(
            False,
            f"no harm to other repositories' work was not shown: {what} (uninformative)",
            measured,
            0,
            decision.to_dict(),
        )
    ok, why = no_loss(decision)
    better = int(decision.stats.get("improved_items") or 0)
    worse = int(decision.stats.get("worsened_items") or 0)
    if ok and better - worse < NET_WINS and (worse or informative < CLEAN_ITEMS):
        ok = False
        why = (
            f"{why}, but too few items to tell that from a harm: user scope needs {NET_WINS} more item(s) "
            f"better than worse, or none worse among {CLEAN_ITEMS} informative ones"
        )
    if both_failed:
        why += f"; {both_failed} item(s) where both failed count as uninformative, not as not worse"
    return Verdict(ok, why, measured, informative, decision.to_dict())


def check(gate: Gate, measure: PairedMeasure, tasks: Sequence[NightTask]) -> Verdict:
    """Gate (no skill, the rule) on `tasks` through `measure` (interleaved replays: incumbent = without the
    rule); near-duplicates count once, as in training."""
    if not tasks:
        return Verdict(False, "no other repository's held-out work to measure it on")
    clusters = {t.id: t.group_key for t in tasks}
    decision = gate.decide_paired(measure, [t.id for t in tasks], clusters=clusters)
    return judge(decision)


def user_scope(placed: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
    """The night's scope decision after the no-harm check: user scope kept when the rule does not lose on
    other repositories' work, else project scope in each repository of its evidence, with the reason."""
    out = {**placed, "no_harm": verdict.to_dict()}
    if verdict.ok:
        out["why"] = f"{placed['why']}; on other repositories' work {verdict.why}"
        return out
    repos = [r for r in placed.get("repositories") or [] if r.get("repo") in placed["evidence_repositories"]]
    out["scope"] = "project"
    out["targets"] = [
        f"{tool}:project:{r['repo']}" for r in repos for tool in r.get("tools") or placed.get("tools") or []
    ]
    out["why"] = (
        f"{placed['why']}, but user scope was not shown to do no harm elsewhere ({verdict.why}): installed in "
        "the repositories its evidence comes from"
    )
    return out
