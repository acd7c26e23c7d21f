"""A user's machine made from the recorded corpus, for a night that must learn from it.

The corpus' sessions (real `claude` and `codex` transcripts) are copied into a fresh HOME, and its three
repositories are rebuilt under the world's root. Rebuilt repositories get new commit hashes, so the copied
transcripts are rewritten as they are copied: the recording's folder (`/tmp/skillopt-corpus/src/<repo>`)
becomes the rebuilt repository's path, and the commit a Codex log names becomes the rebuilt repository's
HEAD (Claude Code logs name none; ingest reads the repository). No skill is installed.

`corrections=False` replaces every correction with a neutral follow-up before ingest: the negative night
in which the user never said how they want the work done.

The scripted agent and judge get the kinds of work from `spec.py` (`work_kinds`); the optimizer gets
nothing but its requests (`skillopt_lib.testing.learning_night`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.corpus.load import CORPUS, Labels, read_labels
from benchmarks.corpus.record import make_repos
from benchmarks.corpus.spec import family
from skillopt_lib.testing import agent_clis as ac
from skillopt_lib.testing.learning_night import WorkKind
from skillopt_lib.testing.night_scenario import run_skillopt, skillopt_env
from skillopt_lib.testing.scripted_server import ScriptedServer

RECORDED_SRC = "/tmp/skillopt-corpus/src/"
OPT_KEY_ENV = "NIGHT_TEST_OPTIMIZER_KEY"
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
}


def work_kinds(family_ids: Sequence[str]) -> list[WorkKind]:
    """What the scripted agent and judge know of each family: its requests, rule, both ways, its check."""
    out = []
    for fid in family_ids:
        spec = family(fid)
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

    def skillopt_env(self) -> dict[str, str]:
        return skillopt_env(self.env, self.skillopt_home)

    def skillopt(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_skillopt(args, self.skillopt_env(), cwd=self.root, timeout=1800, check=check)

    def configure(self, **night: Any) -> None:
        """The optimizer and judge on the scripted server, replays through the real `claude` (and the real
        `codex` for the Codex sessions' tasks, when the world has it)."""
        settings = {
            "tools.claude-code.cli": str(self.claude),
            **({"tools.codex.cli": str(self.codex)} if self.codex else {}),
            "optimizer.backend": "openai",
            "optimizer.model": OPTIMIZER_MODEL,
            "optimizer.base_url": self.server.base_url_openai,
            "optimizer.api_key_env": OPT_KEY_ENV,
            "optimizer.max_retries": "0",
            "judge.backend": "openai",
            "judge.model": JUDGE_MODEL,
            "judge.base_url": self.server.base_url_openai,
            "judge.api_key_env": OPT_KEY_ENV,
            "judge.max_retries": "0",
            "night.include_automation": "true",
            "night.label_with_model": "false",
            "replay.max_parallel": "2",
            "replay.timeout_s": "120",
            "replay.env_allowlist": json.dumps(["PATH", "LANG", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]),
        }
        settings.update({f"night.{k}": str(v) for k, v in night.items()})
        for key, value in settings.items():
            self.skillopt("config", "set", key, value)


def _head(repo: Path) -> str:
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip()


def _recorded_commits(files: Sequence[Path]) -> dict[str, str]:
    """Commit hash → repository name, from the Codex logs' session metadata."""
    out: dict[str, str] = {}
    for path in files:
        if "codex" not in path.parts:
            continue
        first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        payload = first.get("payload") or {}
        commit = (payload.get("git") or {}).get("commit_hash")
        cwd = str(payload.get("cwd") or "")
        if commit and cwd.startswith(RECORDED_SRC):
            out[commit] = cwd[len(RECORDED_SRC) :].split("/")[0]
    return out


def _rewrite(text: str, world: CorpusWorld, commits: dict[str, str], rules: Sequence[str] | None) -> str:
    text = text.replace(RECORDED_SRC, f"{world.root / 'src'}/")
    for old, repo in commits.items():
        text = text.replace(old, _head(world.repos[repo]))
    for rule in rules or []:
        for form in (rule, json.dumps(rule)[1:-1]):
            text = text.replace(form, NEUTRAL)
    return text


def make_world(
    root: Path,
    server: ScriptedServer,
    claude: Path,
    families: Sequence[str],
    *,
    corrections: bool = True,
    corpus: Path = CORPUS,
    codex: Path | None = None,
) -> CorpusWorld:
    """The corpus' sessions of `families` in a fresh HOME, with the repositories rebuilt; then ingest.
    With `codex`, Codex's tasks replay through it against the same server (else they are left out)."""
    labels = read_labels(corpus)
    w = CorpusWorld(root, server, claude, labels, codex)
    w.repos = make_repos(root)
    w.env = ac.claude_env(w.home, server.url, trusted_dirs=list(w.repos.values()))
    if codex is not None:
        w.env.update(ac.codex_env(w.home, server.base_url_openai, trusted_dirs=list(w.repos.values())))
    w.env[OPT_KEY_ENV] = ac.DEFAULT_API_KEY
    keep = {s["session_id"] for s in labels.sessions if s["family"] in families}
    files = [p for p in sorted(corpus.rglob("*")) if p.is_file() and any(k in str(p) for k in keep)]
    commits = _recorded_commits(files)
    rules = None if corrections else [labels.families[f]["rule"] for f in labels.families]
    for src in files:
        rel = src.relative_to(corpus)
        dest = w.home / f".{rel.parts[0]}" / Path(*rel.parts[1:])
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(_rewrite(src.read_text(encoding="utf-8"), w, commits, rules), encoding="utf-8")
    w.skillopt("ingest")
    return w
