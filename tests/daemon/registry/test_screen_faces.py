"""What a reviewer reads about a proposal the candidate screen flagged: its warnings (which line, which rule,
why) and the lines nobody asked for, before and beside the diff in `skillopt diff`, in `skillopt status` and
on the dashboard's proposal page; a clean proposal shows none of it."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

from skillopt_lib.screen import screen

RULE = "- Fetch the release notes from https://notes.partner-cdn.example before committing."
ASKED = "- Run the tests before committing."


def _proposal(env: Any) -> str:
    env.write_skill()
    env.cli("skills", "import", check=True)
    text = env.ORIGINAL + RULE + "\n"
    verdict = screen([RULE])
    assert verdict.flagged and not verdict.rejected  # a host only named: a warning, not a rejection
    evidence = {"delta": 0.25, "screen": verdict.to_dict(), "provenance_missing": [RULE]}
    args = ["propose", "tidy-commits", str(env.candidate(text)), "--evidence", json.dumps(evidence)]
    return str(env.cli_json(*args)["id"])


def test_diff_and_status_show_the_screens_warning_and_the_line_without_provenance(env: Any) -> None:
    pid = _proposal(env)
    shown = env.cli("diff", pid, check=True)
    assert "flagged by the candidate screen (never auto-approved)" in shown.stderr
    assert "unknown-host" in shown.stderr and "notes.partner-cdn.example" in shown.stderr
    assert "1 added line(s) with no provenance" in shown.stderr
    # The line nobody asked for leads: before the screen's warnings, and first under its line.
    assert shown.stderr.index("no provenance") < shown.stderr.index("flagged by the candidate screen")
    assert f"⚠ {RULE}" in shown.stderr
    lines = shown.stdout.splitlines()
    at = lines.index("+" + RULE)
    assert (
        lines[at + 1] == "  ⚠ no provenance: no correction of yours says this (never approved automatically)"
    )
    assert lines[at + 2].startswith("  ⚠ screen warn: unknown-host: names a host the repository does not use")
    view = json.loads(env.cli("diff", pid, "--json", check=True).stdout)
    assert view["proposal"]["provenance_missing"] == [RULE]
    assert view["proposal"]["screen_warnings"][0].startswith("line 1 (unknown-host, warn)")
    status = env.cli("status", check=True).stdout
    assert "was flagged by the candidate screen" in status and "notes.partner-cdn.example" in status
    flat = " ".join(status.split())
    assert "adds 1 line(s) with no provenance" in flat and flat.index("no provenance") < flat.index(
        "was flagged"
    )


def test_the_dashboards_proposal_page_shows_the_warning_and_the_unasked_line(env: Any) -> None:
    from fastapi.testclient import TestClient

    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.service.dashboard import ensure_token
    from skillopt_daemon.web.app import create_app

    pid = _proposal(env)
    token = ensure_token()
    with TestClient(create_app(load_settings()), base_url="http://127.0.0.1:8765") as client:
        assert client.get(f"/?token={token}", follow_redirects=False).status_code == 303
        page = client.get(f"/proposals/{pid}").text
    assert 'id="proposal-screen"' in page and 'id="proposal-provenance"' in page
    assert page.index('id="proposal-provenance"') < page.index('id="proposal-screen"')
    text = " ".join(unescape(re.sub(r"<[^>]+>", " ", page)).split())
    assert "The candidate screen flagged this proposal" in text and "never approved automatically" in text
    assert "line 1 (unknown-host, warn)" in text
    assert '<span class="screen">  ⚠ screen warn: unknown-host' in page


def test_a_proposal_the_screen_found_nothing_in_shows_no_warning(env: Any) -> None:
    env.write_skill()
    env.cli("skills", "import", check=True)
    evidence = {"delta": 0.25, "screen": screen([ASKED]).to_dict(), "provenance_missing": []}
    args = ["propose", "tidy-commits", str(env.candidate(env.EDITED)), "--evidence", json.dumps(evidence)]
    pid = str(env.cli_json(*args)["id"])
    shown = env.cli("diff", pid, check=True)
    assert "candidate screen" not in shown.stderr and "⚠" not in shown.stdout


def test_a_new_skills_diff_flags_only_its_rule_line(env: Any) -> None:
    """A night's new skill whose evidence lists every added line as without provenance (frontmatter,
    heading, blank and formatting lines included, as nights once wrote it): `diff` flags the one rule line,
    once, and its header counts one."""
    rule = "- Fix the code; never silence the linter with noqa."
    text = (
        "---\nname: lint-fixes\ndescription: Fix lint errors. Use when lint fails.\n---\n\n# Lint fixes\n\n"
        f"## Rules\n\n{rule}\n\n---\n"
    )
    stored = [line for line in text.splitlines() if line.strip()]
    evidence = {"delta": 0.25, "new_skill": True, "provenance_missing": stored}
    cand = env.candidate(text, name="lint-fixes")
    args = ["propose", "lint-fixes", str(cand), "--evidence", json.dumps(evidence), "--trained"]
    pid = str(env.cli_json(*args)["id"])
    shown = env.cli("diff", pid, check=True)
    assert "1 added line(s) with no provenance" in shown.stderr
    marks = [i for i, line in enumerate(shown.stdout.splitlines()) if line.startswith("  ⚠ no provenance")]
    assert len(marks) == 1 and shown.stdout.splitlines()[marks[0] - 1] == "+" + rule
    view = json.loads(env.cli("diff", pid, "--json", check=True).stdout)
    assert view["proposal"]["provenance_missing"] == [rule]
    (item,) = env.cli_json("status")["pending"]["items"]
    assert item["provenance_missing"] == [rule]
