"""Budgets in the user's terms: tokens count at what they cost, a target starts only when every cap can pay
for its whole plan (money included, before the first replay), the night takes first the work that teaches
most for what it costs, and a night a cap stopped says which cap and the setting that raises it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.night import runs
from skillopt_daemon.night.budgets import NightBudget, NightBudgetExceeded
from skillopt_daemon.night.cycle import record_stop
from skillopt_daemon.night.learning.context import NightContext
from skillopt_daemon.night.learning.training import Job, expected_runs, project, train_new
from skillopt_daemon.night.mining.attempts import Attempt
from skillopt_daemon.night.mining.mine import Family
from skillopt_daemon.night.replay_cost import TOKENS_PER_REPLAY, load_past, tokens_per_replay, usd_per_replay
from skillopt_daemon.night.report import CycleReport, SkillOutcome
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.agents import AgentTool
from skillopt_lib.backends.base import cache_read_ratio
from skillopt_lib.usage import Usage
from testkit import cli


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))


def _budget(**caps: float) -> NightBudget:
    values = {"max_tokens": 10**9, "max_cost_usd": 100.0, "max_wall_s": 3600.0, "max_replays": 1000, **caps}
    return NightBudget(**values)  # type: ignore[arg-type]


def _context(tmp_path: Path, budget: NightBudget) -> NightContext:
    return NightContext(
        db=open_db(tmp_path / "store.db"),
        settings=Settings(),
        report=CycleReport(run_id="r", trigger="manual", status="running", dry_run=False, started_at="now"),
        budget=budget,
        dry_run=False,
        say=lambda _m: None,
    )


def _rows(train: int, val: int) -> list[NightTask]:
    rows = [NightTask(id=f"t{i}", prompt="fix lint", split="train") for i in range(train)]
    return rows + [NightTask(id=f"v{i}", prompt="fix lint", split="val") for i in range(val)]


def _family(fid: str, n: int, corrections: int = 0) -> Family:
    attempts = [
        Attempt(
            key=f"{fid}-a{i}",
            tool="claude-code",
            session_id=f"{fid}-s{i}",
            prompt="fix lint",
            corrections=["use ruff, not flake8"] if i < corrections else [],
        )
        for i in range(n)
    ]
    return Family(id=fid, name=f"fix lint {fid}", attempts=attempts)


# A Claude Code replay as its result event reports it: nearly all of the prompt read from the cache.
REPLAY = Usage(
    input_tokens=1_000 + 5_000 + 90_000,
    output_tokens=2_000,
    calls=4,
    cost_usd=0.09,
    cache_read_tokens=90_000,
    cache_write_tokens=5_000,
)


def test_cache_reads_count_at_their_price_against_the_token_cap() -> None:
    """98k raw tokens of which 90k cache reads cost what 17k fresh ones do: a 20k cap is not reached, and the
    spend keeps the raw counts for the report."""
    assert cache_read_ratio("claude-sonnet-4-5") == pytest.approx(0.1)
    assert cache_read_ratio("gpt-4.1") == pytest.approx(0.25)  # OpenAI: the model's cached-input price
    budget = _budget(max_tokens=20_000)
    budget.add(REPLAY, read_ratio=cache_read_ratio("claude-sonnet-4"), tool="claude-code")
    assert budget.tokens == 1_000 + 5_000 + 2_000 + 9_000
    budget.check()  # counted raw (98k) this would have stopped the night
    spend = budget.to_dict()
    assert (spend["fresh_tokens"], spend["cache_write_tokens"], spend["cache_read_tokens"]) == (
        1_000,
        5_000,
        90_000,
    )
    assert spend["output_tokens"] == 2_000 and spend["by_tool"]["claude-code"]["tokens"] == 17_000
    budget.add(REPLAY, read_ratio=0.1, tool="claude-code")
    with pytest.raises(NightBudgetExceeded, match=r"token cap \(20,000 tokens, night.max_tokens\)"):
        budget.check()


def test_a_family_the_budget_cannot_finish_spends_nothing(tmp_path: Path) -> None:
    """Before the first replay the money cap is checked at what a replay is projected to cost: a new-skill
    family whose plan (12 replays: two train rollouts and one pair for each of five validation groups,
    about $4.80) does not fit $4 waits with the reason and the setting, and is never drafted (the night's
    optimizer is not even open: a draft would raise) nor replayed."""
    budget = _budget(max_cost_usd=4.0)
    ctx = _context(tmp_path, budget)
    fam = _family("fam-1", 7)
    out = train_new(ctx, fam, set(), (AgentTool.CLAUDE_CODE, _rows(train=2, val=5)))
    assert out.status == "waited" and out.new and out.family == "fam-1"
    assert "needs about ≈ $4.80 est. for 12 replays" in out.reason
    assert "left (night.max_cost_usd); it goes first next night" in out.reason
    assert (budget.replays, budget.model_calls, budget.tokens, budget.cost_usd) == (0, 0, 0, 0.0)


def test_the_last_nights_measure_plans_the_first_replay(tmp_path: Path) -> None:
    """What a replay cost on the last nights, per tool, is what tonight plans with before its first replay;
    the night's optimizer and judge spend is shared over its replays."""
    db = open_db()
    report = CycleReport(
        run_id="n1", trigger="manual", status="completed", dry_run=False, started_at=utcnow_iso()
    )
    runs.record_start(db, "n1", "manual", False)
    spent = _budget()
    for _ in range(10):
        spent.reserve_replay()  # as `BudgetedAgent.run` does
        spent.add(REPLAY, read_ratio=0.1, tool="claude-code")  # 17k tokens, $0.09 a replay
    spent.add(Usage(input_tokens=30_000, calls=1, cost_usd=0.1))  # the optimizer: 3k tokens, 1 cent a replay
    report.spend = spent.to_dict()
    runs.record_end(db, report)
    fresh = _budget()
    assert tokens_per_replay(fresh, "claude-code") == TOKENS_PER_REPLAY  # nothing loaded yet: the default
    fresh.past = load_past(db)
    assert tokens_per_replay(fresh, "claude-code") == pytest.approx(20_000)
    assert usd_per_replay(fresh, "claude-code") == pytest.approx(0.10)


def test_targets_go_by_corrections_per_projected_dollar(tmp_path: Path) -> None:
    """A small family with two corrections is worth more per dollar than a large one with three; a target
    that waited last night still goes first whatever its value."""
    ctx = _context(tmp_path, _budget())
    small = Job("small", [_family("f-small", 7, corrections=2)], False, (AgentTool.CLAUDE_CODE, []))
    small.projection = project(ctx, _rows(train=2, val=5), AgentTool.CLAUDE_CODE, None, corrections=2)
    large = Job("large", [_family("f-large", 16, corrections=3)], False, (AgentTool.CLAUDE_CODE, []))
    large.projection = project(ctx, _rows(train=2, val=14), AgentTool.CLAUDE_CODE, None, corrections=3)
    plain = Job("plain", [_family("f-plain", 9)], False, (AgentTool.CLAUDE_CODE, []))
    plain.projection = project(ctx, _rows(train=2, val=6), AgentTool.CLAUDE_CODE, None)
    assert (small.projection.replays, large.projection.replays) == (12, 30)
    assert small.projection.usd == pytest.approx(12 * 0.40)
    order = [j.name for j in sorted([plain, large, small], key=lambda j: j.priority(set()))]
    assert order == ["small", "large", "plain"]
    order = [j.name for j in sorted([plain, large, small], key=lambda j: j.priority({"plain"}))]
    assert order == ["plain", "small", "large"]


def test_status_says_when_a_waiting_target_is_expected_to_run() -> None:
    """Waiting targets go first the next nights, in order: one runs once the caps have paid for it and those
    before it."""
    budget = _budget(max_replays=60)
    first = SkillOutcome("a", "waited", projected={"replays": 37, "tokens": 0, "cost_usd": 0.0})
    second = SkillOutcome("b", "waited", projected={"replays": 100, "tokens": 0, "cost_usd": 0.0})
    expected_runs(budget, [first, second])
    assert first.projected is not None and first.projected["expected"] == "next night"
    assert second.projected is not None and second.projected["expected"] == "in about 3 nights"


def test_a_night_stopped_by_a_cap_says_which_and_the_setting_to_raise(tmp_path: Path) -> None:
    """`sleep history` and `status` name the cap that stopped the night, what it spent, and the command that
    raises the cap; the night is recorded as `budget`, not `completed`."""
    db = open_db()
    report = CycleReport(
        run_id="n2", trigger="manual", status="completed", dry_run=False, started_at=utcnow_iso()
    )
    runs.record_start(db, "n2", "manual", False)
    budget = _budget(max_cost_usd=20.0)
    for _ in range(54):
        budget.reserve_replay()
        budget.add(
            Usage(input_tokens=1_000, output_tokens=100, calls=1, cost_usd=0.375),
            tool="claude-code",
            priced_by="claude-code's own figure",
        )
    with pytest.raises(NightBudgetExceeded):
        budget.check()
    report.spend = budget.to_dict()
    record_stop(report, budget)
    runs.record_end(db, report)

    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
    env.update(SKILLOPT_HOME=str(tmp_path / "home"), HOME=str(tmp_path), SKILLOPT_NO_DESKTOP_NOTIFY="1")
    rows = json.loads(cli.run("sleep", "history", "--json", env=env).stdout)
    assert rows[0]["status"] == "budget"
    stopped = rows[0]["summary"]["stopped"]
    assert (stopped["cap"], stopped["setting"]) == ("cost", "night.max_cost_usd")
    assert stopped["raise"] == "skillopt config set night.max_cost_usd 40"
    table = cli.run("sleep", "history", env=env).stdout
    assert "money cap" in " ".join(table.split())
    shown = " ".join(cli.run("status", env=env).stdout.split())
    assert (
        re.search(r"Last night \(\d{4}-\d\d-\d\d\): budget", shown)
        and "stopped by the money cap (≈ $20.00 est., night.max_cost_usd)" in shown
    )
    assert "after 54 replays" in shown and "≈ $20.25 est. (claude-code's own figure)" in shown
    assert "`skillopt config set night.max_cost_usd 40`" in shown
