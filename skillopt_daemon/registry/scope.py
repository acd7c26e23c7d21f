"""A proposal's scope as the reviewer sees and changes it: where it installs, why, and what its evidence
supports at another scope.

A night records in a new skill's evidence where it installs and why (`night/mining/scope.py`: the repository its
corrections and winning replays come from, or user scope when they span repositories). Every face shows
that (`placement`), and `skillopt approve ID --scope project|user [--repo PATH]` installs elsewhere after
saying what the evidence supports there (`choose`): user scope for a rule measured in one repository was
not measured for no harm anywhere else, and a repository its evidence does not come from was not measured
at all. A repository that moved or was deleted since the rule was learned is refused with the ways out
(user scope, or its new path), before anything is written; so is a folder that does not exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt_daemon.core.repos import MISSING, NO_GIT, Repository, repository_of
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConflictError


def placement(evidence: Mapping[str, Any]) -> dict[str, Any] | None:
    """`{scope, repositories, tools, why}` of a new skill's proposal, from its evidence; None for a
    proposal that improves an installed skill (it installs where that skill is installed)."""
    record = evidence.get("scope")
    if isinstance(record, Mapping) and record.get("scope"):
        return {
            "scope": str(record["scope"]),
            "repositories": [str(r) for r in record.get("evidence_repositories") or []],
            "tools": [str(t) for t in record.get("tools") or []],
            "why": str(record.get("why") or ""),
        }
    if not evidence.get("new_skill"):
        return None
    # A new skill proposed before scopes followed the evidence: where its targets say, and no reason.
    targets = [InstallTarget.parse(str(t)) for t in evidence.get("install_to") or []]
    projects = sorted({str(t.project) for t in targets if t.project is not None})
    return {
        "scope": "project" if projects else "user",
        "repositories": projects,
        "tools": sorted({t.tool.value for t in targets}),
        "why": "proposed before a new skill's scope followed its evidence: where its family was seen",
    }


def describe(place: Mapping[str, Any]) -> str:
    """One line: "project scope in /src/app (claude-code, codex): <why>"."""
    where = (
        f"project scope in {', '.join(place['repositories'])}"
        if place["scope"] == "project"
        else "user scope"
    )
    tools = f" ({', '.join(place['tools'])})" if place["tools"] else ""
    return f"{where}{tools}: {place['why']}" if place["why"] else where + tools


@dataclass
class Choice:
    """Where `--scope` installs a proposal, and what its evidence says about that place."""

    targets: list[InstallTarget]
    verdict: str


def _repositories(evidence: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    record = evidence.get("scope")
    repos = record.get("repositories") if isinstance(record, Mapping) else None
    return {str(r["repo"]): r for r in repos or [] if isinstance(r, Mapping) and r.get("repo")}


def _counts(r: Mapping[str, Any]) -> str:
    return (
        f"{r.get('corrections', 0)} correction(s), {r.get('won', 0)} of {r.get('measured', 0)} measured "
        "task(s) won"
    )


def choose(evidence: Mapping[str, Any], scope: str, repo: Path | None, ref: str) -> Choice:
    """The targets for `--scope user|project` (`--repo`: which repository; default the evidence's) and the
    evidence's verdict for that choice. Raises ConflictError, before anything is written, for a scope it
    cannot serve: no tool known, no repository known, or a repository that no longer exists."""
    if scope not in ("user", "project"):
        raise ConflictError(f"unknown scope {scope!r}", hint="use --scope project or --scope user")
    if repo is not None and scope != "project":
        raise ConflictError("--repo names a repository for project scope", hint="add --scope project")
    place = placement(evidence)
    tools = [AgentTool.parse(t) for t in (place or {}).get("tools") or []]
    if not tools and evidence.get("tool"):
        tools = [AgentTool.parse(str(evidence["tool"]))]
    if not tools:
        raise ConflictError(
            "its evidence names no tool it was learned with, so --scope cannot tell where to install it",
            hint="say where: --target claude-code:user or --target claude-code:project:PATH",
        )
    learned = list((place or {}).get("repositories") or [])
    seen = _repositories(evidence)
    if scope == "user":
        if len(learned) == 1:
            verdict = (
                f"measured only in {learned[0]}: user scope was not measured for no harm in your other "
                "repositories, whose agents will all load it"
            )
        elif learned:
            verdict = (
                f"its evidence spans {len(learned)} repositories ({', '.join(learned)}): user scope fits it"
            )
        else:
            verdict = "its sessions name no repository: user scope is where it was learned"
        return Choice([InstallTarget(t, "user") for t in tools], verdict)
    if repo is None:
        if not learned:
            raise ConflictError(
                "its evidence names no repository to install it in",
                hint=f"name one: skillopt approve {ref} --scope project --repo PATH",
            )
        roots = [_present(Path(r), ref) for r in learned]
    else:
        roots = [_present(repo, ref, given=True)]
    said = []
    for root in roots:
        key = root.root
        if key in learned:
            said.append(f"measured in {key} ({_counts(seen[key])})" if key in seen else f"measured in {key}")
        elif key in seen:
            said.append(
                f"its work was seen in {key}, but none of its corrections or winning replays come from it"
            )
        else:
            where = ", ".join(learned) or "no repository"
            said.append(f"not measured in {key}: its evidence comes from {where}")
        if root.kind == NO_GIT:
            said[-1] += f" ({root.describe()}: installed in that folder)"
    targets = [InstallTarget(t, "project", Path(root.root)) for root in roots for t in tools]
    return Choice(targets, "; ".join(said))


def _present(path: Path, ref: str, *, given: bool = False) -> Repository:
    """The repository (main worktree) holding `path`, refusing one that no longer exists."""
    found = repository_of(path)
    if found.kind != MISSING:
        return found
    if given:
        raise ConflictError(f"{found.root} does not exist", hint="give the repository's folder: --repo PATH")
    raise ConflictError(
        f"the repository this rule was learned in, {found.root}, no longer exists (moved or deleted since)",
        hint=(
            f"install it in user scope: skillopt approve {ref} --scope user; or where it is now: "
            f"skillopt approve {ref} --scope project --repo PATH"
        ),
    )


def require_present(targets: Sequence[InstallTarget], ref: str) -> None:
    """Refuse, before anything is written, project targets a night recorded whose folder is gone: the
    installer would otherwise create the folder anew where the repository used to be."""
    for t in targets:
        if t.project is not None and not t.project.is_dir():
            _present(t.project, ref)
