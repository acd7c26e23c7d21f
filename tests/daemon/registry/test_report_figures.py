"""`skillopt report` as a person reads it: money through `format_cost` and counts grouped, never the raw
float or integer the evidence stores (`$21.7545`, `3477569`)."""

from __future__ import annotations

import json
from typing import Any

RULE = "- Run the tests before committing."


def test_report_prints_money_and_token_counts_readably(env: Any) -> None:
    env.write_skill()
    env.cli("skills", "import", check=True)
    evidence = {
        "tier": "proven",
        "tokens": 3477569,
        "cost_usd": 21.7545,
        "provenance": [
            {
                "line": RULE,
                "matched": True,
                "learned_from": [
                    {
                        "text": "run the tests first",
                        "tool": "claude-code",
                        "project": "webapp",
                        "date": "2026-11-30",
                        "session": "s1",
                        "task_id": "t1",
                    }
                ],
            }
        ],
    }
    args = ["propose", "tidy-commits", str(env.candidate()), "--evidence", json.dumps(evidence), "--trained"]
    pid = env.cli_json(*args)["id"]
    env.cli("approve", pid, check=True)
    out = env.cli("report", check=True).stdout
    assert "3477569" not in out and "21.7545" not in out and "21.75 " not in out.replace("$21.75 est", "")
    assert "3,477,569" in out or "3.5M" in out
    assert "≈ $21.75 est." in out
    data = env.cli_json("report")
    assert data["spend"]["tokens"] == 3477569  # --json keeps the exact figures
    # Where each rule is installed.
    assert [o["where"] for o in data["learned"]] == [["claude-code:user"]]
    assert "claude-code:user" in out
