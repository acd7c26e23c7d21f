"""Where a new rule installs: the repository its evidence comes from, or user scope when it spans several.

A rule learned from corrections given in one repository and measured on that repository's tasks says
nothing about any other: installed in user scope, every project's agent would load it, and the gate never
measured it there. So by default (`night.new_skill_scope = "auto"`) a new skill installs in the project
skill folder of each tool it was seen in, in the one repository its corrections and winning replays come
from, and in user scope only when that evidence spans repositories. `user` and `project` force a scope
(`project`: each repository of the evidence, never user scope).

The decision is recorded in the proposal's evidence (`scope`): the scope, why, and per repository the
tools, tasks, corrections, validation tasks measured and won, so a reviewer (and `skillopt approve
--scope`) can say what the evidence supports. Repositories are main worktrees (`core/repos.py`): two
worktrees of one repository are one place to install.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from skillopt_daemon.core.repos import MISSING, repository_of

if TYPE_CHECKING:
    from skillopt_daemon.night.mining.mine import Family
    from skillopt_daemon.night.tasks import NightTask

AUTO, USER, PROJECT = "auto", "user", "project"


@dataclass
class RepoEvidence:
    """One repository's share of a rule's evidence."""

    repo: str
    kind: str = "git"  # core.repos: git | no-git | missing
    tools: list[str] = field(default_factory=list)
    tasks: int = 0
    corrections: int = 0
    measured: int = 0  # validation tasks replayed with and without the rule here
    won: int = 0  # of those, where the rule's replays scored higher

    @property
    def teaches(self) -> bool:
        """Whether this repository holds evidence for the rule (a correction or a winning replay)."""
        return self.corrections > 0 or self.won > 0

    def counts(self) -> str:
        return f"{self.corrections} correction(s), {self.won} of {self.measured} measured task(s) won"


def _mean(runs: Sequence[Mapping[str, Any]]) -> float | None:
    scores = [float(r.get("soft", r.get("hard", 0.0)) or 0.0) for r in runs]
    return sum(scores) / len(scores) if scores else None


def by_repository(
    fam: Family, tasks: Sequence[NightTask], per_task: Sequence[Mapping[str, Any]]
) -> list[RepoEvidence]:
    """Per repository of the family's sessions: its tools, tasks and corrections, and the validation tasks
    replayed there (`per_task`: the evidence's `tasks`, each with its baseline and candidate runs)."""
    found: dict[str, RepoEvidence] = {}
    tools: dict[str, set[str]] = defaultdict(set)

    def entry(path: str) -> RepoEvidence:
        repo = repository_of(path)
        if repo.root not in found:
            found[repo.root] = RepoEvidence(repo.root, repo.kind)
        return found[repo.root]

    for a in fam.attempts:
        if not a.project_path:
            continue
        e = entry(a.project_path)
        e.tasks += 1
        e.corrections += len(a.corrections)
        tools[e.repo].add(a.tool)
    repo_of_task = {t.id: t.repo for t in tasks if t.repo}
    for item in per_task:
        path = repo_of_task.get(str(item.get("task_id")))
        base, cand = _mean(item.get("baseline") or []), _mean(item.get("candidate") or [])
        if not path or base is None or cand is None:
            continue
        e = entry(path)
        e.measured += 1
        e.won += cand > base
    for e in found.values():
        e.tools = sorted(tools[e.repo])
    return sorted(found.values(), key=lambda e: (-e.corrections, -e.won, e.repo))


def describe(e: RepoEvidence) -> str:
    """What sets a repository apart from a plain git repository, for the reviewer."""
    if e.kind == MISSING:
        return f"{e.repo} no longer exists: approving asks for user scope or its new path"
    return f"{e.repo} is not in a git repository: the rule installs in that folder"


def decide(
    setting: str, fam: Family, tasks: Sequence[NightTask], per_task: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The new skill's scope, why, its install targets (`TOOL:user` or `TOOL:project:PATH`) and the
    evidence per repository, as recorded under the proposal's evidence `scope`."""
    repos = by_repository(fam, tasks, per_task)
    teaching = [e for e in repos if e.teaches] or repos
    summary = "; ".join(f"{e.repo}: {e.counts()}" for e in teaching)
    if not teaching:
        scope, why = USER, "its sessions name no repository, so it installs in user scope"
    elif setting == USER:
        scope, why = USER, f"night.new_skill_scope = user forces user scope (evidence: {summary})"
    elif setting == PROJECT:
        scope = PROJECT
        why = f"night.new_skill_scope = project: installed in each repository of its evidence ({summary})"
    elif len(teaching) == 1:
        scope = PROJECT
        why = (
            f"its corrections and winning replays all come from {teaching[0].repo} ({teaching[0].counts()}): "
            "installed in that repository only; user scope was not measured for no harm elsewhere"
        )
    else:
        scope = USER
        why = f"its evidence spans {len(teaching)} repositories ({summary}), so it installs in user scope"
    if scope == PROJECT:
        odd = [describe(e) for e in teaching if e.kind != "git"]
        if odd:
            why += "; " + "; ".join(odd)
        targets = [f"{tool}:project:{e.repo}" for e in teaching for tool in e.tools or fam.tools]
    else:
        targets = [f"{tool}:user" for tool in fam.tools]
    return {
        "scope": scope,
        "setting": setting,
        "why": why,
        "repositories": [asdict(e) for e in repos],
        "evidence_repositories": [e.repo for e in teaching],
        "tools": fam.tools,
        "targets": targets,
    }
