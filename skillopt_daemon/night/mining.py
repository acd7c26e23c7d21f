"""Mining recurring tasks from stored sessions: segment, attach outcomes, cluster into families, split.

Only what a person asked for counts: injected context, replays, sub-agents and (by default) other
programs' `claude -p` automation never become tasks. A family is a set of attempts whose requests are
lexically alike (TF-IDF over normalized prompts, cosine similarity, connected components), across sessions,
projects and tools. Its checks are the test or build commands that proved success in the original
sessions, its rubric items come from the user's corrections, and its splits are assigned per group of
near-duplicate attempts so the same request never sits on both sides of the gate.

Everything here works without a model; an LLM may rename families later, but nothing depends on it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import sqlite_utils
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize

from skillopt_daemon.core.timeutil import utcnow_iso

# Pairs at least this similar are joined outright into micro-clusters; micro-clusters are then merged by
# average linkage while their mean cosine similarity stays above FAMILY_SIMILARITY. Tuned on the
# generated corpus in benchmarks/mining_corpus.py (see docs/performance.md).
MICRO_THRESHOLD = 0.5
FAMILY_SIMILARITY = 0.15
DEFAULT_THRESHOLD = FAMILY_SIMILARITY
NEAR_DUPLICATE = 0.85

_TEST_CMD = re.compile(
    r"(?:^|[\s;&|(])(?:python3?\s+-m\s+)?(?:pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|rspec|ctest|"
    r"phpunit|mix\s+test|go\s+(?:test|build|vet)|cargo\s+(?:test|build|check|clippy)|"
    r"(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:test|build|lint|check|typecheck)|make(?:\s+(?:test|check|build|all|lint))?"
    r"(?:\s|$)|mvn\s+(?:test|verify|package)|gradle\w*\s+(?:test|build|check)|ruff\s+check|mypy|tsc|eslint|"
    r"dotnet\s+(?:test|build)|swift\s+(?:test|build)|bazel\s+(?:test|build)|"
    # a project's own check scripts: python3 check_report.py, ./scripts/test.sh, bash verify.sh
    r"(?:python3?\s+|bash\s+|sh\s+|node\s+|\./)\S*(?:test|check|verify|lint|validate)\S*)",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^\s*(?:no\b|nope\b|wrong\b|that'?s\s+(?:not|wrong|incorrect)|that\s+is\s+(?:not|wrong)|don'?t\b|do\s+not\b|"
    r"stop\b|instead\b|actually\b|not\s+like\s+that|you\s+(?:forgot|missed|broke|should)|please\s+(?:don'?t|use)|"
    r"use\s+\S+\s+(?:instead|not)|it\s+(?:still\s+)?(?:fails|doesn'?t|does\s+not)|still\s+(?:failing|broken|wrong))",
    re.IGNORECASE,
)
_ACCEPT = re.compile(
    r"^\s*(?:thanks?|thank\s+you|great|perfect|nice|awesome|looks\s+good|lgtm|good\s+job|ok(?:ay)?|cool|done|"
    r"that\s+works|works(?:\s+now)?)\b[\s!.,]*$",
    re.IGNORECASE,
)
_NORMALIZE = [
    (re.compile(r"https?://\S+"), " url "),
    (re.compile(r"(?:[\w.-]*/)+[\w.-]+"), " path "),
    (re.compile(r"\b[0-9a-f]{7,40}\b"), " hash "),
    (re.compile(r"\b\d+(?:\.\d+)*\b"), " num "),
    (re.compile(r"`[^`]*`"), " code "),
    (re.compile(r"\[REDACTED:[^\]]*\]"), " secret "),
]


@dataclass
class CommandRun:
    command: str
    exit_code: int | None = None
    is_error: bool | None = None
    output: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.is_error) or (self.exit_code is not None and self.exit_code != 0)

    @property
    def is_check(self) -> bool:
        return bool(_TEST_CMD.search(self.command))


@dataclass
class Attempt:
    """One user request and the agent's work until the next unrelated request."""

    key: str
    tool: str
    session_id: str
    prompt: str
    session_pk: int | None = None
    turn_key: str = ""
    project_path: str | None = None
    repo_commit: str | None = None
    repo_dirty: bool | None = None
    repo_diff_hash: str | None = None
    started_at: str | None = None
    commands: list[CommandRun] = field(default_factory=list)
    corrections: list[str] = field(default_factory=list)
    accepted: bool | None = None
    abrupt_end: bool = False
    skills_used: list[str] = field(default_factory=list)
    # How many commands had run when each correction arrived: a correction after the last check means the
    # user was not satisfied even though the checks passed.
    correction_points: list[int] = field(default_factory=list)

    @property
    def final_checks(self) -> dict[str, CommandRun]:
        """The last run of each test/build command, in order of first appearance."""
        out: dict[str, CommandRun] = {}
        for run in self.commands:
            if run.is_check:
                out[run.command.strip()] = run
        return out

    @property
    def unresolved_errors(self) -> list[str]:
        last: dict[str, CommandRun] = {}
        for run in self.commands:
            last[run.command.strip()] = run
        return [cmd for cmd, run in last.items() if run.failed]

    @property
    def outcome(self) -> str:
        """success / failure / unknown, from outcomes first: checks, then the user's reaction."""
        checks = self.final_checks
        if checks and all(not run.failed for run in checks.values()) and not self.corrections_after_checks:
            return "success"
        if checks and any(run.failed for run in checks.values()):
            return "failure"
        if self.accepted:
            return "success"
        if self.corrections or self.abrupt_end:
            return "failure"
        return "unknown"

    @property
    def corrections_after_checks(self) -> bool:
        last_check = max((i for i, run in enumerate(self.commands) if run.is_check), default=-1)
        return any(point > last_check for point in self.correction_points)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["outcome"] = self.outcome
        return d


@dataclass
class Family:
    id: str
    name: str
    attempts: list[Attempt]
    checks: list[str] = field(default_factory=list)
    rubric: list[str] = field(default_factory=list)
    skill_name: str | None = None
    splits: dict[str, str] = field(default_factory=dict)  # attempt key -> train | val | test

    @property
    def tools(self) -> list[str]:
        return sorted({a.tool for a in self.attempts})

    @property
    def projects(self) -> list[str]:
        return sorted({a.project_path for a in self.attempts if a.project_path})


# ---------------------------------------------------------------------------------------------- segmenting


def is_correction(text: str) -> bool:
    return bool(_CORRECTION.match(text))


def is_acceptance(text: str) -> bool:
    return bool(_ACCEPT.match(text))


def rubric_item(correction: str) -> str:
    """Turn "no, use pytest instead" into "use pytest instead": the rule the user wanted followed."""
    text = correction.strip().splitlines()[0] if correction.strip() else ""
    text = re.sub(r"^\s*(?:no|nope|wrong|actually|stop)\b[\s,.!:;-]*", "", text, flags=re.IGNORECASE)
    return text.strip().rstrip(".!") or correction.strip()


def segment(
    session: dict[str, Any], turns: Sequence[dict[str, Any]], calls: Sequence[dict[str, Any]]
) -> list[Attempt]:
    """Split one session into attempts. `turns` and `calls` are rows of the store's tables, in seq order."""
    calls_by_turn: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for call in calls:
        calls_by_turn[str(call.get("turn_key") or "")].append(call)
    attempts: list[Attempt] = []
    current: Attempt | None = None
    last_role = ""
    pending_calls = 0
    for turn in turns:
        role = turn["role"]
        if turn.get("is_meta"):
            continue
        text = (turn.get("text") or "").strip()
        if role == "user":
            if not text:
                continue
            last_role = "user"
            if current is not None and is_acceptance(text):
                current.accepted = True
                continue
            if current is not None and is_correction(text):
                current.corrections.append(text)
                current.correction_points.append(len(current.commands))
                current.accepted = False
                continue
            current = Attempt(
                key=f"{session['tool']}:{session['session_id']}:{turn['key']}",
                tool=session["tool"],
                session_id=session["session_id"],
                session_pk=session.get("id"),
                turn_key=turn["key"],
                prompt=text,
                project_path=session.get("project_path"),
                repo_commit=session.get("repo_commit"),
                repo_dirty=bool(session["repo_dirty"]) if session.get("repo_dirty") is not None else None,
                repo_diff_hash=session.get("repo_diff_hash"),
                started_at=turn.get("timestamp") or session.get("started_at"),
            )
            attempts.append(current)
        elif role == "assistant" and current is not None:
            last_role = "assistant" if text else last_role
            for call in calls_by_turn.get(turn["key"], []):
                name = str(call.get("name") or "")
                summary = str(call.get("input_summary") or "")
                if name.lower() == "skill":
                    skill = _skill_from_input(summary)
                    if skill:
                        current.skills_used.append(skill)
                    continue
                if _is_shell_tool(name):
                    current.commands.append(
                        CommandRun(
                            command=_command_from_input(summary),
                            exit_code=call.get("exit_code"),
                            is_error=bool(call["is_error"]) if call.get("is_error") is not None else None,
                            output=str(call.get("output_excerpt") or "")[:2000],
                        )
                    )
                if (
                    call.get("result_at") is None
                    and call.get("exit_code") is None
                    and call.get("is_error") is None
                ):
                    pending_calls += 1
                else:
                    pending_calls = 0
    if current is not None:
        signals = _loads(session.get("signals_json"))
        abrupt = bool(signals.get("abrupt_end")) if isinstance(signals, dict) else False
        current.abrupt_end = abrupt or last_role == "user" or pending_calls > 0
    return attempts


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return {}
    return value or {}


_SHELL_TOOLS = {
    "bash",
    "shell",
    "exec_command",
    "local_shell",
    "run_terminal_cmd",
    "terminal",
    "execute",
    "run",
}


def _is_shell_tool(name: str) -> bool:
    n = name.lower()
    return n in _SHELL_TOOLS or n.endswith(".bash") or n.startswith("shell") or n == "exec"


def _command_from_input(summary: str) -> str:
    """Input summaries are JSON-ish ({"command": ...}, {"cmd": ...}) or the command itself."""
    text = summary.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            for k in ("command", "cmd", "script"):
                v = data.get(k)
                if isinstance(v, list):
                    v = " ".join(str(p) for p in v)
                if isinstance(v, str) and v:
                    return _strip_shell_wrapper(v)
        m = re.search(r'"(?:command|cmd)"\s*:\s*"((?:[^"\\]|\\.)*)', text)
        if m:
            return _strip_shell_wrapper(m.group(1).encode().decode("unicode_escape", "ignore"))
    return _strip_shell_wrapper(text)


def _strip_shell_wrapper(cmd: str) -> str:
    m = re.match(r"^(?:/bin/)?(?:ba)?sh\s+-l?c\s+(['\"])(.*)\1\s*$", cmd.strip(), re.DOTALL)
    return m.group(2) if m else cmd.strip()


def _skill_from_input(summary: str) -> str | None:
    try:
        data = json.loads(summary)
        if isinstance(data, dict) and isinstance(data.get("skill"), str):
            return str(data["skill"]).split(":")[-1]
    except ValueError:
        pass
    m = re.search(r'"?skill"?\s*[:=]\s*"?([\w:.-]+)', summary)
    return m.group(1).split(":")[-1] if m else None


# ---------------------------------------------------------------------------------------------- clustering


def normalize_prompt(text: str) -> str:
    out = text.lower()
    for pattern, repl in _NORMALIZE:
        out = pattern.sub(repl, out)
    return re.sub(r"\s+", " ", out).strip()


def _vectorize(texts: Sequence[str]) -> tuple[TfidfVectorizer, csr_matrix]:
    vec = TfidfVectorizer(
        ngram_range=(1, 2), sublinear_tf=True, min_df=1, stop_words="english", token_pattern=r"(?u)\b\w\w+\b"
    )
    try:
        matrix = vec.fit_transform(texts)
    except ValueError:  # only stop words: fall back to keeping them
        vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b\w+\b")
        matrix = vec.fit_transform([t or "empty" for t in texts])
    return vec, csr_matrix(matrix)


def _similarity_graph(matrix: csr_matrix, threshold: float, chunk: int = 2048) -> csr_matrix:
    """Sparse adjacency of pairs at or above the cosine threshold (rows are L2-normalized by TF-IDF)."""
    n = matrix.shape[0]
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    t = matrix.T.tocsc()
    for start in range(0, n, chunk):
        block = (matrix[start : start + chunk] @ t).tocoo()
        keep = block.data >= threshold
        rows.append(block.row[keep] + start)
        cols.append(block.col[keep])
    r = np.concatenate(rows) if rows else np.array([], dtype=int)
    c = np.concatenate(cols) if cols else np.array([], dtype=int)
    return csr_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(n, n))


def _cluster_matrix(matrix: csr_matrix, similarity: float) -> np.ndarray:
    """Two stages, so that 10,000 sessions cluster in seconds and similar requests do not chain:
    near-identical requests join into micro-clusters (connected components of a sparse graph), then
    micro-cluster centroids merge by average linkage on cosine distance."""
    _, micro = connected_components(_similarity_graph(matrix, MICRO_THRESHOLD), directed=False)
    k = int(micro.max()) + 1
    if k == 1:
        return micro
    member = csr_matrix((np.ones(len(micro)), (micro, np.arange(len(micro)))), shape=(k, len(micro)))
    centroids = normalize(member @ matrix)
    agg = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=1.0 - similarity
    )
    top = agg.fit_predict(centroids.toarray())
    return np.asarray(top[micro])


def cluster_prompts(prompts: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> list[int]:
    """A family label for each prompt (labels are 0..k-1, in order of first appearance)."""
    if not prompts:
        return []
    _, matrix = _vectorize([normalize_prompt(p) for p in prompts])
    labels = _cluster_matrix(matrix, threshold)
    remap: dict[int, int] = {}
    return [remap.setdefault(int(lab), len(remap)) for lab in labels]


def build_families(
    attempts: Sequence[Attempt],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_size: int = 2,
    seed: int = 42,
    skills: dict[str, str] | None = None,
    ratios: tuple[float, float, float] = (0.5, 0.25, 0.25),
) -> list[Family]:
    """Cluster attempts into families of at least `min_size`, with checks, rubric, skill and splits.

    `skills` maps installed skill names to descriptions, to relate a family to a skill when the sessions
    never called one explicitly.
    """
    if not attempts:
        return []
    texts = [normalize_prompt(a.prompt) for a in attempts]
    vec, matrix = _vectorize(texts)
    labels = _cluster_matrix(matrix, threshold)
    groups: dict[int, list[int]] = defaultdict(list)
    for idx, lab in enumerate(labels):
        groups[int(lab)].append(idx)
    terms = np.array(vec.get_feature_names_out())
    skill_matrix = None
    skill_names: list[str] = []
    if skills:
        skill_names = list(skills)
        skill_matrix = vec.transform(
            [normalize_prompt(f"{n.replace('-', ' ')} {d}") for n, d in skills.items()]
        )
    families: list[Family] = []
    for members in groups.values():
        if len(members) < min_size:
            continue
        fam_attempts = sorted((attempts[i] for i in members), key=lambda a: (a.started_at or "", a.key))
        fid = "fam-" + hashlib.sha1(min(a.key for a in fam_attempts).encode()).hexdigest()[:10]
        centroid = np.asarray(matrix[members].mean(axis=0)).ravel()
        top = [str(terms[i]) for i in centroid.argsort()[::-1][:4] if centroid[i] > 0]
        name = " / ".join(top) if top else "tasks"
        fam = Family(id=fid, name=name, attempts=fam_attempts)
        fam.checks = _family_checks(fam_attempts)
        fam.rubric = _family_rubric(fam_attempts)
        fam.skill_name = _family_skill(fam_attempts, centroid, skill_matrix, skill_names)
        sub = matrix[members]
        fam.splits = _assign_splits(fam, sub, seed=seed, ratios=ratios)
        families.append(fam)
    families.sort(key=lambda f: (-len(f.attempts), f.id))
    return families


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
    seen: dict[str, str] = {}
    for a in attempts:
        for c in a.corrections:
            item = rubric_item(c)
            seen.setdefault(normalize_prompt(item), item)
    return list(seen.values())[:10]


def _family_skill(
    attempts: Sequence[Attempt], centroid: np.ndarray, skill_matrix: Any, skill_names: list[str]
) -> str | None:
    used = Counter(s for a in attempts for s in a.skills_used)
    if used:
        return used.most_common(1)[0][0]
    if skill_matrix is None or not skill_names:
        return None
    norm = float(np.linalg.norm(centroid)) or 1.0
    sims = np.asarray(skill_matrix @ (centroid / norm)).ravel()
    best = int(sims.argmax())
    return skill_names[best] if sims[best] >= 0.2 else None


def _assign_splits(
    fam: Family, sub: csr_matrix, *, seed: int, ratios: tuple[float, float, float]
) -> dict[str, str]:
    """Group attempts that share a session or are near-duplicates; order groups by a seeded hash; cut.

    Whole groups go to one split, so a request and its near-copy are never on both sides of the gate.
    Every family with three or more groups gets at least one validation and one test group.
    """
    n = len(fam.attempts)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_session: dict[str, int] = {}
    for i, a in enumerate(fam.attempts):
        sk = f"{a.tool}:{a.session_id}"
        if sk in by_session:
            parent[find(i)] = find(by_session[sk])
        else:
            by_session[sk] = i
    sims = (sub @ sub.T).tocoo()
    for i, j, v in zip(sims.row, sims.col, sims.data, strict=False):
        if i < j and v >= NEAR_DUPLICATE:
            parent[find(int(i))] = find(int(j))
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(n):
        groups[find(i)].append(i)

    def order(members: list[int]) -> str:
        key = min(fam.attempts[i].key for i in members)
        return hashlib.sha256(f"{seed}:{fam.id}:{key}".encode()).hexdigest()

    ordered = sorted(groups.values(), key=order)
    g = len(ordered)
    n_val = max(1, round(g * ratios[1])) if g >= 2 else 0
    n_test = max(1, round(g * ratios[2])) if g >= 3 else 0
    n_val = min(n_val, g - 1) if g >= 2 else 0
    if n_val + n_test >= g:
        n_test = max(0, g - n_val - 1)
    out: dict[str, str] = {}
    for rank, members in enumerate(ordered):
        split = "val" if rank < n_val else "test" if rank < n_val + n_test else "train"
        for i in members:
            out[fam.attempts[i].key] = split
    return out


# ---------------------------------------------------------------------------------------------- the store


def load_attempts(
    db: sqlite_utils.Database, *, include_automation: bool = False, since: str | None = None
) -> list[Attempt]:
    """Segment every user session in the store (replays and sessions with no user turn are never read)."""
    if "sessions" not in db.table_names():
        return []
    where = ["is_replay = 0", "has_user_turn = 1"]
    params: list[Any] = []
    if not include_automation:
        where.append("is_automation = 0")
    if since:
        where.append("coalesce(ended_at, started_at) >= ?")
        params.append(since)
    sessions = list(
        db.query(f"SELECT * FROM sessions WHERE {' AND '.join(where)} ORDER BY started_at", params)
    )
    turns_by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    calls_by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in db.query(
        "SELECT session_pk, key, seq, role, text, timestamp, is_meta FROM turns ORDER BY session_pk, seq"
    ):
        turns_by[row["session_pk"]].append(row)
    for row in db.query(
        "SELECT session_pk, key, seq, turn_key, name, input_summary, exit_code, is_error, output_excerpt, "
        "result_at FROM tool_calls ORDER BY session_pk, seq"
    ):
        calls_by[row["session_pk"]].append(row)
    attempts: list[Attempt] = []
    for s in sessions:
        attempts.extend(segment(s, turns_by.get(s["id"], []), calls_by.get(s["id"], [])))
    return attempts


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def save_families(db: sqlite_utils.Database, families: Sequence[Family], *, seed: int) -> MiningReport:
    """Replace the mined families and tasks in one transaction (mining is recomputed from the sessions)."""
    now = utcnow_iso()
    fam_rows = []
    task_rows = []
    for fam in families:
        fam_rows.append(
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
            }
        )
        for a in fam.attempts:
            task_rows.append(
                {
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
                    "outcome": a.outcome,
                    "accepted": a.accepted,
                    "abrupt_end": a.abrupt_end,
                    "commands_json": json.dumps([asdict(c) for c in a.commands][-20:]),
                    "corrections_json": json.dumps(a.corrections),
                    "skills_used_json": json.dumps(a.skills_used),
                }
            )
    with db.conn:
        db.execute("DELETE FROM tasks")
        db.execute("DELETE FROM task_families")
        if fam_rows:
            db.table("task_families").insert_all(fam_rows)
        if task_rows:
            db.table("tasks").insert_all(task_rows)
    by_split: Counter[str] = Counter(str(r["split"]) for r in task_rows)
    return MiningReport(
        attempts=sum(len(f.attempts) for f in families),
        families=len(families),
        tasks=len(task_rows),
        by_split=dict(by_split),
        mined_at=now,
    )


def mine(
    db: sqlite_utils.Database,
    *,
    seed: int = 42,
    threshold: float = DEFAULT_THRESHOLD,
    min_size: int = 2,
    include_automation: bool = False,
    ratios: tuple[float, float, float] = (0.5, 0.25, 0.25),
) -> tuple[list[Family], MiningReport]:
    attempts = load_attempts(db, include_automation=include_automation)
    families = build_families(
        attempts,
        threshold=threshold,
        min_size=min_size,
        seed=seed,
        skills=installed_skills(db),
        ratios=ratios,
    )
    report = save_families(db, families, seed=seed)
    report.attempts = len(attempts)
    return families, report
