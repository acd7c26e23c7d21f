"""The registry against what is on disk when the disk changed under it: a tool home that moved, and an
install killed between its two renames while another process (the daemon, the dashboard) keeps reading."""

from __future__ import annotations

import shutil
import signal

from skillopt_daemon.registry import Registry
from skillopt_lib.skill import SkillBundle


def test_approve_after_the_tool_home_moved_installs_over_identical_files(
    env, monkeypatch, reg: Registry
) -> None:
    env.write_skill()
    env.cli("skills", "import", "--tool", "claude-code", check=True)
    vid = env.cli_json("propose", "tidy-commits", str(env.candidate()))["id"]
    moved = env.home / "config" / "claude"
    moved.parent.mkdir()
    shutil.move(str(env.claude_home), str(moved))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(moved))

    approved = env.cli("approve", vid)
    assert approved.returncode == 0, approved.stderr
    assert "edited by hand" not in approved.stderr
    assert (moved / "skills" / "tidy-commits" / "SKILL.md").read_text() == env.EDITED
    # the registry follows the files to their new place: rolling back and uninstalling work there
    env.cli("rollback", "tidy-commits", check=True)
    assert (moved / "skills" / "tidy-commits" / "SKILL.md").read_text() == env.ORIGINAL
    removed = reg.uninstall("tidy-commits", env.USER)
    assert removed and all(p.is_relative_to(moved) for p in removed)


def test_a_kill_between_the_renames_is_settled_at_the_next_read_of_the_target(env, reg: Registry) -> None:
    env.write_skill()
    env.cli("skills", "import", "--tool", "claude-code", check=True)
    vid = env.cli_json("propose", "tidy-commits", str(env.candidate()))["id"]
    folder = env.skill_file().parent
    proc = env.popen("approve", vid, env={"SKILLOPT_TEST_INSTALL_PAUSE": "aside:60"})
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line and "skillopt-install-pause: aside" not in line:
            line = proc.stderr.readline()
        assert line, "the install never reached the pause between its renames"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert not folder.exists()  # what the kill left: the old folder set aside, the new one not in place

    # A registry opened before the kill (as the daemon's and the dashboard's are) reads the target.
    active = reg.active_version("tidy-commits", env.USER)
    assert active is not None and active.seq == 1
    assert SkillBundle.from_path(folder).files["SKILL.md"].decode() == env.ORIGINAL
    assert [p.name for p in env.user_skills.iterdir()] == ["tidy-commits"]
    assert [p.id for p in reg.list_pending()] == [vid]


def test_names_on_disk_lists_every_skill_folder_a_tool_reads_registered_or_not(env, reg: Registry) -> None:
    from skillopt_lib.agents import AgentTool

    env.write_skill("mine-in-claude")
    repo = env.home / "src" / "webapp"
    for rel in (
        ".agents/skills/codex-project-skill",
        ".codex/skills/older-codex-skill",
        ".devin/skills/devin-one",
    ):
        (repo / rel).mkdir(parents=True)
    (env.home / ".codex" / "skills" / "codex-user-skill").mkdir(parents=True)
    (env.user_skills / ".fix-lint.skillopt-0123.new").mkdir()  # an install's staging folder is no name
    tools = [AgentTool.CLAUDE_CODE, AgentTool.CODEX, AgentTool.DEVIN]
    assert reg.names_on_disk(tools, [repo]) == {
        "mine-in-claude",
        "codex-project-skill",
        "older-codex-skill",
        "codex-user-skill",
        "devin-one",
    }
    assert reg.names_on_disk([AgentTool.CODEX]) == {"codex-user-skill"}  # user scope only without projects
