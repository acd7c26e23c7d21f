"""Mining recurring tasks from stored sessions: read what a person asked for, group it into families, split.

The steps, each in its own module: which sessions count (`exclude.py`: headless `claude -p` and `codex exec`
runs do, known automation does not), what each user message is (`kinds.py`, or the model's labels from
`labels.py`), sessions into attempts (`attempts.py`), and attempts into families (`clustering.py`). A
family's checks are the test or build commands that proved success in the original sessions, its rubric
items come from the user's corrections, and its splits are assigned per group of near-duplicate attempts
so the same request never sits on both sides of the gate.

Everything works without a model; with one (the optimizer's backend, passed in as `chat`) requests are
labelled in batches and cached forever, and families form on the model's kinds of work and intents.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import sqlite_utils

from skillopt_daemon.core.repos import repository_of
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.ingest.kinds import is_correction
from skillopt_daemon.night import checks as check_verdicts
from skillopt_daemon.night.mining import agreement, grouping
from skillopt_daemon.night.mining.attempts import (
    Attempt,
    CommandRun,
    Message,
    UserMessage,
    is_acceptance,
    rubric_item,
    segment,
    user_messages,
)
from skillopt_daemon.night.mining.clustering import (
    DEFAULT_THRESHOLD,
    FAMILY_SIMILARITY,
    LABELLED,
    LEXICAL,
    MICRO_THRESHOLD,
    Features,
    Weights,
    cluster_matrix,
    cluster_prompts,
    features,
    normalize_prompt,
    similar_components,
    vectorize,
)
from skillopt_daemon.night.mining.exclude import ExcludeRules, exclusion
from skillopt_daemon.night.mining.labels import Budget, Chat, Label, Labeller, LabelReport
from skillopt_daemon.night.mining.naming import lexical_name
from skillopt_daemon.night.mining.sparse import Rows, connected_components
from skillopt_daemon.night.mining.tfidf import Tfidf

__all__ = [
    "DEFAULT_THRESHOLD",
    "FAMILY_SIMILARITY",
    "MICRO_THRESHOLD",
    "Attempt",
    "CommandRun",
    "ExcludeRules",
    "Family",
    "Message",
    "MiningReport",
    "build_families",
    "cluster_prompts",
    "installed_skills",
    "is_acceptance",
    "is_correction",
    "mine",
    "normalize_prompt",
    "rubric_item",
    "segment",
]

NEAR_DUPLICATE = 0.85
# The cosine of a skill's name and description to a family's mean request at which the skill covers the
# family (the family's sessions never called it by name).
DESCRIBES = 0.2


@dataclass
class Family:
    id: str
    name: str
    attempts: list[Attempt]
    checks: list[str] = field(default_factory=list)
    rubric: list[str] = field(default_factory=list)
    skill_name: str | None = None
    splits: dict[str, str] = field(default_factory=dict)  # attempt key -> train | val | test
    groups: dict[str, str] = field(default_factory=dict)  # attempt key -> its group of near-duplicates
    roles: dict[str, str] = field(default_factory=dict)  # attempt key -> corrected | failure | plain
    # Grouped by the requests' words (`grouping.WORDS`: labelling will regroup it) or a model's labels.
    grouped_by: str = grouping.WORDS

    @property
    def tools(self) -> list[str]:
        return sorted({a.tool for a in self.attempts})

    @property
    def projects(self) -> list[str]:
        return sorted({a.project_path for a in self.attempts if a.project_path})


# ---------------------------------------------------------------------------------------------- families


def attempt_features(attempts: Sequence[Attempt], weights: Weights) -> Features:
    """Each attempt's kind of work (or its request), intent, checks and project, as clustering compares them."""
    return features(
        [a.work or a.prompt for a in attempts],
        [a.intent for a in attempts],
        [sorted(a.final_checks) for a in attempts],
        [a.project_path or "" for a in attempts],
        weights,
    )


def cluster_attempts(
    attempts: Sequence[Attempt],
    weights: Weights,
    threshold: float | None = None,
    feats: Features | None = None,
) -> np.ndarray:
    """A cluster label per attempt; one-off requests (as the model judged them) stay alone."""
    if not attempts:
        return np.array([], dtype=int)
    feats = feats or attempt_features(attempts, weights)
    labels = cluster_matrix(feats.matrix, weights.similarity if threshold is None else threshold)
    top = int(labels.max()) + 1 if len(labels) else 0
    for i, a in enumerate(attempts):
        if a.one_off:
            labels[i] = top + i
    return labels


def build_families(
    attempts: Sequence[Attempt],
    *,
    threshold: float | None = None,
    min_size: int = 2,
    seed: int = 42,
    skills: dict[str, str] | None = None,
    weights: Weights | None = None,
    previous: Mapping[str, str] | None = None,
    test_share: float = 0.2,
    previous_ids: Mapping[str, str] | None = None,
) -> list[Family]:
    """Cluster attempts into families of at least `min_size`, with checks, rubric, skill and splits.

    `skills` maps installed skill names to descriptions, to relate a family to a skill when the sessions
    never called one explicitly. The weights default to the model path when any attempt carries a label.
    `previous` holds the splits attempts were given on earlier nights (they keep them; `_assign_splits`),
    `previous_ids` the families they were in (a family keeps its id; `_keep_ids`).
    """
    if not attempts:
        return []
    labelled = any(a.work for a in attempts)
    weights = weights or (LABELLED if labelled else LEXICAL)
    feats = attempt_features(attempts, weights)
    labels = cluster_attempts(attempts, weights, threshold, feats)
    groups: dict[int, list[int]] = defaultdict(list)
    for idx, lab in enumerate(labels):
        groups[int(lab)].append(idx)
    if any(a.work for a in attempts):
        vec, prompts = vectorize([normalize_prompt(a.prompt) for a in attempts])
    else:  # the leading text was the request itself: its TF-IDF is already there
        vec, prompts = feats.vectorizer, feats.lead
    skill_matrix = None
    if skills:
        skill_matrix = vec.transform(
            [normalize_prompt(f"{n.replace('-', ' ')} {d}") for n, d in skills.items()]
        )
    families: list[Family] = []
    parts = [part for members in groups.values() for part in split_by_repository(attempts, members)]
    for members in parts:
        if len(members) < min_size:
            continue
        fam = _family(
            [attempts[i] for i in members],
            prompts[members],
            vec,
            previous=previous,
            test_share=test_share,
            grouped_by=grouping.LABELS if labelled else grouping.WORDS,
        )
        fam.skill_name = _family_skill(fam.attempts, prompts[members], skill_matrix, list(skills or {}))
        families.append(fam)
    _keep_ids(families, previous_ids or {})
    families.sort(key=lambda f: (-len(f.attempts), f.id))
    return families


def split_by_repository(attempts: Sequence[Attempt], members: list[int]) -> list[list[int]]:
    """A cluster whose users corrected the agent in more than one repository and whose repositories'
    corrections disagree (`agreement.agree`), one part per repository; any other cluster whole.

    The same kind of work in two repositories may follow opposite conventions ("changelog entries at the
    top" here, "at the end" there): one family would average them into a rule that serves neither, gated on
    a mix of both. Corrections are what carry a convention, so work corrected in one repository (or none)
    stays whole, and so does work corrected alike in several: that rule is the user's, and kept as one
    family its skill can be proposed for user scope (`night/mining/scope.py`). Corrections that are different rules
    split too: each is one repository's convention as far as the evidence shows. Repositories are main
    worktrees (`core/repos.py`), read only for the clusters that need it. Attempts with no folder are a part
    of their own."""
    corrected = {
        attempts[i].project_path for i in members if attempts[i].corrections and attempts[i].project_path
    }
    if len(corrected) < 2:
        return [members]
    roots = {p: repository_of(p).root for p in {attempts[i].project_path or "" for i in members} if p}
    if len({roots[p] for p in corrected if p}) < 2 or agreement.agree(
        _said_per_repository(attempts, members, roots)
    ):
        return [members]
    parts: dict[str, list[int]] = defaultdict(list)
    for i in members:
        parts[roots.get(attempts[i].project_path or "", "")].append(i)
    return list(parts.values())


def _said_per_repository(
    attempts: Sequence[Attempt], members: list[int], roots: Mapping[str, str]
) -> dict[str, list[str]]:
    """The cluster's corrections by repository (main worktree), what `agreement.agree` compares."""
    said: dict[str, list[str]] = defaultdict(list)
    for i in members:
        if path := attempts[i].project_path:
            said[roots[path]].extend(attempts[i].corrections)
    return said


def _keep_ids(families: list[Family], previous_ids: Mapping[str, str]) -> None:
    """Give each family the id its members had on earlier nights, so a family keeps its identity as it
    grows: its new skill's pending evidence and error budget (target `new:<id>`), a proposal awaiting review
    and a rejection's size are all keyed on it. Without this the id follows the smallest member key and
    changes whenever a new session sorts first, and the night drafts the same work again as a second skill.

    A family takes the id most of its previously mined members had; when a family split, the larger part
    keeps it. A family none of whose members were mined before keeps its new id."""
    claims: list[tuple[int, int, str, Family]] = []
    for fam in families:
        counts = Counter(previous_ids[a.key] for a in fam.attempts if a.key in previous_ids)
        for old, n in counts.items():
            claims.append((n, len(fam.attempts), old, fam))
    taken: set[str] = set()
    kept: set[int] = set()
    for _n, _size, old, fam in sorted(claims, key=lambda c: (-c[0], -c[1], c[2], c[3].id)):
        if old in taken or id(fam) in kept:
            continue
        fam.id = old
        taken.add(old)
        kept.add(id(fam))
    for fam in families:  # the smaller part of a split family: its new id must not be the one kept
        if id(fam) not in kept and fam.id in taken:
            fam.id = (
                "fam-" + hashlib.sha1(f"split:{min(a.key for a in fam.attempts)}".encode()).hexdigest()[:10]
            )


def _family(
    members: list[Attempt],
    prompts: Rows,
    vec: Tfidf,
    *,
    previous: Mapping[str, str] | None,
    test_share: float,
    grouped_by: str,
) -> Family:
    order = sorted(range(len(members)), key=lambda i: (members[i].started_at or "", members[i].key))
    fam_attempts = [members[i] for i in order]
    sub = prompts[order]
    fid = "fam-" + hashlib.sha1(min(a.key for a in fam_attempts).encode()).hexdigest()[:10]
    fam = Family(
        id=fid, name=_family_name(fam_attempts, sub, vec), attempts=fam_attempts, grouped_by=grouped_by
    )
    fam.checks = _family_checks(fam_attempts)
    fam.rubric = _family_rubric(fam_attempts)
    _assign_splits(fam, sub, previous=previous, test_share=test_share)
    return fam


def _family_name(attempts: Sequence[Attempt], prompts: Rows, vec: Tfidf) -> str:
    """The model's canonical intent most members share; without labels, the phrase of their requests closest
    to what they share (`naming.py`)."""
    intents = Counter(a.intent for a in attempts if a.intent)
    if intents:
        return intents.most_common(1)[0][0]
    return lexical_name([a.prompt for a in attempts], vec, prompts.mean())


def _family_checks(attempts: Iterable[Attempt]) -> list[str]:
    """Commands that proved success: the final run passed in an attempt whose outcome was success."""
    counts: Counter[str] = Counter()
    for a in attempts:
        if a.outcome != "success":
            continue
        for cmd, run in a.final_checks.items():
            if not run.failed:
                counts[cmd] += 1
    return [cmd for cmd, _ in counts.most_common(5)]


def _family_rubric(attempts: Iterable[Attempt]) -> list[str]:
    """The rules users stated: each correction's rule, then the rules the model read in them."""
    seen: dict[str, str] = {}
    for a in attempts:
        for c in a.corrections:
            item = rubric_item(c)
            seen.setdefault(normalize_prompt(item), item)
        for rule in a.rules:
            seen.setdefault(normalize_prompt(rule), rule)
    return list(seen.values())[:10]


def _family_skill(
    attempts: Sequence[Attempt], prompts: Rows, skill_matrix: Rows | None, skill_names: list[str]
) -> str | None:
    used = Counter(s for a in attempts for s in a.skills_used)
    if used:
        return used.most_common(1)[0][0]
    if skill_matrix is None or not skill_names:
        return None
    sims = _similarities(prompts, skill_matrix)
    best = int(sims.argmax())
    return skill_names[best] if sims[best] >= DESCRIBES else None


def _similarities(prompts: Rows, texts: Rows) -> np.ndarray:
    """Cosine of each of `texts` to the mean of `prompts` (rows of one TF-IDF)."""
    centroid = prompts.mean()
    norm = float(np.linalg.norm(centroid)) or 1.0
    return np.asarray(texts.dot(centroid / norm)).ravel()


def describes(families: Sequence[Family], texts: Sequence[str]) -> np.ndarray:
    """How well each of `texts` (a skill's name and description) describes each family's requests: a
    (families x texts) matrix of the cosine mining relates a family to an installed skill by, over one
    TF-IDF of every family's requests. A text describes a family when it reaches `DESCRIBES`."""
    requests = [normalize_prompt(a.prompt) for fam in families for a in fam.attempts]
    out = np.zeros((len(families), len(texts)))
    if not requests or not texts:
        return out
    vec, prompts = vectorize(requests)
    matrix = vec.transform([normalize_prompt(t) for t in texts])
    start = 0
    for i, fam in enumerate(families):
        rows = list(range(start, start + len(fam.attempts)))
        start += len(fam.attempts)
        out[i] = _similarities(prompts[rows], matrix)
    return out


# A family needs this many distinct requests before any is held out as a test split: below it, every request
# that does not teach the optimizer validates (the gate of a small family needs them all).
TEST_SPLIT_MIN_GROUPS = 16
CORRECTED, FAILURE, PLAIN = "corrected", "failure", "plain"


def attempt_role(a: Attempt) -> str:
    """What an attempt is good for: `corrected` (the user said how they want it: it teaches), `failure` (it
    ended failing: replayable only where the user's rules score it, and as a validation task it may fail
    whatever a skill says), `plain`."""
    if a.corrections:
        return CORRECTED
    if a.outcome == "failure":
        return FAILURE
    return PLAIN


def _split_groups(fam: Family, sub: Rows) -> list[list[int]]:
    """Attempts that share a session or are near-duplicates, as groups of indexes, in time order."""
    n = len(fam.attempts)
    # Near-duplicates (compared once per distinct request, `similar_components`), plus one link from each
    # attempt to its near-duplicate group's first member and to the first attempt of its session.
    near = similar_components(sub, NEAR_DUPLICATE)
    rows: list[int] = []
    cols: list[int] = []
    first_of: dict[object, int] = {}
    for i, a in enumerate(fam.attempts):
        for key in (f"{a.tool}:{a.session_id}", int(near[i])):
            first = first_of.setdefault(key, i)
            if first != i:
                rows.append(first)
                cols.append(i)
    component = connected_components(n, np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64))
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(n):  # attempts are in time order, so groups are ordered by their first attempt
        groups[int(component[i])].append(i)
    return list(groups.values())


def _assign_splits(
    fam: Family,
    sub: Rows,
    *,
    previous: Mapping[str, str] | None = None,
    test_share: float = 0.2,
) -> None:
    """Give every group of near-duplicate attempts a split; an attempt keeps the split it was given on an
    earlier night (`previous`: attempt key -> split), so evidence gathered on it stays valid.

    Whole groups go to one split, so a request and its near-copy are never on both sides of the gate. The
    optimizer learns from what the user said; the gate judges on everything else:
    - groups with a correction train, in time order, while the family has fewer corrected train groups than
      a third of its corrected groups (at least one): every family with a correction shows one to the
      optimizer, and the others validate (their corrections still reach the judge as the family's rubric);
    - a family with no correction yet trains on one group, the first that did not fail: a failed session's
      check never passed, and with no rule from the user to score it by (a family without corrections has
      no rubric) it is left out of replays (`night/checks.py`), so a failure in the only train seat would
      leave the family nothing to learn from, night after night;
    - every other group validates. A validation task that fails whatever a skill says costs replays but
      never weakens the test (its difference is zero); a held-out test split (`test_share`) is taken only
      once the family has `TEST_SPLIT_MIN_GROUPS` groups, so it never starves a small family's gate.

    One exception to "for good": when an installed rule is not working, the groups where its correction came
    back after the install move to train (`send_to_train`), to teach the next rule.
    """
    previous = previous or {}
    groups = _split_groups(fam, sub)
    fam.splits, fam.groups, fam.roles = {}, {}, {}
    role_of: list[str] = []
    split_of: list[str | None] = []
    for members in groups:
        attempts = [fam.attempts[i] for i in members]
        roles = {attempt_role(a) for a in attempts}
        role_of.append(CORRECTED if CORRECTED in roles else FAILURE if FAILURE in roles else PLAIN)
        kept = [previous[a.key] for a in attempts if a.key in previous]
        split_of.append(kept[0] if kept else None)
    corrected_seen = corrected_train = 0
    for g, role in enumerate(role_of):  # 1. corrections teach
        if role != CORRECTED:
            continue
        corrected_seen += 1
        if split_of[g] is None and corrected_train < max(1, round(corrected_seen / 3)):
            split_of[g] = "train"
        corrected_train += split_of[g] == "train"
    if "train" not in split_of:  # 2. nothing teaches yet: the first group that did not fail
        free = [g for g, split in enumerate(split_of) if split is None]
        pick = next((g for g in free if role_of[g] != FAILURE), free[0] if free else None)
        if pick is not None:
            split_of[pick] = "train"
    tests = split_of.count("test")
    for g in range(len(groups)):  # 3. the rest judge
        if split_of[g] is None:
            seen = g + 1
            if seen >= TEST_SPLIT_MIN_GROUPS and tests < round(test_share * seen):
                split_of[g] = "test"
                tests += 1
            else:
                split_of[g] = "val"
    for members, split in zip(groups, split_of, strict=True):
        attempts = [fam.attempts[i] for i in members]
        group = "grp-" + hashlib.sha1(min(a.key for a in attempts).encode()).hexdigest()[:10]
        for a in attempts:
            fam.splits[a.key] = str(split)
            fam.groups[a.key] = group
            fam.roles[a.key] = attempt_role(a)


RECURRENCE = "recurrence"


def send_to_train(
    db: sqlite_utils.Database,
    families: Sequence[Family],
    attempts: Mapping[str, Sequence[str]],
    *,
    dry_run: bool = False,
) -> list[str]:
    """Move the groups holding `attempts` (family id -> attempt keys) to train, for good.

    The night calls this for a rule that is not working (`outcomes.py`): the sessions after its install in
    which the user made the same correction again become train tasks carrying those corrections, so the
    optimizer reads what the installed rule failed to prevent and can write a stronger one. They are
    whole groups, like every split, so no near-copy stays behind in validation; their role becomes
    `recurrence`. A group that already trains is left as it is. Returns the attempt keys that moved (on a
    `dry_run`, the ones that would: neither the store nor `families` is changed, so a rehearsal changes
    nothing a real night would do).
    """
    moved: list[str] = []
    for fam in families:
        wanted = set(attempts.get(fam.id) or ())
        groups = {fam.groups[k] for k in wanted if k in fam.groups and fam.splits.get(k) != "train"}
        moved.extend(a.key for a in fam.attempts if fam.groups.get(a.key) in groups)
    if not moved or dry_run:
        return moved
    keys = set(moved)
    for fam in families:
        wanted = set(attempts.get(fam.id) or ())
        for a in fam.attempts:
            if a.key in keys:
                fam.splits[a.key] = "train"
                if a.key in wanted:
                    fam.roles[a.key] = RECURRENCE
    role = {a.key: fam.roles.get(a.key, "") for fam in families for a in fam.attempts}
    with db.conn:
        for key in moved:
            db.execute("UPDATE tasks SET split = 'train', role = ? WHERE attempt_key = ?", [role[key], key])
            db.execute(
                "UPDATE split_assignments SET split = 'train', role = ? WHERE attempt_key = ?",
                [role[key], key],
            )
    return moved


# ---------------------------------------------------------------------------------------------- the store


@dataclass
class StoredSessions:
    """The sessions mining reads, their turns and tool calls, and the ones it skipped with the reason.

    `messages` holds each mined session's user messages with their lexical reading, read once for the
    exclusion rules and reused by labelling and segmenting.
    """

    sessions: list[dict[str, Any]]
    turns: dict[int, list[dict[str, Any]]]
    calls: dict[int, list[dict[str, Any]]]
    excluded: list[tuple[dict[str, Any], str]]
    messages: dict[int, list[UserMessage]] = field(default_factory=dict)


def load_sessions(
    db: sqlite_utils.Database, rules: ExcludeRules, *, since: str | None = None
) -> StoredSessions:
    """Every session with a user turn, minus the known automation (`exclude.py`)."""
    out = StoredSessions([], defaultdict(list), defaultdict(list), [])
    if "sessions" not in db.table_names():
        return out
    where = ["has_user_turn = 1"]
    params: list[Any] = []
    if since:
        where.append("coalesce(ended_at, started_at) >= ?")
        params.append(since)
    rows = list(db.query(f"SELECT * FROM sessions WHERE {' AND '.join(where)} ORDER BY started_at", params))
    for row in db.query(
        "SELECT session_pk, key, seq, role, text, timestamp, is_meta FROM turns ORDER BY session_pk, seq"
    ):
        out.turns[row["session_pk"]].append(row)
    for row in db.query(
        "SELECT session_pk, key, seq, turn_key, name, input_summary, exit_code, is_error, output_excerpt, "
        "result_at FROM tool_calls ORDER BY session_pk, seq"
    ):
        out.calls[row["session_pk"]].append(row)
    for s in rows:
        msgs = user_messages(out.turns.get(s["id"], []))
        reason = exclusion(s, msgs[0].text if msgs else "", rules)
        if reason:
            out.excluded.append((s, reason))
        else:
            out.sessions.append(s)
            out.messages[s["id"]] = msgs
    return out


def load_attempts(
    db: sqlite_utils.Database,
    *,
    include_automation: bool = False,
    since: str | None = None,
    rules: ExcludeRules | None = None,
    labels: dict[str, Label] | None = None,
) -> list[Attempt]:
    """Segment every mined session in the store (replays and known automation are never read)."""
    rules = rules or ExcludeRules(include_automation=include_automation)
    stored = load_sessions(db, rules, since=since)
    return _segment_all(stored, labels or {})


def _segment_all(stored: StoredSessions, labels: dict[str, Label]) -> list[Attempt]:
    attempts: list[Attempt] = []
    for s in stored.sessions:
        turns, calls = stored.turns.get(s["id"], []), stored.calls.get(s["id"], [])
        attempts.extend(segment(s, turns, calls, labels, messages=stored.messages.get(s["id"])))
    return attempts


def _messages(stored: StoredSessions, session_pk: int) -> list[UserMessage]:
    found = stored.messages.get(session_pk)
    return found if found is not None else user_messages(stored.turns.get(session_pk, []))


def installed_skills(db: sqlite_utils.Database) -> dict[str, str]:
    """Names and descriptions of registered skills, from the latest version of each."""
    if "skills" not in db.table_names():
        return {}
    out: dict[str, str] = {}
    cols = {c.name for c in db["skills"].columns}
    if "description" in cols:
        for row in db.query("SELECT name, description FROM skills"):
            out[row["name"]] = row["description"] or ""
    else:
        for row in db.query("SELECT name FROM skills"):
            out[row["name"]] = ""
    return out


@dataclass
class MiningReport:
    attempts: int
    families: int
    tasks: int
    by_split: dict[str, int]
    mined_at: str
    sessions: int = 0
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> sessions
    kinds: dict[str, int] = field(default_factory=dict)  # message kind -> count
    labels: dict[str, Any] | None = None  # the model path's LabelReport, when a model was used
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _task_row(fam: Family, a: Attempt) -> dict[str, Any]:
    return {
        "id": "task-" + hashlib.sha1(a.key.encode()).hexdigest()[:12],
        "family_id": fam.id,
        "attempt_key": a.key,
        "session_pk": a.session_pk,
        "tool": a.tool,
        "session_id": a.session_id,
        "turn_key": a.turn_key,
        "prompt": a.prompt,
        "project_path": a.project_path,
        "repo_commit": a.repo_commit,
        "repo_dirty": a.repo_dirty,
        "repo_diff_hash": a.repo_diff_hash,
        "started_at": a.started_at,
        "split": fam.splits.get(a.key, "train"),
        "split_group": fam.groups.get(a.key, a.key),
        "role": fam.roles.get(a.key) or attempt_role(a),  # computed only for an attempt without a role
        "outcome": a.outcome,
        "accepted": a.accepted,
        "abrupt_end": a.abrupt_end,
        "commands_json": json.dumps([c.to_dict() for c in a.commands[-20:]]),
        "corrections_json": json.dumps(a.corrections),
        "skills_used_json": json.dumps(a.skills_used),
        "recorded_tool_calls": a.tool_calls,
        "recorded_work_s": round(a.work_s, 1) if a.work_s is not None else None,
    }


def stored_splits(db: sqlite_utils.Database) -> dict[str, str]:
    """The split every attempt was first given (attempt key -> split), from earlier mining passes."""
    if "split_assignments" not in db.table_names():
        return {}
    return {
        r["attempt_key"]: r["split"] for r in db.query("SELECT attempt_key, split FROM split_assignments")
    }


def stored_family_ids(db: sqlite_utils.Database) -> dict[str, str]:
    """The family every attempt was first mined into (attempt key -> family id), from earlier passes."""
    if "split_assignments" not in db.table_names():
        return {}
    return {
        r["attempt_key"]: r["family_id"]
        for r in db.query("SELECT attempt_key, family_id FROM split_assignments")
    }


def save_families(db: sqlite_utils.Database, families: Sequence[Family], *, seed: int) -> MiningReport:
    """Replace the mined families and tasks in one transaction (mining is recomputed from the sessions)."""
    now = utcnow_iso()
    fam_rows = [
        {
            "id": fam.id,
            "name": fam.name,
            "skill_name": fam.skill_name,
            "size": len(fam.attempts),
            "tools_json": json.dumps(fam.tools),
            "projects_json": json.dumps(fam.projects),
            "checks_json": json.dumps(fam.checks),
            "rubric_json": json.dumps(fam.rubric),
            "seed": seed,
            "mined_at": now,
            "grouped_by": fam.grouped_by,
        }
        for fam in families
    ]
    task_rows = [_task_row(fam, a) for fam in families for a in fam.attempts]
    fam_of = {f.id: f for f in families}
    stored = check_verdicts.stored_probes(
        db, (check_verdicts.probe_key(r, c) for r in task_rows for c in fam_of[r["family_id"]].checks)
    )
    for row in task_rows:
        # Whether the task's check can tell right from wrong, from its session and the probes run so far;
        # the night runs the missing probes (`night/checks.py`).
        fam = fam_of[row["family_id"]]
        probes = check_verdicts.cached_probes(db, row, fam.checks, stored)
        row.update(check_verdicts.decide(row, fam.checks, fam.rubric, probes).row())
    assigned = [
        {
            "attempt_key": r["attempt_key"],
            "family_id": r["family_id"],
            "split": r["split"],
            "split_group": r["split_group"],
            "role": r["role"],
            "assigned_at": now,
        }
        for r in task_rows
    ]
    with db.conn:
        db.execute("DELETE FROM tasks")
        db.execute("DELETE FROM task_families")
        _insert_rows(db, "task_families", fam_rows)
        _insert_rows(db, "tasks", task_rows)
        # First assignment wins: an attempt keeps the split it validated or trained in.
        db.table("split_assignments").insert_all(assigned, ignore=True)
    by_split: Counter[str] = Counter(str(r["split"]) for r in task_rows)
    return MiningReport(
        attempts=sum(len(f.attempts) for f in families),
        families=len(families),
        tasks=len(task_rows),
        by_split=dict(by_split),
        mined_at=now,
    )


def _insert_rows(db: sqlite_utils.Database, table: str, rows: Sequence[dict[str, Any]]) -> None:
    """Rows that share their keys, in one statement (sqlite-utils' `insert_all` inspects every value)."""
    if not rows:
        return
    cols = list(rows[0])
    sql = f"INSERT INTO [{table}] ({', '.join(f'[{c}]' for c in cols)}) VALUES ({', '.join('?' * len(cols))})"
    db.conn.executemany(sql, [[r[c] for c in cols] for r in rows])


# ---------------------------------------------------------------------------------------------- one pass


@dataclass
class MiningResult:
    """Everything one pass found, for `--explain`: families, every attempt, the sessions it skipped."""

    families: list[Family]
    attempts: list[Attempt]
    excluded: list[tuple[dict[str, Any], str]]
    report: MiningReport

    def family_of(self) -> dict[str, Family]:
        return {a.key: f for f in self.families for a in f.attempts}


def label_sessions(
    db: sqlite_utils.Database, stored: StoredSessions, chat: Chat, *, budget: Budget | None, batch: int
) -> tuple[dict[str, Label], LabelReport]:
    """Model labels for every user message of the mined sessions (cached ones cost nothing)."""
    requests = [m.request for s in stored.sessions for m in _messages(stored, s["id"])]
    labeller = Labeller(db, chat, budget=budget, batch=batch)
    labels = labeller.label(requests)
    return labels, labeller.report


def mine_detailed(
    db: sqlite_utils.Database,
    *,
    seed: int = 42,
    threshold: float | None = None,
    min_size: int = 2,
    rules: ExcludeRules | None = None,
    test_share: float = 0.2,
    chat: Chat | None = None,
    budget: Budget | None = None,
    batch: int = 40,
) -> MiningResult:
    """One mining pass: read, label (when `chat` is given), segment, cluster, save."""
    stored = load_sessions(db, rules or ExcludeRules())
    labels: dict[str, Label] = {}
    label_report: LabelReport | None = None
    if chat is not None:
        labels, label_report = label_sessions(db, stored, chat, budget=budget, batch=batch)
    attempts = _segment_all(stored, labels)
    families = build_families(
        attempts,
        threshold=threshold,
        min_size=min_size,
        seed=seed,
        skills=installed_skills(db),
        previous=stored_splits(db),
        test_share=test_share,
        previous_ids=stored_family_ids(db),
    )
    report = save_families(db, families, seed=seed)
    report.attempts = len(attempts)
    report.sessions = len(stored.sessions)
    report.excluded = dict(Counter(reason for _, reason in stored.excluded))
    report.kinds = dict(Counter(m.kind for a in attempts for m in a.messages))
    if label_report is not None:
        report.labels = label_report.to_dict()
        report.notes.extend(label_report.problems)
    return MiningResult(families, attempts, stored.excluded, report)


def mine(
    db: sqlite_utils.Database,
    *,
    seed: int = 42,
    threshold: float | None = None,
    min_size: int = 2,
    include_automation: bool = False,
    test_share: float = 0.2,
    rules: ExcludeRules | None = None,
    chat: Chat | None = None,
    budget: Budget | None = None,
    batch: int = 40,
) -> tuple[list[Family], MiningReport]:
    """Mine and save the families; `rules` (from `night.exclude`) wins over `include_automation`."""
    result = mine_detailed(
        db,
        seed=seed,
        threshold=threshold,
        min_size=min_size,
        rules=rules or ExcludeRules(include_automation=include_automation),
        test_share=test_share,
        chat=chat,
        budget=budget,
        batch=batch,
    )
    return result.families, result.report


# ---------------------------------------------------------------------------------------------- explaining


def explain_rows(result: MiningResult) -> list[dict[str, Any]]:
    """Per user message: its kind, why, the intent and kind of work, and the family it landed in and why;
    then every skipped session with its reason. What `skillopt tasks mine --explain` shows."""
    family_of = result.family_of()
    rows: list[dict[str, Any]] = []
    for a in result.attempts:
        fam = family_of.get(a.key)
        if fam is not None:
            placed = f"with {len(fam.attempts) - 1} similar requests"
        elif a.one_off:
            placed = "alone: the model judged it a one-off"
        else:
            placed = "alone: no other request was alike enough"
        for m in a.messages:
            rows.append(
                {
                    "tool": a.tool,
                    "session": a.session_id,
                    "project": a.project_path,
                    "request": m.text,
                    "kind": m.kind,
                    "source": m.source,
                    "why": m.why,
                    "intent": a.intent,
                    "work": a.work,
                    "task": a.prompt if m.kind != "task" else None,
                    "family": fam.id if fam else None,
                    "family_name": fam.name if fam else None,
                    "family_why": placed if m.kind == "task" else "belongs to the task before it",
                    "checks": sorted(a.final_checks) if m.kind == "task" else [],
                }
            )
    for s, reason in result.excluded:
        rows.append(
            {
                "tool": s.get("tool"),
                "session": s.get("session_id"),
                "project": s.get("project_path"),
                "request": None,
                "kind": "excluded",
                "source": "rules",
                "why": reason,
                "intent": "",
                "work": "",
                "task": None,
                "family": None,
                "family_name": None,
                "family_why": "session not mined",
                "checks": [],
            }
        )
    return rows
