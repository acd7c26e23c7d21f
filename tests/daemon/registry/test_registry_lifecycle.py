"""The registry's rules, in process: versions, decisions, hand edits, rollback, ids, installs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillopt_daemon.core import paths
from skillopt_daemon.registry import Registry
from skillopt_daemon.registry.installers import InstallTarget, get_installer
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConflictError, InstallError, NotFoundError, SkillFormatError
from skillopt_lib.skill import SkillBundle


def _imported(env, reg: Registry, **kw):  # type: ignore[no-untyped-def]
    env.write_skill(**kw)
    results = reg.import_target(env.USER)
    assert [r.status for r in results] == ["new"]
    assert results[0].version is not None
    return results[0].version


def test_import_propose_approve_rollback_restores_original_bytes(env, reg: Registry) -> None:
    v1 = _imported(env, reg)
    original = env.skill_file().read_bytes()
    assert (v1.origin, v1.state, v1.seq) == ("imported", "approved", 1)
    assert reg.active_version("tidy-commits", env.USER) == v1

    v2 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED), {"delta": 0.2, "confidence": 0.9})
    assert (v2.state, v2.parent_id, v2.seq, v2.origin) == ("proposed", v1.id, 2, "proposed")
    assert [p.id for p in reg.list_pending()] == [v2.id]
    # Proposing changes nothing on disk.
    assert env.skill_file().read_bytes() == original

    result = reg.approve(v2.id[:6])
    assert result.version.state == "approved"
    assert env.skill_file().read_text() == env.EDITED
    assert reg.active_version("tidy-commits", env.USER) == result.version
    assert reg.list_pending() == []

    [outcome] = reg.rollback("tidy-commits")
    assert outcome.version.id == v1.id
    assert env.skill_file().read_bytes() == original
    assert reg.active_version("tidy-commits", env.USER).id == v1.id  # type: ignore[union-attr]

    actions = [e.action for e in reg.history("tidy-commits")]
    assert actions == ["import", "propose", "approve", "install", "rollback"]
    # Nothing was deleted: both versions remain, the proposal still approved.
    assert [(v.seq, v.state) for v in reg.versions("tidy-commits")] == [(1, "approved"), (2, "approved")]


def test_rollback_with_no_earlier_version_is_refused(env, reg: Registry) -> None:
    _imported(env, reg)
    with pytest.raises(NotFoundError, match="no earlier version"):
        reg.rollback("tidy-commits")
    with pytest.raises(NotFoundError, match="no skill named 'nope'"):
        reg.rollback("nope")


def test_rollback_to_a_named_version_and_never_to_a_rejected_one(env, reg: Registry) -> None:
    v1 = _imported(env, reg)
    v2 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    reg.approve(v2.id)
    v3 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED + "- third\n"))
    reg.approve(v3.id)
    v4 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED + "- fourth\n"))
    reg.reject(v4.id, "too long")
    [out] = reg.rollback("tidy-commits", to="v1")
    assert out.version.id == v1.id
    assert env.skill_file().read_text() == env.ORIGINAL
    with pytest.raises(ConflictError, match="never approved"):
        reg.rollback("tidy-commits", to=v4.id)
    with pytest.raises(ConflictError, match="already active"):
        reg.rollback("tidy-commits", to="tidy-commits@v1")
    reg.rollback("tidy-commits", to="3")
    assert env.skill_file().read_text() == env.EDITED + "- third\n"


def test_deciding_twice_or_an_unknown_proposal_fails_clearly(env, reg: Registry) -> None:
    _imported(env, reg)
    v2 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    reg.reject(v2.id, "not better")
    with pytest.raises(ConflictError, match="already rejected"):
        reg.approve(v2.id)
    with pytest.raises(ConflictError, match="already rejected"):
        reg.reject(v2.id, "again")
    with pytest.raises(NotFoundError):
        reg.approve("ffffffff")
    with pytest.raises(NotFoundError):
        reg.approve("not-hex")
    assert env.skill_file().read_text() == env.ORIGINAL
    v3 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED + "x\n"))
    with pytest.raises(ConflictError, match="needs a reason"):
        reg.reject(v3.id, "  ")


def test_ids_resolve_from_unique_prefixes_and_skill_at_version(env, reg: Registry) -> None:
    v1 = _imported(env, reg)
    v2 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    assert reg.resolve_id(v2.id[:5]) == v2
    assert reg.resolve_id(v2.id.upper()) == v2
    assert reg.resolve_id("tidy-commits@v1") == v1
    assert reg.resolve_id("tidy-commits@2") == v2
    assert reg.resolve_id(f"tidy-commits@{v2.id[:4]}") == v2
    with pytest.raises(NotFoundError):
        reg.resolve_id("tidy-commits@v9")
    # Two ids sharing a first character: a one-character prefix is ambiguous when both match.
    if v1.id[0] == v2.id[0]:
        with pytest.raises(ConflictError, match="matches 2 versions"):
            reg.resolve_id(v1.id[0])
    reg.db.execute("PRAGMA foreign_keys=OFF")  # ids are never changed in use; here only to force a clash
    reg.db.execute("UPDATE versions SET id = 'abcd1111' || substr(id, 9) WHERE id = ?", [v1.id])
    reg.db.execute("UPDATE versions SET id = 'abcd2222' || substr(id, 9) WHERE id = ?", [v2.id])
    with pytest.raises(ConflictError, match="matches 2 versions"):
        reg.resolve_id("abcd")
    assert reg.resolve_id("abcd2").seq == 2


def test_invalid_or_identical_proposals_are_refused(env, reg: Registry) -> None:
    _imported(env, reg)
    with pytest.raises(SkillFormatError, match="line 2"):
        reg.propose("tidy-commits", SkillBundle.from_text("---\nname: Tidy\ndescription: d\n---\n"))
    with pytest.raises(SkillFormatError, match="name-matches-folder"):
        reg.propose("other", SkillBundle.from_text(env.EDITED))
    with pytest.raises(ConflictError, match="identical to its parent"):
        reg.propose("tidy-commits", SkillBundle.from_text(env.ORIGINAL))
    v = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    with pytest.raises(ConflictError, match=f"already pending: {v.short_id}"):
        reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))


def test_hand_edit_is_imported_and_never_overwritten_without_force(env, reg: Registry) -> None:
    v1 = _imported(env, reg)
    v2 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    hand = env.ORIGINAL + "- My own rule.\n"
    env.skill_file().write_text(hand)
    with pytest.raises(ConflictError, match="edited by hand") as exc:
        reg.approve(v2.id)
    assert "--force" in (exc.value.hint or "")
    assert env.skill_file().read_text() == hand  # untouched
    he = reg.active_version("tidy-commits", env.USER)
    assert he is not None and he.origin == "hand-edit" and he.parent_id == v1.id
    assert reg.load_bundle(he.id).files["SKILL.md"].decode() == hand
    assert reg.get_version(v2.id).state == "proposed"  # still pending
    # Asking again still refuses: the hand edit is now active and the proposal does not build on it.
    with pytest.raises(ConflictError, match="hand edit the proposal does not include"):
        reg.approve(v2.id)
    assert env.skill_file().read_text() == hand
    result = reg.approve(v2.id, force=True)
    assert env.skill_file().read_text() == env.EDITED
    assert [h.version.id for h in result.hand_edits if h.version] == [he.id]
    # Rolling back from the proposal goes to its parent, and the hand edit stays reachable by name.
    reg.rollback("tidy-commits", to=he.id)
    assert env.skill_file().read_text() == hand


def test_import_notices_hand_edits_and_unchanged_skills(env, reg: Registry) -> None:
    v1 = _imported(env, reg)
    assert [r.status for r in reg.import_target(env.USER)] == ["unchanged"]
    env.skill_file().write_text(env.ORIGINAL + "more\n")
    [r] = reg.import_target(env.USER)
    assert r.status == "hand-edit" and r.version is not None and r.version.parent_id == v1.id
    assert "hand edit" in r.message


def test_import_skips_invalid_skills_with_line_numbers(env, reg: Registry) -> None:
    env.write_skill("broken", "---\nname: broken\n---\nbody\n")
    env.write_skill()
    results = {r.skill: r for r in reg.import_target(env.USER)}
    assert results["tidy-commits"].status == "new"
    assert results["broken"].status == "invalid"
    assert "line 1" in results["broken"].message and "description-required" in results["broken"].message
    assert "broken" not in reg.skill_names()


def test_project_scope_and_inferred_targets(env, reg: Registry, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    folder = repo / ".claude" / "skills" / "tidy-commits"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(env.ORIGINAL)
    [r] = reg.import_path(repo / ".claude" / "skills")
    assert r.target == InstallTarget(AgentTool.CLAUDE_CODE, "project", repo)
    v2 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    reg.approve(v2.id)
    assert (folder / "SKILL.md").read_text() == env.EDITED
    assert not env.skill_file().exists()  # the user scope was not touched
    # A loose folder elsewhere is registered without a target.
    loose = tmp_path / "loose" / "other-skill"
    loose.mkdir(parents=True)
    (loose / "SKILL.md").write_text(env.ORIGINAL.replace("tidy-commits", "other-skill"))
    [r2] = reg.import_path(loose / "SKILL.md")
    assert r2.status == "new" and r2.target is None
    assert reg.targets("other-skill") == []
    v = reg.propose("other-skill", SkillBundle.from_text(env.EDITED.replace("tidy-commits", "other-skill")))
    with pytest.raises(ConflictError, match="not installed anywhere"):
        reg.approve(v.id)
    reg.approve(v.id, targets=["claude-code:user"])
    assert env.skill_file("other-skill").read_text() == env.EDITED.replace("tidy-commits", "other-skill")


def test_multi_file_versions_install_whole_and_uninstall_restores(env, reg: Registry) -> None:
    _imported(env, reg, extra={"scripts/check.sh": "#!/bin/sh\necho old\n"})
    new = SkillBundle(
        files={
            "SKILL.md": env.EDITED.encode(),
            "scripts/check.sh": b"#!/bin/sh\necho new\n",
            "references/guide.md": b"# Guide\n",
        }
    )
    v2 = reg.propose("tidy-commits", new)
    reg.approve(v2.id)
    folder = env.skill_file().parent
    assert SkillBundle.from_path(folder).files == new.files
    assert os.access(folder / "scripts" / "check.sh", os.X_OK)
    backups = list(paths.backups_dir().iterdir())
    assert len(backups) == 1
    assert (backups[0] / "0" / "scripts" / "check.sh").read_text() == "#!/bin/sh\necho old\n"
    removed = reg.uninstall("tidy-commits", env.USER)
    assert {p.name for p in removed} == {"SKILL.md", "check.sh", "guide.md"}
    # What was there before skillopt first wrote is back.
    assert env.skill_file().read_text() == env.ORIGINAL
    assert (folder / "scripts" / "check.sh").read_text() == "#!/bin/sh\necho old\n"
    assert not (folder / "references").exists()
    assert "uninstall" in [e.action for e in reg.history("tidy-commits")]


def test_uninstall_leaves_files_skillopt_did_not_place(env, reg: Registry) -> None:
    v = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    reg.approve(v.id, targets=["claude-code:user"])
    folder = env.skill_file().parent
    env.skill_file().write_text("mine now\n")
    with pytest.raises(ConflictError, match="edited by hand"):
        reg.uninstall("tidy-commits", env.USER)
    assert env.skill_file().read_text() == "mine now\n"
    reg.uninstall("tidy-commits", env.USER, force=True)
    assert not folder.exists()


def test_dry_run_lists_every_file_and_changes_nothing(env, reg: Registry) -> None:
    _imported(env, reg)
    new = SkillBundle(files={"SKILL.md": env.EDITED.encode(), "scripts/a.py": b"print(1)\n"})
    v = reg.propose("tidy-commits", new)
    res = reg.approve(v.id, dry_run=True)
    lines = res.plans[0]
    assert any(line.startswith("replace") and line.endswith("SKILL.md") for line in lines)
    assert any(line.startswith("create") and line.endswith("scripts/a.py") for line in lines)
    assert any(line.startswith("backup") for line in lines)
    assert env.skill_file().read_text() == env.ORIGINAL
    assert reg.get_version(v.id).state == "proposed"


def test_unwritable_target_folder_is_a_clear_error_and_nothing_changes(env, reg: Registry) -> None:
    v = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    env.claude_home.mkdir(parents=True)
    (env.claude_home / "skills").write_text("a file where the skills folder should be")
    with pytest.raises(InstallError, match="is a file, not a folder") as exc:
        reg.approve(v.id, targets=["claude-code:user"])
    assert exc.value.exit_code == 11
    assert reg.get_version(v.id).state == "proposed"


def test_failure_during_the_swap_leaves_the_old_version_and_the_proposal_pending(
    env, reg: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    _imported(env, reg, extra={"scripts/a.sh": "old\n"})
    v = reg.propose(
        "tidy-commits", SkillBundle(files={"SKILL.md": env.EDITED.encode(), "scripts/a.sh": b"new\n"})
    )
    real_rename = os.rename
    calls = {"n": 0}

    def failing_rename(src, dst):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if str(src).endswith(".new"):  # the staged folder moving into place
            raise PermissionError(13, "Permission denied")
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", failing_rename)
    with pytest.raises(InstallError, match="Permission denied"):
        reg.approve(v.id)
    monkeypatch.setattr(os, "rename", real_rename)
    folder = env.skill_file().parent
    assert SkillBundle.from_path(folder).files == {
        "SKILL.md": env.ORIGINAL.encode(),
        "scripts/a.sh": b"old\n",
    }
    assert sorted(p.name for p in env.user_skills.iterdir()) == ["tidy-commits"]  # no staged leftovers
    assert reg.get_version(v.id).state == "proposed"
    assert "install-failed" in [e.action for e in reg.history("tidy-commits")]


def test_symlinked_skills_folder_outside_the_tool_tree_is_refused(env, reg: Registry, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env.claude_home.mkdir(parents=True)
    (env.claude_home / "skills").symlink_to(elsewhere)
    v = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    with pytest.raises(InstallError, match="outside"):
        reg.approve(v.id, targets=["claude-code:user"])
    assert list(elsewhere.iterdir()) == []
    # A skill folder that is itself a link is refused too.
    os.unlink(env.claude_home / "skills")
    (env.claude_home / "skills").mkdir()
    (env.claude_home / "skills" / "tidy-commits").symlink_to(elsewhere)
    with pytest.raises((InstallError, ConflictError)):
        reg.approve(v.id, targets=["claude-code:user"], force=True)
    assert list(elsewhere.iterdir()) == []


def test_versions_are_stored_content_addressed_and_checked(env, reg: Registry) -> None:
    v1 = _imported(env, reg)
    bundle = reg.load_bundle(v1.id)
    assert bundle.files["SKILL.md"].decode() == env.ORIGINAL
    obj = Registry.object_path(bundle.file_hashes()["SKILL.md"])
    assert obj.is_file() and oct(obj.stat().st_mode & 0o777) == "0o600"
    obj.write_bytes(b"tampered")
    from skillopt_lib.errors import StoreError

    with pytest.raises(StoreError, match="damaged"):
        reg.load_bundle(v1.id)


def test_installer_registry_has_claude_code(env) -> None:
    inst = get_installer(AgentTool.CLAUDE_CODE)
    [loc] = inst.locations(InstallTarget(AgentTool.CLAUDE_CODE, "user"))
    assert loc.root == env.claude_home / "skills"
    assert InstallTarget.parse("claude").key == "claude-code:user"
    assert InstallTarget.parse("claude-code:project:/tmp/x").project == Path("/tmp/x").resolve()
    with pytest.raises(ConflictError):
        InstallTarget.parse("nosuchtool:user")


def test_rollback_over_a_hand_edit_needs_force_and_steps_back_from_it(env, reg: Registry) -> None:
    _imported(env, reg)
    v2 = reg.propose("tidy-commits", SkillBundle.from_text(env.EDITED))
    reg.approve(v2.id)
    env.skill_file().write_text(env.EDITED + "- by hand\n")
    with pytest.raises(ConflictError, match="edited by hand"):
        reg.rollback("tidy-commits")
    assert env.skill_file().read_text() == env.EDITED + "- by hand\n"
    # The hand edit (v3, parent v2) is now active; rolling back undoes it, back to v2.
    [out] = reg.rollback("tidy-commits")
    assert out.version.id == v2.id
    assert env.skill_file().read_text() == env.EDITED
