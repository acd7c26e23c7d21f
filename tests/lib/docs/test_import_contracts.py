"""The import contracts follow the tree: a module added to the library is covered by the contract that keeps
test doubles out of product code without anyone listing it, every daemon layer is placed in
the layers contract (an unlisted package is unconstrained, so it could import upwards unnoticed), and what
the wheel ships imports none of the packages it does not ship (test support, benchmarks, tests)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[3]
TEST_DOUBLES = "skillopt_lib.testing"


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _contracts() -> list[dict[str, Any]]:
    return list(_pyproject()["tool"]["importlinter"]["contracts"])


def _forbids(source: str) -> set[str]:
    return {
        m
        for c in _contracts()
        if c.get("type") == "forbidden" and source in c["source_modules"]
        for m in c["forbidden_modules"]
    }


def _children(package: str) -> set[str]:
    folder = ROOT.joinpath(*package.split("."))
    return {
        f"{package}.{p.stem if p.suffix == '.py' else p.name}"
        for p in folder.iterdir()
        if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").is_file())
    }


def test_the_test_doubles_contract_covers_all_product_code_by_construction() -> None:
    """Nothing to keep listed: the contract's sources are the two shipped packages whole, and the only
    imports it lets through are the test doubles' own among themselves."""
    contract = next(c for c in _contracts() if c.get("forbidden_modules") == [TEST_DOUBLES])
    assert sorted(contract["source_modules"]) == ["skillopt_daemon", "skillopt_lib"]
    assert contract.get("ignore_imports") == [f"{TEST_DOUBLES}.** -> {TEST_DOUBLES}.**"]


def test_every_daemon_package_has_its_layer() -> None:
    contract = next(c for c in _contracts() if c.get("type") == "layers")
    placed = {m.strip() for layer in contract["layers"] for m in layer.split("|")}
    assert sorted(_children("skillopt_daemon") - placed) == [], "place these in the layers contract"


def test_what_the_wheel_ships_imports_nothing_it_does_not_ship() -> None:
    data = _pyproject()
    shipped = set(data["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"])
    roots = set(data["tool"]["importlinter"]["root_packages"])
    assert {"testkit", "benchmarks", "tests"} <= roots - shipped, (
        "lint-imports must see the unshipped packages"
    )
    for package in sorted(shipped):
        assert roots - shipped <= _forbids(package), package


def test_test_support_sits_below_the_benchmarks_and_the_tests() -> None:
    """`tests` may import `benchmarks` (their tests) and `testkit`; `benchmarks` may import `testkit`, never
    `tests`; `testkit` imports neither."""
    assert {"tests", "benchmarks"} <= _forbids("testkit")
    assert "tests" in _forbids("benchmarks")


def test_every_module_the_night_phases_share_is_kept_from_the_phases() -> None:
    """A module added beside the phases is shared by them, so it may not import one: the contract lists every
    night module but the phases themselves, the cycle that runs them and `status`, which shows them."""
    contract = next(c for c in _contracts() if c["name"] == "What the night's phases share knows no phase")
    phases = set(contract["forbidden_modules"])
    night = "skillopt_daemon.night"
    expected = _children(night) - phases - {f"{night}.cycle", f"{night}.status", f"{night}.prompts"}
    assert sorted(expected - set(contract["source_modules"])) == [], (
        "add these to the contract in pyproject.toml"
    )
    assert sorted(set(contract["source_modules"]) - expected) == [], "these modules no longer exist"
    folders = {
        f"{night}.{p.name}"
        for p in ROOT.joinpath(*night.split(".")).iterdir()
        if (p / "__init__.py").is_file()
    }
    assert phases == folders, (
        "every folder of the night is a phase, and every phase is forbidden to the shared"
    )
