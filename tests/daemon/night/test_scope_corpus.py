"""The scope corpus (real `claude` and `codex` sessions): the changelog kept newest first in the handbook and
oldest first in the site, one lint rule given alike in three repositories, test writing in the etl that
needs no rule. What its labels promise, and what mining at its defaults makes of it: the two opposite
conventions are two families, each in its own repository, and the alike rule one family over its three
repositories (so its skill may be proposed for user scope, `night/mining/scope.py`). No replays here: whole nights on
this corpus are `python -m benchmarks.scope`.

Re-record with `python -m testkit.corpus.record --corpus scope` (see docs/testing.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlite_utils

from skillopt_daemon.night.mining import mine
from testkit.corpus import night_world
from testkit.corpus.load import SCOPE, Labels, read_labels
from testkit.corpus.record import make_repos
from testkit.corpus.spec import SCOPE_KINDS, SCOPE_REPOS, scope_family, scope_sessions
from testkit.corpus_store import corpus_store

CHANGELOGS = ("changelog", "changelog-site")
LINTS = ("lint", "lint-site", "lint-handbook")


@pytest.fixture(scope="module")
def labels() -> Labels:
    return read_labels(SCOPE)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, labels: Labels) -> Iterator[sqlite_utils.Database]:
    with corpus_store(tmp_path_factory.mktemp("scope"), SCOPE, labels) as db:
        yield db


def test_the_recording_is_the_spec(labels: Labels) -> None:
    want = [
        (s.key, s.family, s.index, s.role, s.tool, s.mode, s.split, [(t.text, t.kind) for t in s.turns])
        for s in scope_sessions()
    ]
    got = [
        (s["key"], s["kind"], s["index"], s["role"], s["tool"], s["mode"], s["split"],
         [(t["text"], t["kind"]) for t in s["turns"]])
        for s in labels.sessions
    ]  # fmt: skip
    assert got == want
    assert len({s["session_id"] for s in labels.sessions}) == len(labels.sessions) == 45
    fams = labels.families
    assert {fams[k]["repo"] for k in CHANGELOGS} == {"handbook", "site"}
    assert {fams[k]["repo"] for k in LINTS} == {"webapp", "site", "handbook"}
    # Corrections in four languages; the etl's kind was never corrected.
    assert {fams[k]["rule_language"] for k in fams if fams[k]["rule_said"]} == {"de", "en", "es", "it"}
    assert not fams["tests"]["rule_said"]
    assert not any(
        t["kind"] == "correction" for s in labels.sessions if s["kind"] == "tests" for t in s["turns"]
    )
    for kind in SCOPE_KINDS:
        mine = [s for s in labels.sessions if s["kind"] == kind]
        assert {s["tool"] for s in mine} == {"claude-code", "codex"}, kind
        assert {s["mode"] for s in mine} == {"headless", "interactive"}, kind
        assert {s["split"] for s in mine} == {"tune", "heldout"}, kind


def test_each_request_names_one_kind() -> None:
    """The scripted agent knows a request's kind by its words: no request is inside another kind's."""
    prompts = [(k, p) for k in SCOPE_KINDS for p in scope_family(k).prompts]
    assert not [(a, pa, b) for a, pa in prompts for b, pb in prompts if a != b and pa in pb]


def test_each_kinds_work_passes_its_check_and_breaks_the_rule_where_the_judge_looks(tmp_path: Path) -> None:
    """Both ways of doing the work pass the project's check (only the user's rule tells them apart), and
    each convention is the other repository's violation."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    repos = make_repos(tmp_path, SCOPE_REPOS)
    for kind in SCOPE_KINDS:
        fam = scope_family(kind)
        repo = repos[fam.repo]
        for content in (fam.first_try, fam.after_correction):
            (repo / fam.work_file).parent.mkdir(parents=True, exist_ok=True)
            (repo / fam.work_file).write_text(content)
            run = subprocess.run(fam.check, shell=True, cwd=repo, env=env, capture_output=True, text=True)
            assert run.returncode == 0, (kind, run.stdout, run.stderr)
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], check=True)
        subprocess.run(["git", "-C", str(repo), "clean", "-fdq"], check=True)
        violation = night_world.VIOLATIONS[kind]
        assert re.search(violation, fam.first_try) and not re.search(violation, fam.after_correction), kind
    top, end = (scope_family(k) for k in CHANGELOGS)
    assert top.rule != end.rule
    assert not re.search(night_world.VIOLATIONS["changelog-site"], end.after_correction)
    assert re.search(
        night_world.VIOLATIONS["changelog-site"], end.first_try
    )  # newest first: the site's wrong


def _placed(result: mine.MiningResult, labels: Labels) -> dict[str, Counter[str]]:
    """Per kind, how many of its attempts each family holds."""
    spec = labels.by_session()
    family_of = result.family_of()
    placed: dict[str, Counter[str]] = defaultdict(Counter)
    for a in result.attempts:
        fam = family_of.get(a.key)
        placed[spec[(a.tool, a.session_id)]["kind"]][fam.id if fam else "none"] += 1
    return placed


def _kinds_of(placed: dict[str, Counter[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for kind, fams in placed.items():
        for fid in fams:
            out[fid].add(kind)
    return out


def test_mining_at_its_defaults_splits_the_opposite_conventions_and_keeps_the_alike_rule_whole(
    store: sqlite_utils.Database, labels: Labels, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = mine.mine_detailed(store)
    placed = _placed(result, labels)
    kinds_of = _kinds_of(placed)
    main = {kind: placed[kind].most_common(1)[0][0] for kind in SCOPE_KINDS}
    families = {f.id: f for f in result.families}
    rules = {k: mine.rubric_item(labels.families[k]["rule"]) for k in labels.families}
    # The changelog's two conventions: two families, each all of its kind's work and nothing of the other's,
    # each in its repository with its own rule and not the other's.
    top, end = main["changelog"], main["changelog-site"]
    assert top != end
    for fid, kind, other in ((top, "changelog", "changelog-site"), (end, "changelog-site", "changelog")):
        assert placed[kind] == {fid: len(SCOPE_KINDS[kind])}, placed[kind]
        assert kinds_of[fid] == {kind}
        assert [Path(p).name for p in families[fid].projects] == [labels.families[kind]["repo"]]
        assert rules[kind] in families[fid].rubric and rules[other] not in families[fid].rubric
    # The lint rule, given alike in three repositories: its work's family spans the three, with every
    # wording, and no family of lint work is one repository's part of a split.
    (lint,) = {main[k] for k in LINTS}
    assert kinds_of[lint] == set(LINTS)
    assert sorted(Path(p).name for p in families[lint].projects) == ["handbook", "site", "webapp"]
    assert {rules[k] for k in LINTS} <= set(families[lint].rubric)
    assert sum(placed[k][lint] for k in LINTS) >= 0.6 * sum(len(SCOPE_KINDS[k]) for k in LINTS)
    # The etl's test writing is a family of its own.
    assert placed["tests"] == {main["tests"]: len(SCOPE_KINDS["tests"])} and kinds_of[main["tests"]] == {
        "tests"
    }

    # It is the split by repository that parts the changelog's conventions (their requests cluster as one
    # kind of work), and it leaves the lint work as the clustering found it.
    monkeypatch.setattr(mine, "split_by_repository", lambda _attempts, members: [members])
    whole = _placed(mine.mine_detailed(store), labels)
    assert {whole["changelog"].most_common(1)[0][0]} == {whole["changelog-site"].most_common(1)[0][0]}
    assert sorted(sorted(whole[k].values()) for k in LINTS) == sorted(
        sorted(placed[k].values()) for k in LINTS
    )
