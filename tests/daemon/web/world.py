"""A user's machine for the dashboard tests: sessions from the real agent CLIs' transcripts, ingested by
`skillopt ingest`; a skill imported from Claude Code's folder with a pending proposal; a training run
written by `skillopt train` against the scripted model server."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit import cli as harness_cli
from testkit.review_home import ORIGINAL

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "daemon" / "ingest" / "sources" / "fixtures" / "real"
TOY_KEY = "sk-dashboard-test-0123456789abcdef"
XSS = '<script>window.__pwned = 1; alert("pwned")</script><img src=x onerror="window.__pwned=2">'
XSS_PROMPT = f"fix the failing test {XSS} please"
CLAUDE_SESSION = "2e3122d3-cd5b-4103-8af6-e833e2c44eb9"
XSS_SESSION = "7f1e0b52-4c1d-4f0a-9d55-0d7c2a9e1b33"

RULE = "- Run the tests before committing."
EDITED = ORIGINAL + RULE + "\n"
SECOND = EDITED + "- Mention the issue number in the subject.\n"


@dataclass
class World:
    root: Path
    home: Path
    skillopt_home: Path
    claude_home: Path
    env: dict[str, str]
    proposal_id: str = ""
    second_id: str = ""
    run_id: str = ""

    def skill_file(self, name: str = "tidy-commits") -> Path:
        return self.claude_home / "skills" / name / "SKILL.md"


def cli(*args: str) -> tuple[int, str, str]:
    """`skillopt ARGS` in this process (`testkit.cli.here`), which must succeed."""
    r = harness_cli.here(*args, check=True)
    return r.returncode, r.stdout, r.stderr


def _copy_transcripts(home: Path) -> None:
    claude = home / ".claude"
    shutil.copytree(FIXTURES / "claude-code" / "projects", claude / "projects")
    shutil.copytree(FIXTURES / "codex" / "sessions", home / ".codex" / "sessions")
    # The same real session with a hostile prompt and its own id: what a pasted web page would leave.
    src = next((claude / "projects").rglob(f"{CLAUDE_SESSION}.jsonl"))
    lines = []
    for line in src.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        text = json.dumps(rec).replace(CLAUDE_SESSION, XSS_SESSION)
        rec = json.loads(text)
        msg = rec.get("message")
        if (
            rec.get("type") == "user"
            and isinstance(msg, dict)
            and msg.get("content") == "fix the failing test"
        ):
            msg["content"] = XSS_PROMPT
        if rec.get("type") == "queue-operation" and rec.get("content") == "fix the failing test":
            rec["content"] = XSS_PROMPT
        lines.append(json.dumps(rec))
    (src.parent / f"{XSS_SESSION}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _train_overrides(base_url_openai: str, url: str) -> list[str]:
    return [
        "agent.backend=openai",
        f"agent.base_url={base_url_openai}",
        "agent.model=house-agent",
        "agent.api_key_env=TOY_KEY",
        "agent.max_retries=1",
        "optimizer.backend=anthropic",
        f"optimizer.base_url={url}",
        "optimizer.model=house-optimizer",
        "optimizer.api_key_env=TOY_KEY",
        "optimizer.max_retries=1",
        "epochs=2",
        "batch_size=6",
        "gate.repeats=1",
        "concurrency=4",
    ]


def evidence() -> dict[str, Any]:
    """What the nightly cycle records for a proposal (see `night.evidence.evidence`)."""
    return {
        "baseline_score": 0.25,
        "candidate_score": 0.75,
        "delta": 0.5,
        "confidence": 0.97,
        "ci_low": 0.18,
        "task_ids": ["t-1", "t-2"],
        "gate": {
            "accepted": True,
            "gate": "paired",
            "reason": "candidate wins 2 of 2 paired tasks",
            "stats": {"confidence": 0.97, "wins": 2, "losses": 0, "n": 2},
        },
        "tokens": 18250,
        "cost_usd": 0.0421,
        "tasks": [
            {
                "task_id": "t-1",
                "family": "fam-commit",
                "prompt": "commit the fix",
                "baseline": [
                    {
                        "hard": 0.0,
                        "soft": 0.2,
                        "status": "checks failed",
                        "checks_passed": 0,
                        "checks_total": 1,
                    }
                ],
                "candidate": [
                    {"hard": 1.0, "soft": 1.0, "status": "ok", "checks_passed": 1, "checks_total": 1}
                ],
            },
            {
                "task_id": "t-2",
                "family": "fam-commit",
                "prompt": "commit <b>the</b> docs",
                "baseline": [
                    {
                        "hard": 0.0,
                        "soft": 0.0,
                        "status": "checks failed",
                        "checks_passed": 0,
                        "checks_total": 1,
                    }
                ],
                "candidate": [
                    {"hard": 1.0, "soft": 1.0, "status": "ok", "checks_passed": 1, "checks_total": 1}
                ],
            },
        ],
        "tool": "claude-code",
        "replays": 4,
    }


@contextlib.contextmanager
def build_world(root: Path) -> Iterator[World]:
    """Everything a user would have after a few days, in `root`; the environment is set while it lasts."""
    from skillopt_lib.envs.toy import HouseStyleEnv
    from skillopt_lib.skill import SkillBundle
    from skillopt_lib.testing.house_style import demo_script
    from skillopt_lib.testing.scripted_server import ScriptedServer

    home = root / "home"
    home.mkdir(parents=True)
    mp = pytest.MonkeyPatch()
    try:
        for var in list(os.environ):
            if var.startswith("SKILLOPT_") or var in ("CODEX_HOME", "COPILOT_HOME", "CURSOR_CONFIG_DIR"):
                mp.delenv(var, raising=False)
        for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
            mp.delenv(var, raising=False)
        mp.setenv("SKILLOPT_HOME", str(root / "skillopt"))
        mp.setenv("HOME", str(home))
        mp.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
        mp.setenv("CODEX_HOME", str(home / ".codex"))
        mp.setenv("TOY_KEY", TOY_KEY)
        mp.setenv("NO_COLOR", "1")
        mp.setenv("SKILLOPT_NO_DESKTOP_NOTIFY", "1")
        w = World(root, home, root / "skillopt", home / ".claude", dict(os.environ))

        _copy_transcripts(home)
        cli("ingest", "--quiet", "--tool", "claude-code", "--tool", "codex")
        cli("tasks", "mine", "--include-automation")

        skill = w.skill_file()
        skill.parent.mkdir(parents=True)
        skill.write_text(ORIGINAL, encoding="utf-8")
        cli("skills", "import", "--tool", "claude-code")

        from skillopt_daemon.core.store import open_db
        from skillopt_daemon.registry import Registry

        db = open_db()
        reg = Registry(db, actor="test")
        v = reg.propose(
            "tidy-commits",
            SkillBundle.from_text(EDITED),
            evidence(),
            origin="trained",
            note="night 20261130",
        )
        w.proposal_id = v.id
        w.second_id = reg.propose("tidy-commits", SkillBundle.from_text(SECOND), {"delta": 0.1}).id
        db.conn.close()

        env = HouseStyleEnv()
        with ScriptedServer(demo_script(env), expected_key=TOY_KEY) as server:
            sets: list[str] = []
            for item in _train_overrides(server.base_url_openai, server.url):
                sets += ["--set", item]
            cli("train", "--env", "house-style", *sets, "--json")
        from skillopt_daemon.core import paths

        runs = sorted(p.name for p in paths.runs_dir().iterdir() if p.name.startswith("train-"))
        w.run_id = runs[-1]
        yield w
    finally:
        mp.undo()
