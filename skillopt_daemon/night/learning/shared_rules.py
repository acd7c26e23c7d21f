"""Rules teammates shared, queued for this user's night: the night's side of the team channel.

`skillopt team pull` files each rule a teammate published here (the store's `shared_rules` table, m014),
after screening every line of it as untrusted text. A queued rule is a candidate like any the optimizer
writes: the night measures it against the user's installed version on the user's own replays, and the gate
alone decides. What the publisher says about it (`claimed`: their gate's figures) is kept to show, never
to decide. A rule that helps becomes a proposal that says where it came from (`proposal_note`); one that
does not help is not proposed, and either way the night records its verdict here (`decide`), with counts
only, for `skillopt team publish --verdicts` to share.

The seam into the night is the trainer's carried candidate (`Trainer(pending=...)`), the same path a
candidate left undecided by an earlier night takes: `carried` offers the oldest queued rule for a skill as a
carried candidate with no evidence yet, so the trainer screens it with the night's own corpora, measures
it against the installed version on the user's validation replays and lets the sequential gate accept,
refute or keep it pending (its evidence then waits in `pending_evidence` like any other). `settle` reads
what the run decided about it and records the verdict. The contract for the night: a rule is taken for the
skill it names, measured once per content (a republished, changed rule is queued again), and its verdict
is one of `VERDICTS`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import sqlite_utils

from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.night.learning import seeding
from skillopt_daemon.night.mining import mine
from skillopt_daemon.night.pending import Carried
from skillopt_lib.gate import PairedEvidence
from skillopt_lib.skill import SkillBundle, SkillDoc, bundle_from_json, bundle_to_json
from skillopt_lib.training.records import HistoryRecord

if TYPE_CHECKING:
    from skillopt_daemon.night.mining.mine import Family
    from skillopt_lib.trainer import PendingCandidate

TABLE = "shared_rules"
Verdict = Literal["helped", "hurt", "unmeasured"]
VERDICTS: tuple[str, ...] = ("helped", "hurt", "unmeasured")
Received = Literal["new", "unchanged", "changed", "refused"]


@dataclass
class SharedRule:
    """One rule a teammate published, as this machine received it and what its night made of it."""

    key: str
    skill: str
    published_by: str
    bundle: SkillBundle
    commit: str
    state: str = "queued"
    note: str = ""
    claimed: dict[str, Any] = field(default_factory=dict)
    screen: dict[str, Any] = field(default_factory=dict)
    verdict: str | None = None
    items: int = 0
    better: int = 0
    worse: int = 0

    @property
    def content_hash(self) -> str:
        return self.bundle.content_hash

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> SharedRule:
        return cls(
            key=row["key"],
            skill=row["skill"],
            published_by=row["published_by"] or "",
            bundle=bundle_from_json(json.loads(row["bundle"])),
            commit=row["commit_sha"] or "",
            state=row["state"],
            note=row["note"] or "",
            claimed=json.loads(row["claimed"] or "{}"),
            screen=json.loads(row["screen"] or "{}"),
            verdict=row["verdict"],
            items=int(row["items"] or 0),
            better=int(row["better"] or 0),
            worse=int(row["worse"] or 0),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "skill": self.skill,
            "published_by": self.published_by,
            "content_hash": self.content_hash,
            "state": self.state,
            "note": self.note,
            "verdict": self.verdict,
            "items": self.items,
            "better": self.better,
            "worse": self.worse,
        }


def receive(db: sqlite_utils.Database, rule: SharedRule) -> Received:
    """File a pulled rule. The same content already received keeps its row (and its verdict); new or
    changed content is queued afresh, or kept refused (`rule.state == "refused"`) with its note."""
    old = get(db, rule.key)
    if old is not None and old.content_hash == rule.content_hash and old.state != "gone":
        if old.commit != rule.commit:
            with db.conn:
                db.execute(f"UPDATE {TABLE} SET commit_sha = ? WHERE key = ?", [rule.commit, rule.key])
        return "unchanged"
    same = _same_content(db, rule)
    if old is None and same is not None and rule.state != "refused":
        # The same text under another key (a branch the team merged into main, then deleted): one rule,
        # measured once. The new key inherits what is known of it, verdict included.
        rule.state = same.state if same.state != "gone" else ("decided" if same.verdict else "queued")
        rule.note = same.note
        _insert(db, rule, verdict=same.verdict, counts=(same.items, same.better, same.worse))
        return "unchanged"
    _insert(db, rule)
    if rule.state == "refused":
        return "refused"
    return "new" if old is None else "changed"


def _same_content(db: sqlite_utils.Database, rule: SharedRule) -> SharedRule | None:
    rows = db.query(
        f"SELECT * FROM {TABLE} WHERE skill = ? AND content_hash = ? AND key != ? AND state != 'refused' "
        "ORDER BY received_at LIMIT 1",
        [rule.skill, rule.content_hash, rule.key],
    )
    found = next(iter(rows), None)
    return SharedRule.from_row(found) if found is not None else None


def _insert(
    db: sqlite_utils.Database,
    rule: SharedRule,
    verdict: str | None = None,
    counts: tuple[int, int, int] = (0, 0, 0),
) -> None:
    row = {
        "key": rule.key,
        "skill": rule.skill,
        "published_by": rule.published_by,
        "content_hash": rule.content_hash,
        "bundle": json.dumps(bundle_to_json(rule.bundle)),
        "claimed": json.dumps(rule.claimed),
        "commit_sha": rule.commit,
        "state": rule.state,
        "note": rule.note,
        "screen": json.dumps(rule.screen),
        "verdict": verdict,
        "items": counts[0],
        "better": counts[1],
        "worse": counts[2],
        "received_at": utcnow_iso(),
        "decided_at": None,
    }
    with db.conn:
        db.table(TABLE).upsert(row, pk="key")


def get(db: sqlite_utils.Database, key: str) -> SharedRule | None:
    rows = list(db.query(f"SELECT * FROM {TABLE} WHERE key = ?", [key]))
    return SharedRule.from_row(rows[0]) if rows else None


def rules(db: sqlite_utils.Database) -> list[SharedRule]:
    """Every rule received, in the order received."""
    return [SharedRule.from_row(r) for r in db.query(f"SELECT * FROM {TABLE} ORDER BY received_at, key")]


def queued(db: sqlite_utils.Database, skill: str | None = None) -> list[SharedRule]:
    """The rules waiting for a night, for one skill or all, oldest first."""
    where, args = ("state = 'queued'", []) if skill is None else ("state = 'queued' AND skill = ?", [skill])
    return [
        SharedRule.from_row(r)
        for r in db.query(f"SELECT * FROM {TABLE} WHERE {where} ORDER BY received_at", args)
    ]


def forget_missing(db: sqlite_utils.Database, present: set[str]) -> list[str]:
    """Mark rules whose branch the team deleted as gone (their verdicts stay); the keys marked."""
    gone = [r.key for r in rules(db) if r.key not in present and r.state != "gone"]
    with db.conn:
        for key in gone:
            db.execute(f"UPDATE {TABLE} SET state = 'gone' WHERE key = ?", [key])
    return gone


def verdict_of(accepted: bool, better: int, worse: int) -> Verdict:
    """The verdict of one night's gate on a shared rule: helped when the gate accepted it, hurt when more
    of the user's tasks got worse than better, else it could not be measured."""
    if accepted:
        return "helped"
    return "hurt" if worse > better else "unmeasured"


def decide(
    db: sqlite_utils.Database, key: str, verdict: Verdict, items: int, better: int, worse: int
) -> None:
    """Record what this machine's gate made of a shared rule (counts only)."""
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}")
    with db.conn:
        db.execute(
            f"UPDATE {TABLE} SET state = 'decided', verdict = ?, items = ?, better = ?, worse = ?, decided_at = ? "
            "WHERE key = ?",
            [verdict, items, better, worse, utcnow_iso(), key],
        )


def unproven_note(rule: SharedRule) -> str:
    """What a proposal made from a shared rule without re-proof (`reverify = false`) says first."""
    return (
        f"from the team (published by {rule.published_by or 'a teammate'}), not re-proved on your work: "
        "the team's policy does not require it"
    )


def proposed_unproven(db: sqlite_utils.Database, key: str, note: str) -> None:
    """A rule proposed at once under `reverify = false`: out of the night's queue, with no verdict (nothing
    was measured, so there is nothing to publish back)."""
    with db.conn:
        db.execute(
            f"UPDATE {TABLE} SET state = 'proposed', note = ?, decided_at = ? WHERE key = ?",
            [note, utcnow_iso(), key],
        )


def proposal_note(rule: SharedRule, proven_on: int) -> str:
    """What a proposal built from a shared rule says first."""
    return f"from the team (published by {rule.published_by or 'a teammate'}), proven on {proven_on} of your tasks"


def carried(db: sqlite_utils.Database, skill: str, incumbent: SkillBundle) -> Carried | None:
    """The oldest queued rule for `skill` as a candidate the trainer carries into tonight's run, with no
    evidence yet (the publisher's figures are never evidence here), or None. A rule whose text the user
    already runs has nothing to prove: it is recorded as unmeasured and not offered."""
    from skillopt_lib.trainer import PendingCandidate

    for rule in queued(db, skill):
        if rule.content_hash == incumbent.content_hash:
            with db.conn:
                db.execute(
                    f"UPDATE {TABLE} SET state = 'decided', verdict = 'unmeasured', note = ?, decided_at = ? "
                    "WHERE key = ?",
                    ["you already run this text", utcnow_iso(), rule.key],
                )
            continue
        evidence = PairedEvidence(rule.content_hash, incumbent.content_hash)
        reason = f"a rule from the team (published by {rule.published_by or 'a teammate'})"
        pending: PendingCandidate = PendingCandidate(rule.bundle, incumbent.content_hash, evidence, reason)
        return Carried(pending)
    return None


UNMATCHED = "none of your recurring work matches it yet"


def seeds(
    db: sqlite_utils.Database, families: Sequence[Family], installed: set[str], *, write: bool = True
) -> dict[str, SharedRule]:
    """Queued rules for skills this user does not have, each given to the family without a skill whose
    requests its name and description describe best (by mining's own test, `mine.describes`): family id
    -> rule. One rule per family and one family per rule, the closest pairs first. The family then seeds
    a new skill from the rule instead of the optimizer's draft (`neutral_draft`, `seeded`), so the rule is
    re-proved on this user's replays of that work. A rule no family matches stays queued, with a note saying
    so (unless `write` is false, a dry run)."""
    rules: dict[str, SharedRule] = {}
    for rule in queued(db):
        if rule.skill not in installed:
            rules.setdefault(rule.skill, rule)  # the oldest queued text of each skill
    if not rules:
        return {}
    offered = list(rules.values())
    texts = [f"{r.skill.replace('-', ' ')} {r.bundle.doc.description}" for r in offered]
    sims = mine.describes(families, texts) if families else None
    pairs = (
        []
        if sims is None
        else sorted(
            ((float(sims[i, j]), i, j) for i in range(len(families)) for j in range(len(offered))),
            reverse=True,
        )
    )
    out: dict[str, SharedRule] = {}
    taken: set[int] = set()
    for sim, i, j in pairs:
        if sim < mine.DESCRIBES:
            break
        if families[i].id in out or j in taken:
            continue
        out[families[i].id] = offered[j]
        taken.add(j)
    if write:
        with db.conn:
            for j, rule in enumerate(offered):
                note = "" if j in taken else UNMATCHED
                db.execute(
                    f"UPDATE {TABLE} SET note = ? WHERE key = ? AND state = 'queued'", [note, rule.key]
                )
    return out


def neutral_draft(rule: SharedRule) -> SkillBundle:
    """The draft a rule for a skill this user lacks is measured against: the rule's own name and
    description over the body a drafted skill starts from, so the gate sees the rule's instructions and
    nothing else (no skill is what the user runs today)."""
    doc = rule.bundle.doc
    return SkillBundle.from_doc(SkillDoc.new(doc.name, doc.description, seeding.starting_body(doc.name)))


def seeded(rule: SharedRule, draft: SkillBundle) -> Carried:
    """`rule` as the carried candidate of a new skill drafted as `draft`, with no evidence yet."""
    from skillopt_lib.trainer import PendingCandidate

    evidence = PairedEvidence(rule.content_hash, draft.content_hash)
    reason = f"a rule from the team (published by {rule.published_by or 'a teammate'}) for work you do"
    return Carried(PendingCandidate(rule.bundle, draft.content_hash, evidence, reason), draft)


def settle(db: sqlite_utils.Database, skill: str, steps: Sequence[HistoryRecord]) -> SharedRule | None:
    """Record what a training run's gate decided about the queued rules of `skill` it measured (its
    `pending` records); the rule it accepted, or None. A rule still undecided stays queued, its evidence
    kept as the target's pending evidence for the next nights."""
    accepted: SharedRule | None = None
    by_hash: dict[str, list[SharedRule]] = {}
    for r in queued(db, skill):  # the same text can come on a branch and, once merged, on main
        by_hash.setdefault(r.content_hash, []).append(r)
    for rec in steps:
        if rec.get("kind") != "pending":
            continue
        for rule in by_hash.get(str(rec.get("skill_hash")), []):
            if _settle_one(db, rule, rec) == "helped":
                accepted = get(db, rule.key)
    return accepted


def _settle_one(db: sqlite_utils.Database, rule: SharedRule, rec: Mapping[str, Any]) -> str | None:
    """Record one run's `pending` record about `rule`; the verdict, or None while it is undecided."""
    gate = rec.get("gate")
    if not isinstance(gate, dict):  # never measured: the night's screen refused it, or it was dropped
        with db.conn:
            db.execute(
                f"UPDATE {TABLE} SET state = 'refused', note = ?, decided_at = ? WHERE key = ?",
                [f"tonight: {rec.get('reason') or 'not measured'}", utcnow_iso(), rule.key],
            )
        return None
    if gate.get("outcome") == "pending":
        return None
    stats = gate.get("stats") or {}
    better, worse = int(stats.get("improved_items") or 0), int(stats.get("worsened_items") or 0)
    items = int(stats.get("items") or stats.get("n") or 0)
    verdict = verdict_of(bool(rec.get("accepted")), better, worse)
    decide(db, rule.key, verdict, items, better, worse)
    return verdict
