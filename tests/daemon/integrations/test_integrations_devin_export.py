"""Approved skills as Devin Knowledge and Playbook request bodies."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from skillopt_daemon.integrations import devin_export
from skillopt_lib.skill import SkillBundle, SkillDoc
from testkit import cli as harness_cli
from testkit.install_helpers import Env, approve_skill, propose_skill


def test_knowledge_and_playbook_bodies_carry_the_skill() -> None:
    bundle = SkillBundle.from_doc(
        SkillDoc.new("py-tests", "Use when running Python tests.", "# Tests\nRun pytest -q.\n")
    ).with_file("references/flags.md", "-x stops at the first failure\n")
    k = devin_export.knowledge_entry(bundle, label="py-tests@v3", pinned_repo="acme/api").to_json()
    assert k["name"] == "py-tests"
    assert k["trigger_description"] == "Use when running Python tests."
    assert k["pinned_repo"] == "acme/api"
    assert "Run pytest -q." in k["body"] and "## references/flags.md" in k["body"]
    assert "---" not in k["body"].splitlines()[0], "frontmatter is not part of the content"
    p = devin_export.playbook(bundle).to_json()
    assert p["title"] == "py-tests" and p["macro"] == "!py-tests"
    assert p["body"].startswith("Purpose: Use when running Python tests.")


def test_export_writes_only_approved_versions(env: Env, cli) -> None:
    approve_skill(
        "py-tests", "Use when running Python tests.", "Run pytest -q.\n", f"devin:project:{env.project}"
    )
    propose_skill("lint", "Use when linting.", "run ruff\n")
    out = env.project / "export"
    res = cli("devin-export", "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    done = json.loads(res.stdout)
    assert [d["skill"] for d in done] == ["py-tests"]
    knowledge = json.loads((out / "knowledge" / "py-tests.json").read_text())
    assert set(knowledge) == {"name", "body", "trigger_description"}
    playbook = json.loads((out / "playbooks" / "py-tests.json").read_text())
    assert set(playbook) == {"title", "body", "macro"}
    res = cli("devin-export", "lint", "--out", str(out))
    assert res.returncode == 3 and "no approved version" in res.stderr


def test_the_printed_send_commands_post_knowledge_and_playbooks_with_the_users_token(
    env: Env, tmp_path: Path
) -> None:
    """What `devin-export` tells the user to run works as printed: the token variable expands, both the
    Knowledge entries and the Playbooks are sent, and no command is split across lines."""
    approve_skill(
        "py-tests", "Use when running Python tests.", "Run pytest -q.\n", f"devin:project:{env.project}"
    )
    out = tmp_path / "a folder with a rather long name so the commands exceed eighty columns" / "export"
    res = harness_cli.run("devin-export", "--out", str(out))
    assert res.returncode == 0, res.stderr
    commands = [line for line in res.stdout.splitlines() if "curl" in line]
    assert len(commands) == 2, res.stdout
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "curl.log"
    fake = bin_dir / "curl"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" "--" >> "{log}"\n')
    fake.chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    for command in commands:
        run = subprocess.run(
            ["bash", "-c", command], env={**os.environ, "PATH": path, "DEVIN_API_KEY": "apk_user_123"}
        )
        assert run.returncode == 0, command
    calls = [c.strip("\n").split("\n") for c in log.read_text().split("--\n") if c.strip()]
    urls = sorted(next(a for a in call if a.startswith("https://")) for call in calls)
    assert urls == ["https://api.devin.ai/v1/knowledge", "https://api.devin.ai/v1/playbooks"]
    for call in calls:
        assert "Authorization: Bearer apk_user_123" in call
        assert any(a.startswith("@") and a.endswith("py-tests.json") for a in call)
