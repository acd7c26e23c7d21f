"""`skillopt team pull`: teammates' rules brought home as untrusted candidates for this user's night.

Everything in the team repository is treated as text from outside: a rule's lines are screened as tool
output is (`skillopt_lib.screen.screen`, its whole text as the untrusted corpus), and the evidence file
beside it is what its publisher *claims*; it is shown, never trusted, and the receiver's own gate decides.
A rule is refused (kept, with why, never queued) when:

- the team policy on the main branch does not list its commit's author as a publisher, or forbids its scope;
- its `SKILL.md` names another skill than its folder (a rule aimed at a skill it does not claim to be);
- its text is not what was published (the hash in its evidence file differs: edited after publication);
- the screen rejects a line of it.

A branch rewritten since the last pull (force-pushed: the commit read before is gone from its history) is
said so, and its content is taken as a new publication: screened and queued again if it changed. A
member's own publications are not pulled back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from skillopt_daemon.night.learning import shared_rules
from skillopt_daemon.night.learning.shared_rules import SharedRule
from skillopt_daemon.registry import Registry
from skillopt_daemon.registry.evidence import NightEvidence
from skillopt_daemon.team.channel import Channel, member_slug
from skillopt_daemon.team.git import git, identity
from skillopt_daemon.team.policy import TeamPolicy
from skillopt_daemon.team.sanitise import RULE_FILE
from skillopt_lib.errors import SkillOptError
from skillopt_lib.screen import added_lines, screen
from skillopt_lib.skill import SkillBundle

VERDICTS_SUFFIX = "/verdicts"


@dataclass
class Pulled:
    """One rule found in the team repository and what became of it here."""

    key: str
    skill: str
    published_by: str
    status: str  # new | changed | unchanged | refused | proposed (reverify = false)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "skill": self.skill,
            "published_by": self.published_by,
            "status": self.status,
            "note": self.note,
        }


def pull(channel: Channel, db: sqlite_utils.Database, reg: Registry) -> list[Pulled]:
    """Fetch the team repository and file every teammate's rule (see the module docstring)."""
    channel.fetch()
    policy = channel.policy()
    name, email = identity()
    me = member_slug(name, email)
    out: list[Pulled] = []
    present: set[str] = set()
    sources: list[tuple[str, str, str]] = []  # (key prefix, ref, commit)
    for branch, commit in sorted(channel.rule_branches().items()):
        parts = branch.split("/")
        if branch.endswith(VERDICTS_SUFFIX) or len(parts) < 3 or parts[1] == me:
            continue
        sources.append((branch, f"origin/{branch}", commit))
    if channel.has(channel.main):
        sources.append(("main", channel.main, channel.head_of(channel.main)))
    for prefix, ref, commit in sources:
        for skill in rule_skills(channel, ref, policy.folder):
            key = f"{prefix}:{skill}"
            present.add(key)
            out.append(_receive(channel, db, reg, policy, key, ref, commit, skill))
    shared_rules.forget_missing(db, present)
    return out


def rule_skills(channel: Channel, ref: str, folder: str) -> list[str]:
    """The skills a ref holds rules for: each `<folder>/<skill>/` with an evidence file."""
    skills = []
    for path in channel.ls(ref, folder):
        rel = path[len(folder) + 1 :].split("/")
        if len(rel) == 2 and rel[1] == RULE_FILE:
            skills.append(rel[0])
    return skills


def _receive(
    channel: Channel,
    db: sqlite_utils.Database,
    reg: Registry,
    policy: TeamPolicy,
    key: str,
    ref: str,
    commit: str,
    skill: str,
) -> Pulled:
    base = f"{policy.folder}/{skill}/"
    files, evidence = rule_files(channel, ref, policy.folder, skill)
    claimed = claimed_record(evidence)
    author_name, author_email = _author(channel, ref, base)
    published_by = author_name or member_slug(author_name, author_email)
    old = shared_rules.get(db, key)
    rewritten = old is not None and old.commit and not channel.descends(old.commit, commit)
    notes = ["its branch was rewritten (force-pushed) since the last pull"] if rewritten else []
    why = _refusal(policy, claimed, author_name, author_email, files, skill)
    state, findings = "queued", {}
    bundle = SkillBundle(files=files) if files else SkillBundle(files={"SKILL.md": b""})
    if why is None:
        incumbent = _incumbent(reg, skill)
        text = "\n".join(bundle.text_files().values())
        verdict = screen(added_lines(incumbent, bundle.text_files()), tool_outputs=[text])
        findings = verdict.to_dict()
        if verdict.rejected:
            why = f"the screen refused it: {verdict.reason()}"
    if why is not None:
        state = "refused"
        notes.append(why)
    rule = SharedRule(
        key=key,
        skill=skill,
        published_by=published_by,
        bundle=bundle,
        commit=commit,
        state=state,
        note="; ".join(notes),
        claimed=claimed or {},
        screen=findings,
    )
    status = shared_rules.receive(db, rule)
    if status in ("new", "changed") and not policy.reverify:
        proposed = _propose_unproven(db, reg, rule)
        if proposed is not None:
            return Pulled(key, skill, published_by, "proposed", proposed)
    return Pulled(key, skill, published_by, status, rule.note)


def _propose_unproven(db: sqlite_utils.Database, reg: Registry, rule: SharedRule) -> str | None:
    """Under `reverify = false`: a rule for a skill the user has becomes a proposal now, for review, marked
    as not re-proved here (no tier, no gate record: the review faces say "not replayed"); the note that says
    so, or None when the user lacks the skill or already runs this text (the rule then waits for a night,
    the only thing that can place it). The rule leaves the night's queue with no verdict: nothing was
    measured, so nothing is published back as team evidence."""
    current = reg.current_version(rule.skill)
    if current is None or reg.load_bundle(current.id).content_hash == rule.content_hash:
        return None
    note = shared_rules.unproven_note(rule)
    evidence = NightEvidence(team={**rule.to_dict(), "note": note}, reverify=False)
    version = reg.propose(rule.skill, rule.bundle, evidence, origin="proposed", parent=current.id, note=note)
    shared_rules.proposed_unproven(db, rule.key, f"{note}; proposal {version.id[:8]}")
    return note


def _refusal(
    policy: TeamPolicy,
    claimed: dict[str, Any] | None,
    name: str,
    email: str,
    files: dict[str, bytes],
    skill: str,
) -> str | None:
    if claimed is None:
        return f"its {RULE_FILE} is missing or not valid JSON"
    if not files:
        return "it holds no skill text"
    if not policy.may_publish(name, email):
        return f"its author ({email or name}) is not a publisher in the team policy"
    scope = str(claimed.get("scope") or "project")
    if scope not in policy.scopes:
        return f"the team policy does not allow {scope}-scope rules"
    bundle = SkillBundle(files=files)
    try:
        named = bundle.doc.name
    except SkillOptError:
        return "its SKILL.md is not a valid skill document"
    if named != skill:
        return f"its SKILL.md names another skill ({named!r}) than its folder"
    if claimed.get("content_hash") != bundle.content_hash:
        return (
            "its text is not what was published (edited after publication): ask its author to publish again"
        )
    return None


def rule_files(channel: Channel, ref: str, folder: str, skill: str) -> tuple[dict[str, bytes], str | None]:
    """The files of the rule `skill` at `ref` (its skill bundle, without the evidence file or verdicts) and
    the text of its evidence file (`skillopt-rule.json`), or None when it has none."""
    base = f"{folder}/{skill}/"
    files: dict[str, bytes] = {}
    for path in channel.ls(ref, base):
        rel = path[len(base) :]
        if rel == RULE_FILE or rel.startswith("verdicts/"):
            continue
        text = channel.show(ref, path)
        if text is not None:
            files[rel] = text.encode("utf-8")
    return files, channel.show(ref, base + RULE_FILE)


def claimed_record(text: str | None) -> dict[str, Any] | None:
    """The evidence file's record as its publisher wrote it (a claim, never trusted), or None when it is
    missing or not a JSON object."""
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _author(channel: Channel, ref: str, folder: str) -> tuple[str, str]:
    """Who last committed the rule's folder on `ref` (git's record, which the policy is checked against)."""
    out = git("log", "-1", "--format=%an%x00%ae", ref, "--", folder, cwd=channel.root, check=False).strip()
    name, _, email = out.partition("\x00")
    return name, email


def _incumbent(reg: Registry, skill: str) -> dict[str, str]:
    current = reg.current_version(skill) if skill in reg.skill_names() else None
    return reg.load_bundle(current.id).text_files() if current is not None else {}
