"""Did the rule work? Learned rules followed into the sessions after their install, on the recorded corpus.

The store holds the nights corpus' real transcripts (`testkit/corpus/after.py`): seven sessions of each
kind before a rule learned from them is installed, the next seven after it. After the install the agent
follows the changelog rule (the user stops correcting), the logging rule is too weak (the user keeps
correcting at the old rate), the user contradicts the lint rule ("actually, do use noqa here"), and the
config kind is not seen again (stale). The funnel's counts must be the labels' exactly.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from skillopt_daemon.core.config import NightSettings, ReportSettings, Settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.cycle import follow_rules
from skillopt_daemon.night.installed import outcomes, removals
from skillopt_daemon.night.learning.context import NightContext, night_gate
from skillopt_daemon.night.mining import mine, preferences
from skillopt_daemon.night.report import CycleReport
from skillopt_daemon.night.tasks import NightTask
from skillopt_daemon.registry import Registry
from skillopt_daemon.registry.evidence import NightEvidence
from skillopt_lib.gate import Gate, no_loss
from skillopt_lib.skill import SkillBundle, SkillDoc
from testkit.corpus.after import (
    CONTRADICTIONS,
    CONTRADICTS,
    FIRST,
    FOLLOWS,
    STILL,
    AfterWorld,
    expected,
    sessions_of,
)

pytestmark = pytest.mark.timeout(180)
SKILLOPT = str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "skillopt")
WAYS = {"changelog": FOLLOWS, "logging": STILL, "lint": CONTRADICTS}
KINDS = ["lint", "logging", "changelog", "config"]
# The line each kind's rule adds (what a night's optimizer would write from the train correction).
RULES = {
    "lint": "Never silence lint with # noqa: fix the code that the linter flags.",
    "logging": "Use logging, not print, for every message: 不要用 print，用 logging.",
    "changelog": "New changelog Einträge go at the top (oben), never at the end (Ende).",
    "config": "Config keys are snake_case, never camelCase.",
}
STALE_DAYS = 0.05  # the corpus' sessions before the install are hours old: their kinds look abandoned


def _family_of(db: sqlite_utils.Database, session_ids: set[str]) -> str:
    rows = db.execute("SELECT family_id, session_id FROM tasks").fetchall()
    counts: dict[str, int] = {}
    for fam, sid in rows:
        if sid in session_ids:
            counts[fam] = counts.get(fam, 0) + 1
    return max(counts, key=lambda f: counts[f])


def _night_tasks(db: sqlite_utils.Database, family: str) -> list[NightTask]:
    """The family's tasks as the night hands them to `preferences` (`replay.tasks_for_families`, without
    settling their checks: only their corrections matter here)."""
    rows = db.query("SELECT * FROM tasks WHERE family_id = ? ORDER BY started_at", [family])
    return [NightTask.from_row(r, []) for r in rows]


def _install_rule(reg: Registry, kind: str, family: str) -> str:
    """v1: the skill as the user had it; v2: the learned line with the provenance a night records."""
    name = f"{kind}-house-rules"
    doc = SkillDoc.new(name, f"How this project wants {kind} work done.", f"# {kind}\n\nDo the work well.\n")
    base = SkillBundle.from_doc(doc)
    v1 = reg.propose(name, base, evidence={})
    reg.approve(v1.id, targets=["claude-code:user"])
    learned = base.with_doc(doc.with_body(f"# {kind}\n\nDo the work well.\n{RULES[kind]}\n"))
    tasks = _night_tasks(reg.db, family)
    prov = preferences.provenance([RULES[kind]], preferences.train_preferences(tasks), [])
    v2 = reg.propose(name, learned, evidence={"provenance": prov, "tokens": 1200, "cost_usd": 0.03})
    reg.approve(v2.id)
    return v2.id


def _ctx(db: sqlite_utils.Database, settings: Settings, *, dry_run: bool = False) -> NightContext:
    return NightContext(
        db=db,
        settings=settings,
        report=CycleReport("r", "test", "running", dry_run, ""),
        budget=NightBudget(1_000_000, 1.0, 3600, 10),
        dry_run=dry_run,
        say=lambda _m: None,
    )


def _dump(db: sqlite_utils.Database) -> dict[str, list[tuple[Any, ...]]]:
    """What a night may change in the store: splits, recorded verdicts, proposals, the gate's ledger."""
    tables = ("tasks", "split_assignments", "rule_outcomes", "versions", "gate_ledger", "events")
    return {
        t: sorted(map(tuple, db.execute(f"SELECT * FROM {t}").fetchall()), key=repr)
        for t in tables
        if t in db.table_names()
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("after")
    home, sk = root / "home", root / "skillopt"
    home.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")},
        "SKILLOPT_HOME": str(sk),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "SKILLOPT_NO_DESKTOP_NOTIFY": "1",
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    db = open_db()
    w = AfterWorld(root, KINDS, db=db)
    w.before()
    mine.mine(db)
    reg = Registry(db, actor="test")
    fams = {k: _family_of(db, {s["session_id"] for s in sessions_of(w.labels, k)[:FIRST]}) for k in KINDS}
    versions = {k: _install_rule(reg, k, fams[k]) for k in KINDS}
    w.after(WAYS)
    families, _ = mine.mine(db)  # the next night's mining, with the sessions since the install
    # family ids follow their members, so the kinds' families are found again (the rules follow them)
    fams = {k: _family_of(db, {s["session_id"] for s in sessions_of(w.labels, k)}) for k in KINDS}
    settings = Settings(report=ReportSettings(stale_after_days=STALE_DAYS))
    found = outcomes.assess(db, settings.report)
    before_dry = _dump(db)
    rehearsal = follow_rules(_ctx(db, settings, dry_run=True), families)
    after_dry = _dump(db)
    night = follow_rules(_ctx(db, settings), families)
    yield {
        "db": db,
        "world": w,
        "families": fams,
        "versions": versions,
        "found": {o.rule.skill.split("-")[0]: o for o in found if o.rule.version_id in versions.values()},
        "night": night,
        "env": env,
        "settings": settings,
        "rehearsal": (rehearsal, before_dry, after_dry),
    }
    mp.undo()
    db.conn.close()


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([SKILLOPT, *args], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_the_funnel_counts_what_the_labels_say(world: dict[str, Any]) -> None:
    want = expected(world["world"].labels, {**WAYS, "config": FOLLOWS})
    for kind in KINDS:
        o = world["found"][kind]
        e = want[kind]
        assert o.rule.families == [world["families"][kind]]
        assert o.figures.sessions_before == e.sessions_before == FIRST
        assert o.figures.corrected_before == e.corrected_before
        if kind == "config":  # nothing since the install
            assert o.figures.sessions_after == 0
            continue
        assert o.figures.sessions_after == e.sessions_after
        assert o.figures.recurred_after == e.recurred_after
        assert len(o.contradictions) == e.contradictions
        assert sorted(r["text"] for r in o.recurrences) == sorted(e.corrections_after)
        # every correction of the kind, before and after, is seen, in the family, and one was shown
        total = e.corrected_before + len(e.corrections_after)
        assert o.funnel["seen"] == o.funnel["in_family"] == total
        assert o.funnel["shown"] == 1
        assert o.funnel["in_proposal"] == o.funnel["installed"] == 1
        assert o.funnel["recurrences"] == len(e.corrections_after)


def test_each_rule_gets_its_verdict(world: dict[str, Any]) -> None:
    found = world["found"]
    assert found["changelog"].verdict == outcomes.WORKING
    assert "0 of 7 after (0%)" in found["changelog"].why
    assert found["logging"].verdict == outcomes.NOT_WORKING
    assert "2 of 7 after (29%)" in found["logging"].why
    assert found["lint"].verdict == outcomes.CONTRADICTED
    assert found["config"].verdict == outcomes.STALE
    assert world["night"]["verdicts"] == {"working": 1, "not working": 1, "contradicted": 1, "stale": 1}


def test_a_dry_run_changes_nothing_in_the_store(world: dict[str, Any]) -> None:
    rehearsal, before, after = world["rehearsal"]
    assert after == before
    # it still says what the night would do: the same recurrences go back to train on the real night
    assert rehearsal["sent_to_train"] and sorted(rehearsal["sent_to_train"]) == sorted(
        world["night"]["sent_to_train"]
    )
    assert rehearsal["removal_proposals"] == []


def test_too_early_before_enough_sessions(world: dict[str, Any]) -> None:
    fig = outcomes.Figures(7, 2, 2, 0, 2 / 7, 0.0)
    verdict, why = outcomes.decide(fig, contradicted=False, stale=False, settings=ReportSettings())
    assert verdict == outcomes.TOO_EARLY and "1 more" in why


def test_a_rule_that_is_not_working_sends_its_new_corrections_to_train(world: dict[str, Any]) -> None:
    db = world["db"]
    logging_fam = world["families"]["logging"]
    after = {s["session_id"] for s in sessions_of(world["world"].labels, "logging")[FIRST:]}
    tasks = _night_tasks(db, logging_fam)
    recurred = [t for t in tasks if t.session in after and t.corrections]
    assert len(recurred) == 2
    assert all(t.split == "train" for t in recurred)
    # what the optimizer reads of them next night: the user's new words, verbatim
    shown = [p.text for t in recurred for p in preferences.for_optimizer(t)]
    assert shown == ["不要用 print，用 logging", "不要用 print，用 logging"]
    assert sorted(world["night"]["sent_to_train"]) == sorted(
        r["attempt"] for r in world["found"]["logging"].recurrences
    )
    # and the next mining pass keeps them there
    families, _ = mine.mine(db)
    kept = {t.session: t.split for t in _night_tasks(db, logging_fam)}
    assert all(kept[t.session] == "train" for t in recurred)
    moved = {
        r["attempt_key"]: r for r in db.query("SELECT * FROM split_assignments WHERE role = 'recurrence'")
    }
    assert set(moved) == set(world["night"]["sent_to_train"])
    assert {r["split"] for r in moved.values()} == {"train"}
    # sessions after a working rule stay where mining put them
    changelog_after = {s["session_id"] for s in sessions_of(world["world"].labels, "changelog")[FIRST:]}
    cl = _night_tasks(db, world["families"]["changelog"])
    assert all(t.split != "train" for t in cl if t.session in changelog_after)


def test_a_removal_that_cannot_be_replayed_is_not_proposed(world: dict[str, Any]) -> None:
    # this store's sessions name no agent CLI that can replay here: neither removal can be gated tonight
    assert world["night"]["removal_proposals"] == []
    waiting = {r["skill"]: r for r in world["night"]["removals"]}
    assert set(waiting) == {"lint-house-rules", "config-house-rules"}  # contradicted, stale
    assert {r["status"] for r in waiting.values()} == {removals.WAITING}
    assert all(r["why"].startswith("replays cannot run: ") for r in waiting.values())
    assert waiting["lint-house-rules"]["verdict"] == outcomes.CONTRADICTED


def _removal(world: dict[str, Any], skill: str) -> removals.Removal:
    reg = Registry(world["db"], actor="night")
    found = outcomes.assess(world["db"], world["settings"].report)
    (r,) = [r for r in removals.candidates(reg, found) if r.skill == skill]
    return r


def _gated(r: removals.Removal, with_line: float, without_line: float) -> Any:
    """The night's gate on the removal, over four held-out tasks, with replays scoring by the skill only."""
    scores = {r.incumbent.content_hash: with_line, r.candidate.content_hash: without_line}
    by_arm = {"incumbent": r.incumbent, "candidate": r.candidate}
    tasks = [NightTask(id=f"t{i}", prompt="", split="val", group=f"g{i}") for i in range(4)]
    seen: list[tuple[str, str]] = []

    def measure(requests: Any) -> list[float]:
        seen.extend(requests)
        return [scores[by_arm[arm].content_hash] for _item, arm in requests]

    decision = removals.gate_removal(Gate(night_gate(NightSettings())), measure, tasks)
    assert {item for item, _arm in seen} == {t.id for t in tasks}  # every held-out task, both arms
    return decision


def test_a_removal_that_loses_on_the_replays_is_refused(world: dict[str, Any]) -> None:
    r = _removal(world, "lint-house-rules")
    ok, why = no_loss(_gated(r, with_line=1.0, without_line=0.0))
    assert not ok and why.startswith("it loses on the replays (4 held-out item(s): 0 better, 4 worse")


def test_a_contradicted_rules_removal_that_does_not_lose_is_proposed_diff_shows_it_and_approve_installs(
    world: dict[str, Any],
) -> None:
    env, db = world["env"], world["db"]
    r = _removal(world, "lint-house-rules")
    decision = _gated(r, with_line=1.0, without_line=1.0)  # the line makes no difference on the replays
    ok, why = no_loss(decision)
    assert ok and "0 better, 0 worse" in why
    reg = Registry(db, actor="night")
    pid = removals.propose(
        reg,
        r,
        tier_note=f"replayed: {why}",
        replayed={"gate": decision.to_dict(), "tasks": []},
        stale_after_days=STALE_DAYS,
    )
    lint = reg.get_version(pid)
    assert lint.state == "proposed" and lint.evidence["removal"] and lint.evidence["reason"] == "contradicted"
    assert lint.evidence["tier"] == "likely" and lint.evidence["replayed"]
    assert lint.evidence["gate"]["stats"]["n"] == 4
    assert NightEvidence.model_validate(lint.evidence).model_extra == {}, lint.evidence.keys()  # all declared
    shown = _cli(env, "diff", lint.short_id)
    assert f"-{RULES['lint']}" in shown.stdout
    assert "removed because the user contradicted it" in shown.stdout
    assert f"'{CONTRADICTIONS['lint']}'" in shown.stdout
    # where the user said it, as every learned line's provenance says it: the tool, the project, the date
    said = re.search(
        rf"'{re.escape(CONTRADICTIONS['lint'])}' · (\S+) · (\S+) · \d{{4}}-\d\d-\d\d", shown.stdout
    )
    assert said and said.group(2) != "?", shown.stdout
    assert "a removal, replayed: it does not lose on the replays" in shown.stderr
    outcomes.record(db, [r.outcome])
    # the next night proposes it no second time
    assert [x.skill for x in removals.candidates(reg, outcomes.assess(db, world["settings"].report))] == [
        "config-house-rules"
    ]
    _cli(env, "approve", lint.short_id)
    installed = Path(env["CLAUDE_CONFIG_DIR"]) / "skills" / "lint-house-rules" / "SKILL.md"
    assert RULES["lint"] not in installed.read_text(encoding="utf-8")
    data = outcomes.report(db, world["settings"].report)
    states = {o["rule"]["skill"]: o["rule"]["state"] for o in data["learned"]}
    assert states["lint-house-rules"] == "removed"


def test_a_stale_rule_with_no_task_left_to_replay_is_proposed_saying_so(world: dict[str, Any]) -> None:
    db, env = world["db"], world["env"]
    ctx = _ctx(db, world["settings"])
    found = outcomes.assess(db, world["settings"].report)
    done = removals.night_removals(ctx, found, load=lambda _db, _families: [])
    (pid,) = done["proposals"]
    config = Registry(db, actor="test").get_version(pid)
    assert config.skill == "config-house-rules" and not config.evidence["replayed"]
    assert config.evidence["tier_note"].startswith(
        f"a removal, {removals.NO_TASK}: its kind of work was last"
    )
    assert config.evidence["staleness"]["stale_after_days"] == STALE_DAYS
    assert config.evidence["staleness"]["sessions_before"] == FIRST
    shown = _cli(env, "diff", config.short_id)
    assert f"-{RULES['config']}" in shown.stdout and removals.NO_TASK in shown.stderr


def test_skillopt_report_shows_what_was_learned_fixed_not_working_and_stale(world: dict[str, Any]) -> None:
    env = world["env"]
    _cli(env, "config", "set", "report.stale_after_days", str(STALE_DAYS))
    data = json.loads(_cli(env, "report", "--json").stdout)
    lines = {k: [o["rule"]["line"] for o in data[k]] for k in ("working", "not_working", "stale")}
    assert lines["working"] == [RULES["changelog"]]
    assert lines["not_working"] == [RULES["logging"]]
    assert RULES["config"] in lines["stale"]
    logging_rule = data["not_working"][0]
    assert logging_rule["figures"]["recurred_after"] == 2 and logging_rule["figures"]["sessions_after"] == 7
    assert logging_rule["rule"]["tokens"] == 1200 and logging_rule["rule"]["cost_usd"] == pytest.approx(0.03)
    assert logging_rule["learned_from"][0].startswith("'不要用 print，用 logging'")
    assert data["funnel"]["logging-house-rules"]["recurrences"] == 2
    assert data["funnel"]["*"]["seen"] >= data["funnel"]["*"]["in_family"] > 0
    assert "working" in data["headline"]
    from skillopt_daemon.mcp import server

    over_mcp = server._guard(server.TOOLS["report"])()
    assert [o["rule"]["line"] for o in over_mcp["not_working"]] == [RULES["logging"]]
    assert over_mcp["headline"] == data["headline"]
    text = _cli(env, "report").stdout
    assert "What it fixed (working)" in text and RULES["changelog"] in text
    assert "Not working" in text and "2/7 (29%)" in text


def test_the_weekly_summary_is_a_desktop_notification(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sent = tmp_path / "sent.txt"
    fake = bin_dir / "notify-send"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {sent}\n')
    fake.chmod(0o755)
    monkeypatch.delenv("SKILLOPT_NO_DESKTOP_NOTIFY", raising=False)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    line = outcomes.notify_weekly(world["db"], world["settings"].report)
    title, body = sent.read_text(encoding="utf-8").splitlines()[:2]
    assert title == "skillopt: what it learned"
    assert body == line and "1 not working" in body and "1 working" in body


def test_the_daemon_schedules_the_weekly_summary() -> None:
    from apscheduler.schedulers.background import BackgroundScheduler

    from skillopt_daemon.night import schedule

    sched = BackgroundScheduler(timezone="UTC")
    schedule.add_jobs(sched, Settings(), lambda: None, lambda: None)
    assert {j.id for j in sched.get_jobs()} == {schedule.JOB_ID, schedule.WEEKLY_ID}
    quiet = BackgroundScheduler(timezone="UTC")
    schedule.add_jobs(quiet, Settings(report=ReportSettings(weekly="")), lambda: None, lambda: None)
    assert {j.id for j in quiet.get_jobs()} == {schedule.JOB_ID}


def test_the_dashboard_shows_the_funnel_each_familys_rate_and_what_skillopt_learned(
    world: dict[str, Any],
) -> None:
    from fastapi.testclient import TestClient

    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.service.dashboard import ensure_token
    from skillopt_daemon.web.app import create_app

    token = ensure_token()
    with TestClient(create_app(load_settings()), base_url="http://127.0.0.1:8765") as client:
        assert client.get(f"/?token={token}", follow_redirects=False).status_code == 303
        page = client.get("/outcomes")
        assert page.status_code == 200
        html = page.text
        assert 'id="funnel"' in html and "recurrences after install" in html
        assert "logging-house-rules" in html
        assert '<svg class="chart"' in html and "29% of sessions corrected before the rule" in html
        assert "0% of sessions corrected after the rule" in html
        assert RULES["logging"] in html and "not working" in html
        overview = client.get("/").text
        assert "What skillopt learned" in overview and 'href="/outcomes"' in overview
        assert "1 not working" in overview and "1 working" in overview


def test_a_rule_a_later_version_rewrote_is_replaced_not_judged(world: dict[str, Any]) -> None:
    # last in this module: it changes the changelog skill the tests above read
    db = world["db"]
    reg = Registry(db, actor="test")
    current = reg.current_version("changelog-house-rules")
    assert current is not None
    bundle = reg.load_bundle(current.id)
    doc = bundle.doc
    stronger = doc.with_body(doc.body.replace(RULES["changelog"], "Add every changelog entry at the top."))
    v3 = reg.propose("changelog-house-rules", bundle.with_doc(stronger), evidence={})
    reg.approve(v3.id)
    (o,) = [o for o in outcomes.assess(db, world["settings"].report) if o.rule.line == RULES["changelog"]]
    assert o.rule.state == "replaced" and o.verdict == outcomes.TOO_EARLY
    assert RULES["changelog"] not in [d["rule"]["line"] for d in outcomes.report(db)["learned"]]


def test_with_the_models_labels_the_same_correction_in_another_language_recurs(tmp_path: Path) -> None:
    from skillopt_daemon.night.mining.labels import Request

    db = open_db(tmp_path / "labels.db")
    learned, again, other = "no noqa, fix the code", "不要加 noqa，修代码", "不要加 noqa，先跑测试"
    task, later = "make lint is failing, please fix", "lint fails in app/dates.py, fix it"
    rows = [
        (learned, task, ["Do not use noqa comments; fix the code"]),
        (again, later, ["Do not add noqa comments, fix the code instead"]),
        (other, later, ["Run the tests before committing"]),
    ]
    with db.conn:
        db.table("request_labels").insert_all(
            {"hash": Request(t, p).hash, "kind": "correction", "rules_json": json.dumps(r)}
            for t, p, r in rows
        )
    rule = outcomes.Rule(
        skill="lint",
        version_id="v",
        version="lint@v2",
        line="Never silence lint with # noqa.",
        learned_from=[{"text": learned, "task_id": "t1"}],
        families=["f"],
        state="installed",
        proposed_at="",
        installed_at="",
        tokens=0,
        cost_usd=0.0,
    )
    labels = outcomes.Labels(db, [(learned, task), (again, later), (other, later)])
    m = outcomes.Matcher(rule, labels, {"t1": task})
    assert m.same(again, later)  # the model read the same rule in Chinese
    assert not m.same(other, later)  # another rule, though it names noqa too
    lexical = outcomes.Matcher(rule, outcomes.Labels(open_db(tmp_path / "empty.db"), []), {"t1": task})
    assert not lexical.same(again, later)  # without a model, too few shared words to say so
    assert lexical.same("no noqa here, fix the code", "")


def test_the_overview_reads_the_installed_rules_not_last_nights_record(world: dict[str, Any]) -> None:
    """A rule rolled back and put back after the last night recorded the rules (or installed before any
    night judged it) is installed now: the overview says so, with the Outcomes page's verdicts."""
    from fastapi.testclient import TestClient

    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.service.dashboard import ensure_token
    from skillopt_daemon.web.app import create_app

    db = world["db"]
    kept = list(db.query(f"SELECT * FROM {outcomes.TABLE}"))
    with db.conn:
        db.execute(f"DELETE FROM {outcomes.TABLE}")  # what no night has judged since the put-back
    try:
        token = ensure_token()
        with TestClient(create_app(load_settings()), base_url="http://127.0.0.1:8765") as client:
            assert client.get(f"/?token={token}", follow_redirects=False).status_code == 303
            # The module's world is shared (earlier tests approve removals), so the rules are read, not
            # assumed: every rule the Outcomes page counts is on the overview, each with a verdict.
            report = outcomes.report(db, world["settings"].report)
            learned = [r["rule"]["line"] for r in report["learned"]]
            assert learned
            overview = " ".join(re.sub(r"<[^>]+>", " ", client.get("/").text).split())
            assert "No learned rule installed yet" not in overview
            assert RULES["logging"] in overview and "working" in overview
            assert all(line[:40] in overview for line in learned[:5]), (learned, overview)
    finally:
        with db.conn:
            db.table(outcomes.TABLE).insert_all(kept)
