"""The integration files ship inside the wheel: an installation outside the source tree can install them.

The fresh virtual environment gets its dependencies by pointing (through a `.pth` file) at the
site-packages of the Python running the tests, which already has them: a real, separate installation of
the wheel without downloading anything. Only the wheel's own files come from the build.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"$ {' '.join(argv)}\n{proc.stdout}\n{proc.stderr}"
    return proc  # type: ignore[no-any-return]


def test_wheel_installed_outside_the_tree_installs_the_claude_code_integration(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            "-q",
        ]
    )
    (wheel,) = wheels.glob("skillopt_local-*.whl")

    fresh = tmp_path / "fresh-venv"
    venv.EnvBuilder(with_pip=False).create(fresh)
    fresh_python = fresh / "bin" / "python"
    fresh_site = Path(
        _run(
            [str(fresh_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
        ).stdout.strip()
    )
    (fresh_site / "_skillopt_test_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run(
        [sys.executable, "-m", "pip", "--python", str(fresh_python), "install", "--no-deps", "-q", str(wheel)]
    )

    home, so_home, cwd = tmp_path / "home", tmp_path / "so", tmp_path / "elsewhere"
    (home / ".claude").mkdir(parents=True)
    cwd.mkdir()
    env = {
        "HOME": str(home),
        "SKILLOPT_HOME": str(so_home),
        "PATH": f"{fresh / 'bin'}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    where = _run(
        [
            str(fresh_python),
            "-c",
            "from skillopt_daemon import integrations; print(integrations.integrations_root())",
        ],
        env=env,
        cwd=cwd,
    ).stdout.strip()
    assert where.startswith(str(fresh)) and where.endswith(os.path.join("skillopt_daemon", "_integrations"))

    out = _run([str(fresh / "bin" / "skillopt"), "install", "claude-code", "--json"], env=env, cwd=cwd).stdout
    report = json.loads(out)
    assert {f["op"] for f in report["files"]} == {"create"}
    skill = (home / ".claude" / "skills" / "skillopt" / "SKILL.md").read_text()
    assert skill == (REPO / "integrations" / "claude-code" / "skills" / "skillopt" / "SKILL.md").read_text()
    assert (home / ".claude" / "commands" / "skillopt-status.md").is_file()
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert str(fresh / "bin" / "skillopt") in hooks["SessionEnd"][0]["hooks"][0]["command"]
    _run([str(fresh / "bin" / "skillopt"), "uninstall", "claude-code"], env=env, cwd=cwd)
    assert sorted(p.name for p in (home / ".claude").iterdir()) == []
