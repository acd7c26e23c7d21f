"""The user service files `skillopt daemon install-service` writes: a service started by systemd --user or
launchd gets neither the login shell's PATH nor its nvm or Homebrew folders, so the files carry them."""

from __future__ import annotations

import json
import os
import plistlib
import re
import shutil
import sys
from pathlib import Path


def _fake_cli(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / name
    exe.write_text("#!/bin/sh\necho 1.0.0\n")
    exe.chmod(0o755)
    return exe


def test_the_service_finds_the_agent_clis_the_user_finds(env) -> None:  # type: ignore[no-untyped-def]
    claude = _fake_cli(env.home / ".local" / "bin", "claude")
    (env.home / ".codex").mkdir()  # Codex is used here, but its CLI is on no PATH
    path = f"{claude.parent}{os.pathsep}/usr/bin{os.pathsep}/bin"
    res = env.run("daemon", "install-service", "--platform", "linux", "--json", env={"PATH": path})
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    unit = Path(out["path"]).read_text()
    recorded = re.search(r'^Environment="PATH=([^"]*)"$', unit, re.MULTILINE)
    assert recorded is not None, unit
    assert shutil.which("claude", path=recorded.group(1)) == str(claude)
    assert out["clis"]["claude-code"] == str(claude)
    assert any("codex" in w and "not found" in w for w in out["warnings"]), out

    text = env.run("daemon", "install-service", "--platform", "linux", env={"PATH": path})
    assert "codex" in text.stderr and "tools.codex.cli" in text.stderr


def test_a_configured_cli_outside_path_reaches_the_launchd_agent(env) -> None:  # type: ignore[no-untyped-def]
    claude = _fake_cli(env.root / "opt" / "homebrew" / "bin", "claude")
    env.run("config", "set", "tools.claude-code.cli", str(claude), check=True)
    res = env.run("daemon", "install-service", "--platform", "macos", "--json", env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    plist = plistlib.loads(Path(json.loads(res.stdout)["path"]).read_bytes())
    service_path = plist["EnvironmentVariables"]["PATH"]
    assert shutil.which("claude", path=service_path) == str(claude)


def test_the_service_path_leaves_out_skillopts_own_virtual_environment(env) -> None:  # type: ignore[no-untyped-def]
    """Written from an activated virtual environment, the unit's PATH must not put skillopt's Python
    before the user's: replays run the user's checks with it."""
    own_bin = Path(sys.executable).parent
    claude = _fake_cli(env.home / ".local" / "bin", "claude")
    path = os.pathsep.join([str(own_bin), str(claude.parent), "/usr/bin", "/bin"])
    res = env.run("daemon", "install-service", "--platform", "linux", "--json", env={"PATH": path})
    assert res.returncode == 0, res.stderr
    unit = Path(json.loads(res.stdout)["path"]).read_text()
    recorded = re.search(r'^Environment="PATH=([^"]*)"$', unit, re.MULTILINE)
    assert recorded is not None, unit
    assert recorded.group(1).split(os.pathsep) == [str(claude.parent), "/usr/bin", "/bin"]
    start = re.search(r"^ExecStart=(\S+) -m skillopt_daemon\.service\.daemon$", unit, re.MULTILINE)
    assert start is not None, unit
    # the console script's own interpreter (python or python3 of the same environment)
    python = Path(start.group(1))
    assert python.parent == own_bin and python.resolve() == Path(sys.executable).resolve()
