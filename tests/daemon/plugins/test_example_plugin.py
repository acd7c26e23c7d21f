"""The example plugin package (`examples/skillopt-toy-agent`), installed the way pip would leave it: its
package on the path and a `.dist-info` folder holding its `skillopt` entry point, found by the real
entry-point machinery of a fresh `skillopt` process. Its toy agent tool gets its sessions ingested and an
approved skill written to its skills folder, with no change to skillopt."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testkit import cli

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "skillopt-toy-agent"
SESSION = [
    {"session": "toy-1", "cwd": "/home/dev/shop", "ts": "2026-11-02T09:00:00Z"},
    {"id": "m1", "role": "user", "text": "run the shop's tests", "ts": "2026-11-02T09:00:01Z"},
    {"id": "m2", "role": "assistant", "text": "Running them.", "ts": "2026-11-02T09:00:02Z"},
    {"id": "c1", "call": "make test", "exit": 2, "output": "1 failed", "ts": "2026-11-02T09:00:03Z"},
    {"id": "m3", "role": "user", "text": "no, use make check", "ts": "2026-11-02T09:00:04Z"},
]


def _installed(tmp_path: Path) -> Path:
    """A site folder with the example's distribution metadata, as `pip install` writes it."""
    site = tmp_path / "site"
    info = site / "skillopt_toy_agent-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: skillopt-toy-agent\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[skillopt]\ntoy = skillopt_toy\n")
    return site


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "TOY_AGENT"))}
    env.update(
        SKILLOPT_HOME=str(tmp_path / "skillopt"),
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
        SKILLOPT_NIGHT__ENABLED="false",
        PYTHONPATH=os.pathsep.join([str(EXAMPLE), str(_installed(tmp_path))]),
    )
    return env


def _skillopt(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return cli.run(*args, env=env, timeout=120, cwd=ROOT)


def _json(env: dict[str, str], *args: str) -> Any:
    res = _skillopt(env, *args, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.timeout(180)
def test_example_plugin_adds_a_tool_whose_sessions_are_ingested_and_skills_installed(tmp_path: Path) -> None:
    env = _env(tmp_path)
    home = Path(env["HOME"])

    listed = _json(env, "plugins")
    (toy,) = [p for p in listed["plugins"] if p["name"] == "toy"]
    assert toy["builtin"] is False and toy["version"] == "0.1.0"
    assert toy["provides"] == {"agent tools": ["toy-agent"]}
    assert listed["problems"] == []
    builtin_tools = {
        t for p in listed["plugins"] if p["builtin"] for t in p["provides"].get("agent tools", [])
    }
    assert {"claude-code", "gemini"} <= builtin_tools  # the built-ins come through the same hook

    sessions = home / ".toy-agent" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "toy-1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in SESSION))
    res = _skillopt(env, "ingest", "--tool", "toy-agent", "--quiet")
    assert res.returncode == 0, res.stderr
    (session,) = _json(env, "sessions", "list", "--tool", "toy-agent")
    assert session["session_id"] == "toy-1"
    assert session["project_path"] == "/home/dev/shop"
    assert session["first_prompt"] == "run the shop's tests"
    detail = _json(env, "sessions", "show", "toy-1")
    calls = [c for t in detail["turns"] for c in t["tool_calls"]] + detail["unattached_tool_calls"]
    assert [(c["input_summary"], c["exit_code"]) for c in calls] == [("make test", 2)]

    skill = tmp_path / "shop-tests" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text("---\nname: shop-tests\ndescription: how to test the shop\n---\nUse `make check`.\n")
    proposal = _json(env, "propose", "shop-tests", str(skill))
    approved = _json(env, "approve", proposal["id"], "--target", "toy-agent:user")
    assert approved["installs"], approved
    installed = home / ".toy-agent" / "skills" / "shop-tests" / "SKILL.md"
    assert installed.read_text() == skill.read_text()

    checks = _json(env, "doctor")["checks"]
    assert any(c["group"] == "toy-agent" and c["name"] == "sessions folder" for c in checks)
