"""User scope for a new rule only when it does no harm to other repositories' work: replays where both
arms failed are uninformative, never "not worse"."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from skillopt_daemon.core.config import NightSettings
from skillopt_daemon.night.learning import noharm
from skillopt_daemon.night.learning.context import night_gate
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.gate import Gate, PairedMeasure, Request
from testkit.repos import git_repo


def tasks(n: int, repo: Path, family: str = "fam-other", split: str = "val") -> list[NightTask]:
    return [
        NightTask(
            id=f"{family}-{repo.name}-{i}", prompt=f"task {i}", split=split, family=family, repo=str(repo)
        )
        for i in range(n)
    ]


def scripted(incumbent: float, candidate: float) -> PairedMeasure:
    """Every replay without the rule scores `incumbent`, every one with it `candidate`."""

    def measure(requests: Sequence[Request]) -> list[float]:
        return [candidate if arm == "candidate" else incumbent for _item, arm in requests]

    return measure


GATE = Gate(night_gate(NightSettings()))


def test_pairs_where_both_failed_are_uninformative_not_no_harm(tmp_path: Path) -> None:
    sample = tasks(28, git_repo(tmp_path / "other"))
    verdict = noharm.check(GATE, scripted(0.0, 0.0), sample)
    assert not verdict.ok
    assert verdict.measured == 28 and verdict.informative == 0
    assert "all 28 replayed item(s) failed with it and without it (uninformative)" in verdict.why


def test_a_rule_that_does_not_lose_keeps_user_scope_and_one_that_loses_does_not(tmp_path: Path) -> None:
    sample = tasks(6, git_repo(tmp_path / "other"))
    kept = noharm.check(GATE, scripted(1.0, 1.0), sample)
    assert kept.ok and kept.informative == 6
    assert "does not lose" in kept.why
    lost = noharm.check(GATE, scripted(1.0, 0.0), sample)
    assert not lost.ok and "loses on the replays" in lost.why


def test_the_sample_is_other_families_held_out_work_in_other_repositories(tmp_path: Path) -> None:
    app, other = git_repo(tmp_path / "app"), git_repo(tmp_path / "other")
    pool = [
        *tasks(3, app),  # the rule's own repository: not a sample of elsewhere
        *tasks(3, other, family="fam-rule"),  # the rule's own family
        *tasks(2, other, split="train"),  # not held out
        *tasks(20, other),
    ]
    sample = noharm.other_tasks(pool, "fam-rule", [str(app)], limit=5)
    assert len(sample) == 5
    assert all(t.family == "fam-other" and t.split == "val" and t.repo == str(other) for t in sample)
    assert noharm.other_tasks(pool, "fam-rule", [str(app)], limit=5) == sample  # the same every night
    assert not noharm.check(GATE, scripted(1.0, 1.0), []).ok


def test_without_no_harm_the_rule_is_proposed_in_its_repositories_with_the_reason() -> None:
    placed = {
        "scope": "user",
        "why": "its evidence spans 2 repositories",
        "repositories": [
            {"repo": "/src/app", "tools": ["claude-code"]},
            {"repo": "/src/web", "tools": ["codex"]},
            {"repo": "/src/seen", "tools": ["codex"]},
        ],
        "evidence_repositories": ["/src/app", "/src/web"],
        "tools": ["claude-code", "codex"],
        "targets": ["claude-code:user", "codex:user"],
    }
    moved = noharm.user_scope(placed, noharm.Verdict(False, "it loses on the replays"))
    assert moved["scope"] == "project"
    assert moved["targets"] == ["claude-code:project:/src/app", "codex:project:/src/web"]
    assert "user scope was not shown to do no harm elsewhere (it loses on the replays)" in moved["why"]
    assert moved["no_harm"]["ok"] is False
    kept = noharm.user_scope(placed, noharm.Verdict(True, "it does not lose on the replays"))
    assert kept["scope"] == "user" and kept["targets"] == ["claude-code:user", "codex:user"]


def test_not_losing_on_too_few_items_does_not_show_no_harm(tmp_path: Path) -> None:
    """A tie on a handful of items is what a 10-point harm looks like on one pair each."""
    sample = tasks(4, git_repo(tmp_path / "other"))
    tied = noharm.check(GATE, scripted(1.0, 1.0), sample)
    assert not tied.ok and tied.informative == 4
    assert "too few items to tell that from a harm" in tied.why

    def one_each(requests: Sequence[Request]) -> list[float]:
        # the rule wins on v0, loses on v1, ties (both pass) on the rest
        out = {"0": (0.0, 1.0), "1": (1.0, 0.0)}
        return [out.get(item[-1], (1.0, 1.0))[arm == "candidate"] for item, arm in requests]

    even = noharm.check(GATE, one_each, tasks(8, git_repo(tmp_path / "more")))
    assert not even.ok and "1 better, 1 worse" in even.why


def test_the_benchmark_measures_the_check_as_the_night_runs_it() -> None:
    """`benchmarks/gate.py --noharm`: harmful rules rarely reach user scope, helpful ones more often, and
    each decision replays one pair per sampled group (never more than the night's sample)."""
    from benchmarks.gate import noharm_cell

    row = noharm_cell(("beta0.5", 20, 400, 7))
    assert row["sample"] == noharm.SAMPLE_GROUPS
    assert row["user_-10"] <= 0.12 and row["user_skew"] <= 0.15
    assert row["user_10"] > row["user_0"] > row["user_-10"]
    assert all(row[f"runs_{e}"] == 2 * noharm.SAMPLE_GROUPS for e in ("-10", "skew", "0", "10"))
