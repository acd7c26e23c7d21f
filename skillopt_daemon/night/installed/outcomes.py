"""Did the rule work? Each learned rule followed into the user's sessions after it was installed.

The gate proves a rule on replays; the user cares whether they stopped having to say it. This module owns
the *correction funnel*, per rule line and per skill, from facts already stored:

    corrections seen (sessions' signals) → in a family (mined tasks) → shown to the optimizer (train
    tasks) → in a proposal (the line's provenance) → approved and installed (install events)
    → recurrences after install

A *recurrence* is a later session of the rule's family (the families of the tasks the line was learned
from) in which the user makes the same correction again. "The same" means the same meaning in any
language: when the model labelled both corrections (`request_labels`, the night's labeller) their stated
rules are compared, which are canonical English; otherwise their words are (`preferences.terms`: latin
words and single CJK characters), against the corrections the line was learned from and the line itself.

**The verdict**, decided per line from the sessions of its family before and after the install:

- `contradicted`: after the install the user corrected the agent *towards* what the rule forbids ("actually,
  do use noqa here": a correction that names the rule's subject and allows it). Its removal is replayed and
  gated like any edit, and proposed when it does not lose (`removals.py`).
- `stale`: the family has not been seen for `report.stale_after_days`. Its removal likewise.
- `too early`: fewer than `report.min_sessions` sessions of the family since the install (or the family
  was never corrected before it, so there is no rate to compare with).
- `working`: the share of sessions with the correction fell to at most `report.working_share` (0.5) of the
  share before the install: the user has to say it at most half as often.
- `not working`: the correction keeps recurring at more than that share of the old rate. Its sessions after
  the install go back to the night as train tasks carrying their new corrections (`mining.send_to_train`),
  so the next night can write a stronger rule.

What the night did about a rule (its verdict history, the attempts sent to train, a removal proposal) is
kept in `rule_outcomes` (m010); everything else is recomputed from the store on every call.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import PurePath
from typing import Any

import sqlite_utils

from skillopt_daemon.core.config import ReportSettings
from skillopt_daemon.core.timeutil import local_display, parse_iso, utcnow, utcnow_iso
from skillopt_daemon.night.mining.opposites import allows, subject
from skillopt_daemon.night.mining.opposites import cached_terms as _terms
from skillopt_daemon.night.mining.preferences import Preference
from skillopt_daemon.registry.models import TARGET_SQL, VERSION_SQL, TargetState, Version

WORKING, NOT_WORKING, TOO_EARLY, STALE, CONTRADICTED = (
    "working",
    "not working",
    "too early",
    "stale",
    "contradicted",
)
VERDICTS = (WORKING, NOT_WORKING, TOO_EARLY, STALE, CONTRADICTED)
TABLE = "rule_outcomes"
SHOWN = 20  # recurrences and contradictions listed per rule (the figures count them all)
# Two corrections say the same when this share of the smaller one's words is shared (and at least 2 are).
SAME_SHARE = 0.5


def line_hash(line: str) -> str:
    return hashlib.sha256(" ".join(line.split()).encode("utf-8")).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------- reading


@dataclass
class Attempt:
    """A mined task as the funnel reads it: when, where, which split, what the user corrected."""

    key: str
    task_id: str
    family_id: str
    session: str
    started_at: str
    split: str
    prompt: str
    corrections: list[str]
    project: str = ""  # the folder's name, as a proposal's provenance names it (`preferences.of_task`)


@dataclass
class Rule:
    """One line a night added to a skill, learned from the user's corrections, and where it stands."""

    skill: str
    version_id: str
    version: str
    line: str
    learned_from: list[dict[str, Any]]
    families: list[str]
    state: str  # proposed | rejected | installed | replaced | removed
    proposed_at: str
    installed_at: str | None
    tokens: int
    cost_usd: float
    active: bool = False
    priced_by: list[str] = field(default_factory=list)  # what priced `cost_usd`, an estimate


@dataclass
class Figures:
    sessions_before: int = 0
    corrected_before: int = 0
    sessions_after: int = 0
    recurred_after: int = 0
    rate_before: float | None = None
    rate_after: float | None = None


@dataclass
class Outcome:
    """A rule with its funnel, its figures before and after its install, and the verdict."""

    rule: Rule
    funnel: dict[str, int]
    figures: Figures
    verdict: str
    why: str
    family_names: list[str] = field(default_factory=list)
    last_seen: str | None = None
    recurrences: list[dict[str, Any]] = field(default_factory=list)  # {attempt, session, text, at}
    contradictions: list[dict[str, Any]] = field(default_factory=list)
    retrained: list[str] = field(default_factory=list)
    removal_version_id: str | None = None
    first_verdict_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The outcome as data; recurrences and contradictions are the newest `SHOWN` (counts are whole)."""
        rule = {k: v for k, v in vars(self.rule).items() if k != "learned_from"}
        return {
            "rule": rule,
            "learned_from": [Preference(**p).line() for p in self.rule.learned_from],
            "funnel": dict(self.funnel),
            "figures": asdict(self.figures),
            "verdict": self.verdict,
            "why": self.why,
            "family_names": list(self.family_names),
            "last_seen": self.last_seen,
            "recurrences": self.recurrences[-SHOWN:],
            "contradictions": self.contradictions[-SHOWN:],
            "retrained": list(self.retrained),
            "removal_version_id": self.removal_version_id,
            "first_verdict_at": self.first_verdict_at,
        }


def _loads(value: Any, default: Any) -> Any:
    if not value:
        return default
    try:
        return json.loads(value)
    except ValueError:
        return default


def _has(db: sqlite_utils.Database, *tables: str) -> bool:
    names = set(db.table_names())
    return all(t in names for t in tables)


def load_attempts(db: sqlite_utils.Database) -> list[Attempt]:
    """Every mined task, in time order."""
    if not _has(db, "tasks"):
        return []
    rows = db.execute(
        "SELECT id, attempt_key, family_id, tool, session_id, started_at, split, prompt, corrections_json, "
        "project_path FROM tasks ORDER BY started_at, attempt_key"
    ).fetchall()
    return [
        Attempt(
            key=r[1],
            task_id=r[0],
            family_id=r[2],
            session=f"{r[3]}:{r[4]}",
            started_at=r[5] or "",
            split=r[6] or "",
            prompt=r[7] or "",
            corrections=[str(c) for c in _loads(r[8], [])] if r[8] and r[8] != "[]" else [],
            project=PurePath(str(r[9] or "")).name,
        )
        for r in rows
    ]


def _installs(db: sqlite_utils.Database) -> dict[str, str]:
    """The first install of every version that was ever installed: version id -> when."""
    if not _has(db, "events"):
        return {}
    rows = db.execute(
        "SELECT version_id, MIN(at) FROM events WHERE action = 'install' AND version_id IS NOT NULL "
        "GROUP BY version_id"
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def _active(db: sqlite_utils.Database) -> set[str]:
    if not _has(db, "targets"):
        return set()
    return {r[0] for r in db.execute("SELECT DISTINCT active_version_id FROM targets") if r[0]}


def _active_lines(db: sqlite_utils.Database, active: set[str]) -> dict[str, set[str]]:
    """Per skill, the hashes of the lines its active versions hold (a later version may have rewritten a
    learned line: the rule is then `replaced`). A version whose files cannot be read is left out."""
    from skillopt_daemon.registry.content import load_bundle

    out: dict[str, set[str]] = defaultdict(set)
    for vid in active:
        row = db.execute(
            "SELECT s.name FROM versions v JOIN skills s ON s.id = v.skill_id WHERE v.id = ?", [vid]
        ).fetchone()
        if row is None:
            continue
        try:
            bundle = load_bundle(db, vid)
        except Exception:  # a damaged object store: say nothing rather than call a rule replaced
            continue
        for text in bundle.text_files().values():
            out[row[0]].update(line_hash(ln.strip()) for ln in text.splitlines() if ln.strip())
    return dict(out)


def learned_rules(db: sqlite_utils.Database, attempts: Sequence[Attempt] | None = None) -> list[Rule]:
    """Every line a proposal added with provenance, newest proposal last, with its state and family."""
    if not _has(db, "versions", "skills"):
        return []
    versions = [Version.from_row(r) for r in db.query(VERSION_SQL + " ORDER BY v.created_at, v.seq")]
    by_id = {v.id: v for v in versions}
    installs = _installs(db)
    active = _active(db)
    family_of_task = {
        a.task_id: a.family_id for a in (attempts if attempts is not None else load_attempts(db))
    }
    # The ancestors of every active version: a rule stays installed while an active version descends from it.
    live: set[str] = set()
    for vid in active:
        cur: str | None = vid
        while cur and cur not in live:
            live.add(cur)
            cur = by_id[cur].parent_id if cur in by_id else None
    shown_lines = _active_lines(db, active)  # what the agents read now, per skill
    # skill -> hashes of the lines an installed removal took out
    removed: dict[str, set[str]] = defaultdict(set)
    for v in versions:
        if v.evidence.get("removal") and v.id in installs:
            removed[v.skill].update(line_hash(str(x)) for x in v.evidence.get("removes") or [])
    out: list[Rule] = []
    for v in versions:
        entries = [e for e in v.evidence.get("provenance") or [] if not e.get("removed")]
        if not entries:
            continue
        per_line = max(len(entries), 1)
        for e in entries:
            line = str(e.get("line") or "").strip()
            if not line:
                continue
            learned = [p for p in e.get("learned_from") or [] if isinstance(p, dict)]
            fams = sorted(
                {family_of_task[p["task_id"]] for p in learned if p.get("task_id") in family_of_task}
            )
            if not fams and isinstance(v.evidence.get("family"), dict) and v.evidence["family"].get("id"):
                fams = [str(v.evidence["family"]["id"])]
            installed_at = installs.get(v.id)
            if v.state == "rejected":
                state = "rejected"
            elif installed_at is None:
                state = "proposed"
            elif line_hash(line) in removed[v.skill]:
                state = "removed"
            elif v.id in live and (v.skill not in shown_lines or line_hash(line) in shown_lines[v.skill]):
                state = "installed"
            else:
                state = "replaced"
            out.append(
                Rule(
                    skill=v.skill,
                    version_id=v.id,
                    version=v.label,
                    line=line,
                    learned_from=learned,
                    families=fams,
                    state=state,
                    proposed_at=v.created_at,
                    installed_at=installed_at,
                    tokens=int((v.evidence.get("tokens") or 0) / per_line),
                    cost_usd=float(v.evidence.get("cost_usd") or 0.0) / per_line,
                    active=v.id in active,
                    priced_by=[str(p) for p in v.evidence.get("priced_by") or []],
                )
            )
    return out


class Labels:
    """The model's stated rules of a correction (from the labeller's cache), when it labelled it.

    The labeller (and the chat backends it pulls in) is imported only when its cache holds labels: a user
    without a model pays nothing for it on every `skillopt report`."""

    def __init__(self, db: sqlite_utils.Database, pairs: Iterable[tuple[str, str]]) -> None:
        self._rules: dict[str, list[str]] = {}
        self._hash: Any = None
        if (
            not _has(db, "request_labels")
            or db.execute("SELECT 1 FROM request_labels LIMIT 1").fetchone() is None
        ):
            return
        from skillopt_daemon.night.mining.labels import Request

        self._hash = lambda text, prev: Request(text, prev).hash
        ids = list({self._hash(text, prev) for text, prev in pairs})
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            q = f"SELECT hash, rules_json FROM request_labels WHERE hash IN ({','.join('?' * len(chunk))})"
            for h, rules in db.execute(q, chunk).fetchall():
                found = [str(r) for r in _loads(rules, []) if str(r).strip()]
                if found:
                    self._rules[h] = found

    def rules(self, text: str, previous: str) -> list[str]:
        if not self._rules:
            return []
        return self._rules.get(self._hash(text, previous), [])


def _overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    shared = a & b
    return len(shared) >= 2 and len(shared) >= SAME_SHARE * min(len(a), len(b))


class Matcher:
    """Is a correction the same as one a rule was learned from? The model's stated rules when both were
    labelled, else their words (and the rule line's own)."""

    def __init__(self, rule: Rule, labels: Labels, prompts: Mapping[str, str]) -> None:
        refs = [str(p.get("text") or "") for p in rule.learned_from]
        self.ref_terms = [_terms(t) for t in refs if t.strip()] + [_terms(rule.line)]
        self.ref_rules = [
            _terms(r)
            for p in rule.learned_from
            for r in labels.rules(str(p.get("text") or ""), prompts.get(str(p.get("task_id") or ""), ""))
        ]
        self.subject = set().union(*(subject(t) for t in refs), subject(rule.line))
        self.words: set[str] = set().union(*self.ref_terms)
        self.labels = labels

    def same(self, text: str, prompt: str) -> bool:
        stated = self.labels.rules(text, prompt) if self.ref_rules else []
        if stated:
            return any(_overlap(_terms(s), r) for s in stated for r in self.ref_rules)
        mine = _terms(text)
        return any(_overlap(mine, r) for r in self.ref_terms)

    def contradicts(self, text: str) -> bool:
        return allows(text) and bool(subject(text) & self.subject)


# ---------------------------------------------------------------------------------------------- judging


def _rate(n: int, k: int) -> float | None:
    return round(k / n, 4) if n else None


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def decide(fig: Figures, *, contradicted: bool, stale: bool, settings: ReportSettings) -> tuple[str, str]:
    """The verdict on one installed rule from its figures, and why in the user's terms."""
    before = f"{fig.corrected_before} of {fig.sessions_before} sessions before ({_pct(fig.rate_before)})"
    after = f"{fig.recurred_after} of {fig.sessions_after} after ({_pct(fig.rate_after)})"
    if contradicted:
        return CONTRADICTED, "the user asked for the opposite after it was installed"
    if stale:
        return STALE, f"its kind of work has not been seen for {settings.stale_after_days} days"
    if fig.sessions_after < settings.min_sessions:
        need = settings.min_sessions - fig.sessions_after
        return TOO_EARLY, f"{fig.sessions_after} session(s) since install; {need} more before a verdict"
    if not fig.rate_before:
        return TOO_EARLY, "its correction was never made in the family before the install: nothing to compare"
    assert fig.rate_after is not None
    if fig.rate_after <= settings.working_share * fig.rate_before:
        return WORKING, f"corrected in {before}; {after}"
    return NOT_WORKING, f"still corrected: {after}, against {before}"


def assess(
    db: sqlite_utils.Database,
    settings: ReportSettings | None = None,
    *,
    attempts: list[Attempt] | None = None,
    seen_texts: Counter[str] | None = None,
) -> list[Outcome]:
    """Every learned rule with its funnel, figures and verdict (proposed and rejected ones too: the funnel
    counts them; only installed ones get a verdict other than `too early`). `attempts` and `seen_texts` are
    `load_attempts(db)` and `_seen_corrections(db)` when the caller already read them."""
    settings = settings or ReportSettings()
    attempts = load_attempts(db) if attempts is None else attempts
    rules = learned_rules(db, attempts)
    if not rules:
        return []
    by_family: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        by_family[a.family_id].append(a)
    prompts = {a.task_id: a.prompt for a in attempts}
    pairs = [(c, a.prompt) for a in attempts for c in a.corrections]
    pairs += [
        (str(p.get("text") or ""), prompts.get(str(p.get("task_id") or ""), ""))
        for r in rules
        for p in r.learned_from
    ]
    labels = Labels(db, pairs)
    seen = Seen(_seen_corrections(db) if seen_texts is None else seen_texts)
    names = _family_names(db)
    stored = _stored(db)
    cutoff = utcnow() - timedelta(days=settings.stale_after_days)
    out: list[Outcome] = []
    for rule in rules:
        m = Matcher(rule, labels, prompts)
        members = [a for f in rule.families for a in by_family.get(f, [])]
        members.sort(key=lambda a: (a.started_at, a.key))
        in_family = shown = 0
        sessions_before: set[str] = set()
        corrected_before: set[str] = set()
        sessions_after: set[str] = set()
        recurred: set[str] = set()
        recurrences: list[dict[str, Any]] = []
        contradictions: list[dict[str, Any]] = []
        for a in members:
            after = rule.installed_at is not None and a.started_at >= rule.installed_at
            (sessions_after if after else sessions_before).add(a.session)
            for c in a.corrections:
                if after and m.contradicts(c):
                    contradictions.append(_mention(a, c))
                    continue
                if not m.same(c, a.prompt):
                    continue
                in_family += 1
                shown += a.split == "train"
                if after:
                    recurred.add(a.session)
                    recurrences.append(_mention(a, c))
                else:
                    corrected_before.add(a.session)
        fig = Figures(
            sessions_before=len(sessions_before),
            corrected_before=len(corrected_before),
            sessions_after=len(sessions_after),
            recurred_after=len(recurred),
            rate_before=_rate(len(sessions_before), len(corrected_before)),
            rate_after=_rate(len(sessions_after), len(recurred)),
        )
        last_seen = members[-1].started_at if members else None
        funnel = {
            "seen": seen.count(m),
            "in_family": in_family,
            "shown": shown,
            "in_proposal": len(rule.learned_from),
            "installed": len(rule.learned_from) if rule.installed_at else 0,
            "recurrences": len(recurrences),
        }
        if rule.state == "installed":
            stale = last_seen is not None and _before(last_seen, cutoff)
            verdict, why = decide(fig, contradicted=bool(contradictions), stale=stale, settings=settings)
        else:
            verdict, why = TOO_EARLY, f"not installed ({rule.state})"
        prior = stored.get((rule.version_id, line_hash(rule.line)), {})
        out.append(
            Outcome(
                rule=rule,
                funnel=funnel,
                figures=fig,
                verdict=verdict,
                why=why,
                family_names=[names.get(f, f) for f in rule.families],
                last_seen=last_seen,
                recurrences=recurrences,
                contradictions=contradictions,
                retrained=list(_loads(prior.get("retrained_json"), [])),
                removal_version_id=prior.get("removal_version_id"),
                first_verdict_at=prior.get("first_verdict_at"),
            )
        )
    return out


def _before(iso: str, cutoff: Any) -> bool:
    try:
        return parse_iso(iso)[0] < cutoff
    except ValueError:
        return False


def _mention(a: Attempt, text: str) -> dict[str, Any]:
    return {
        "attempt": a.key,
        "task_id": a.task_id,
        "session": a.session,
        "project": a.project,
        "text": text,
        "at": a.started_at,
    }


def _seen_corrections(db: sqlite_utils.Database) -> Counter[str]:
    """Every correction in every stored session (its signals), by text."""
    out: Counter[str] = Counter()
    if not _has(db, "sessions"):
        return out
    for (raw,) in db.execute("SELECT signals_json FROM sessions WHERE signals_json LIKE '%\"text\"%'"):
        sig = _loads(raw, {})
        for c in sig.get("corrections") or [] if isinstance(sig, dict) else []:
            if isinstance(c, dict) and c.get("text"):
                out[str(c["text"])] += 1
    return out


class Seen:
    """The store's corrections, indexed by word, so each rule compares itself only with the corrections
    that share a word with it. Words in more than `UBIQUITOUS` of them name no rule and are not indexed
    (a correction that shares only such words with a rule is not the same correction)."""

    UBIQUITOUS = 0.3

    def __init__(self, texts: Counter[str]) -> None:
        self.texts = list(texts.items())
        index: dict[str, list[int]] = defaultdict(list)
        for i, (text, _n) in enumerate(self.texts):
            for t in _terms(text):
                index[t].append(i)
        cap = max(50, int(self.UBIQUITOUS * len(self.texts)))
        self.index = {t: ids for t, ids in index.items() if len(ids) <= cap}
        self.total = sum(texts.values())

    def count(self, m: Matcher) -> int:
        """How many stored corrections are the same as the rule's."""
        candidates: set[int] = set()
        for t in m.words:
            candidates.update(self.index.get(t, ()))
        return sum(self.texts[i][1] for i in candidates if m.same(self.texts[i][0], ""))


def _family_names(db: sqlite_utils.Database) -> dict[str, str]:
    if not _has(db, "task_families"):
        return {}
    return {r[0]: r[1] for r in db.execute("SELECT id, name FROM task_families")}


def _stored(db: sqlite_utils.Database) -> dict[tuple[str, str], dict[str, Any]]:
    if not _has(db, TABLE):
        return {}
    return {(r["version_id"], r["line_hash"]): r for r in db.query(f"SELECT * FROM {TABLE}")}


# ---------------------------------------------------------------------------------------------- the funnel


STAGES = ("seen", "in_family", "shown", "in_proposal", "installed", "recurrences")
STAGE_NAMES = {
    "seen": "corrections seen",
    "in_family": "in a family",
    "shown": "shown to the optimizer",
    "in_proposal": "in a proposal",
    "installed": "approved and installed",
    "recurrences": "recurrences after install",
}


def skill_funnels(
    db: sqlite_utils.Database,
    outcomes: Sequence[Outcome],
    *,
    attempts: list[Attempt] | None = None,
    seen_texts: Counter[str] | None = None,
) -> dict[str, dict[str, int]]:
    """The funnel per skill (the sum over its rules), plus `*`: every correction the store holds, how many
    are in a family and in a train task, then the rules' stages."""
    per: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(STAGES, 0))
    for o in outcomes:
        for k in STAGES:
            per[o.rule.skill][k] += o.funnel[k]
    total = dict.fromkeys(STAGES, 0)
    total["seen"] = sum((_seen_corrections(db) if seen_texts is None else seen_texts).values())
    attempts = load_attempts(db) if attempts is None else attempts
    total["in_family"] = sum(len(a.corrections) for a in attempts)
    total["shown"] = sum(len(a.corrections) for a in attempts if a.split == "train")
    for k in ("in_proposal", "installed", "recurrences"):
        total[k] = sum(o.funnel[k] for o in outcomes)
    return {"*": total, **dict(per)}


# ---------------------------------------------------------------------------------------------- recording


def record(db: sqlite_utils.Database, outcomes: Sequence[Outcome]) -> None:
    """Keep each rule's latest verdict (and when its first real verdict came) in `rule_outcomes`."""
    if not _has(db, TABLE):
        return
    now = utcnow_iso()
    rows = []
    for o in outcomes:
        if o.rule.state not in ("installed", "removed"):
            continue
        first = o.first_verdict_at or (now if o.verdict != TOO_EARLY else None)
        o.first_verdict_at = first
        rows.append(
            {
                "version_id": o.rule.version_id,
                "line_hash": line_hash(o.rule.line),
                "skill": o.rule.skill,
                "line": o.rule.line,
                "families_json": json.dumps(o.rule.families),
                "verdict": o.verdict,
                "figures_json": json.dumps(asdict(o.figures)),
                "first_verdict_at": first,
                "updated_at": now,
                "retrained_json": json.dumps(o.retrained),
                "removal_version_id": o.removal_version_id,
            }
        )
    if rows:
        with db.conn:
            db.table(TABLE).upsert_all(rows, pk=("version_id", "line_hash"))


def card(data: Mapping[str, Any], shown: int = 5) -> dict[str, Any]:
    """The dashboard overview's card, from `report`'s data: what the registry has installed now (the same
    rules and verdicts as the Outcomes page), not what the last night recorded before a rollback or a
    put-back. `{verdicts: {verdict: n}, rules: [{skill, line, verdict}], updated_at, note}`."""
    learned = list(data.get("learned") or [])
    counts: Counter[str] = Counter(o["verdict"] for o in learned)
    rules = [
        {"skill": o["rule"]["skill"], "line": o["rule"]["line"], "verdict": o["verdict"]} for o in learned
    ]
    as_of = data.get("as_of") or {}
    return {
        "verdicts": dict(counts),
        "rules": rules[::-1][:shown],  # the newest first
        "updated_at": as_of.get("mined_at"),
        "note": as_of.get("note"),
    }


def recurrences_to_train(outcomes: Sequence[Outcome]) -> dict[str, list[str]]:
    """For every rule that is not working: family id -> the attempts where its correction came back."""
    out: dict[str, list[str]] = defaultdict(list)
    for o in outcomes:
        if o.verdict != NOT_WORKING:
            continue
        keys = sorted({r["attempt"] for r in o.recurrences})
        o.retrained = sorted(set(o.retrained) | set(keys))
        for fam in o.rule.families:
            out[fam].extend(k for k in keys if k not in out[fam])
    return dict(out)


# ---------------------------------------------------------------------------------------------- the report


def summary(outcomes: Sequence[Outcome], funnels: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """What `skillopt report`, the dashboard, the MCP tool and the weekly notification show."""
    installed = [(o, o.to_dict()) for o in outcomes if o.rule.state in ("installed", "removed")]
    by = {v: [d for o, d in installed if o.verdict == v] for v in VERDICTS}
    return {
        "learned": [d for _o, d in installed],
        "working": by[WORKING],
        "not_working": by[NOT_WORKING],
        "too_early": by[TOO_EARLY],
        "stale": by[STALE],
        "contradicted": by[CONTRADICTED],
        "pending": [o.to_dict() for o in outcomes if o.rule.state == "proposed"],
        "funnel": {k: dict(v) for k, v in funnels.items()},
        "spend": {
            "tokens": sum(o.rule.tokens for o, _d in installed),
            "cost_usd": round(sum(o.rule.cost_usd for o, _d in installed), 6),
            "priced_by": sorted({p for o, _d in installed for p in o.rule.priced_by}),
        },
    }


def headline(data: Mapping[str, Any]) -> str:
    """One line for a notification: how many rules skillopt learned and how they are doing."""
    n = len(data.get("learned") or [])
    if not n:
        return "skillopt has not installed a learned rule yet"
    parts = [
        f"{len(data[k])} {k.replace('_', ' ')}" for k in ("working", "not_working", "contradicted", "stale")
    ]
    parts = [p for p in parts if not p.startswith("0 ")]
    early = len(data.get("too_early") or [])
    if early:
        parts.append(f"{early} too early to tell")
    return f"{n} learned rule(s): " + ", ".join(parts)


UPDATE = "the next night (or `skillopt sleep run --now`) updates them"


def freshness(db: sqlite_utils.Database) -> dict[str, Any]:
    """How current the figures are. They follow the mined tasks, which only a night (or `skillopt tasks
    mine`) refreshes: sessions ingested since count from the next night on. `{mined_at, sessions_since,
    note}`; `note` is None when the figures include every stored session, and otherwise says when they were
    computed and what updates them."""
    mined_at = None
    if _has(db, "task_families"):
        mined_at = db.execute("SELECT max(mined_at) FROM task_families").fetchone()[0]
    since = 0
    if _has(db, "sessions"):
        where, args = ("WHERE updated_at > ?", [mined_at]) if mined_at else ("", [])
        since = db.execute(f"SELECT COUNT(*) FROM sessions {where}", args).fetchone()[0]
    note = None
    if mined_at is None:
        note = (
            "No night has run yet, so no session is counted in these figures"
            + (f" ({since} session(s) stored)" if since else "")
            + f": {UPDATE}."
        )
    elif since:
        note = (
            f"Figures as of the last mining of your sessions ({local_display(mined_at)}); {since} session(s) stored "
            f"since are not counted yet: {UPDATE}."
        )
    return {"mined_at": mined_at, "sessions_since": since, "note": note}


def report(db: sqlite_utils.Database, settings: ReportSettings | None = None) -> dict[str, Any]:
    attempts, seen = load_attempts(db), _seen_corrections(db)
    outcomes = assess(db, settings, attempts=attempts, seen_texts=seen)
    data = summary(outcomes, skill_funnels(db, outcomes, attempts=attempts, seen_texts=seen))
    where = installed_where(db)
    for item in (o for key in ("learned", "pending") for o in data[key]):
        item["where"] = where.get(item["rule"]["skill"], [])
    return {**data, "as_of": freshness(db)}


def installed_where(db: sqlite_utils.Database) -> dict[str, list[str]]:
    """Per skill, the targets (`TOOL:user`, `TOOL:project:PATH`) where a version of it is active now: a
    rule learned in one repository is installed there only, and the report says so."""
    if not _has(db, "targets"):
        return {}
    out: dict[str, list[str]] = {}
    for row in db.query(TARGET_SQL + " WHERE t.enabled = 1 AND t.active_version_id IS NOT NULL"):
        ts = TargetState.from_row(row)
        out.setdefault(ts.skill, []).append(ts.target.key)
    return out


def notify_weekly(db: sqlite_utils.Database, settings: ReportSettings | None = None) -> str:
    """The weekly summary as a desktop notification (the daemon's `report.weekly` job, `skillopt report
    --notify`); returns the line it sent."""
    from skillopt_daemon.night.status import desktop

    line = headline(report(db, settings))
    desktop("skillopt: what it learned", line)
    return line
