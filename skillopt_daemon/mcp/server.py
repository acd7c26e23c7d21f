"""skillopt's review actions as an MCP server on stdio (`skillopt mcp`), for agents that speak MCP.

Copilot, Devin and Cursor can review proposals from inside a session through these tools. Each tool calls
the same registry functions as the CLI, so the rules (hand edits win, a decided proposal stays decided)
hold whichever way a decision arrives. Errors a user can cause come back as tool errors carrying the
message and the hint, never as a crash of the server. Nothing may be printed on stdout: it carries the
protocol.

There is no `approve` tool. Whoever calls an MCP tool is the agent, and an agent can be talked into anything
by the text it reads: a planted instruction that got into a proposal could have the agent approve it. So
approving, the one decision that installs new instructions for every future session, is the user's alone:
`diff` says which command the user types in their own terminal (`APPROVE_HINT`). Rejecting and rolling back
stay: at worst they keep or restore a version the user already approved.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from skillopt_daemon.night import cycle
from skillopt_daemon.registry import open_registry
from skillopt_daemon.service.proposals import diff_view
from skillopt_daemon.service.status import collect_status
from skillopt_lib import __version__
from skillopt_lib.errors import SkillOptError
from skillopt_lib.safetext import printable, printable_data

SERVER_NAME = "skillopt"
INSTRUCTIONS = (
    "skillopt learns from the user's coding-agent sessions and proposes improvements to their skills. "
    "Use `status` to see pending proposals and `diff` to show one. Only the user approves a proposal, by "
    "typing the command `diff` gives in their own terminal; never run it yourself. Use `reject` or "
    "`rollback` only when the user asks for that decision. `report` says whether the learned rules "
    "worked. `sleep` runs the improvement cycle now and spends model tokens."
)
APPROVE_HINT = (
    "only the user approves: they type `skillopt approve {id}` in their own terminal after reading this diff "
    "(an agent must not run it)"
)


@contextmanager
def _registry() -> Iterator[Any]:
    """A registry for one tool call; our errors become tool errors with the hint appended."""
    try:
        reg, _notes = open_registry(actor="mcp")
        try:
            yield reg
        finally:
            reg.db.conn.close()
    except SkillOptError as exc:
        raise ToolError(str(exc)) from None


def _guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn SkillOptError into ToolError so the client sees the plain message and hint.

    `functools.wraps` keeps the signature visible, so the SDK still derives the input schema from it.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            # Stored text (transcripts, model output) reaches the client's terminal: controls shown escaped.
            return printable_data(fn(*args, **kwargs))
        except SkillOptError as exc:
            raise ToolError(printable(str(exc))) from None

    return wrapper


def status() -> dict[str, Any]:
    """The daemon, sessions ingested, active skills, pending proposals and the nightly cycle."""
    with _registry() as reg:
        return {"sections": collect_status(reg.db)}


def diff(proposal: str = "") -> dict[str, Any]:
    """The change a proposal (id, id prefix or SKILL@V) makes against its parent; newest pending if empty.

    `proposal` says what the change is in one line (`summary`) and how sure the gate is (`tier_label`: a
    `likely` proposal is not yet proven), as `skillopt diff --json` does.
    """
    with _registry() as reg:
        out = diff_view(reg, proposal)
        item = out.get("proposal")
        if item is not None and item.get("state") == "proposed":
            out["approve"] = APPROVE_HINT.format(id=item["id"])
        return out


def reject(proposal: str, reason: str) -> dict[str, Any]:
    """Reject a proposal, with the user's reason (kept in the history). Only when the user asks."""
    with _registry() as reg:
        version = reg.reject(proposal, reason)
        out: dict[str, Any] = version.to_dict()
        return out


def rollback(skill: str, to: str = "", force: bool = False, reason: str = "") -> dict[str, Any]:
    """Make an earlier approved version of a skill active again (its parent, or `to`). Only when asked.

    A new skill's first version has no parent: rolling it back removes it (`removed` in each install).
    `reason` is the user's, kept in the history.
    """
    with _registry() as reg:
        outcomes = reg.rollback(skill, to=to or None, force=force, reason=reason or None)
        return {"installs": [o.to_dict() for o in outcomes]}


def report() -> dict[str, Any]:
    """What skillopt learned and whether it worked (the weekly summary; read-only): each installed rule's
    verdict (working, not working, too early, stale, contradicted) with its family's correction rate before
    and after its install, the correction funnel per skill, and the tokens and cost of each rule."""
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.night.installed import outcomes

    with _registry() as reg:
        data = outcomes.report(reg.db, load_settings().report)
        return {"headline": outcomes.headline(data), **data}


def run_night(skill: str = "", dry_run: bool = False) -> dict[str, Any]:
    """Run skillopt's improvement cycle now (mine sessions, replay, propose). Spends model tokens.

    Nothing is installed: the cycle only registers proposals for the user to review.
    """
    report = cycle.run_cycle(trigger="mcp", dry_run=dry_run, skill=skill or None)
    return {"available": True, "result": report.to_dict()}


# Tool name -> function. `sleep` is the name users know from `skillopt sleep` and the slash commands.
# No `approve`: see the module docstring.
TOOLS: dict[str, Callable[..., Any]] = {
    "status": status,
    "diff": diff,
    "reject": reject,
    "rollback": rollback,
    "report": report,
    "sleep": run_night,
}


def build_server() -> MCPServer:
    server: MCPServer = MCPServer(
        name=SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    for name, fn in TOOLS.items():
        server.add_tool(_guard(fn), name=name, description=fn.__doc__)
    return server


def run_stdio() -> None:
    build_server().run("stdio")
