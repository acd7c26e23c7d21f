"""Every page with data from a real ingest, a mined task family, a proposal and a real training run."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

from world import CLAUDE_SESSION, RULE, XSS_SESSION, World


def _text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", html))


def test_overview_shows_sessions_per_tool_pending_proposals_and_the_night(client: Any, world: World) -> None:
    r = client.get("/")
    assert r.status_code == 200
    text = " ".join(_text(r.text).split())
    assert "claude-code: 2" in text and "codex: 1" in text
    assert f'href="/proposals/{world.proposal_id}"' in r.text
    assert "tidy-commits v2" in text
    assert "Last night: never run" in text
    assert "No nightly cycle has run yet." in text
    assert '<svg class="chart"' in r.text and 'class="bar series-0"' in r.text


def test_overview_shows_the_nights_spend_against_its_budget(
    client: Any, world: World, monkeypatch: Any
) -> None:
    from skillopt_daemon.core.store import open_db

    monkeypatch.setenv("SKILLOPT_NIGHT__MAX_TOKENS", "3000000")
    monkeypatch.setenv("SKILLOPT_NIGHT__MAX_COST_USD", "5")
    monkeypatch.setenv("SKILLOPT_NIGHT__MAX_REPLAYS", "200")

    db = open_db()
    with db.conn:
        db.table("night_runs").insert(
            {
                "id": "n-test",
                "trigger": "schedule",
                "status": "completed",
                "dry_run": False,
                "started_at": "2026-11-30T03:17:00.000Z",
                "finished_at": "2026-11-30T03:40:00.000Z",
                "heartbeat_at": "2026-11-30T03:40:00.000Z",
                "pid": 1,
                "summary_json": json.dumps({"spend": {"cost_usd": 1.25, "tokens": 420000, "replays": 12}}),
                "error": None,
            }
        )
        # an earlier real night: in the recent nights' total, not in the last night's figures
        db.table("night_runs").insert(
            {
                "id": "n-old",
                "trigger": "schedule",
                "status": "budget",
                "dry_run": False,
                "started_at": "2026-11-29T03:17:00.000Z",
                "finished_at": "2026-11-29T03:50:00.000Z",
                "heartbeat_at": "2026-11-29T03:50:00.000Z",
                "pid": 1,
                "summary_json": json.dumps({"spend": {"cost_usd": 2.0, "tokens": 100000, "replays": 3}}),
                "error": None,
            }
        )
        # a later dry run: not what a night costs
        db.table("night_runs").insert(
            {
                "id": "n-dry",
                "trigger": "manual",
                "status": "dry-run",
                "dry_run": True,
                "started_at": "2026-11-30T09:00:00.000Z",
                "finished_at": "2026-11-30T09:20:00.000Z",
                "heartbeat_at": "2026-11-30T09:20:00.000Z",
                "pid": 1,
                "summary_json": json.dumps({"spend": {"cost_usd": 0.37, "tokens": 90000, "replays": 4}}),
                "error": None,
            }
        )
    try:
        text = " ".join(_text(client.get("/").text).split())
        assert "≈ $1.25 est. of a $5.00 cap" in text
        assert "420,000 of 3,000,000 tokens" in text
        assert "12 of 200 replays" in text
        assert "0.37" not in text and "90,000" not in text
        # ... and the nights before it, which the last night's figures alone would hide
        assert "The last 2 nights: ≈ $3.25 est. · 520,000 tokens · 15 replays" in text
        assert re.search(r"Last night \(\d{4}-\d\d-\d\d\): dry-run", text), text
    finally:
        with db.conn:
            db.execute("DELETE FROM night_runs WHERE id IN ('n-test', 'n-dry', 'n-old')")
        db.conn.close()


def test_sessions_are_listed_and_searchable(client: Any) -> None:
    everything = client.get("/sessions").text
    assert everything.count('href="/sessions/') >= 6  # three sessions, two links each
    codex = client.get("/sessions?tool=codex").text
    assert "codex" in codex and "claude-code</td>" not in codex
    hits = client.get("/sessions?q=pwned").text  # only the hostile copy's prompt has this word
    assert hits.count('href="/sessions/') == 2
    assert "No session matches." in client.get("/sessions?q=zebra-unicorn").text
    assert client.get('/sessions?q="unbalanced AND (').status_code == 200  # never an FTS syntax error


def test_a_session_shows_its_transcript_with_tool_calls_and_outcomes(client: Any) -> None:
    r = client.get(f"/sessions/{CLAUDE_SESSION}")
    assert r.status_code == 200
    text = _text(r.text)
    assert "fix the failing test" in text
    assert 'class="tool">Bash<' in r.text or 'class="tool">Edit<' in r.text
    assert re.search(r'class="outcome[^"]*">(exit \d+|ok|error)<', r.text)
    assert "/home/dev/project" in text


def test_an_unknown_session_is_a_404_with_a_hint(client: Any) -> None:
    r = client.get("/sessions/no-such-session")
    assert r.status_code == 404
    assert "no session" in r.text and "skillopt sessions list --all" in _text(r.text)


def test_task_families_show_instances_checks_rubric_and_splits(client: Any) -> None:
    r = client.get("/tasks")
    assert r.status_code == 200
    fam = re.search(r'href="/tasks/(fam-[0-9a-f]+)"', r.text)
    assert fam, "the mined family is not listed"
    detail = client.get(f"/tasks/{fam.group(1)}")
    assert detail.status_code == 200
    text = _text(detail.text)
    assert "Checks" in text and "Rubric" in text
    splits = re.findall(r'class="badge (train|val|test)"', detail.text)
    assert len(splits) == 3 and "train" in splits
    assert "<script>window.__pwned" not in detail.text


def test_a_proposal_shows_diff_evidence_gate_and_cost(client: Any, world: World) -> None:
    r = client.get(f"/proposals/{world.proposal_id}")
    assert r.status_code == 200
    assert f'<span class="add">+{RULE}</span>' in r.text
    text = " ".join(_text(r.text).split())
    assert "0.250 → 0.750" in text
    assert "97%" in text and "candidate wins 2 of 2 paired tasks" in text
    assert "≈ $0.04 est." in text and "18,250 tokens" in text
    assert text.count("fail 0/1 checks") == 2 and text.count("pass 1/1 checks") == 2
    assert "commit <b>the</b> docs" in text and "<b>the</b>" not in r.text
    assert 'id="approve"' in r.text and 'id="reject"' in r.text


def test_rejecting_needs_a_reason_and_then_records_it(client: Any, world: World) -> None:
    page = client.get(f"/proposals/{world.second_id}").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    r = client.post(f"/proposals/{world.second_id}/reject", data={"csrf_token": csrf, "reason": " "})
    assert r.status_code == 409 and "needs a reason" in r.text
    r = client.post(
        f"/proposals/{world.second_id}/reject",
        data={"csrf_token": csrf, "reason": "too long for a commit rule"},
        follow_redirects=False,
    )
    assert r.status_code == 303
    after = client.get(r.headers["location"]).text
    assert "Rejected. Nothing was installed." in after
    assert 'id="proposal-state">rejected<' in after and "too long for a commit rule" in after
    decided = client.get("/proposals").text
    assert f'href="/proposals/{world.second_id}"' in decided


def test_skills_show_versions_lineage_and_where_installed(client: Any) -> None:
    assert 'href="/skills/tidy-commits"' in client.get("/skills").text
    r = client.get("/skills/tidy-commits")
    assert r.status_code == 200
    assert "claude-code:user" in r.text
    assert 'class="depth-0 active"' in r.text  # v1, imported and installed
    assert r.text.count('class="depth-1') == 2  # both proposals edit v1
    assert "# Tidy commits" in r.text


def test_training_runs_list_and_detail_with_chart_steps_and_spend(client: Any, world: World) -> None:
    runs = client.get("/runs").text
    assert f'href="/runs/{world.run_id}"' in runs and 'class="badge finished"' in runs
    r = client.get(f"/runs/{world.run_id}")
    assert r.status_code == 200
    assert r.text.count('<polyline class="line series-') >= 2  # train and validation
    assert 'class="marker accepted"' in r.text
    text = " ".join(_text(r.text).split())
    assert "accepted" in text and "rejected" in text
    roles = re.findall(r"<tr><td>(agent|optimizer)</td><td>([\d,]+)</td>", r.text)
    assert {role for role, _ in roles} == {"agent", "optimizer"}
    assert all(int(calls.replace(",", "")) > 0 for _, calls in roles)
    assert "hx-get" not in r.text  # a finished run is not polled
    assert "DD.MM.YYYY" in text  # the learned rule is in the best skill


def test_a_run_id_cannot_leave_the_runs_folder(client: Any) -> None:
    assert client.get("/runs/../../config").status_code == 404
    assert client.get("/runs/%2e%2e/%2e%2e/data").status_code == 404


def test_settings_show_the_resolved_configuration_without_secrets(client: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("MY_OPTIMIZER_KEY", "sk-live-must-never-show-0123456789")
    monkeypatch.setenv("SKILLOPT_OPTIMIZER__API_KEY_ENV", "MY_OPTIMIZER_KEY")
    monkeypatch.setenv("SKILLOPT_NIGHT__MAX_COST_USD", "2.5")
    r = client.get("/settings")
    assert r.status_code == 200
    m = re.search(r'<pre class="text" id="config">(.*?)</pre>', r.text, re.S)
    assert m, "no configuration on the page"
    config = json.loads(unescape(m.group(1)))
    assert config["ui"]["host"] == "127.0.0.1"
    assert config["night"]["max_cost_usd"] == 2.5
    assert config["optimizer"]["api_key_env"] == "MY_OPTIMIZER_KEY"  # which variable, never its value
    assert "sk-live-must-never-show" not in r.text
    text = _text(r.text)
    for tool in ("claude-code", "codex", "copilot", "cursor"):
        assert tool in text


def test_the_session_in_a_hostile_copy_is_found_by_its_number(client: Any) -> None:
    from skillopt_daemon.core.store import open_db

    db = open_db()
    pk = db.execute("SELECT id FROM sessions WHERE session_id = ?", [XSS_SESSION]).fetchone()[0]
    db.conn.close()
    assert client.get(f"/sessions/{pk}").status_code == 200


def test_nightly_runs_are_listed_per_skill(client: Any, world: World) -> None:
    """The nightly cycle writes `runs/night-<id>/<skill>/`: each skill's run is its own row."""
    import shutil

    from skillopt_daemon.core import paths

    night = paths.runs_dir() / "night-20261130-031700"
    shutil.copytree(paths.runs_dir() / world.run_id, night / "tidy-commits")
    try:
        runs = client.get("/runs").text
        assert 'href="/runs/night-20261130-031700/tidy-commits"' in runs
        row = re.search(r"night-20261130-031700/tidy-commits</a></td>\s*<td>(\w+)</td>", runs)
        assert row and row.group(1) == "night"
        r = client.get("/runs/night-20261130-031700/tidy-commits")
        assert r.status_code == 200 and r.text.count("<polyline") >= 2
    finally:
        shutil.rmtree(night)


def test_ingest_problems_show_on_the_overview(client: Any, world: World) -> None:
    """A transcript from a newer Claude Code, with a broken line in it: both reach the overview's errors."""
    from world import cli

    src = next((world.claude_home / "projects").rglob(f"{CLAUDE_SESSION}.jsonl"))
    newer_id = "0b7d1f7e-1111-4222-8333-444455556666"
    text = (
        src.read_text().replace(CLAUDE_SESSION, newer_id).replace('"version":"2.1.197"', '"version":"9.0.0"')
    )
    lines = text.splitlines()
    lines.insert(3, '{"type": "user", "message": {"role": "user", "content": "cut off mid-wri')
    newer = src.parent / f"{newer_id}.jsonl"
    newer.write_text("\n".join(lines) + "\n")
    cli("ingest", "--quiet", "--tool", "claude-code")
    r = client.get("/")
    section = r.text.split("<h2>Ingest errors</h2>", 1)[1]
    assert str(newer) in unescape(section)
    assert "9.0.0 is newer than" in unescape(section)
    assert section.count("<tr class=") >= 2  # the version warning and the unreadable line


def test_an_interrupted_run_says_how_to_resume_it(client: Any, world: World) -> None:
    import os
    import shutil
    import time

    from skillopt_daemon.core import paths

    src = paths.runs_dir() / world.run_id
    run = paths.runs_dir() / "train-interrupted"
    run.mkdir()
    try:
        lines = (src / "history.jsonl").read_text().splitlines()[:2]
        (run / "history.jsonl").write_text("\n".join(lines) + "\n")
        old = time.time() - 3600
        os.utime(run / "history.jsonl", (old, old))
        r = client.get("/runs/train-interrupted")
        assert 'id="run-state">interrupted<' in r.text
        assert f"skillopt train --resume {run}" in unescape(r.text)
        assert "hx-get" not in r.text  # nothing to poll
    finally:
        shutil.rmtree(run)


def test_approving_a_new_skill_asks_where_to_install_it(client: Any, world: World) -> None:
    from skillopt_daemon.core.store import open_db
    from skillopt_daemon.registry import Registry
    from skillopt_lib.skill import SkillBundle

    text = "---\nname: release-notes\ndescription: Draft release notes. Use when releasing.\n---\n\n# Notes\n"
    db = open_db()
    v = Registry(db, actor="test").propose("release-notes", SkillBundle.from_text(text), {"delta": 0.2})
    db.conn.close()
    page = client.get(f"/proposals/{v.id}").text
    assert 'name="target" value="claude-code:user"' in page  # asked, with the usual default filled in
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    bad = client.post(f"/proposals/{v.id}/approve", data={"csrf_token": csrf, "target": "nowhere:at-all"})
    assert bad.status_code == 409 and (world.claude_home / "skills" / "release-notes").exists() is False
    r = client.post(
        f"/proposals/{v.id}/approve",
        data={"csrf_token": csrf, "target": "claude-code:user"},
        follow_redirects=False,
    )
    assert r.status_code == 303
    assert (world.claude_home / "skills" / "release-notes" / "SKILL.md").read_text() == text


def test_a_nights_new_skill_shows_what_each_line_was_learned_from_and_where_it_installs(
    client: Any, world: World
) -> None:
    from skillopt_daemon.core.store import open_db
    from skillopt_daemon.registry import Registry
    from skillopt_lib.skill import SkillBundle

    line = "- Fix the code; never silence the linter with noqa."
    text = f"---\nname: lint-fixes\ndescription: Fix lint errors. Use when lint fails.\n---\n\n# Lint\n\n{line}\n"
    said = {
        "text": "no noqa, fix the code",
        "tool": "claude-code",
        "project": "webapp",
        "date": "2026-11-30",
        "session": "s1",
        "task_id": "task-1",
    }
    evidence = {
        "delta": 1.0,
        "new_skill": True,
        "family": {"id": "fam-1", "name": "lint", "size": 8, "tools": ["claude-code", "codex"]},
        "install_to": ["claude-code:user", "codex:user"],
        "provenance": [
            {"line": line, "learned_from": [said], "sessions": ["s1"], "failed_replays": ["task-1"]}
        ],
    }
    db = open_db()
    v = Registry(db, actor="test").propose(
        "lint-fixes", SkillBundle.from_text(text), evidence, origin="trained"
    )
    db.conn.close()
    page = _text(client.get(f"/proposals/{v.id}").text)
    assert "new skill" in page
    assert "installs to claude-code:user, codex:user" in page
    assert "Installs in user scope (claude-code, codex)" in page  # where, as every face says it
    assert (
        "↳ learned from: 'no noqa, fix the code' · claude-code · webapp · 2026-11-30 · 1 failed replay"
        in page
    )
