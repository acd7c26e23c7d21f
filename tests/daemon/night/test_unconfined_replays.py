"""Replays fail closed: where this machine cannot jail them (here, a seccomp filter refuses `unshare`, as
Docker's default profile does), a night replays nothing and says why and what to do, `skillopt doctor`
says so, and only `replay.allow_unconfined = true` runs them unjailed, with the night's report, `status`
and `doctor` saying they ran unconfined."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testkit import cli
from testkit.fixtures import require
from testkit.seccomp import can_deny_unshare, skillopt_without_namespaces

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    require(can_deny_unshare(), "no seccomp filter for this machine's architecture in the test harness")
    home = tmp_path / "home"
    home.mkdir()
    e = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "ANTHROPIC_", "OPENAI_"))}
    e.update(HOME=str(home), SKILLOPT_HOME=str(tmp_path / "so"), SKILLOPT_NO_DESKTOP_NOTIFY="1")
    e["PYTHONPATH"] = os.pathsep.join([*e.get("PYTHONPATH", "").split(os.pathsep), str(ROOT)]).strip(
        os.pathsep
    )
    return e


def jailless(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`skillopt ARGS` where namespaces are refused."""
    return subprocess.run(
        [*skillopt_without_namespaces(), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def jail_check(env: dict[str, str]) -> dict[str, Any]:
    proc = jailless(env, "doctor", "--json")
    checks = json.loads(proc.stdout)
    rows = checks["checks"] if isinstance(checks, dict) else checks
    return next(c for c in rows if c["group"] == "replays" and c["name"] == "jail")


def test_a_night_that_cannot_jail_its_replays_replays_nothing_and_says_what_to_do(
    env: dict[str, str],
) -> None:
    night = jailless(env, "sleep", "run", "--now", "--json")
    report = json.loads(night.stdout)
    assert night.returncode == 1, night.stderr
    assert report["status"] == "failed"
    assert "replays cannot be jailed on this machine" in report["error"]
    assert "Operation not permitted" in report["error"]
    assert "replay.allow_unconfined = true" in report["error"]
    status = cli.run("status", env=env).stdout
    assert "replays cannot be jailed" in status, status
    check = jail_check(env)
    assert check["level"] == "error" and "replay.allow_unconfined = true" in check["detail"], check
    # On this machine's own terms (namespaces allowed), doctor says replays are jailed.
    plain = json.loads(cli.run("doctor", "--json", env=env).stdout)
    rows = plain["checks"] if isinstance(plain, dict) else plain
    assert next(c for c in rows if c["group"] == "replays")["level"] == "ok"


def test_replays_run_unconfined_only_when_chosen_and_everything_says_so(env: dict[str, str]) -> None:
    cli.run("config", "set", "replay.allow_unconfined", "true", env=env, check=True)
    night = jailless(env, "sleep", "run", "--now", "--json")
    report = json.loads(night.stdout)
    assert "replays cannot be jailed" not in (report.get("error") or "")
    assert any("replays ran unconfined" in w for w in report["warnings"]), report
    status = cli.run("status", env=env).stdout
    assert "warning: replays ran unconfined" in status, status
    check = jail_check(env)
    assert check["level"] == "warn" and "replays run unconfined" in check["detail"], check
