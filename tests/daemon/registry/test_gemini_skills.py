"""Gemini CLI's skills folders: approved versions go to `~/.gemini/skills` (following GEMINI_CLI_HOME) and
`<repo>/.gemini/skills`, never the `.agents` folder Codex reads too; a skill there that hides skillopt's is
named by `skillopt doctor`."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_daemon.integrations.plan import plan_placements, resolve_target
from skillopt_daemon.registry.installers import get_installer
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_daemon.registry.installers.gemini import doctor
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import SkillBundle

SKILL = b"---\nname: release-check\ndescription: how to run the release check\n---\nUse --strict.\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    return tmp_path / "home"


def test_an_approved_version_lands_where_gemini_reads_user_and_project_skills(
    home: Path, tmp_path: Path
) -> None:
    installer = get_installer(AgentTool.GEMINI)
    user = InstallTarget(AgentTool.GEMINI, "user")
    installer.install(user, "release-check", SkillBundle(files={"SKILL.md": SKILL}), "i1", None)
    assert (home / ".gemini" / "skills" / "release-check" / "SKILL.md").read_bytes() == SKILL
    assert not (home / ".agents").exists()  # Codex reads ~/.agents/skills too: it would list it twice

    repo = tmp_path / "repo"
    repo.mkdir()
    project = InstallTarget(AgentTool.GEMINI, "project", repo)
    assert [loc.root for loc in installer.locations(project)] == [repo.resolve() / ".gemini" / "skills"]


def test_gemini_cli_home_moves_the_folder_that_holds_gemini(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "elsewhere"))
    roots = [loc.root for loc in get_installer(AgentTool.GEMINI).user_locations()]
    assert roots == [tmp_path / "elsewhere" / ".gemini" / "skills"]
    # `skillopt install gemini` puts the skillopt skill there too.
    placed = plan_placements(resolve_target(AgentTool.GEMINI), executable="skillopt")
    assert [str(p.path) for p in placed] == [str(tmp_path / "elsewhere/.gemini/skills/skillopt/SKILL.md")]  # type: ignore[attr-defined]


def test_doctor_names_a_shared_skill_that_hides_skillopts_copy(home: Path) -> None:
    installer = get_installer(AgentTool.GEMINI)
    installer.install(
        InstallTarget(AgentTool.GEMINI, "user"),
        "release-check",
        SkillBundle(files={"SKILL.md": SKILL}),
        "i1",
        None,
    )
    assert [level for _, level, _ in doctor(AgentTool.GEMINI)] == ["ok"]
    shared = home / ".agents" / "skills" / "release-check"
    shared.mkdir(parents=True)
    (shared / "SKILL.md").write_bytes(SKILL.replace(b"--strict", b"--fast"))
    ((name, level, detail),) = doctor(AgentTool.GEMINI)
    assert level == "warn" and str(shared) in detail and "remove or rename one" in detail
