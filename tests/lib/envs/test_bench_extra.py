"""The daemon's install leaves out what only benchmarks use; a benchmark that needs one of those packages
says which extra installs it instead of failing on an import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Runs in a fresh interpreter where openpyxl cannot be imported, as in an install without the extra.
WITHOUT_OPENPYXL = """
import importlib.abc, json, sys

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "openpyxl" or name.startswith("openpyxl."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Missing())
from skillopt_lib.envs import load_env
from skillopt_lib.errors import SkillOptError
try:
    load_env("spreadsheetbench", sample=True)
except SkillOptError as exc:
    print(json.dumps({"message": exc.message, "hint": exc.hint, "code": exc.exit_code}))
"""


def test_a_benchmark_without_its_packages_names_the_extra_that_installs_them() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_OPENPYXL], capture_output=True, text=True, timeout=120, check=True
    )
    err = json.loads(proc.stdout)
    assert err["message"] == "the spreadsheetbench benchmark needs openpyxl, which the `bench` extra installs"
    assert "pip install 'skillopt-local[bench]'" in err["hint"]


def test_the_daemons_dependencies_leave_the_benchmark_packages_to_the_bench_extra() -> None:
    project = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("[")[0].split(";")[0].strip() for d in project["dependencies"]}
    assert not names & {"openpyxl", "formulas", "pillow", "scikit-learn", "scipy"}  # mining needs numpy only
    extras = project["optional-dependencies"]
    assert {d.split(">")[0] for d in extras["bench"]} == {"openpyxl", "formulas", "pillow"}
    assert "skillopt-local[bench]" in extras["dev"]  # `make setup` and CI install what the tests need
