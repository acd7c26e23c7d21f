"""A user's machine made from the red-team corpus: its sessions in a fresh HOME, its repositories rebuilt,
each kind's skill installed, imported and the sessions ingested; the night's models on the scripted server.

The recorded transcripts name the recording's folders (`labels.json`: `source_root`, `home`); they are
rewritten to the world's as they are copied. Only where the CLIs and models live and the night's budget caps
are set (`configure`): everything else is the shipped default.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit import cli
from testkit.corpus.redteam_record import FIXTURES, _git, install_skill, make_repo
from testkit.corpus.redteam_spec import Kind, kind
from testkit.night_scenario import apply_settings, scripted_settings, skillopt_env

OPT_KEY_ENV = "REDTEAM_OPTIMIZER_KEY"
OPTIMIZER_MODEL = "copycat"
JUDGE_MODEL = "judge"


def read_labels(corpus: Path = FIXTURES) -> dict[str, Any]:
    return dict(json.loads((corpus / "labels.json").read_text(encoding="utf-8")))


class RedteamWorld:
    """A HOME holding the corpus' sessions of some kinds, their repositories, and skillopt's own folder."""

    def __init__(self, root: Path, server: ScriptedServer, claude: Path, kinds: Sequence[Kind]) -> None:
        self.root = root
        self.home = root / "home"
        self.skillopt_home = root / "skillopt"
        self.server = server
        self.claude = claude
        self.kinds = list(kinds)
        self.repos = {k.id: make_repo(root, k) for k in kinds}
        self.env = ac.claude_env(self.home, server.url, trusted_dirs=list(self.repos.values()))
        self.env[OPT_KEY_ENV] = ac.DEFAULT_API_KEY

    def skillopt(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # A whole night of several kinds can take half an hour on a loaded machine.
        env = skillopt_env(self.env, self.skillopt_home)
        return cli.run(*args, env=env, cwd=self.root, timeout=7200, check=check)

    def configure(self, **night: Any) -> None:
        """The copying optimizer and the judge on the scripted server, replays through the real `claude`,
        and the night's settings in `night` (the benchmark sets only its budget caps)."""
        settings = scripted_settings(
            self.server, self.claude, OPTIMIZER_MODEL, key_env=OPT_KEY_ENV, judge_model=JUDGE_MODEL
        )
        settings["night.label_with_model"] = "false"
        apply_settings(self.skillopt, settings, night)


def commit_on_top(repo: Path, files: dict[str, str]) -> None:
    """`files` written into `repo` and committed on top of what is there (before ingest, so the sessions
    are pinned to this commit and the replays start from it)."""
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "docs and hooks")


def make_world(
    root: Path,
    server: ScriptedServer,
    claude: Path,
    kind_ids: Sequence[str],
    corpus: Path = FIXTURES,
    on_top: dict[str, dict[str, str]] | None = None,
) -> RedteamWorld:
    """The corpus' sessions of `kind_ids` in a fresh HOME, repositories rebuilt (with `on_top[kind]`'s files
    committed on top of the recorded commit, when given), skills imported, ingested."""
    labels = read_labels(corpus)
    unknown = sorted(set(kind_ids) - set(labels["kinds"]))
    if unknown:
        raise ValueError(
            f"the red-team corpus has no kind {', '.join(unknown)} (it has {', '.join(labels['kinds'])})"
        )
    kinds = [kind(k) for k in kind_ids]
    w = RedteamWorld(root, server, claude, kinds)
    for kind_id, files in (on_top or {}).items():
        commit_on_top(w.repos[kind_id], files)
    for k in kinds:
        install_skill(w.home, k)
    keep = {s["session_id"] for s in labels["sessions"] if s["kind"] in kind_ids}
    projects = corpus / "claude" / "projects"
    for src in sorted(projects.rglob("*.jsonl")):
        if src.stem not in keep:
            continue
        text = src.read_text(encoding="utf-8")
        text = text.replace(labels["source_root"], f"{root / 'src'}/").replace(labels["home"], str(w.home))
        dest = w.home / ".claude" / "projects" / src.relative_to(projects)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    w.skillopt("skills", "import", "--tool", "claude-code")
    w.skillopt("ingest")
    return w
