"""Faults with real processes: SIGKILL in the middle of an install, and two terminals approving at once."""

from __future__ import annotations

import json
import signal
import time

import pytest

from skillopt_lib.skill import SkillBundle

NEW_FILES = {"scripts/check.sh": "#!/bin/sh\necho new\n", "references/notes.md": "# Notes\n"}
OLD_FILES = {"scripts/check.sh": "#!/bin/sh\necho old\n"}


def _setup(env) -> str:  # type: ignore[no-untyped-def]
    env.write_skill(extra=OLD_FILES)
    env.cli("skills", "import", "--tool", "claude-code", check=True)
    cand = env.candidate(extra=NEW_FILES)
    return str(env.cli_json("propose", "tidy-commits", str(cand))["id"])


def _wait_for(proc, marker: str, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if marker in line:
            return
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"the install never reached {marker!r} (exit {proc.poll()})")


@pytest.mark.slow
@pytest.mark.parametrize("step", ["intent", "staged", "aside", "swapped"])
def test_kill_during_install_leaves_old_or_new_and_registry_agrees(env, step: str) -> None:
    vid = _setup(env)
    folder = env.skill_file().parent
    old = SkillBundle.from_path(folder)
    proc = env.popen("approve", vid, env={"SKILLOPT_TEST_INSTALL_PAUSE": f"{step}:60"})
    try:
        _wait_for(proc, f"skillopt-install-pause: {step}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()

    # Right after the kill the live folder may be missing (between the two renames), but never a mix.
    if folder.exists():
        assert SkillBundle.from_path(folder).files in (old.files, _new_files(env))

    # The next command settles it.
    status = env.run("status", "--json", check=True)
    assert "interrupted install" in status.stderr
    now = SkillBundle.from_path(folder)
    leftovers = sorted(p.name for p in env.user_skills.iterdir())
    assert leftovers == ["tidy-commits"], leftovers
    data = json.loads(status.stdout)
    [active] = [a for a in data["active"]["items"] if a["skill"] == "tidy-commits"]
    hist = env.cli_json("history", "tidy-commits")
    versions = {v["id"]: v for v in hist["versions"]}
    if step == "swapped":
        # Every location already held the new version: the install is completed, not undone.
        assert now.files == _new_files(env)
        assert active["active_version_id"] == vid
        assert versions[vid]["state"] == "approved"
        assert data["pending"]["items"] == []
    else:
        assert now.files == old.files
        assert active["active"] == "tidy-commits@v1"
        assert versions[vid]["state"] == "proposed"
        assert [p["id"] for p in data["pending"]["items"]] == [vid]
        assert "install-interrupted" in [e["action"] for e in hist["events"]]
        # And the proposal can still be approved normally afterwards.
        env.cli("approve", vid[:8], check=True)
        assert SkillBundle.from_path(folder).files == _new_files(env)
    # Whatever happened, nothing more is left to settle.
    again = env.cli("status", "--json", check=True)
    assert "interrupted" not in again.stderr


def _new_files(env) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    files = {"SKILL.md": env.EDITED.encode()}
    files.update({k: v.encode() for k, v in NEW_FILES.items()})
    return files


@pytest.mark.slow
def test_two_terminals_approving_the_same_proposal(env) -> None:
    vid = _setup(env)
    # Both processes pause one second inside the install, so their attempts overlap for certain.
    pause = {"SKILLOPT_TEST_INSTALL_PAUSE": "intent:1"}
    a = env.popen("approve", vid, env=pause)
    b = env.popen("approve", vid[:10], env=pause)
    out_a, err_a = a.communicate(timeout=120)
    out_b, err_b = b.communicate(timeout=120)
    codes = sorted([a.returncode, b.returncode])
    assert codes == [0, 4], (out_a, err_a, out_b, err_b)
    loser_err = err_a if a.returncode == 4 else err_b
    assert "already approved" in loser_err
    hist = env.cli_json("history", "tidy-commits")
    actions = [e["action"] for e in hist["events"]]
    assert actions.count("approve") == 1
    assert actions.count("install") == 1
    assert SkillBundle.from_path(env.skill_file().parent).files == _new_files(env)


@pytest.mark.slow
def test_doctor_settles_an_interrupted_install(env) -> None:  # type: ignore[no-untyped-def]
    vid = _setup(env)
    folder = env.skill_file().parent
    proc = env.popen("approve", vid, env={"SKILLOPT_TEST_INSTALL_PAUSE": "staged:60"})
    try:
        _wait_for(proc, "skillopt-install-pause: staged")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()

    res = env.run("doctor", "--json", check=True)
    checks = json.loads(res.stdout)["checks"]
    installs = [c for c in checks if c["name"] == "installs"]
    assert installs and all(c["detail"].startswith("settled") for c in installs)
    assert SkillBundle.from_path(folder).files["scripts/check.sh"] == OLD_FILES["scripts/check.sh"].encode()
    # Settled for good: the next doctor and status have nothing left to say about it.
    again = json.loads(env.run("doctor", "--json", check=True).stdout)["checks"]
    assert not [c for c in again if c["name"] == "installs"]
    assert "interrupted" not in env.run("status", "--json", check=True).stderr
