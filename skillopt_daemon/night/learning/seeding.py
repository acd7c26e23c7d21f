"""New skills for recurring work: a family of tasks no installed skill covers seeds a skill of its own.

A user with no hand-written skills still repeats work ("fix the lint", "add the changelog entry"). When a
family has at least `night.min_tasks` tasks, a check or a rubric to score them by, and no related skill,
the optimizer drafts a name and description (Agent Skills conventions: a lowercase-hyphen name, and a
description that says what the skill does and when to use it, so the agent loads it at the right moment)
and a minimal body from the family's *train* requests. The night then trains that draft like any other
skill; the proposal is marked new, and approving it installs it wherever the family's sessions came from.

A rejected new skill is not drafted again until its family grows past the size it had when it was
rejected. Every family that does not get a skill says why, for `skillopt status`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import PurePath
from string import Template
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from skillopt_lib.backends.base import ChatBackend, ChatMessage
from skillopt_lib.jsonreply import parse_json_object
from skillopt_lib.skill import NAME_RE, SkillBundle, SkillDoc

if TYPE_CHECKING:
    from skillopt_daemon.night.mining.mine import Family

PROMPT_NAME = "draft_skill.md"
MAX_NAME = 64
MAX_REQUESTS = 12


@dataclass
class FamilyNote:
    """A family that did not get a new skill tonight, and why (shown by `skillopt status`)."""

    family: str
    name: str
    tasks: int
    reason: str
    needs: str = ""  # what would change it, in the user's terms ("2 more sessions of this work")

    def to_dict(self) -> dict[str, Any]:
        out = {"family": self.family, "name": self.name, "tasks": self.tasks, "reason": self.reason}
        if self.needs:
            out["needs"] = self.needs
        return out


class Draft(BaseModel):
    name: str
    description: str
    body: str = ""


def candidates(
    families: list[Family],
    *,
    installed: set[str],
    min_tasks: int,
    rejected: dict[str, int],
    awaiting: dict[str, str] | None = None,
) -> tuple[list[Family], list[FamilyNote]]:
    """The families that seed a new skill tonight, and a note for every other family without a skill.

    `rejected` maps a family id to its size when a new skill drafted from it was rejected; `awaiting` maps a
    family id to the label of its new skill's proposal that still awaits review (not drafted twice).
    """
    awaiting = awaiting or {}
    out: list[Family] = []
    notes: list[FamilyNote] = []
    for fam in families:
        if fam.skill_name and fam.skill_name in installed:
            continue
        size = len(fam.attempts)
        splits = set(fam.splits.values())
        reason = needs = ""
        if size < min_tasks:
            reason = f"too few tasks ({size}; a new skill needs {min_tasks})"
            needs = f"{min_tasks - size} more session(s) of this work"
        elif not fam.checks and not fam.rubric:
            reason = "no check: no command proved the work and the user stated no rule to grade it by"
            needs = "a session where the project's check runs, or a correction saying how you want it"
        elif not {"train", "val"} <= splits:
            reason = "too few distinct requests to keep some for validation"
            needs = "1 more session of this work, asked differently"
        elif fam.id in awaiting:
            reason = f"its new skill {awaiting[fam.id]} awaits your review"
            needs = "your review: skillopt status, skillopt diff"
        elif fam.id in rejected and size <= rejected[fam.id]:
            reason = f"its new skill was rejected at {rejected[fam.id]} tasks; proposed again once it grows"
            needs = f"{rejected[fam.id] - size + 1} more session(s) of this work"
        if reason:
            notes.append(FamilyNote(fam.id, fam.name, size, reason, needs))
        else:
            out.append(fam)
    return out, notes


def _prompt(fam: Family) -> str:
    """The drafter's request: the family's train-split requests only (never a validation task's words)."""
    train = [a for a in fam.attempts if fam.splits.get(a.key, "train") == "train"]
    requests = "\n".join(f"- {a.prompt[:300]}" for a in train[:MAX_REQUESTS])
    projects = ", ".join(sorted({PurePath(p).name for p in fam.projects})) or "their projects"
    source = resources.files("skillopt_daemon.night").joinpath("prompts", PROMPT_NAME).read_text("utf-8")
    return Template(source).safe_substitute(requests=requests, count=len(train), projects=projects)


def skill_name(raw: str, taken: set[str]) -> str:
    """A valid, unused Agent Skills name from what the model proposed (lowercase words joined by hyphens)."""
    base = "-".join(re.findall(r"[a-z0-9]+", raw.lower()))[:MAX_NAME].strip("-") or "recurring-task"
    name, n = base, 2
    while name in taken or not NAME_RE.match(name):
        suffix = f"-{n}"
        name = base[: MAX_NAME - len(suffix)].strip("-") + suffix
        n += 1
    return name


def _fallback(fam: Family) -> Draft:
    """A draft from the family's own name when the model's answer was unusable (training improves it)."""
    return Draft(
        name=fam.name,
        description=f"How to do this recurring kind of work: {fam.name}. Use when the user asks for it.",
        body="",
    )


def draft(chat: ChatBackend, fam: Family, taken: set[str]) -> tuple[SkillBundle, str | None]:
    """A new skill drafted by the optimizer for `fam`, and a note when the model's answer was unusable.

    Budget errors from a budgeted `chat` propagate; a malformed answer falls back to the family's name.
    """
    resp = chat.complete([ChatMessage("user", _prompt(fam))], json_mode=True)
    note: str | None = None
    try:
        got = Draft.model_validate(parse_json_object(resp.text))
    except (ValueError, ValidationError) as exc:
        got, note = (
            _fallback(fam),
            f"the drafted skill was unusable ({str(exc)[:120]}); used the family's name",
        )
    name = skill_name(got.name, taken)
    body = got.body.strip() or starting_body(name)
    description = " ".join(got.description.split())[:1024] or _fallback(fam).description
    return SkillBundle.from_doc(SkillDoc.new(name, description, body + "\n")), note


def starting_body(name: str) -> str:
    """The body of a drafted skill that says nothing yet: its title and the plainest instruction."""
    title = name.replace("-", " ").capitalize()
    return f"# {title}\n\nDo the work the user asks for, then run the project's checks.\n"


def family_record(fam: Family) -> dict[str, Any]:
    """What a new skill's evidence keeps of its family: enough to place it and to know when it grew."""
    return {
        "id": fam.id,
        "name": fam.name,
        "size": len(fam.attempts),
        "tools": fam.tools,
        "projects": fam.projects,
    }


def awaiting_review(versions: list[Any]) -> dict[str, str]:
    """Family id → the label of its new skill's proposal still awaiting review."""
    out: dict[str, str] = {}
    for v in versions:
        ev = v.evidence or {}
        fam = ev.get("family") if ev.get("new_skill") else None
        if v.state == "proposed" and isinstance(fam, dict) and fam.get("id"):
            out[str(fam["id"])] = v.label
    return out


def rejected_sizes(versions: list[Any]) -> dict[str, int]:
    """Family id → its size when a new skill drafted from it was rejected, from the registry's versions."""
    out: dict[str, int] = {}
    for v in versions:
        fam = (v.evidence or {}).get("family") if (v.evidence or {}).get("new_skill") else None
        if v.state == "rejected" and isinstance(fam, dict) and fam.get("id"):
            out[str(fam["id"])] = max(out.get(str(fam["id"]), 0), int(fam.get("size") or 0))
    return out
