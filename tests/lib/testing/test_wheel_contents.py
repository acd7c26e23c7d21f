"""The wheel ships what a plugin author needs to test a plugin against a scripted model, and no other test
support.

`skillopt_lib.testing` holds the Script DSL, the scripted model server, its prompt cache and token counts,
and the house-style demo of docs/optimizer.md's quick start (docs/plugins.md). Everything else that tests
and benchmarks use (the agent CLIs' facts and drivers, the copycat optimizer, the night scenarios, the
recorded corpora's builders) lives in `testkit/`, beside `tests/` and `benchmarks/`, none of which a user's
installation carries. Read from the wheel hatchling builds, not from the source tree: the packaging config
is what decides.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

AIDS = {"__init__.py", "script.py", "scripted_server.py", "prompt_cache.py", "tokens.py", "house_style.py"}
UNSHIPPED = ("testkit/", "tests/", "benchmarks/")
TESTKIT_ONLY = ("learning_night.py", "night_scenario.py", "agent_clis.py", "copycat.py")


def test_the_wheel_holds_the_plugin_authors_testing_aids_and_no_other_test_support(tmp_path: Path) -> None:
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
    assert testing == AIDS, sorted(testing ^ AIDS)
    assert not [n for n in names if n.startswith(UNSHIPPED)]
    assert not [n for n in names if Path(n).name in TESTKIT_ONLY], "a module of testkit is shipped"
