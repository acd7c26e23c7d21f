"""The wheel ships the library's testing aids and none of the daemon's test scenarios.

`skillopt_lib.testing` is for anyone driving the library (the scripted model server, its scripts, the CLI
facts, the copycat optimizer, the house-style demo); the night scenarios the daemon's tests and benchmarks
run (`tests/harness/night_scenario.py`, `tests/harness/learning_night.py`) are worlds of this repository's
tests only, so a user's installation must not carry them. Read from the wheel hatchling builds, not from the
source tree: the packaging config is what decides.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

SCENARIOS = ("learning_night.py", "night_scenario.py")
AIDS = ("scripted_server.py", "script.py", "copycat.py", "agent_clis.py", "house_style.py")


def test_the_wheel_holds_the_testing_aids_and_no_night_scenario(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("skillopt_local-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    testing = {Path(n).name for n in names if n.startswith("skillopt_lib/testing/")}
    assert set(AIDS) <= testing, sorted(testing)
    assert not testing & set(SCENARIOS), sorted(testing & set(SCENARIOS))
    assert not [n for n in names if Path(n).name in SCENARIOS], "a night scenario is shipped"
    assert not [n for n in names if n.startswith(("tests/", "harness/", "benchmarks/"))]
