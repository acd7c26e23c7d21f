"""The MCP server, driven by the official `mcp` SDK's client over stdio as an agent tool would."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from integ_helpers import Env, approve_skill, propose_skill
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

EXPECTED_TOOLS = {"status", "diff", "approve", "reject", "rollback", "report", "sleep"}


def _params(env: Env) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "from skillopt_daemon.cli import main; main()", "mcp"],
        env={"HOME": str(env.home), "SKILLOPT_HOME": str(env.skillopt_home), "PATH": "/usr/bin:/bin"},
    )


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def _payload(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(_text(result))


def test_list_tools_status_diff_approve_over_stdio(env: Env) -> None:
    (env.home / ".claude").mkdir()
    approve_skill("py-tests", "Use when running Python tests.", "v1: run pytest\n", "claude-code:user")
    v2 = propose_skill("py-tests", "Use when running Python tests.", "v2: run pytest -x -q\n")
    installed = env.home / ".claude" / "skills" / "py-tests" / "SKILL.md"

    async def scenario() -> None:
        async with Client(_params(env)) as client:
            tools = await client.list_tools()
            assert {t.name for t in tools.tools} == EXPECTED_TOOLS
            approve_tool = next(t for t in tools.tools if t.name == "approve")
            assert approve_tool.input_schema["required"] == ["proposal"]

            report = _payload(await client.call_tool("report", {}))
            assert report["headline"] == "skillopt has not installed a learned rule yet"

            status = _payload(await client.call_tool("status", {}))
            pending = status["sections"]["pending"]["items"]
            assert [p["id"] for p in pending] == [v2]

            diff = _payload(await client.call_tool("diff", {}))
            assert "-v1: run pytest" in diff["diff"] and "+v2: run pytest -x -q" in diff["diff"]

            approved = _payload(await client.call_tool("approve", {"proposal": v2[:8]}))
            assert approved["version"]["state"] == "approved"
            assert [i["target"] for i in approved["installs"]] == ["claude-code:user"]

            again = await client.call_tool("approve", {"proposal": v2})
            assert again.is_error and "already approved" in _text(again)

            missing = await client.call_tool("approve", {"proposal": "deadbeef"})
            assert missing.is_error

            rolled = _payload(await client.call_tool("rollback", {"skill": "py-tests"}))
            assert rolled["installs"][0]["label"] == "py-tests@v1"

    anyio.run(scenario)
    assert "v1: run pytest" in installed.read_text()


def test_reject_and_sleep_over_stdio(env: Env) -> None:
    v1 = propose_skill("lint", "Use when linting.", "run ruff\n")

    async def scenario() -> None:
        async with Client(_params(env)) as client:
            no_reason = await client.call_tool("reject", {"proposal": v1, "reason": " "})
            assert no_reason.is_error and "reason" in _text(no_reason)
            rejected = _payload(await client.call_tool("reject", {"proposal": v1, "reason": "too vague"}))
            assert rejected["state"] == "rejected" and rejected["decision_reason"] == "too vague"
            slept = _payload(await client.call_tool("sleep", {"dry_run": True}))
            assert slept["available"] is True
            report = slept["result"]
            assert report["trigger"] == "mcp" and report["dry_run"] is True
            assert report["status"] in ("dry-run", "nothing-to-do", "failed", "skipped")
            assert not any(s.get("proposal_id") for s in report["skills"]), "a dry run proposes nothing"

    anyio.run(scenario)
