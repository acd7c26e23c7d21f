"""The shipped integration files: well-formed, self-contained, and the hook script safe to run anywhere."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import yaml

from skillopt_daemon import integrations
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import SkillBundle, SkillDoc
from testkit.fixtures import require

ROOT = integrations.integrations_root()
PLUGIN = ROOT / "claude-code"
REPO = Path(__file__).resolve().parents[3]


def test_every_tool_ships_a_valid_skillopt_skill() -> None:
    for tool in AgentTool:
        folder = integrations.integration_dir(tool) / "skills" / "skillopt"
        bundle = SkillBundle.from_path(folder)
        assert bundle.validate(folder_name="skillopt") == [], tool
        assert "skillopt approve" in bundle.doc.body


def test_openclaw_skill_keeps_every_frontmatter_key_on_one_line() -> None:
    doc = SkillDoc.parse((ROOT / "openclaw" / "skills" / "skillopt" / "SKILL.md").read_text())
    for line in doc.frontmatter_text.splitlines():
        assert line and not line[0].isspace(), line
    assert doc.frontmatter["metadata"] == {"openclaw": {"requires": {"bins": ["skillopt"]}}}


def test_plugin_manifest_and_marketplaces_point_at_the_plugin() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "skillopt"
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    for market_file, base in (
        (REPO / ".claude-plugin" / "marketplace.json", REPO),
        (PLUGIN / ".claude-plugin" / "marketplace.json", PLUGIN),
    ):
        market = json.loads(market_file.read_text())
        assert market["owner"]["name"]
        (entry,) = market["plugins"]
        assert entry["name"] == "skillopt"
        assert entry["version"] == manifest["version"]
        assert (base / entry["source"] / ".claude-plugin" / "plugin.json").resolve() == (
            PLUGIN / ".claude-plugin" / "plugin.json"
        ).resolve()


def test_plugin_references_only_files_inside_itself() -> None:
    """An installed plugin is copied into a cache: anything it names outside its folder would break."""
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "SessionEnd"}
    for groups in hooks.values():
        for group in groups:
            for hook in group["hooks"]:
                refs = re.findall(r"\$\{CLAUDE_PLUGIN_ROOT\}/([^\"' ]+)", hook["command"])
                assert refs, hook["command"]
                for ref in refs:
                    assert (PLUGIN / ref).is_file(), ref
                assert hook["timeout"] <= 15
    for text_file in PLUGIN.rglob("*"):
        if text_file.is_file() and text_file.suffix in (".md", ".json", ".sh"):
            text = text_file.read_text()
            assert "../" not in text, text_file
            assert not re.search(r"(?<![\w$}])/(home|root|work|Users)/", text), text_file


def test_commands_have_descriptions_and_limit_their_tools() -> None:
    names = sorted(p.stem for p in (PLUGIN / "commands").glob("*.md"))
    assert names == [
        "skillopt-approve",
        "skillopt-diff",
        "skillopt-rollback",
        "skillopt-sleep",
        "skillopt-status",
    ]
    for name in names:
        doc = SkillDoc.parse((PLUGIN / "commands" / f"{name}.md").read_text())
        fm = doc.frontmatter
        assert fm["description"], name
        assert all(t.startswith("Bash(skillopt ") for t in fm["allowed-tools"].split(", ")), name
    # Decisions are only taken when the user types the command, never on the model's initiative.
    for name in ("skillopt-approve", "skillopt-rollback", "skillopt-sleep"):
        fm = SkillDoc.parse((PLUGIN / "commands" / f"{name}.md").read_text()).frontmatter
        assert fm["disable-model-invocation"] is True


def test_example_configs_are_valid_json_naming_the_mcp_command() -> None:
    for rel in ("copilot/mcp-config.json", "devin/mcp-config.json", "cursor/mcp.json"):
        server = json.loads((ROOT / rel).read_text())["mcpServers"]["skillopt"]
        assert server["command"] == "skillopt" and server["args"] == ["mcp"]
    devin_hooks = json.loads((ROOT / "devin" / "hooks.v1.json").read_text())
    (group,) = devin_hooks["SessionEnd"]
    assert "notify session-end --tool devin" in group["hooks"][0]["command"]
    rule = SkillDoc.parse((ROOT / "cursor" / "rules" / "skillopt.mdc").read_text())
    assert yaml.safe_load(rule.frontmatter_text)["alwaysApply"] is False


# -- the hook script -------------------------------------------------------------------------------------

SCRIPT = PLUGIN / "scripts" / "skillopt-notify.sh"


def _run_hook(
    env: dict[str, str], event: str = "session-end", stdin: str = "{}"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(SCRIPT), event], input=stdin, capture_output=True, text=True, env=env, timeout=30
    )


def test_hook_without_skillopt_exits_zero_fast_and_says_why(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    started = time.monotonic()
    proc = _run_hook(env)
    assert proc.returncode == 0
    assert proc.stdout == ""
    assert "skillopt" in proc.stderr and "not found" in proc.stderr
    assert time.monotonic() - started < 5


def test_hook_passes_event_tool_and_stdin_to_skillopt(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "skillopt"
    fake.parent.mkdir()
    record = tmp_path / "record"
    fake.write_text(f'#!/bin/sh\necho "$@" > {record}\ncat >> {record}\necho noisy stdout\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "HOME": str(tmp_path), "SKILLOPT_HOOK_FOREGROUND": "1"}
    proc = _run_hook(env, "session-start", '{"session_id": "abc"}')
    assert proc.returncode == 0
    assert proc.stdout == "", "a SessionStart hook's stdout would reach the model"
    args, stdin = record.read_text().splitlines()
    assert args == "notify session-start --tool claude-code"
    assert stdin == '{"session_id": "abc"}'


def test_hook_survives_a_failing_skillopt(tmp_path: Path) -> None:
    fake = tmp_path / "skillopt"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SKILLOPT_BIN": str(fake),
        "SKILLOPT_HOOK_FOREGROUND": "1",
    }
    proc = _run_hook(env)
    assert proc.returncode == 0
    assert "failed" in proc.stderr


def test_hook_returns_before_a_slow_skillopt_finishes(tmp_path: Path) -> None:
    """Claude Code may not wait for a SessionEnd hook: the note must be written even after it returned."""
    fake = tmp_path / "skillopt"
    done = tmp_path / "done"
    fake.write_text(f"#!/bin/sh\nsleep 2\ncat > {done}\n")
    fake.chmod(0o755)
    started = time.monotonic()
    proc = _run_hook(
        {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SKILLOPT_BIN": str(fake)}, stdin='{"a": 1}'
    )
    assert proc.returncode == 0
    assert time.monotonic() - started < 1.5
    assert not done.exists()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (done.exists() and done.read_text()):
        time.sleep(0.05)
    assert done.read_text().strip() == '{"a": 1}'


def test_hook_with_real_skillopt_drops_a_note(tmp_path: Path) -> None:
    bindir = Path(sys.executable).parent
    require(
        (bindir / "skillopt").exists(), "the skillopt console script is not installed next to this Python"
    )
    so_home = tmp_path / "so"
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "SKILLOPT_HOME": str(so_home)}
    payload = {"session_id": "s-1", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "reason": "other"}
    proc = _run_hook(env, "session-end", json.dumps(payload))
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list((so_home / "data" / "inbox").glob("*.json")):
        time.sleep(0.1)
    notes = list((so_home / "data" / "inbox").glob("*.json"))
    assert len(notes) == 1
    note = json.loads(notes[0].read_text())
    assert note["event"] == "session-end" and note["tool"] == "claude-code" and note["session_id"] == "s-1"
    assert os.stat(notes[0]).st_mode & 0o077 == 0


def test_every_skillopt_command_the_files_mention_exists() -> None:
    """Commands and skills tell the agent what to run: a renamed command must not leave them stale."""
    from skillopt_daemon.cli import app

    known = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    texts = [
        p.read_text() for p in ROOT.rglob("*") if p.is_file() and p.suffix in (".md", ".mdc", ".snippet")
    ]
    mentioned = {m for t in texts for m in re.findall(r"`skillopt ([a-z][a-z-]+)", t)}
    mentioned |= {m for t in texts for m in re.findall(r"Bash\(skillopt ([a-z][a-z-]+)", t)}
    assert mentioned, "the files mention no command at all?"
    assert mentioned <= known, sorted(mentioned - known)
