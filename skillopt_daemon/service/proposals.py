"""What every face shows about a proposal: a one-line summary of the change, how sure the gate is (its
tier), the annotated diff, and for decided proposals what was decided and why.

`skillopt status`, `skillopt diff`, the MCP tools and the dashboard's proposal pages all read these, so a
proposal is described the same way wherever it is reviewed.

- **Summary**: computed from the diff between the proposal and its parent, e.g. `+1 line: Never silence a
  warning with # noqa`; a version with no parent is `new skill: <its description>`.
- **Tier**: a night may mark a proposal `proven` or `likely` in its evidence (`tier`, with a sentence in
  `tier_note`). A `likely` proposal (or any tier but `proven`) is labelled "likely, not yet proven" and is
  never shown as proven. A proposal made by hand (`skillopt propose`) was never replayed: it is `not
  replayed`, whatever its evidence claims, and so is any proposal with neither a tier nor the gate's record.
  Evidence with the gate's record but no tier (a night's proposal from before tiers) is proven.
- **Decided**: approved, rejected or rolled back, with the reason: the user's words for a rejection or a
  rollback, who approved it for an approval.
- **Screen**: what the candidate screen warned about (`screen_warnings`: which line and why; such a proposal
  is never auto-approved) and the added lines traced to nothing (`provenance_missing`: no correction of the
  user's and no failed replay stands behind them). The diff carries both beside their lines (`⚠`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from skillopt_daemon.core.timeutil import humanize_age
from skillopt_daemon.night.mining import conflicts, preferences
from skillopt_daemon.registry import Event, Registry, Version
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_daemon.registry.models import evidence_figures
from skillopt_daemon.registry.scope import placement
from skillopt_lib.errors import SkillOptError
from skillopt_lib.skill import SKILL_FILE, SkillBundle

PROVEN = "proven"
NOT_REPLAYED = "not replayed"
NOT_REPLAYED_NOTE = (
    "made by hand, not by a night: no replay measured it, so it is never proven and never auto-approved. "
    "No command puts a hand-made proposal through the night's gate; to watch the agent work with it on one "
    "task of yours: skillopt replay --skill FOLDER --prompt TASK"
)
SUMMARY_CHARS = 90
# Who approved, by the audit log's actor, in the words the proposals list uses.
_APPROVERS = {
    "cli": "approved with skillopt approve",
    "dashboard": "approved on the dashboard",
    "mcp": "approved by an agent through skillopt's MCP tools, at your request",
    "night": "auto-approved by the night (night.auto_approve lists this skill)",
}
_MARKER = re.compile(r"^(?:[-*+]\s+|\d+[.)]\s+|#+\s+|>\s+)")


# ------------------------------------------------------------------------------------------------ tier


def tier(evidence: Mapping[str, Any], origin: str = "trained") -> dict[str, Any]:
    """`{tier, proven, label, note}` from a proposal's evidence and origin.

    Only a replay can prove a change: a proposal made by hand (origin `proposed`) is `not replayed` even
    when its hand-written evidence says `proven`, and so is one with no tier and no gate record (nothing
    measured it). A night's proposal from before tiers (the gate's record, no tier) is proven.
    """
    raw = evidence.get("tier")
    if origin == "proposed" or (not raw and not evidence.get("gate")):
        return {"tier": NOT_REPLAYED, "proven": False, "label": NOT_REPLAYED, "note": NOT_REPLAYED_NOTE}
    name = str(raw).strip().lower() if raw else PROVEN
    note = evidence.get("tier_note")
    proven = name == PROVEN
    return {
        "tier": name,
        "proven": proven,
        "label": PROVEN if proven else f"{name}, not yet proven",
        "note": str(note) if note else None,
    }


# ------------------------------------------------------------------------------------------------ summary


def _clean(line: str) -> str:
    text = _MARKER.sub("", line.strip()).strip()
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _count(n: int, sign: str, what: str = "line") -> str:
    return f"{sign}{n} {what}{'' if n == 1 else 's'}"


def describe_change(old: SkillBundle, new: SkillBundle) -> str:
    """One line saying what `new` changes in `old`: `+1 line: <the line>`, `+2 lines, -1 line: …`."""
    added: list[str] = []
    removed: list[str] = []
    files_added: list[str] = []
    files_removed: list[str] = []
    old_text, new_text = old.text_files(), new.text_files()
    # SKILL.md first: its lines are what the agent reads first, so its change is the headline.
    paths = sorted(set(old.files) | set(new.files), key=lambda p: (p != SKILL_FILE, p))
    for path in paths:
        if old.files.get(path) == new.files.get(path):
            continue
        if path not in old.files:
            files_added.append(path)
        elif path not in new.files:
            files_removed.append(path)
        a = old_text.get(path, "").splitlines() if path in old.files else []
        b = new_text.get(path, "").splitlines() if path in new.files else []
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if op in ("replace", "delete"):
                removed += [x for x in a[i1:i2] if x.strip()]
            if op in ("replace", "insert"):
                added += [x for x in b[j1:j2] if x.strip()]
    counts = []
    if added:
        counts.append(_count(len(added), "+"))
    if removed:
        counts.append(_count(len(removed), "-"))
    if files_added and files_added != [SKILL_FILE]:
        counts.append(_count(len(files_added), "+", "file"))
    if files_removed:
        counts.append(_count(len(files_removed), "-", "file"))
    if added:
        headline = _clean(added[0])
    elif removed:
        headline = "removed " + _clean(removed[0])
    else:
        changed = files_added or files_removed or [p for p in paths if old.files.get(p) != new.files.get(p)]
        headline = "changed " + ", ".join(changed[:3]) if changed else "no change"
    return (", ".join(counts) + ": " if counts else "") + headline


def change_summary(reg: Registry, v: Version) -> str:
    """What `v` changes against its parent, in one line; `new skill: <description>` without a parent."""
    bundle = reg.load_bundle(v.id)
    if not v.parent_id:
        description = " ".join(bundle.doc.description.split())
        if len(description) > SUMMARY_CHARS:
            description = description[: SUMMARY_CHARS - 1] + "…"
        return f"new skill: {description}" if description else "new skill"
    return describe_change(reg.load_bundle(v.parent_id), bundle)


def _summary(reg: Registry, v: Version) -> str:
    """`change_summary`, or why there is none: one unreadable version must not hide the whole list."""
    try:
        return change_summary(reg, v)
    except (SkillOptError, OSError) as exc:
        return f"(the change cannot be read: {exc})"


# ------------------------------------------------------------------------------------------------ screen

SCREEN_MARK = "  ⚠ "
NO_PROVENANCE = "no provenance: no correction of yours says this (never approved automatically)"


def _findings(evidence: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    record = evidence.get("screen")
    found = record.get("findings") if isinstance(record, Mapping) else None
    return [f for f in found or [] if isinstance(f, Mapping)]


def screen_warnings(evidence: Mapping[str, Any]) -> list[str]:
    """What the candidate screen found in a proposal, one sentence per finding (line, rule, why)."""
    return [
        f"line {f.get('line_no')} ({f.get('rule')}, {f.get('severity')}): {f.get('why')}"
        for f in _findings(evidence)
    ]


def annotate_screen(diff: str, evidence: Mapping[str, Any], missing: Sequence[str] | None = None) -> str:
    """The diff with the rule lines without provenance and the screen's findings flagged after their line,
    the missing provenance first (`missing`: those lines, by default the evidence's `provenance_missing`); a
    note is written once under a line, however many times the evidence names it."""
    by_line: dict[str, list[str]] = {}

    def note(line: str, text: str) -> None:
        notes = by_line.setdefault(line.strip(), [])
        if text not in notes:
            notes.append(text)

    if missing is None:
        missing = [str(x) for x in evidence.get("provenance_missing") or []]
    for line in missing:
        note(str(line), NO_PROVENANCE)
    for f in _findings(evidence):
        note(str(f.get("line", "")), f"screen {f.get('severity')}: {f.get('rule')}: {f.get('why')}")
    if not by_line:
        return diff
    out: list[str] = []
    for line in diff.splitlines(keepends=True):
        out.append(line)
        if line.startswith("+") and not line.startswith("+++"):
            out.extend(f"{SCREEN_MARK}{note}\n" for note in by_line.get(line[1:].strip()[:300], []))
    return "".join(out)


def provenance_missing(reg: Registry, v: Version) -> list[str]:
    """The rule lines of `v` that no correction of the user's stands behind, as its evidence lists
    them, less what is not a rule: frontmatter (a new skill's, or a changed description), headings, blank
    lines and formatting. Evidence written before the night judged only rule lines still lists those."""
    stored = [str(x) for x in v.evidence.get("provenance_missing") or []]
    if not stored:
        return []
    from skillopt_lib.rulelines import rule_lines

    try:
        head = reg.load_bundle(v.id).doc.head.splitlines()
    except (SkillOptError, OSError):
        head = []
    return rule_lines(stored, head)


# ------------------------------------------------------------------------------------------------ items


def proposal_item(
    reg: Registry, v: Version, installed: Sequence[tuple[str, InstallTarget, str]] | None = None
) -> dict[str, Any]:
    """A proposal as the proposals lists show it (status, the dashboard, `diff --json`). `installed`: the
    installed rules (`conflicts.installed`), read once by a caller listing many proposals."""
    new_skill, score_change, confidence = evidence_figures(v.evidence)
    t = tier(v.evidence, v.origin)
    return {
        "id": v.id,
        "short_id": v.short_id,
        "skill": v.skill,
        "version": v.seq,
        "label": v.label,
        "origin": v.origin,
        "state": v.state,
        "new": new_skill or not v.parent_id,
        "parent": reg.get_version(v.parent_id).label if v.parent_id else None,
        "summary": _summary(reg, v),
        "score_change": score_change,
        "confidence": confidence,
        "tier": t["tier"],
        "proven": t["proven"],
        "tier_label": t["label"],
        "tier_note": t["note"],
        "screen_warnings": screen_warnings(v.evidence),
        "provenance_missing": provenance_missing(reg, v),
        # Where it installs and why (a new skill's: `registry/scope.py`); None: where the skill is installed.
        "scope": placement(v.evidence),
        "from_team": from_team(v.evidence),
        # Installed rules of other skills in another scope that its lines say the opposite of, and which wins
        # where (`night/mining/conflicts.py`).
        "conflicts": _conflicts(reg, v, installed) if v.state == "proposed" else [],
        "created_at": v.created_at,
        "age": humanize_age(v.created_at),
    }


def from_team(evidence: Mapping[str, Any]) -> str | None:
    """Where a proposal built on a teammate's shared rule came from, in the night's words ("from the team
    (published by NAME), proven on N of your tasks"), or None for a rule of the user's own work."""
    team = evidence.get("team")
    note = team.get("note") if isinstance(team, Mapping) else None
    return str(note) if note else None


def _conflicts(
    reg: Registry, v: Version, installed: Sequence[tuple[str, InstallTarget, str]] | None
) -> list[dict[str, str]]:
    """What the proposal contradicts among the rules installed now (empty when its text cannot be read:
    the review faces say that elsewhere)."""
    try:
        body = reg.load_bundle(v.id).doc.body
    except (SkillOptError, OSError):
        return []
    found = conflicts.of_proposal(reg, v.skill, body, placement(v.evidence), installed)
    return [c.to_dict() for c in found]


def newest_pending(reg: Registry) -> tuple[Version | None, int]:
    """The proposal `diff`, `approve` and `reject` take when given no id: the newest pending one, with how
    many are pending (the faces say which one they chose when it is one of several)."""
    pending = reg.list_pending()
    return (pending[-1] if pending else None), len(pending)


def pending_items(reg: Registry) -> list[dict[str, Any]]:
    """Every pending proposal, oldest first."""
    installed = conflicts.installed(reg)
    return [proposal_item(reg, v, installed) for v in reg.list_pending()]


def _rolled_back_by(v: Version, events: Sequence[Event]) -> Event | None:
    """The newest rollback that stepped back from `v` (recorded with `from`; older records by destination)."""
    found = None
    for e in events:
        if e.action != "rollback" or e.skill != v.skill or e.at < (v.decided_at or v.created_at):
            continue
        came_from = e.detail.get("from")
        if came_from == v.id or (came_from is None and v.parent_id and e.version_id == v.parent_id):
            found = e
    return found


def _approval_reason(v: Version, events: Sequence[Event]) -> str:
    approvals = [e for e in events if e.action == "approve" and e.version_id == v.id]
    if not approvals:
        return "approved"
    last = approvals[-1]
    reason = _APPROVERS.get(last.actor, f"approved by {last.actor}")
    if last.detail.get("force"):
        reason += ", replacing files edited by hand (--force)"
    return reason


def decided_items(reg: Registry, limit: int = 50) -> list[dict[str, Any]]:
    """Proposals that were decided, newest decision first: approved, rejected or rolled back, and why."""
    proposals = [
        v
        for name in reg.skill_names()
        for v in reg.versions(name)
        if v.origin in ("proposed", "trained") and v.state != "proposed"
    ]
    if not proposals:
        return []
    events = reg.events()
    active = {ts.active_version_id for ts in reg.targets() if ts.active_version_id}
    decisions: list[tuple[Version, str, str, str]] = []
    for v in proposals:
        when = v.decided_at or v.created_at
        if v.state == "rejected":
            decision, reason = "rejected", v.decision_reason or ""
        else:
            back = _rolled_back_by(v, events) if v.id not in active else None
            if back is not None:
                decision, when = "rolled back", back.at
                said = back.detail.get("reason")
                reason = f"{said} ({back.message})" if said else back.message
            else:
                decision, reason = "approved", _approval_reason(v, events)
        decisions.append((v, decision, when, reason))
    decisions.sort(key=lambda d: str(d[2]), reverse=True)
    # Only the shown ones are described: an item reads two versions and diffs them (`status` shows five).
    items: list[dict[str, Any]] = []
    for v, decision, when, reason in decisions[:limit]:
        item = proposal_item(reg, v)
        item.update(decision=decision, decided_at=when, decided=humanize_age(when), reason=reason)
        items.append(item)
    return items


# ------------------------------------------------------------------------------------------------ diff


def diff_view(reg: Registry, ref: str | None = None, context: int = 3) -> dict[str, Any]:
    """A proposal's diff against its parent (the newest pending one without `ref`), or `SKILL@V1..V2`.

    Added lines a night learned from the user carry their provenance on the next line. `proposal` is None
    when there is nothing pending (`title` says so) or for a range of two versions.
    """
    ref = (ref or "").strip()
    if not ref:
        newest, _ = newest_pending(reg)
        if newest is None:
            return {"ref": None, "title": "no pending proposals", "diff": "", "proposal": None}
        ref = newest.id
    title, text = reg.diff(ref, context)
    if ".." in ref:
        return {"ref": ref, "title": title, "diff": text, "proposal": None}
    v = reg.resolve_id(ref)
    item = proposal_item(reg, v)
    text = preferences.annotate_diff(text, v.evidence.get("provenance") or [])
    text = annotate_screen(text, v.evidence, item["provenance_missing"])
    return {"ref": v.id, "title": title, "diff": text, "proposal": item}
