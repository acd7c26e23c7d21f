"""A user's machine made from a recorded corpus, for a night that must learn from it.

The corpus' sessions (real `claude` and `codex` transcripts) are copied into a fresh HOME, and its
repositories are rebuilt under the world's root. Rebuilt repositories get new commit hashes, so the copied
transcripts are rewritten as they are copied: the recording's folder (`/tmp/skillopt-corpus/src/<repo>`, or
the nights corpus' `source_root`) becomes the rebuilt repository's path, and the commit a Codex log names
becomes the rebuilt repository's HEAD (Claude Code logs name none; ingest reads the repository). No skill is
installed. Timestamps stay as recorded (sessions added later can be moved to start at a given time).

On the nights corpus (`load.NIGHTS`, sessions numbered in time order within each kind; the scope corpus,
`load.SCOPE`, likewise, with its own repositories) a world can start
with the first N sessions of each kind (`make_world(..., corpus=NIGHTS, first=N)`) and receive the next ones
later (`add_sessions(world, kinds, upto=M)`): what a user's first weeks bring between two nights. What the
user said in them can be swapped for other words (`swaps`), so the recorded sessions serve for the weeks
after an install too, in which the user says something new.

`corrections=False` replaces every correction with a neutral follow-up before ingest: the negative night
in which the user never said how they want the work done.

The scripted agent and judge get the kinds of work from `spec.py` (`work_kinds`); the optimizer gets
nothing but its requests (`testkit/learning_night.py`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from skillopt_daemon.core.timeutil import parse_iso, to_iso
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit import cli
from testkit.corpus.after import STAMP, json_forms
from testkit.corpus.load import CORPUS, MINING_SOURCE_ROOT, NIGHTS, SCOPE, Labels, read_labels
from testkit.corpus.record import make_repos
from testkit.corpus.spec import REPOS, SCOPE_REPOS, SCOPE_SAME_RULE, scope_family
from testkit.learning_night import WorkKind
from testkit.night_scenario import (
    OPT_KEY_ENV,
    apply_settings,
    login_settings,
    scripted_settings,
    skillopt_env,
)

RECORDED_SRC = MINING_SOURCE_ROOT
__all__ = ["NIGHTS", "SCOPE", "CorpusWorld", "add_sessions", "corpus_kinds", "make_world", "work_kinds"]

OPTIMIZER_MODEL = "opt"
JUDGE_MODEL = "judge"
NEUTRAL = "keep going"
# How the scripted judge sees each family's rule broken in the work shown (it is the grader: it reads the
# rule and the work). The optimizer never sees these.
VIOLATIONS = {
    "lint": r"# noqa",
    "types": r"\bAny\b",
    "logging": r"print\(",
    "tests": r"\bunittest\b",
    "mdlint": r"[^\n`]{81,}",
    "changelog": r"## 1\.3\.0[\s\S]*## 1\.4",
    "config": r"\b[a-z]+[A-Z]\w*\s*=",
    "sql": r"(?i)\bselect\s+\*",
    # The scope corpus' kinds: the site's changelog runs oldest first; the lint rule of three repositories.
    "changelog-site": r"## 0\.10\.0[\s\S]*## 0\.9\.0",
    "lint-site": r"# noqa",
    "lint-handbook": r"# noqa",
}


def corpus_kinds(split: str | None = None, corpus: Path = NIGHTS) -> list[str]:
    """The corpus' kinds of work, or only those of one half (`tune` or `heldout`, the nights corpus)."""
    families = read_labels(corpus).families
    return [f for f, v in families.items() if split is None or v.get("split") == split]


def work_kinds(family_ids: Sequence[str]) -> list[WorkKind]:
    """What the scripted agent and judge know of each family: its requests, rule (and the same rule in the
    words of the kinds among `family_ids` that `spec.SCOPE_SAME_RULE` groups with it), both ways, its check."""
    out = []
    for fid in family_ids:
        spec = scope_family(fid)
        alike = next((group for group in SCOPE_SAME_RULE if fid in group), ())
        out.append(
            WorkKind(
                id=fid,
                prompts=spec.prompts,
                rule=spec.rule,
                work_file=spec.work_file,
                wrong=spec.first_try,
                right=spec.after_correction,
                check=spec.check,
                violation=VIOLATIONS[fid],
                same_rule=tuple(scope_family(k).rule for k in alike if k != fid and k in family_ids),
            )
        )
    return out


class CorpusWorld:
    """A HOME holding the corpus' sessions, the rebuilt repositories, and skillopt's own folder."""

    def __init__(
        self, root: Path, server: ScriptedServer, claude: Path, labels: Labels, codex: Path | None = None
    ) -> None:
        self.root = root
        self.home = root / "home"
        self.skillopt_home = root / "skillopt"
        self.server = server
        self.claude = claude
        self.codex = codex
        self.labels = labels
        self.repos: dict[str, Path] = {}
        self.env: dict[str, str] = {}
        self.corpus = CORPUS
        self.corrections = True
        self.one_offs = False
        # Per kind, how many of its sessions (by index, the nights corpus) the world holds so far.
        self.upto: dict[str, int] = {}
        self.commits: dict[str, str] = {}  # recorded commit -> repository, from the Codex logs copied
        self.held: set[str] = set()  # the session ids copied into HOME so far

    def skillopt_env(self) -> dict[str, str]:
        return skillopt_env(self.env, self.skillopt_home)

    def skillopt(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # A whole night of a large family can take over half an hour on a loaded machine.
        return cli.run(*args, env=self.skillopt_env(), cwd=self.root, timeout=7200, check=check)

    def configure(self, *, login: bool = False, **night: Any) -> None:
        """The optimizer and judge on the scripted server, replays through the real `claude` (and the real
        `codex` for the Codex sessions' tasks, when the world has it). With `login`, the user configured no
        optimizer and said yes to the night using their login: the night runs on its own default
        (`claude-code-chat` against the same server) and applies the login's caps itself."""
        if login:
            settings = login_settings(self.claude, codex=self.codex)
        else:
            settings = scripted_settings(
                self.server, self.claude, OPTIMIZER_MODEL, judge_model=JUDGE_MODEL, codex=self.codex
            )
        settings.update(
            {"night.label_with_model": "false", "replay.max_parallel": "2", "replay.timeout_s": "120"}
        )
        apply_settings(self.skillopt, settings, night)


def _head(repo: Path) -> str:
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip()


def _recorded_commits(files: Sequence[Path], source_root: str = RECORDED_SRC) -> dict[str, str]:
    """Commit hash → repository name, from the Codex logs' session metadata."""
    out: dict[str, str] = {}
    for path in files:
        if "codex" not in path.parts or path.suffix != ".jsonl":
            continue
        first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        payload = first.get("payload") or {}
        commit = (payload.get("git") or {}).get("commit_hash")
        cwd = str(payload.get("cwd") or "")
        if commit and cwd.startswith(source_root):
            out[commit] = cwd[len(source_root) :].split("/")[0]
    return out


def _rewrite(text: str, world: CorpusWorld, commits: dict[str, str], rules: Sequence[str] | None) -> str:
    text = text.replace(world.labels.source_root, f"{world.root / 'src'}/")
    for old, repo in commits.items():
        text = text.replace(old, _head(world.repos[repo]))
    for rule in rules or []:
        for form in (rule, json.dumps(rule)[1:-1]):
            text = text.replace(form, NEUTRAL)
    return text


def _round_start(labels: Labels, r: int | None) -> int:
    """Where round `r` (every kind's session `r`) starts in the recording order; the end for `None`."""
    found = (
        p
        for p, s in enumerate(labels.sessions)
        if r is not None and (int(s["index"]) if s["family"] else -1) >= r
    )
    return next(found, len(labels.sessions))


def _selected(
    labels: Labels, kinds: Sequence[str], lo: dict[str, int], hi: int | None, one_offs: bool
) -> set[str]:
    """Session ids of `kinds` whose index is in [lo[kind], hi) (every index when `hi` is None), and with
    `one_offs` the one-offs recorded between the start of the lowest round taken and the start of round `hi`."""
    if hi is not None and any(s["family"] and "index" not in s for s in labels.sessions):
        raise ValueError(
            "this corpus does not number its sessions in time order: use corpus=NIGHTS to take the first ones"
        )
    start = _round_start(labels, min(lo.values())) if lo else 0
    stop = _round_start(labels, hi)
    keep: set[str] = set()
    for p, s in enumerate(labels.sessions):
        if s["family"] is None:
            if one_offs and start <= p < stop:
                keep.add(s["session_id"])
        elif s["family"] in kinds:
            index = s.get("index", 0)
            if lo.get(s["family"], 0) <= index and (hi is None or index < hi):
                keep.add(s["session_id"])
    return keep


def _copy_sessions(
    w: CorpusWorld,
    keep: set[str],
    swaps: Mapping[str, Mapping[str, str]] | None = None,
    start: datetime | None = None,
) -> list[Path]:
    """Copy the transcripts of the sessions in `keep` (sub-agents' with their parent) into the world's HOME,
    rewritten for the rebuilt repositories, with `swaps` (session id -> {what the user said: what they say
    instead}) and, with `start`, every timestamp shifted so the earliest is `start`; returns the copies."""
    files = [p for p in sorted(w.corpus.rglob("*")) if p.is_file() and any(k in str(p) for k in keep)]
    w.commits.update(_recorded_commits(files, w.labels.source_root))
    rules = None if w.corrections else [w.labels.families[f]["rule"] for f in w.labels.families]
    w.held |= keep
    texts = {src: src.read_text(encoding="utf-8") for src in files}
    shift = timedelta(0)
    stamps = [parse_iso(m.group(1))[0] for text in texts.values() for m in STAMP.finditer(text)]
    if start is not None and stamps:
        shift = start - min(stamps)
    out = []
    for src, text in texts.items():
        session = next((k for k in keep if k in str(src)), "")
        for old, new in (swaps or {}).get(session, {}).items():
            for o, n in zip(json_forms(old), json_forms(new), strict=True):
                text = text.replace(o, n)
        if shift:
            text = STAMP.sub(lambda m: '"' + to_iso(parse_iso(m.group(1))[0] + shift) + '"', text)
        rel = src.relative_to(w.corpus)
        dest = w.home / f".{rel.parts[0]}" / Path(*rel.parts[1:])
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(_rewrite(text, w, w.commits, rules), encoding="utf-8")
        out.append(dest)
    return out


def make_world(
    root: Path,
    server: ScriptedServer,
    claude: Path,
    kinds: Sequence[str],
    *,
    corrections: bool = True,
    corpus: Path = CORPUS,
    codex: Path | None = None,
    first: int | None = None,
    one_offs: bool = False,
    swaps: Mapping[str, Mapping[str, str]] | None = None,
) -> CorpusWorld:
    """The corpus' sessions of `kinds` in a fresh HOME, with the repositories rebuilt; then ingest.

    With `first` (the nights corpus only), only each kind's sessions with index < `first`: a family of
    `first` sessions, as a user has it after their first `first` sessions of that kind. With `one_offs`, the
    one-off requests recorded among them come along. With `codex`, Codex's tasks replay through it against
    the same server (else they are left out). `swaps` changes what the user said before ingest, as in
    `add_sessions`."""
    labels = read_labels(corpus)
    unknown = sorted(set(kinds) - set(labels.families))
    if unknown:
        raise ValueError(
            f"{corpus.name} has no kind {', '.join(unknown)} (it has {', '.join(labels.families)})"
        )
    w = CorpusWorld(root, server, claude, labels, codex)
    w.corpus, w.corrections, w.one_offs = corpus, corrections, one_offs
    w.repos = make_repos(root, SCOPE_REPOS if corpus == SCOPE else REPOS)
    w.env = ac.claude_env(w.home, server.url, trusted_dirs=list(w.repos.values()))
    if codex is not None:
        w.env.update(ac.codex_env(w.home, server.base_url_openai, trusted_dirs=list(w.repos.values())))
    w.env[OPT_KEY_ENV] = ac.DEFAULT_API_KEY
    _copy_sessions(w, _selected(labels, kinds, {}, first, one_offs), swaps)
    w.upto = {k: first if first is not None else _count(labels, k) for k in kinds}
    w.skillopt("ingest")
    return w


def _count(labels: Labels, kind: str) -> int:
    return sum(1 for s in labels.sessions if s["family"] == kind)


def add_sessions(
    world: CorpusWorld,
    kinds: Sequence[str],
    *,
    upto: int,
    swaps: Mapping[str, Mapping[str, str]] | None = None,
    start: datetime | None = None,
) -> list[dict[str, Any]]:
    """Copy each kind's next sessions (index from what the world holds up to `upto` - 1) into the world's HOME,
    rewritten as `make_world` does (corrections removed if the world has none), then `skillopt ingest`: what
    arrives between two nights. Timestamps stay as recorded, unless `start` moves them (order and spacing
    kept) to begin then; `swaps` changes what the user said in them (session id -> {recorded: instead}). A
    kind the world did not hold starts at index 0. Returns the labels of the sessions added, in recording
    order."""
    lo = {k: world.upto.get(k, 0) for k in kinds}
    if any(upto < n for n in lo.values()):
        raise ValueError(f"the world already holds more than {upto} sessions of some kind: {world.upto}")
    keep = _selected(world.labels, kinds, lo, upto, world.one_offs) - world.held
    _copy_sessions(world, keep, swaps, start)
    for k in kinds:
        world.upto[k] = upto
    world.skillopt("ingest")
    return [s for s in world.labels.sessions if s["session_id"] in keep]
