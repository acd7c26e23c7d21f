"""Tasks worth replaying: whether a task's check can tell right from wrong at the task's commit.

A validation task whose check can never pass (it needs the network, or its session ended in a failure
nobody fixed) or passes whatever the agent does (a weak check) makes the gate blind: the right skill and
the wrong one score the same. So before a task scores by its check the night makes sure of two things:

- **it can pass**: the check's last run in the task's own session passed, at the end of a successful or
  corrected attempt;
- **it can fail**: run at the pinned commit before any work (in a sandbox workspace, without the agent),
  it does not pass. When that cannot be run (no pinned commit, the project is gone), a failed run earlier
  in the session counts instead.

Checks that fail either test are dropped from the task, but for one that already passes before the work: it
cannot tell right from wrong, yet a replay that breaks it did damage, so it is kept as a *guard* (the replay
fails when a guard fails) and combines with the rubric. A task left with no discriminating check is scored by
its rubric (the user's corrections, judged on the work) when its family has one, with its guards, else left
out of the replays. Each
task's verdict and the reason are stored on its row (`tasks.scoring`, `scoring_why`), which
`skillopt tasks show` prints. Mining decides from the session alone (and probes already run); the night runs
the missing probes, each (repository, commit, uncommitted changes, command) once ever.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import sqlite_utils

from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.ingest.pinning import load_dirty_diff
from skillopt_lib.execution import CheckResult
from skillopt_lib.process import excerpt
from skillopt_lib.sandbox import ReplayTask, SandboxConfig, SandboxError, probe_checks

CHECK, RUBRIC, EXCLUDED = "check", "rubric", "excluded"

# What a check prints when it could not reach the network (Python, curl, git, npm, pip, go, cargo).
NETWORK = re.compile(
    r"could not resolve host|temporary failure in name resolution|name or service not known|"
    r"nodename nor servname|getaddrinfo|ENOTFOUND|EAI_AGAIN|network is unreachable|no route to host|"
    r"connection refused|connection timed out|ConnectionError|NewConnectionError|MaxRetryError|"
    r"Failed to establish a new connection|unable to access 'https?://|dial tcp|"
    r"Could not fetch URL|failed to download|ECONNREFUSED|ETIMEDOUT|socket\.gaierror|gaierror",
    re.IGNORECASE,
)


@dataclass
class Probe:
    """A check run at a pinned commit before any work."""

    command: str
    exit_code: int | None
    passed: bool
    network: bool
    output: str = ""
    # Why the check could not be run before the work (no pinned commit, project gone); never stored.
    unavailable: str = ""


@dataclass
class Verdict:
    """How a task is scored and why; `checks` are the ones that discriminate, `pending` those not yet probed."""

    scoring: str
    why: str
    checks: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)  # pass before the work: a replay must not break them

    def row(self) -> dict[str, Any]:
        return {
            "scoring": self.scoring,
            "scoring_why": self.why,
            "scored_checks_json": json.dumps(self.checks),
            "guard_checks_json": json.dumps(self.guards),
        }


def probe_key(task: Mapping[str, Any], command: str) -> str:
    parts = [task.get("project_path") or "", task.get("repo_commit") or "", task.get("repo_diff_hash") or ""]
    return hashlib.sha256("\0".join([*parts, command.strip()]).encode()).hexdigest()


def _runs(task: Mapping[str, Any], command: str) -> list[dict[str, Any]]:
    cmds = json.loads(task.get("commands_json") or "[]")
    return [c for c in cmds if str(c.get("command") or "").strip() == command.strip()]


def _failed(run: Mapping[str, Any]) -> bool:
    return bool(run.get("is_error")) or (run.get("exit_code") is not None and run.get("exit_code") != 0)


GUARD = "guard"


def _one(task: Mapping[str, Any], command: str, probe: Probe | None) -> tuple[bool | str | None, str]:
    """(discriminates, why). None: it passes after the work, and nothing yet shows it fails before; GUARD:
    it passes before the work too, so it only guards against damage."""
    runs = _runs(task, command)
    if not runs:
        return False, f"`{command}` never ran in this task's session, so nothing shows it can pass here"
    last = runs[-1]
    if _failed(last):
        if NETWORK.search(str(last.get("output") or "")):
            return (
                False,
                f"`{command}` needs the network (its last run could not connect), so it can never pass",
            )
        return (
            False,
            f"`{command}` still failed when the session ended and nobody fixed it, so it can never pass",
        )
    if task.get("outcome") != "success":
        return (
            False,
            f"the session's outcome was {task.get('outcome')}, so `{command}` passing proves nothing",
        )
    if probe is not None and probe.unavailable:
        if _failed(runs[0]):
            return (
                True,
                f"`{command}` failed earlier in its session and passed at its end ({probe.unavailable})",
            )
        return (
            False,
            f"`{command}` never failed in its session and {probe.unavailable}, so nothing shows it can fail",
        )
    if probe is not None:
        if probe.passed:
            return (
                GUARD,
                f"`{command}` already passes before any work at this commit, so it cannot tell right from "
                "wrong; kept as a guard (a replay that breaks it fails)",
            )
        if probe.network:
            return False, f"`{command}` needs the network (it could not connect before the work)"
        return True, f"`{command}` failed before the work at this commit and passed at the end of its session"
    if _failed(runs[0]):
        return None, f"`{command}` failed earlier in its session and passed at its end"
    return None, f"`{command}` passed at the end of its session; not yet run before the work"


def decide(
    task: Mapping[str, Any], checks: Sequence[str], rubric: Sequence[str], probes: Mapping[str, Probe | None]
) -> Verdict:
    """The task's scoring from its session and the probes run so far (`probes[cmd]` None: not run yet)."""
    kept: list[str] = []
    pending: list[str] = []
    guards: list[str] = []
    reasons: list[str] = []
    for cmd in checks:
        ok, why = _one(task, cmd, probes.get(cmd))
        reasons.append(why)
        if ok == GUARD:
            guards.append(cmd)
        elif ok is not False:
            kept.append(cmd)
        if ok is None:
            pending.append(cmd)
    if kept:
        return Verdict(CHECK, "; ".join(reasons), kept, pending, guards)
    if not checks:
        reasons.append("its family has no check")
    if rubric:
        return Verdict(
            RUBRIC, "; ".join([*reasons, "scored by the user's stated rules instead"]), guards=guards
        )
    return Verdict(
        EXCLUDED, "; ".join([*reasons, "no rule from the user to judge it by: left out of replays"])
    )


def cached_probes(
    db: sqlite_utils.Database,
    task: Mapping[str, Any],
    checks: Sequence[str],
    stored: Mapping[str, Probe] | None = None,
) -> dict[str, Probe | None]:
    """The probes already run for `task`'s checks (None: not run yet); `stored` is `stored_probes(...)`
    when the caller has read the probes of many tasks at once."""
    keys = {cmd: probe_key(task, cmd) for cmd in checks}
    found = stored if stored is not None else stored_probes(db, keys.values())
    out: dict[str, Probe | None] = {}
    for cmd, key in keys.items():
        probe = found.get(key)
        out[cmd] = replace(probe, command=cmd) if probe is not None and probe.command != cmd else probe
    return out


def stored_probes(db: sqlite_utils.Database, keys: Iterable[str]) -> dict[str, Probe]:
    """The stored probes among `keys`, by key, in one query (mining asks for every task of the store)."""
    wanted = sorted(set(keys))
    if not wanted or "check_probes" not in db.table_names():
        return {}
    rows = db.query(
        "SELECT key, command, exit_code, passed, network, output FROM check_probes "
        "WHERE key IN (SELECT value FROM json_each(?))",
        [json.dumps(wanted)],
    )
    return {
        r["key"]: Probe(r["command"], r["exit_code"], bool(r["passed"]), bool(r["network"]), r["output"])
        for r in rows
    }


def run_probe(task: Mapping[str, Any], commands: Sequence[str], root: Path) -> list[Probe]:
    """Run `commands` at the task's pinned commit before any work (probes saying why when they cannot)."""
    if not task.get("project_path") or not task.get("repo_commit"):
        # Without a pinned commit the project as it is now is not "before the work".
        return [
            Probe(c, None, False, False, unavailable="the session has no pinned commit") for c in commands
        ]
    replay_task = ReplayTask(
        prompt="",
        repo=task["project_path"],
        commit=task["repo_commit"],
        dirty_diff=load_dirty_diff(task.get("repo_diff_hash")) if task.get("repo_dirty") else None,
        checks=list(commands),
        id=str(task.get("id") or ""),
    )
    try:
        results = probe_checks(replay_task, SandboxConfig(root=root))
    except (SandboxError, OSError) as exc:
        why = f"it could not be run before the work ({excerpt(str(exc), 200)})"
        return [Probe(c, None, False, False, unavailable=why) for c in commands]
    return [_probe(r) for r in results]


def _probe(r: CheckResult) -> Probe:
    network = not r.passed and bool(NETWORK.search(r.output))
    return Probe(r.command, r.exit_code, r.passed, network, excerpt(r.output, 1000))


def settle(
    db: sqlite_utils.Database,
    tasks: list[dict[str, Any]],
    checks: Sequence[str],
    rubric: Sequence[str],
    root: Path,
) -> None:
    """Run the missing probes of `tasks` (rows of one family), store them, and store every task's verdict."""
    for t in tasks:
        probes = cached_probes(db, t, checks)
        verdict = decide(t, checks, rubric, probes)
        if verdict.pending:
            for p in run_probe(t, verdict.pending, root):
                probes[p.command] = p
                if not p.unavailable:
                    _store(db, t, p)
            verdict = decide(t, checks, rubric, probes)
        t.update(verdict.row())
        db.table("tasks").update(t["id"], verdict.row())


def _store(db: sqlite_utils.Database, task: Mapping[str, Any], p: Probe) -> None:
    db.table("check_probes").insert(
        {
            "key": probe_key(task, p.command),
            "repo": task.get("project_path"),
            "commit_sha": task.get("repo_commit"),
            "command": p.command,
            "exit_code": p.exit_code,
            "passed": p.passed,
            "network": p.network,
            "output": p.output,
            "probed_at": utcnow_iso(),
        },
        replace=True,
    )
