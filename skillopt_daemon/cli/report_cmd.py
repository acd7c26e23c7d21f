"""`skillopt report`: did the learned rules work? What skillopt learned, what it fixed, what is not working,
what is stale or contradicted, the correction funnel, and the tokens and cost of each learned rule.

The figures are `night/installed/outcomes.py`'s, the same ones the dashboard's Outcomes page and the MCP `report` tool
show; `--notify` sends the one-line summary as a desktop notification (what the weekly summary says).
"""

from __future__ import annotations

from typing import Any

import typer

from skillopt_daemon.cli.output import console, print_json, print_table
from skillopt_lib.usage import format_cost


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _rows(items: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for o in items:
        fig = o["figures"]
        rows.append(
            [
                o["rule"]["version"],
                o["rule"]["line"],
                ", ".join(o["family_names"]) or "-",
                f"{fig['corrected_before']}/{fig['sessions_before']} ({_pct(fig['rate_before'])})",
                f"{fig['recurred_after']}/{fig['sessions_after']} ({_pct(fig['rate_after'])})",
                f"{o['rule']['tokens']:,}",
                format_cost(o["rule"]["cost_usd"]),
                ", ".join(o.get("where") or []) or "nowhere",
            ]
        )
    return rows


_COLUMNS = [
    "version",
    "rule",
    "family",
    "corrected before",
    "after install",
    "tokens",
    "cost",
    "installed at",
]
_SECTIONS = (
    ("working", "What it fixed (working)"),
    ("not_working", "Not working: the correction keeps coming back (sent back to the night)"),
    ("contradicted", "Contradicted by you since (proposed for removal)"),
    ("stale", "Stale: not seen for a long time (proposed for removal)"),
    ("too_early", "Too early to tell"),
)


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_cmd(
        as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
        notify: bool = typer.Option(
            False, "--notify", help="also send the one-line summary as a desktop notification"
        ),
    ) -> None:
        """Did the learned rules work? Each rule against its family's corrections before and after install."""
        from skillopt_daemon.core.config import load_settings
        from skillopt_daemon.core.store import open_db
        from skillopt_daemon.night.installed import outcomes

        # one summary, whichever face sends it: `outcomes.notify_weekly` is the daemon's weekly job
        data = outcomes.report(open_db(), load_settings().report)
        line = outcomes.headline(data)
        if notify:
            from skillopt_daemon.night.status import desktop  # its notifier is needed only to notify

            desktop("skillopt: what it learned", line)
        if as_json:
            print_json({"headline": line, **data})
            return
        console.print(line)
        if data["as_of"]["note"]:
            console.print(data["as_of"]["note"], markup=False)
        total = data["funnel"].get("*", {})
        console.print(
            "funnel: " + " → ".join(f"{outcomes.STAGE_NAMES[k]} {total.get(k, 0)}" for k in outcomes.STAGES)
        )
        for key, title in _SECTIONS:
            items = data[key]
            if items:
                print_table(title, _COLUMNS, _rows(items))
                for o in items:
                    console.print(f"  {o['rule']['version']}: {o['why']}")
        if data["pending"]:
            console.print(f"{len(data['pending'])} learned rule(s) wait for review: skillopt status")
        spend = data["spend"]
        priced = ", ".join(spend.get("priced_by") or [])
        money = format_cost(spend["cost_usd"]) + (f" ({priced})" if priced else "")
        console.print(f"spent on installed rules: {spend['tokens']:,} tokens, {money}")
