"""What the user took back: versions they rejected or rolled back, so a night does not propose them again.

A night that re-proposes, byte for byte, the version the user just rolled back spends a night's budget to
ask a question the user already answered. A retracted text is not proposed again unless the evidence behind
it changed materially (its family grew by half since), and then the proposal says so ("same text as v3,
which you rolled back on ...").
"""

from __future__ import annotations

from dataclasses import dataclass

from skillopt_daemon.registry import Registry
from skillopt_daemon.registry.models import Version

# A retracted text may come back once the tasks behind it have grown by this factor.
MATERIAL_GROWTH = 1.5


@dataclass(frozen=True)
class Retraction:
    label: str  # e.g. lint-rules@v3
    how: str  # rejected | rolled back
    at: str  # when
    tasks: int  # how many tasks its evidence rested on

    def describe(self) -> str:
        return f"same text as {self.label}, which you {self.how} on {self.at[:10]}"


def retracted(registry: Registry) -> dict[str, Retraction]:
    """Content hash -> the latest retraction of a version with that content, over every skill."""
    out: dict[str, Retraction] = {}
    for name in registry.skill_names():
        versions = {v.id: v for v in registry.versions(name)}

        active: dict[str, str | None] = {}
        for event in registry.events(name):
            target = event.target or ""
            if event.action == "reject" and event.version_id in versions:
                v = versions[event.version_id]
                out[v.content_hash] = Retraction(v.label, "rejected", event.at, _tasks_of(v))
            elif event.action == "rollback":
                before = active.get(target)
                if before and before in versions and before != event.version_id:
                    v = versions[before]
                    out[v.content_hash] = Retraction(v.label, "rolled back", event.at, _tasks_of(v))
            if event.version_id and event.action in ("approve", "install", "rollback", "auto-approve"):
                active[target] = event.version_id
        for v in versions.values():
            if v.state == "rejected" and v.content_hash not in out:
                out[v.content_hash] = Retraction(v.label, "rejected", v.decided_at or "", _tasks_of(v))
    return out


def _tasks_of(version: Version) -> int:
    ev = version.evidence or {}
    return len(ev.get("task_ids") or []) if isinstance(ev, dict) else 0


def blocks(found: Retraction, tasks_now: int) -> bool:
    """Whether a retracted text must not be proposed again with `tasks_now` tasks behind it."""
    return tasks_now < max(found.tasks, 1) * MATERIAL_GROWTH
