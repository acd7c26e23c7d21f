"""`skillopt install TOOL` / `uninstall TOOL`: the right files, idempotent, reversible and careful."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml

from skillopt_lib.skill import SkillDoc
from testkit.install_helpers import Env, approve_skill, snapshot

TOOL_HOMES = {
    "claude-code": ".claude",
    "codex": ".codex",
    "copilot": ".copilot",
    "cursor": ".cursor",
    "openclaw": ".openclaw",
}

USER_FILES = {
    "claude-code": [
        ".claude/skills/skillopt/SKILL.md",
        ".claude/commands/skillopt-approve.md",
        ".claude/commands/skillopt-diff.md",
        ".claude/commands/skillopt-rollback.md",
        ".claude/commands/skillopt-sleep.md",
        ".claude/commands/skillopt-status.md",
        ".claude/settings.json",
    ],
    "codex": [".codex/skills/skillopt/SKILL.md"],
    "copilot": [".copilot/skills/skillopt/SKILL.md", ".copilot/mcp-config.json"],
    "cursor": [".cursor/skills/skillopt/SKILL.md"],
    "openclaw": [".openclaw/skills/skillopt/SKILL.md"],
}
PROJECT_FILES = {
    "claude-code": [
        ".claude/skills/skillopt/SKILL.md",
        ".claude/commands/skillopt-approve.md",
        ".claude/commands/skillopt-diff.md",
        ".claude/commands/skillopt-rollback.md",
        ".claude/commands/skillopt-sleep.md",
        ".claude/commands/skillopt-status.md",
        ".claude/settings.local.json",
    ],
    "codex": [".codex/skills/skillopt/SKILL.md"],
    "copilot": [".github/skills/skillopt/SKILL.md"],
    "cursor": [".cursor/skills/skillopt/SKILL.md"],
    "devin": [".devin/skills/skillopt/SKILL.md", ".devin/rules/skillopt.md", ".devin/hooks.v1.json"],
    "openclaw": ["skills/skillopt/SKILL.md"],
}


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("tool", sorted(USER_FILES))
def test_user_install_places_exactly_the_tools_files_and_uninstall_restores_the_home(
    env: Env, cli, tool: str
) -> None:
    (env.home / TOOL_HOMES[tool]).mkdir()
    before = snapshot(env.home)
    dry = cli("install", tool, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert snapshot(env.home) == before, "a dry run must not touch anything"
    planned = json.loads(dry.stdout)
    assert sorted(str(Path(f["path"]).relative_to(env.home)) for f in planned["files"]) == sorted(
        USER_FILES[tool]
    )
    assert {f["op"] for f in planned["files"]} == {"create"}

    first = cli("install", tool)
    assert first.returncode == 0, first.stderr
    assert _files(env.home) == sorted(USER_FILES[tool])
    again = json.loads(cli("install", tool, "--json").stdout)
    assert {f["op"] for f in again["files"]} == {"unchanged"}, "install must be idempotent"

    dry_un = json.loads(cli("uninstall", tool, "--dry-run", "--json").stdout)
    assert sorted(str(Path(f["path"]).relative_to(env.home)) for f in dry_un["files"]) == sorted(
        USER_FILES[tool]
    )
    assert _files(env.home) == sorted(USER_FILES[tool])
    gone = cli("uninstall", tool)
    assert gone.returncode == 0, gone.stderr
    assert snapshot(env.home) == before


@pytest.mark.parametrize("tool", sorted(PROJECT_FILES))
def test_project_install_and_uninstall(env: Env, cli, tool: str) -> None:
    (env.project / "README.md").write_text("hello\n")
    before = snapshot(env.project)
    res = cli("install", tool, "--scope", "project", "--project", str(env.project))
    assert res.returncode == 0, res.stderr
    assert _files(env.project) == sorted(PROJECT_FILES[tool] + ["README.md"])
    assert cli("uninstall", tool, "--scope", "project", "--project", str(env.project)).returncode == 0
    assert snapshot(env.project) == before


def test_claude_hooks_merge_into_the_users_settings_and_only_ours_leave(env: Env, cli) -> None:
    settings = env.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {
        "model": "opus",
        "hooks": {"SessionEnd": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo bye"}]}]},
    }
    settings.write_text(json.dumps(mine, indent=4))
    os.chmod(settings, 0o600)
    assert cli("install", "claude-code").returncode == 0
    merged = json.loads(settings.read_text())
    assert merged["model"] == "opus"
    end_cmds = [h["command"] for g in merged["hooks"]["SessionEnd"] for h in g["hooks"]]
    assert end_cmds[0] == "echo bye" and "notify session-end --tool claude-code" in end_cmds[1]
    assert (
        "notify session-start --tool claude-code" in merged["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    )
    assert os.stat(settings).st_mode & 0o777 == 0o600, "the settings file keeps its permissions"
    assert cli("install", "claude-code").returncode == 0
    assert len(json.loads(settings.read_text())["hooks"]["SessionEnd"]) == 2, "no duplicate hook on reinstall"
    assert cli("uninstall", "claude-code").returncode == 0
    assert json.loads(settings.read_text()) == mine


def test_hook_command_runs_skillopt_and_never_fails(env: Env, cli, tmp_path: Path) -> None:
    import subprocess

    (env.home / ".claude").mkdir()
    assert cli("install", "claude-code").returncode == 0
    settings = json.loads((env.home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    run_env = {"PATH": "/usr/bin:/bin", "HOME": str(env.home), "SKILLOPT_HOME": str(env.skillopt_home)}
    proc = subprocess.run(
        command,
        shell=True,
        input='{"session_id": "x1"}',
        capture_output=True,
        text=True,
        env=run_env,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout == ""
    inbox = env.skillopt_home / "data" / "inbox"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list(inbox.glob("*.json")):
        time.sleep(0.1)
    notes = list(inbox.glob("*.json"))
    assert [json.loads(n.read_text())["session_id"] for n in notes] == ["x1"]
    broken = command.replace(
        str(Path(command.split("b=")[1].split(";")[0].strip("'\"")).parent), "/nonexistent"
    )
    proc = subprocess.run(
        broken, shell=True, input="{}", capture_output=True, text=True, env=run_env, timeout=60
    )
    assert proc.returncode == 0


def test_codex_pointer_in_agents_md_keeps_the_users_text(env: Env, cli) -> None:
    agents = env.project / "AGENTS.md"
    agents.write_text("# Rules\n\nRun make test.\n")
    res = cli("install", "codex", "--scope", "project", "--project", str(env.project), "--instructions")
    assert res.returncode == 0, res.stderr
    text = agents.read_text()
    assert text.startswith("# Rules\n\nRun make test.\n") and "skillopt status" in text
    assert cli("uninstall", "codex", "--project", str(env.project)).returncode == 0
    assert agents.read_text() == "# Rules\n\nRun make test.\n"


def test_tool_not_installed_is_refused_with_a_hint(env: Env, cli) -> None:
    res = cli("install", "cursor")
    assert res.returncode == 8
    assert "does not seem to be installed" in res.stderr and "--force" in res.stderr
    assert not (env.home / ".cursor").exists()
    assert cli("install", "cursor", "--force").returncode == 0
    assert (env.home / ".cursor" / "skills" / "skillopt" / "SKILL.md").is_file()


def test_devin_has_no_user_scope(env: Env, cli) -> None:
    res = cli("install", "devin", "--scope", "user")
    assert res.returncode != 0 and "per project" in res.stderr


def test_read_only_target_is_refused_and_left_untouched(env: Env, cli) -> None:
    claude = env.home / ".claude"
    claude.mkdir()
    os.chmod(claude, 0o555)
    try:
        res = cli("install", "claude-code")
        assert res.returncode == 11
        assert "read-only" in res.stderr
        assert list(claude.iterdir()) == []
    finally:
        os.chmod(claude, 0o755)


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a folder's owner needs root")
def test_folder_owned_by_another_user_is_refused(env: Env, cli) -> None:
    cursor = env.project / ".cursor"
    cursor.mkdir()
    os.chown(cursor, 4321, 4321)
    res = cli("install", "cursor", "--project", str(env.project))
    assert res.returncode == 11
    assert "belongs to another user" in res.stderr
    assert list(cursor.iterdir()) == []


def test_folder_owned_by_another_user_is_refused_without_root(env: Env, cli, monkeypatch) -> None:
    """Same check for a non-root run: pretend to be another user than the folder's owner."""
    (env.home / ".openclaw").mkdir()
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(env.home).st_uid + 1)
    res = cli("install", "openclaw")
    assert res.returncode == 11 and "belongs to another user" in res.stderr
    assert list((env.home / ".openclaw").iterdir()) == []


def test_symlinked_skill_folder_leading_outside_is_refused(env: Env, cli, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    skills = env.home / ".claude" / "skills"
    skills.mkdir(parents=True)
    (skills / "skillopt").symlink_to(outside)
    res = cli("install", "claude-code")
    assert res.returncode == 11
    assert "symlink" in res.stderr and "outside" in res.stderr
    assert list(outside.iterdir()) == []
    assert not (env.home / ".claude" / "settings.json").exists(), (
        "nothing is written when one file is refused"
    )


def test_symlink_inside_the_tools_folder_is_followed(env: Env, cli) -> None:
    real = env.home / ".claude" / "my-skills"
    real.mkdir(parents=True)
    (env.home / ".claude" / "skills").symlink_to(real)
    assert cli("install", "claude-code").returncode == 0
    assert (real / "skillopt" / "SKILL.md").is_file()


def test_users_own_file_is_never_overwritten_without_force(env: Env, cli) -> None:
    cmd = env.home / ".claude" / "commands" / "skillopt-status.md"
    cmd.parent.mkdir(parents=True)
    cmd.write_text("my own status command\n")
    res = cli("install", "claude-code")
    assert res.returncode == 4
    assert "was not written by skillopt" in res.stderr
    assert cmd.read_text() == "my own status command\n"
    assert not (env.home / ".claude" / "skills").exists(), "a refusal leaves everything as it was"
    forced = cli("install", "claude-code", "--force")
    assert forced.returncode == 0, forced.stderr
    assert cmd.read_text() != "my own status command\n"
    assert cli("uninstall", "claude-code").returncode == 0
    assert cmd.read_text() == "my own status command\n", "uninstall restores what --force replaced"


def test_uninstall_keeps_a_file_the_user_edited(env: Env, cli) -> None:
    (env.home / ".cursor").mkdir()
    assert cli("install", "cursor", "--instructions").returncode == 0
    rule = env.home / ".cursor" / "rules" / "skillopt.mdc"
    rule.write_text(rule.read_text() + "\nAlso: my own note.\n")
    res = cli("uninstall", "cursor")
    assert res.returncode == 0
    assert "you edited it" in res.stderr
    assert rule.is_file() and "my own note" in rule.read_text()
    assert not (env.home / ".cursor" / "skills" / "skillopt").exists()
    # Reinstalling does not clobber the edit either.
    assert cli("install", "cursor", "--instructions").returncode == 4


def test_uninstall_force_removes_an_edited_section(env: Env, cli) -> None:
    agents = env.home / ".codex" / "AGENTS.md"
    agents.parent.mkdir()
    agents.write_text("mine\n")
    assert cli("install", "codex", "--instructions").returncode == 0
    agents.write_text(agents.read_text().replace("skillopt status", "skillopt status (edited)"))
    kept = cli("uninstall", "codex")
    assert "skillopt section" in kept.stdout and "skillopt:begin" in agents.read_text()
    assert cli("install", "codex", "--instructions").returncode == 4
    assert cli("install", "codex", "--instructions", "--force").returncode == 0
    assert cli("uninstall", "codex", "--force").returncode == 0
    assert agents.read_text() == "mine\n"


def test_uninstall_of_something_never_installed(env: Env, cli) -> None:
    res = cli("uninstall", "codex")
    assert res.returncode == 3 and "not installed" in res.stderr


# -- approved skills go where each tool reads them ------------------------------------------------------

SKILL_WHERE = {
    "claude-code": [".claude/skills/py-tests/SKILL.md"],
    "codex": [".codex/skills/py-tests/SKILL.md"],
    "copilot": [".copilot/skills/py-tests/SKILL.md"],
    "cursor": [".cursor/skills/py-tests/SKILL.md"],
    "openclaw": [".openclaw/skills/py-tests/SKILL.md"],
}


@pytest.mark.parametrize("tool", sorted(SKILL_WHERE))
def test_install_puts_approved_skills_where_the_tool_reads_them(env: Env, cli, tool: str) -> None:
    elsewhere = env.project / "elsewhere"
    elsewhere.mkdir()
    approve_skill(
        "py-tests",
        "Use when running Python tests.",
        "# Tests\nRun pytest -q.\n",
        f"claude-code:project:{elsewhere}",
    )
    (env.home / TOOL_HOMES[tool]).mkdir()
    before = snapshot(env.home)
    res = cli("install", tool)
    assert res.returncode == 0, res.stderr
    for rel in SKILL_WHERE[tool]:
        doc = SkillDoc.parse((env.home / rel).read_text())
        assert doc.name == "py-tests" and "Run pytest -q." in doc.body
    assert cli("uninstall", tool).returncode == 0
    assert snapshot(env.home) == before


def test_later_approvals_go_to_installed_tools(env: Env, cli) -> None:
    """After `skillopt install codex`, approving a new version installs it for Codex too."""
    from skillopt_daemon.registry import open_registry
    from testkit.install_helpers import propose_skill

    (env.home / ".codex").mkdir()
    (env.home / ".claude").mkdir()
    approve_skill("py-tests", "Use when running Python tests.", "v1\n", "claude-code:user")
    assert cli("install", "codex").returncode == 0
    v2 = propose_skill("py-tests", "Use when running Python tests.", "v2: use pytest -x\n")
    reg, _ = open_registry()
    try:
        reg.approve(v2)
    finally:
        reg.db.conn.close()
    for rel in (".claude/skills", ".codex/skills"):
        assert "v2: use pytest -x" in (env.home / rel / "py-tests" / "SKILL.md").read_text(), rel
    assert not (env.home / ".agents").exists(), "Codex reads both folders: one copy, or it lists it twice"


def _approve(ref: str) -> None:
    from skillopt_daemon.registry import open_registry

    reg, _ = open_registry()
    try:
        reg.approve(ref)
    finally:
        reg.db.conn.close()


def test_codex_double_installs_are_migrated_to_one_folder(env: Env, cli) -> None:
    """What an older skillopt left: its skill and an approved one in both folders Codex reads."""
    from testkit.install_helpers import propose_skill

    (env.home / ".codex").mkdir()
    (env.home / ".claude").mkdir()
    approve_skill("py-tests", "Use when running Python tests.", "v1\n", "claude-code:user")
    assert cli("install", "codex").returncode == 0
    old = env.home / ".agents" / "skills"
    for name in ("skillopt", "py-tests"):
        (old / name).mkdir(parents=True)
        (old / name / "SKILL.md").write_bytes(
            (env.home / ".codex" / "skills" / name / "SKILL.md").read_bytes()
        )
    _recorded_in_both_folders(env)
    (old / "mine").mkdir()
    (old / "mine" / "SKILL.md").write_text("---\nname: mine\ndescription: the user's own.\n---\n\nKeep me.\n")

    assert cli("install", "codex").returncode == 0
    _approve(propose_skill("py-tests", "Use when running Python tests.", "v2\n"))
    assert sorted(p.name for p in old.iterdir()) == ["mine"], "skillopt's copies left the other folder"
    assert "v2" in (env.home / ".codex" / "skills" / "py-tests" / "SKILL.md").read_text()


def _recorded_in_both_folders(env: Env) -> None:
    """Make the registry and the manifest say what an older skillopt recorded: both folders."""
    import hashlib

    from skillopt_daemon.core.store import open_db
    from skillopt_daemon.integrations import manifest_path
    from skillopt_daemon.registry.installers import InstallTarget
    from skillopt_lib.agents import AgentTool

    target = InstallTarget(AgentTool.CODEX, "user")
    path = manifest_path(target)
    data = json.loads(path.read_text())
    extra = env.home / ".agents" / "skills" / "skillopt" / "SKILL.md"
    data["placements"].append(
        {
            "kind": "file",
            "path": str(extra),
            "hash": hashlib.sha256(extra.read_bytes()).hexdigest(),
            "backup": None,
            "created": True,
        }
    )
    path.write_text(json.dumps(data))
    db = open_db()
    row = next(db.query("SELECT id, installed FROM targets WHERE tool = 'codex'"))
    installed = json.loads(row["installed"])
    for p, sha in list(installed.items()):
        installed[p.replace("/.codex/skills/", "/.agents/skills/")] = sha
    with db.conn:
        db.table("targets").update(row["id"], {"installed": json.dumps(installed)})
    db.conn.close()


def test_uninstall_codex_after_an_approval_leaves_nothing_behind(env: Env, cli) -> None:
    from testkit.install_helpers import propose_skill

    (env.home / ".codex").mkdir()
    (env.home / ".claude").mkdir()
    approve_skill("py-tests", "Use when running Python tests.", "v1\n", "claude-code:user")
    before = snapshot(env.home / ".codex")
    assert cli("install", "codex").returncode == 0
    _approve(propose_skill("py-tests", "Use when running Python tests.", "v2\n"))
    assert cli("uninstall", "codex").returncode == 0
    assert snapshot(env.home / ".codex") == before


def test_uninstall_says_restore_for_the_users_own_skill_it_puts_back(env: Env, cli) -> None:
    from testkit.install_helpers import propose_skill

    mine = env.home / ".codex" / "skills" / "py-tests" / "SKILL.md"
    mine.parent.mkdir(parents=True)
    original = "---\nname: py-tests\ndescription: Use when running Python tests.\n---\n\nmine\n"
    mine.write_text(original)
    assert cli("skills", "import", "--tool", "codex").returncode == 0
    assert cli("install", "codex").returncode == 0
    _approve(propose_skill("py-tests", "Use when running Python tests.", "v2\n"))
    assert "v2" in mine.read_text()
    gone = json.loads(cli("uninstall", "codex", "--json").stdout)
    ops = {f["path"]: f["op"] for f in gone["files"]}
    assert ops[str(mine)] == "restore"
    assert mine.read_text() == original


def test_install_dry_run_says_what_the_real_run_does(env: Env, cli) -> None:
    (env.home / ".codex").mkdir()
    (env.home / ".claude").mkdir()
    approve_skill("py-tests", "Use when running Python tests.", "v1\n", "claude-code:user")
    dry = json.loads(cli("install", "codex", "--dry-run", "--json").stdout)
    real = json.loads(cli("install", "codex", "--json").stdout)
    assert [(f["op"], f["path"]) for f in dry["files"]] == [(f["op"], f["path"]) for f in real["files"]]


def test_uninstall_gives_back_the_users_settings_byte_for_byte(env: Env, cli) -> None:
    settings = env.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = '{\n    "model": "opus",\n    "permissions": {"allow": ["Bash(ls)"]}\n}\n'
    settings.write_text(theirs)
    assert cli("install", "claude-code").returncode == 0
    assert '\n    "model": "opus"' in settings.read_text(), "their indentation is kept"
    assert cli("uninstall", "claude-code").returncode == 0
    assert settings.read_text() == theirs


def test_devin_hook_joins_the_projects_own_hooks(env: Env, cli) -> None:
    hooks_file = env.project / ".devin" / "hooks.v1.json"
    hooks_file.parent.mkdir()
    theirs = {
        "SessionEnd": [{"matcher": "", "hooks": [{"type": "command", "command": "make tidy"}]}],
        "PreToolUse": [{"matcher": "^exec$", "hooks": [{"type": "command", "command": "audit"}]}],
    }
    hooks_file.write_text(json.dumps(theirs))
    assert cli("install", "devin", "--project", str(env.project)).returncode == 0
    merged = json.loads(hooks_file.read_text())
    assert merged["PreToolUse"] == theirs["PreToolUse"]
    commands = [h["command"] for g in merged["SessionEnd"] for h in g["hooks"]]
    assert commands[0] == "make tidy" and "notify session-end --tool devin" in commands[1]
    assert cli("uninstall", "devin", "--project", str(env.project)).returncode == 0
    assert json.loads(hooks_file.read_text()) == theirs


def test_settings_file_that_is_not_json_is_refused(env: Env, cli) -> None:
    settings = env.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    res = cli("install", "claude-code")
    assert res.returncode == 4 and "not valid JSON" in res.stderr
    assert settings.read_text() == "{ not json"
    assert not (env.home / ".claude" / "skills").exists()


def test_openclaw_gets_single_line_frontmatter(env: Env, cli) -> None:
    from skillopt_daemon.registry import open_registry
    from skillopt_lib.skill import SkillBundle

    text = (
        "---\nname: deploy\ndescription: >-\n  Use when deploying:\n  checks first.\nmetadata:\n"
        "  openclaw:\n    requires:\n      bins: [kubectl]\n---\n\n# Deploy\n"
    )
    reg, _ = open_registry()
    try:
        v = reg.propose("deploy", SkillBundle.from_text(text))
        reg.approve(v.id, targets=["claude-code:user"])
    finally:
        reg.db.conn.close()
    (env.home / ".openclaw").mkdir()
    assert cli("install", "openclaw").returncode == 0
    installed = SkillDoc.parse((env.home / ".openclaw" / "skills" / "deploy" / "SKILL.md").read_text())
    lines = installed.frontmatter_text.splitlines()
    assert all(line and not line[0].isspace() for line in lines), lines
    assert installed.frontmatter == yaml.safe_load(SkillDoc.parse(text).frontmatter_text)
    assert installed.body == "\n# Deploy\n"
    # Claude Code, which accepts any YAML, gets the bytes unchanged.
    assert (env.home / ".claude" / "skills" / "deploy" / "SKILL.md").read_text() == text


def test_copilot_instruction_only_project(env: Env, cli) -> None:
    gh = env.project / ".github"
    gh.mkdir()
    (gh / "copilot-instructions.md").write_text("Team rules.\n")
    res = cli("install", "copilot", "--project", str(env.project), "--instructions")
    assert res.returncode == 0, res.stderr
    assert "skillopt" in (gh / "copilot-instructions.md").read_text()
    assert not (gh / "skills").exists()
    approve_skill(
        "py-tests", "Use when running Python tests.", "Run pytest -q.\n", f"copilot:project:{env.project}"
    )
    instr = gh / "instructions" / "py-tests.instructions.md"
    doc = SkillDoc.parse(instr.read_text())
    assert doc.frontmatter == {"applyTo": "**", "description": "Use when running Python tests."}
    assert "Run pytest -q." in doc.body
    assert cli("uninstall", "copilot", "--project", str(env.project)).returncode == 0
    assert (gh / "copilot-instructions.md").read_text() == "Team rules.\n"
    assert not instr.exists()


def test_doctor_reports_each_integration(env: Env, cli) -> None:
    (env.home / ".claude").mkdir()
    assert cli("install", "claude-code").returncode == 0
    (env.home / ".claude" / "commands" / "skillopt-diff.md").unlink()
    res = cli("doctor", "--json")
    rows = [c for c in json.loads(res.stdout)["checks"] if c["group"] == "integrations"]
    claude = [c for c in rows if c["name"] == "claude-code"]
    assert claude[0]["level"] == "warn"
    assert "installed: user (skillopt 0.1.0)" in claude[0]["detail"] and "hooks active" in claude[0]["detail"]
    assert any("skillopt-diff.md is missing" in c["detail"] for c in claude[1:])
    cursor = [c for c in rows if c["name"] == "cursor"]
    assert cursor == [
        {"group": "integrations", "name": "cursor", "level": "info", "detail": "not detected; not installed"}
    ]
    assert cli("install", "claude-code").returncode == 0
    fixed = json.loads(cli("doctor", "--json").stdout)["checks"]
    assert [c["level"] for c in fixed if c["group"] == "integrations" and c["name"] == "claude-code"] == [
        "ok"
    ]


def test_openclaw_rewrite_leaves_a_compliant_skill_byte_for_byte() -> None:
    from skillopt_daemon.registry.installers.openclaw import single_line_frontmatter

    compliant = (
        '---\nname: a\ndescription: "Use: when x"\nmetadata: {"openclaw": {"emoji": "x"}}\n---\nbody\n'
    )
    assert single_line_frontmatter(compliant) == compliant
    folded = "---\nname: a\ndescription: |\n  two\n  lines\n---\nbody\n"
    fixed = single_line_frontmatter(folded)
    assert fixed == '---\nname: a\ndescription: "two\\nlines\\n"\n---\nbody\n'
    assert SkillDoc.parse(fixed).frontmatter == SkillDoc.parse(folded).frontmatter


def test_importing_a_tools_skills_leaves_out_skillopts_own_skill(env: Env, cli) -> None:
    (env.home / ".claude").mkdir()
    assert cli("install", "claude-code").returncode == 0
    mine = env.home / ".claude" / "skills" / "py-tests"
    mine.mkdir()
    (mine / "SKILL.md").write_text(
        "---\nname: py-tests\ndescription: Use when running tests.\n---\n\nRun pytest.\n"
    )
    res = cli("skills", "import", "--tool", "claude-code", "--json")
    assert res.returncode == 0, res.stderr
    assert [r["skill"] for r in json.loads(res.stdout)] == ["py-tests"]
    listed = json.loads(cli("skills", "list", "--json").stdout)
    assert "skillopt" not in json.dumps(listed) and "py-tests" in json.dumps(listed)


def _enable_plugin(home: Path) -> None:
    """What `claude plugin install skillopt@skillopt` leaves in Claude Code's home."""
    claude = home / ".claude"
    settings = claude / "settings.json"
    data = json.loads(settings.read_text()) if settings.exists() else {}
    data["enabledPlugins"] = {"skillopt@skillopt": True}
    claude.mkdir(exist_ok=True)
    settings.write_text(json.dumps(data))
    (claude / "plugins").mkdir(exist_ok=True)
    (claude / "plugins" / "installed_plugins.json").write_text(
        json.dumps({"version": 2, "plugins": {"skillopt@skillopt": [{"scope": "user", "version": "0.1.0"}]}})
    )


def _integration_problems(cli, tool: str) -> list[str]:  # type: ignore[no-untyped-def]
    data = json.loads(cli("doctor", "--json").stdout)
    return [c["detail"] for c in data["checks"] if c["group"] == "integrations" and c["name"] == tool]


def test_direct_install_beside_the_plugin_is_refused_and_doctor_names_a_double_install(env: Env, cli) -> None:
    _enable_plugin(env.home)
    before = snapshot(env.home)
    for args in (
        ["install", "claude-code"],
        ["install", "claude-code", "--scope", "project", "--project", str(env.project)],
    ):
        r = cli(*args)
        assert r.returncode == 4, r.stdout + r.stderr
        assert (
            "skillopt plugin of claude-code is installed (0.1.0)" in r.stderr
            and "nothing was changed" in r.stderr
        )
        assert "claude plugin uninstall skillopt@skillopt" in r.stderr
    assert snapshot(env.home) == before and not (env.project / ".claude").exists()

    # Installed the other way round (the direct install first, the plugin added later): doctor says so.
    (env.home / ".claude" / "settings.json").unlink()
    assert cli("install", "claude-code").returncode == 0
    assert not any("installed twice" in d for d in _integration_problems(cli, "claude-code"))
    _enable_plugin(env.home)
    (detail,) = [d for d in _integration_problems(cli, "claude-code") if "installed twice" in d]
    assert "commands, skill and hooks" in detail and "skillopt uninstall claude-code" in detail


def test_the_plugins_hook_stays_quiet_where_the_direct_install_reports_sessions(
    env: Env, cli, tmp_path: Path
) -> None:
    import subprocess

    from skillopt_daemon import integrations
    from skillopt_lib.agents import AgentTool

    script = integrations.plugin_dir(AgentTool.CLAUDE_CODE) / "scripts" / "skillopt-notify.sh"
    calls = tmp_path / "calls"
    fake = tmp_path / "skillopt"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    fake.chmod(0o755)
    run_env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(env.home),
        "SKILLOPT_BIN": str(fake),
        "SKILLOPT_HOOK_FOREGROUND": "1",
        "CLAUDE_PROJECT_DIR": str(env.project),
    }

    def hook() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", str(script), "session-end"],
            input="{}",
            capture_output=True,
            text=True,
            env=run_env,
            timeout=60,
        )

    (env.home / ".claude").mkdir()
    assert hook().returncode == 0
    assert calls.read_text().split() == ["notify", "session-end", "--tool", "claude-code"]
    calls.unlink()
    assert cli("install", "claude-code").returncode == 0
    proc = hook()
    assert proc.returncode == 0 and proc.stdout == "" and not calls.exists()
    assert "already reports this session" in proc.stderr


def test_install_output_starts_with_what_it_did_not_an_empty_line(env: Env, cli) -> None:
    """The progress bar for approved skills has no work on a first install: it must leave no blank line
    before the list of files (on stderr, which a terminal shows above stdout)."""
    (env.home / ".claude").mkdir()
    for args in (("install", "claude-code", "--dry-run"), ("install", "claude-code")):
        r = cli(*args)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("create "), r.stdout[:80]
        assert not r.stderr.startswith("\n") and "\n\n" not in "\n" + r.stderr, repr(r.stderr[:80])
