"""Integration speed: `python -m benchmarks.integrations [--skills 50] [--repeat 5]`.

What a user waits for: how long an agent's session-end hook holds the agent (the hook script returning)
and how long until the daemon's note is on disk; `skillopt install TOOL` placing the integration plus N
approved skills, a repeated (idempotent) install, and uninstall; the MCP server's start-up and a `status`
round trip over stdio. Everything runs in a temporary HOME and SKILLOPT_HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skillopt_lib.agents import AgentTool


def _median_ms(samples: list[float]) -> str:
    lo, hi = min(samples) * 1000, max(samples) * 1000
    return f"{statistics.median(samples) * 1000:.0f} ms (min {lo:.0f}, max {hi:.0f})"


def bench_hook(root: Path, repeat: int) -> dict[str, str]:
    from skillopt_daemon import integrations

    script = integrations.plugin_dir() / "scripts" / "skillopt-notify.sh"
    so_home = root / "hook-home"
    inbox = so_home / "data" / "inbox"
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(root),
        "SKILLOPT_HOME": str(so_home),
    }
    returned, landed = [], []
    for i in range(repeat):
        before = len(list(inbox.glob("*.json"))) if inbox.is_dir() else 0
        start = time.perf_counter()
        subprocess.run(
            ["sh", str(script), "session-end"],
            input=json.dumps({"session_id": f"s{i}"}),
            text=True,
            env=env,
            check=True,
            capture_output=True,
        )
        returned.append(time.perf_counter() - start)
        while len(list(inbox.glob("*.json"))) <= before:
            time.sleep(0.01)
        landed.append(time.perf_counter() - start)
    return {"hook returns": _median_ms(returned), "note on disk": _median_ms(landed)}


def bench_install(root: Path, n_skills: int, repeat: int) -> dict[str, str]:
    os.environ["HOME"] = str(root / "home")
    os.environ["SKILLOPT_HOME"] = str(root / "so")
    (root / "home" / ".codex").mkdir(parents=True)
    from skillopt_daemon import integrations
    from skillopt_daemon.registry import open_registry
    from skillopt_lib.skill import SkillBundle, SkillDoc

    reg, _ = open_registry()
    other = root / "other"
    other.mkdir()
    for i in range(n_skills):
        name = f"skill-{i:03d}"
        doc = SkillDoc.new(
            name, f"Use for task family {i}.", f"# Skill {i}\n" + "Do the thing carefully.\n" * 40
        )
        v = reg.propose(name, SkillBundle.from_doc(doc))
        reg.approve(v.id, targets=[f"claude-code:project:{other}"])
    reg.db.conn.close()
    first, again, removal = [], [], []
    for _ in range(repeat):
        start = time.perf_counter()
        integrations.install(AgentTool.CODEX)
        first.append(time.perf_counter() - start)
        start = time.perf_counter()
        integrations.install(AgentTool.CODEX)
        again.append(time.perf_counter() - start)
        start = time.perf_counter()
        integrations.uninstall(AgentTool.CODEX)
        removal.append(time.perf_counter() - start)
    return {
        f"install codex + {n_skills} skills": _median_ms(first),
        "repeat install (nothing to do)": _median_ms(again),
        "uninstall": _median_ms(removal),
    }


def bench_mcp(root: Path, repeat: int) -> dict[str, str]:
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from skillopt_daemon.cli import main; main()", "mcp"],
        env={"HOME": str(root), "SKILLOPT_HOME": str(root / "mcp-home"), "PATH": "/usr/bin:/bin"},
    )
    started, calls = [], []

    async def once() -> None:
        start = time.perf_counter()
        async with Client(params) as client:
            started.append(time.perf_counter() - start)
            t = time.perf_counter()
            for _ in range(10):
                await client.call_tool("status", {})
            calls.append((time.perf_counter() - t) / 10)

    for _ in range(repeat):
        anyio.run(once)
    return {"MCP server start + handshake": _median_ms(started), "MCP status call": _median_ms(calls)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skills", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        results = {}
        results.update(bench_hook(root, args.repeat))
        results.update(bench_install(root, args.skills, args.repeat))
        results.update(bench_mcp(root, args.repeat))
    width = max(len(k) for k in results)
    for key, value in results.items():
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
