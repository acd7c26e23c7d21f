"""A teammate's rule for a skill this user does not have: it seeds the new skill of the user's recurring
work it describes (`shared_rules.seeds`), measured against a draft with the rule's name and nothing in its
body, and a proposal built on it says where it came from. A rule none of the user's work matches stays
queued and says why. The trainer is replaced by one that reports a decision, as in `test_night_hook.py`
(the real trainer's handling of a carried rule is `test_shared_rule_gate.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_night_hook import _decided_by

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.learning import shared_rules, training
from skillopt_daemon.night.learning.context import NightContext
from skillopt_daemon.night.learning.shared_rules import SharedRule
from skillopt_daemon.night.mining.attempts import Attempt, CommandRun
from skillopt_daemon.night.mining.mine import Family, build_families, save_families
from skillopt_daemon.night.report import CycleReport
from skillopt_daemon.night.tasks import NightTask
from skillopt_daemon.registry.evidence import NightEvidence
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import SkillBundle, SkillDoc
from testkit.repos import git_repo

LINT_RULE = SkillBundle.from_doc(
    SkillDoc.new(
        "lint-fixes",
        "How to fix the errors make lint reports. Use when the linter fails.",
        "# Lint fixes\n\n- Fix the code the linter flags; never silence it with noqa.\n",
    )
)
SQL_RULE = SkillBundle.from_doc(
    SkillDoc.new(
        "sql-reports",
        "How to write the finance SQL reports. Use when a report query changes.",
        "# SQL reports\n\n- Name the columns; never SELECT *.\n",
    )
)


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NightContext:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))
    return NightContext(
        db=open_db(),
        settings=Settings(),
        report=CycleReport(run_id="r", trigger="manual", status="running", dry_run=False, started_at="now"),
        budget=NightBudget(max_tokens=10**9, max_cost_usd=100.0, max_wall_s=3600.0, max_replays=1000),
        dry_run=False,
        say=lambda _m: None,
    )


def _attempts(prefix: str, prompts: list[str], repo: Path) -> list[Attempt]:
    return [
        Attempt(
            key=f"claude-code:{prefix}{i}:u{i}",
            tool="claude-code",
            session_id=f"{prefix}{i}",
            prompt=prompt,
            started_at=f"2026-11-{i + 1:02d}T00:00:00.000Z",
            project_path=str(repo),
            commands=[CommandRun("make lint" if prefix == "l" else "python3 scripts/check_changelog.py", 0)],
        )
        for i, prompt in enumerate(prompts)
    ]


LINT = [f"fix the lint errors make lint reports in module{i}.py" for i in range(6)]
CHANGELOG = [f"add a changelog entry for release 1.{i}.0" for i in range(5)]


def _families(ctx: NightContext, tmp_path: Path) -> list[Family]:
    repo = git_repo(tmp_path / "app")
    families = build_families(_attempts("l", LINT, repo) + _attempts("c", CHANGELOG, repo), seed=1)
    save_families(ctx.db, families, seed=1)
    assert sum(1 for f in families if any("lint" in a.prompt for a in f.attempts)) == 1
    return families


def _tasks(fam: Family) -> list[NightTask]:
    """The family's tasks as the night replays them (the replays themselves are the stand-in's)."""
    splits = ["train", "train", "val", "val", "val", "val"]
    return [
        NightTask(id=a.key, prompt=a.prompt, split=split, family=fam.id, tool=a.tool, repo=a.project_path)
        for a, split in zip(fam.attempts, splits, strict=True)
    ]


def _queue(ctx: NightContext, bundle: SkillBundle) -> SharedRule:
    rule = SharedRule(
        f"skillopt/ada/{bundle.doc.name}-1:{bundle.doc.name}", bundle.doc.name, "Ada", bundle, "c0"
    )
    shared_rules.receive(ctx.db, rule)
    return rule


def test_a_rule_seeds_the_family_it_describes_and_one_nothing_matches_says_so(
    ctx: NightContext, tmp_path: Path
) -> None:
    families = _families(ctx, tmp_path)
    lint = next(f for f in families if any("lint" in a.prompt for a in f.attempts))
    lint_rule, sql_rule = _queue(ctx, LINT_RULE), _queue(ctx, SQL_RULE)
    seeds = shared_rules.seeds(ctx.db, families, installed=set())
    assert {fid: r.key for fid, r in seeds.items()} == {lint.id: lint_rule.key}
    got = shared_rules.get(ctx.db, sql_rule.key)
    assert got is not None and (got.state, got.note) == ("queued", shared_rules.UNMATCHED)
    # A skill the user has is the installed skill's business, never a new one's.
    assert shared_rules.seeds(ctx.db, families, installed={"lint-fixes", "sql-reports"}) == {}


def test_the_seeded_new_skill_is_proven_against_no_rule_and_proposed_as_the_teams(
    ctx: NightContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    families = _families(ctx, tmp_path)
    lint = next(f for f in families if any("lint" in a.prompt for a in f.attempts))
    rule = _queue(ctx, LINT_RULE)
    given = _decided_by(monkeypatch, accepted=True, better=3, worse=0)
    tasks = _tasks(lint)
    outcome = training.train_new(ctx, lint, set(), (AgentTool.CLAUDE_CODE, tasks), rule)
    carried: Any = given[0]
    assert carried.pending.skill.content_hash == rule.content_hash and carried.pending.evidence.pairs == {}
    draft = carried.incumbent
    assert (draft.doc.name, draft.doc.description) == (LINT_RULE.doc.name, LINT_RULE.doc.description)
    assert "noqa" not in draft.doc.body  # the draft holds nothing of the rule's instructions
    assert outcome.status == "proposed", outcome.reason
    assert outcome.new and outcome.skill == "lint-fixes"
    assert outcome.reason.startswith("from the team (published by Ada), proven on 3 of your tasks; ")
    proposal = ctx.registry.get_version(outcome.proposal_id)
    assert proposal.evidence["new_skill"] and proposal.evidence["scope"]["scope"] == "project"
    # Everything the night wrote is a field the registry's model declares: the faces read no unknown key.
    assert NightEvidence.model_validate(proposal.evidence).model_extra == {}, proposal.evidence.keys()
    got = shared_rules.get(ctx.db, rule.key)
    assert got is not None and (got.state, got.verdict, got.better) == ("decided", "helped", 3)


def test_a_seeded_rule_that_does_not_help_is_not_proposed(
    ctx: NightContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    families = _families(ctx, tmp_path)
    lint = next(f for f in families if any("lint" in a.prompt for a in f.attempts))
    rule = _queue(ctx, LINT_RULE)
    _decided_by(monkeypatch, accepted=False, better=0, worse=0)
    tasks = _tasks(lint)
    outcome = training.train_new(ctx, lint, set(), (AgentTool.CLAUDE_CODE, tasks), rule)
    assert outcome.proposal_id is None
    got = shared_rules.get(ctx.db, rule.key)
    assert got is not None and (got.state, got.verdict) == ("decided", "unmeasured")
