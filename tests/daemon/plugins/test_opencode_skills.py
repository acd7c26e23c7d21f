"""OpenCode's skills folders through the plugin's installer: approved versions go to OpenCode's own folders
(`~/.config/opencode/skills`, following XDG_CONFIG_HOME, and `<repo>/.opencode/skills`), a hand edit there
is protected and an uninstall restores what was there; `skillopt doctor` says which skills OpenCode also
lists from Claude Code's and the shared `.agents` folders, and which of those skillopt's copies hide."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_daemon.core.store import open_db
from skillopt_daemon.plugins.opencode.installer import OpenCodeInstaller, doctor
from skillopt_daemon.registry import Registry
from skillopt_daemon.registry.installers import get_installer
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConflictError
from skillopt_lib.skill import SkillBundle
from testkit.opencode import opencode_plugin

SKILL = b"---\nname: release-check\ndescription: how to run the release check\n---\nUse --strict.\n"
pytestmark = pytest.mark.usefixtures("opencode_plugin")
__all__ = ["opencode_plugin"]

NEWER = SKILL.replace(b"--strict", b"--strict --all")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for name in (
        "OPENCODE_DISABLE_EXTERNAL_SKILLS",
        "OPENCODE_DISABLE_CLAUDE_CODE_SKILLS",
        "OPENCODE_DISABLE_CLAUDE_CODE",
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def _tool() -> AgentTool:
    return AgentTool.parse("opencode")


def test_versions_land_in_opencodes_own_folders_for_both_scopes(home: Path, tmp_path: Path) -> None:
    installer = get_installer(_tool())
    assert isinstance(installer, OpenCodeInstaller)
    installer.install(
        InstallTarget(_tool(), "user"), "release-check", SkillBundle(files={"SKILL.md": SKILL}), "i1", None
    )
    assert (home / ".config/opencode/skills/release-check/SKILL.md").read_bytes() == SKILL
    assert not (home / ".claude").exists() and not (home / ".agents").exists()
    repo = tmp_path / "repo"
    repo.mkdir()
    project = InstallTarget(_tool(), "project", repo)
    assert [loc.root for loc in installer.locations(project)] == [repo.resolve() / ".opencode" / "skills"]


def test_xdg_config_home_moves_the_user_folder(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    roots = [loc.root for loc in get_installer(_tool()).locations(InstallTarget(_tool(), "user"))]
    assert roots == [tmp_path / "xdg" / "opencode" / "skills"]


def test_a_hand_edit_is_protected_and_an_uninstall_restores_the_folder(home: Path) -> None:
    reg = Registry(open_db(), actor="test")
    user = InstallTarget(_tool(), "user")
    first = reg.propose("release-check", SkillBundle(files={"SKILL.md": SKILL}))
    reg.approve(first.id, [user])
    installed = home / ".config/opencode/skills/release-check/SKILL.md"
    assert installed.read_bytes() == SKILL
    installed.write_bytes(SKILL + b"My own line.\n")  # the user edits skillopt's copy
    second = reg.propose("release-check", SkillBundle(files={"SKILL.md": NEWER}))
    with pytest.raises(ConflictError, match="edited by hand"):
        reg.approve(second.id, [user])
    assert installed.read_bytes() == SKILL + b"My own line.\n"  # not overwritten: kept as a version
    removed = reg.uninstall("release-check", user)
    assert removed and not installed.parent.exists()
    assert [p.name for p in (home / ".config/opencode/skills").iterdir()] == []


def test_doctor_names_the_shared_folders_and_the_skills_opencodes_own_copy_hides(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ((_, level, detail),) = doctor(_tool())
    assert level == "info" and str(home / ".claude/skills") in detail and "(0 skills there now)" in detail
    get_installer(_tool()).install(
        InstallTarget(_tool(), "user"), "release-check", SkillBundle(files={"SKILL.md": SKILL}), "i1", None
    )
    for folder in (".claude/skills/release-check", ".agents/skills/other"):
        (home / folder).mkdir(parents=True)
        (home / folder / "SKILL.md").write_bytes(SKILL)
    summary, hidden = doctor(_tool())
    assert "(2 skills there now)" in summary[2] and "listed once" in summary[2]
    assert str(home / ".claude/skills/release-check") in hidden[2] and "its own folder wins" in hidden[2]
    monkeypatch.setenv("OPENCODE_DISABLE_EXTERNAL_SKILLS", "1")
    ((_, _, off),) = doctor(_tool())
    assert "scans of other tools' folders are off" in off


def test_skillopt_install_opencode_places_the_skillopt_skill_and_uninstall_removes_it(home: Path) -> None:
    from testkit import cli

    (home / ".local/share/opencode").mkdir(parents=True)  # OpenCode has run here: it is detected
    placed = home / ".config/opencode/skills/skillopt/SKILL.md"
    cli.here("install", "opencode", check=True)
    assert placed.is_file() and b"name: skillopt" in placed.read_bytes()
    doctor_text = cli.here("doctor", check=False).stdout
    assert "installed: user" in doctor_text and "OpenCode reads" in doctor_text
    cli.here("uninstall", "opencode", check=True)
    assert not placed.exists()
