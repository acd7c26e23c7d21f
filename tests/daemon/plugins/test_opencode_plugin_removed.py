"""OpenCode is a plugin like any other: `skillopt plugins` lists it by its entry point, and a skillopt whose
OpenCode module is gone (uninstalled, or broken) or whose plugins are switched off keeps every other tool
working, with the same OpenCode database lying in the home it reads."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from testkit import cli
from testkit.ingest_helpers import write_claude_session

ROOT = Path(__file__).resolve().parents[3]
REAL_DB = ROOT / "tests" / "daemon" / "ingest" / "sources" / "fixtures" / "real" / "opencode" / "opencode.db"
PLUGIN = "skillopt_daemon.plugins.opencode"
# Loaded first by every Python process started with it on the path: the plugin's module cannot be imported,
# as when the package that held it was uninstalled.
GONE = f"import sys\nsys.modules[{PLUGIN!r}] = None\n"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
    home = tmp_path / "home"
    env.update(
        SKILLOPT_HOME=str(tmp_path / "skillopt"),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        SKILLOPT_NIGHT__ENABLED="false",
        **extra,
    )
    return env


def _json(env: dict[str, str], *args: str) -> Any:
    res = cli.run(*args, "--json", env=env, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_claude_session(home / ".claude" / "projects", "claude-1", turns=2)
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copy(REAL_DB, db)


def _tools_ingested(env: dict[str, str]) -> set[str]:
    res = cli.run("ingest", "--quiet", env=env, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return {s["tool"] for s in _json(env, "sessions", "list")}


def test_plugins_lists_opencode_by_its_entry_point(tmp_path: Path) -> None:
    listed = _json(_env(tmp_path), "plugins")
    (opencode,) = [p for p in listed["plugins"] if p["name"] == "opencode"]
    assert opencode["builtin"] is False
    assert opencode["provides"] == {"agent tools": ["opencode"], "backends": ["opencode"]}
    assert listed["problems"] == []


def test_without_the_opencode_module_every_other_tool_keeps_working(tmp_path: Path) -> None:
    _home(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(GONE)
    gone = _env(tmp_path, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))

    listed = _json(gone, "plugins")
    assert not [p for p in listed["plugins"] if p["name"] == "opencode"]
    assert len(listed["problems"]) == 1 and PLUGIN in listed["problems"][0]
    assert _tools_ingested(gone) == {"claude-code"}  # its database lies there, unread and unharmed
    checks = _json(gone, "doctor")["checks"]
    assert any(c["name"] == "claude-code" for c in checks if c["group"] == "agent CLIs")
    assert not any("opencode" in (c["group"], c["name"]) for c in checks)

    off = _env(tmp_path, SKILLOPT_NO_PLUGINS="1")
    listed = _json(off, "plugins")
    assert not [p for p in listed["plugins"] if p["name"] == "opencode"] and listed["problems"] == []
    assert _tools_ingested(off) == {"claude-code"}

    # Back again, the plugin reads the database the others left alone.
    assert _tools_ingested(_env(tmp_path)) == {"claude-code", "opencode"}
