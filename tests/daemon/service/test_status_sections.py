"""`collect_status`: sections others add, a broken section not hiding the rest, daemon state from the pid file."""

from __future__ import annotations

import os
import subprocess
import sys

from skillopt_daemon.core import paths
from skillopt_daemon.registry import Registry
from skillopt_daemon.service import status
from skillopt_lib.skill import SkillBundle


def test_pending_and_active_sections_and_a_broken_section(env, reg: Registry, monkeypatch) -> None:
    env.write_skill()
    reg.import_target(env.USER)
    v = reg.propose(
        "tidy-commits", SkillBundle.from_text(env.EDITED), {"baseline_score": 0.5, "candidate_score": 0.75}
    )

    def broken(db):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    monkeypatch.setattr(status, "_SECTIONS", dict(status._SECTIONS))
    monkeypatch.setattr(status, "_ORDER", list(status._ORDER))
    status.register_section("zz-broken", broken)
    data = status.collect_status(reg.db)
    [p] = data["pending"]["items"]
    assert p["id"] == v.id and p["score_change"] == 0.25 and p["confidence"] is None
    [a] = data["active"]["items"]
    assert (a["skill"], a["target"], a["active"]) == ("tidy-commits", "claude-code:user", "tidy-commits@v1")
    assert data["zz-broken"]["error"] == "RuntimeError: boom"
    assert list(data)[:4] == ["pending", "decided", "active", "daemon"]


def test_daemon_state_reads_the_pid_file(env) -> None:
    assert status.daemon_state()["lines"] == ["not running"]
    paths.ensure_private_dir(paths.pid_file().parent)
    paths.pid_file().write_text(f"{os.getpid()}\n")
    assert status.daemon_state() == {
        "running": True,
        "pid": os.getpid(),
        "lines": [f"running (pid {os.getpid()})"],
    }
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    paths.pid_file().write_text(f"{pid}\n")
    state = status.daemon_state()
    assert state["running"] is False and "stale" in state["lines"][0]
