"""Team evidence: each member's verdict on each shared rule, and the team's tally of them.

A verdict is what one machine's gate made of a rule on that member's own work: `helped`, `hurt` or
`unmeasured`, with counts of the validation items only. It is a file per member per rule,
`.skillopt/verdicts/<skill>-<hash>/<member>.json`, on the member's own branch `skillopt/<member>/verdicts`:
only that member ever writes either, so verdicts never conflict and merge as plain file additions. Rules
are named by content (skill and hash), so verdicts on the same text add up whichever branch carried it.

A verdict counts only where its path names the member whose branch holds it (a file on one member's branch
claiming to be another's is ignored), and a member's branch wins over an older copy merged into main.
How verdicts combine, and what they do not prove, is in `docs/team.md`.

Beside the counts, each rule shows its publisher's own gate (`publications`: the tier and the items better
and worse that `skillopt-rule.json` records), read only where the rule's files still have the hash it was
published with. It is the publisher's verdict on their own work, shown apart and never added to the
counts: their gate chose the rule among candidates on that work, so counting it would count the choice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils

from skillopt_daemon.night.learning import shared_rules
from skillopt_daemon.team.channel import BRANCH_PREFIX, Channel, member_slug
from skillopt_daemon.team.git import git, identity
from skillopt_daemon.team.pull import claimed_record, rule_files, rule_skills
from skillopt_daemon.team.sanitise import check
from skillopt_lib.skill import SkillBundle

VERDICT_DIR = ".skillopt/verdicts"


def rule_id(skill: str, content_hash: str) -> str:
    return f"{skill}-{content_hash[:12]}"


def verdict_files(db: sqlite_utils.Database, member: str) -> dict[str, str]:
    """This machine's verdicts as the files `publish_verdicts` commits (counts only)."""
    files: dict[str, str] = {}
    for rule in shared_rules.rules(db):
        if rule.verdict is None:
            continue
        record = {
            "skill": rule.skill,
            "content_hash": rule.content_hash,
            "verdict": rule.verdict,
            "items": rule.items,
            "better": rule.better,
            "worse": rule.worse,
        }
        files[f"{VERDICT_DIR}/{rule_id(rule.skill, rule.content_hash)}/{member}.json"] = (
            json.dumps(record, indent=2) + "\n"
        )
    return files


def publish_verdicts(channel: Channel, db: sqlite_utils.Database) -> tuple[str, int, bool]:
    """Commit and push this member's verdicts on their own branch: (branch, verdicts, whether pushed)."""
    name, email = identity()
    member = member_slug(name, email)
    files = verdict_files(db, member)
    check(files)
    branch = f"{BRANCH_PREFIX}{member}/verdicts"
    channel.fetch()
    if not files:
        return branch, 0, False
    mine = f"origin/{branch}"
    if channel.has(mine):
        git("checkout", "--quiet", "--force", "-B", branch, mine, cwd=channel.root)
        git("clean", "-fdq", cwd=channel.root)
    else:
        channel.checkout(branch, from_main=channel.has(channel.main))
    for rel, text in files.items():
        path = channel.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git("add", "--", VERDICT_DIR, cwd=channel.root)
    if not git("status", "--porcelain", "--", VERDICT_DIR, cwd=channel.root).strip():
        return branch, len(files), False
    channel.commit(f"Verdicts of {member} on {len(files)} shared rule(s)")
    git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=channel.root)
    return branch, len(files), True


@dataclass
class Tally:
    """One shared rule across the team: how many members it helped, hurt, or could not be measured for."""

    rule: str
    skill: str
    helped: int = 0
    hurt: int = 0
    unmeasured: int = 0
    items: int = 0
    members: list[str] = field(default_factory=list)
    published_by: str = ""
    # The publisher's own gate on their work (tier, items, better, worse, ...), from skillopt-rule.json.
    publisher_gate: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "skill": self.skill,
            "helped": self.helped,
            "hurt": self.hurt,
            "unmeasured": self.unmeasured,
            "members": len(self.members),
            "items": self.items,
            "published_by": self.published_by,
            "publisher_gate": self.publisher_gate,
        }

    def publisher_said(self) -> str:
        """The publisher's gate in words ("proven: 4 better, 0 worse"), or "" when nothing says."""
        g = self.publisher_gate or {}
        if not g:
            return ""
        return f"{g.get('tier') or 'gated'}: {g.get('better', 0)} better, {g.get('worse', 0)} worse"


def publications(channel: Channel) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every published rule's publisher and their own gate, by rule id (main first, then each member's
    rule branch); a rule whose files no longer have the hash it was published with is left out."""
    folder = channel.policy().folder
    refs = [channel.main] if channel.has(channel.main) else []
    refs += [f"origin/{b}" for b in sorted(channel.rule_branches()) if not b.endswith("/verdicts")]
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for ref in refs:
        for skill in rule_skills(channel, ref, folder):
            files, evidence = rule_files(channel, ref, folder, skill)
            record = claimed_record(evidence)
            bundle = SkillBundle(files=files)
            if record is None or not files or record.get("content_hash") != bundle.content_hash:
                continue
            raw = record.get("gate")
            gate: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
            out[rule_id(skill, bundle.content_hash)] = (str(record.get("published_by") or ""), gate)
    return out


def tally(channel: Channel) -> list[Tally]:
    """Every member's latest verdict on every rule, counted per rule (see the module docstring)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    refs: list[tuple[str, str | None]] = []
    if channel.has(channel.main):
        refs.append((channel.main, None))  # first: a member's own branch overrides it
    for branch in sorted(channel.rule_branches()):
        parts = branch.split("/")
        if len(parts) == 3 and parts[2] == "verdicts":
            refs.append((f"origin/{branch}", parts[1]))
    for ref, owner in refs:
        for path in channel.ls(ref, VERDICT_DIR):
            rel = path[len(VERDICT_DIR) + 1 :].split("/")
            if len(rel) != 2 or not rel[1].endswith(".json"):
                continue
            rid, member = rel[0], rel[1][: -len(".json")]
            if owner is not None and member != owner:
                continue  # a file on one member's branch speaking for another: not theirs to write
            record = _record(channel.show(ref, path))
            if record is not None:
                found[(rid, member)] = record
    out: dict[str, Tally] = {}
    for (rid, member), record in sorted(found.items()):
        t = out.setdefault(rid, Tally(rid, str(record.get("skill") or rid)))
        verdict = record["verdict"]
        setattr(t, verdict, getattr(t, verdict) + 1)
        t.items += int(record.get("items") or 0)
        t.members.append(member)
    for rid, (publisher, gate) in sorted(publications(channel).items()):
        t = out.setdefault(rid, Tally(rid, rid.rsplit("-", 1)[0]))
        t.published_by, t.publisher_gate = publisher, gate
    return sorted(out.values(), key=lambda t: t.rule)


def _record(text: str | None) -> dict[str, Any] | None:
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("verdict") not in shared_rules.VERDICTS:
        return None
    return data
