"""The nights corpus (real `claude` and `codex` sessions of a new user's first weeks): what its labels promise,
that it ingests and mines with the real pipeline, and the night world built from its first sessions.

Re-record with `python -m testkit.corpus.record --corpus nights` (see docs/testing.md).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from sklearn.metrics import adjusted_rand_score

from benchmarks.mining import truth_and_prediction
from skillopt_daemon.core.timeutil import to_iso, utcnow
from skillopt_daemon.night.mining import mine
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.corpus import night_world
from testkit.corpus.load import NIGHTS, Labels, read_labels
from testkit.corpus.record import make_repos
from testkit.corpus.spec import NIGHT_FAMILIES, NIGHT_SPLIT, night_sessions
from testkit.corpus_store import corpus_store
from testkit.learning_night import LearningNight

KINDS = [f.id for f in NIGHT_FAMILIES]


@pytest.fixture(scope="module")
def labels() -> Labels:
    return read_labels(NIGHTS)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, labels: Labels) -> Iterator[sqlite_utils.Database]:
    with corpus_store(tmp_path_factory.mktemp("nights"), NIGHTS, labels) as db:
        yield db


def _by_kind(labels: Labels) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in labels.sessions:
        if s["family"]:
            out[s["family"]].append(s)
    return out


def test_the_recording_is_the_spec(labels: Labels) -> None:
    """Every session the spec asks for, in its order, with its turns, tool, mode and role."""
    want = [
        (
            s.key,
            s.family,
            s.index,
            s.role,
            s.tool,
            s.mode,
            s.split,
            s.subagent,
            [(t.text, t.kind) for t in s.turns],
        )
        for s in night_sessions()
    ]
    got = [
        (s["key"], s["kind"], s["index"], s["role"], s["tool"], s["mode"], s["split"], s["subagent"],
         [(t["text"], t["kind"]) for t in s["turns"]])
        for s in labels.sessions
    ]  # fmt: skip
    assert got == want
    assert len({s["session_id"] for s in labels.sessions}) == len(labels.sessions) == 120


def test_every_prefix_of_four_sessions_holds_a_correction_and_only_some_sessions_do(labels: Labels) -> None:
    kinds = _by_kind(labels)
    assert sorted(kinds) == sorted(KINDS)
    roles: Counter[str] = Counter()
    for kind, sessions in kinds.items():
        assert [s["index"] for s in sessions] == list(range(14)), kind  # in time order
        corrected = [s["index"] for s in sessions if s["role"] == "corrected"]
        assert corrected[0] in (1, 2), kind
        for n in range(4, 15):
            assert any(i < n for i in corrected), (kind, n)
        for s in sessions:
            said = [t["kind"] for t in s["turns"]]
            # A correction, verbatim, exactly in the corrected sessions; never in a failure or a plain one.
            assert ("correction" in said) == (s["role"] == "corrected"), s["key"]
            if s["role"] == "corrected":
                assert labels.families[kind]["rule"] in [t["text"] for t in s["turns"]]
        roles.update(s["role"] for s in sessions)
        assert {s["tool"] for s in sessions} == {"claude-code", "codex"}, kind
        assert {s["mode"] for s in sessions} == {"headless", "interactive"}, kind
        assert {s["role"] for s in sessions} == {"plain", "corrected", "failure"}, kind
    total = sum(roles.values())
    assert 0.25 <= roles["corrected"] / total <= 0.35, roles
    assert 0.15 <= roles["failure"] / total <= 0.20, roles
    # Corrections and failures come from both tools, sub-agents from a few sessions, and one-offs from every
    # repository.
    assert {s["tool"] for s in labels.sessions if s["role"] == "corrected"} == {"claude-code", "codex"}
    assert {s["tool"] for s in labels.sessions if s["role"] == "failure"} == {"claude-code", "codex"}
    assert 2 <= sum(s["subagent"] for s in labels.sessions) <= 4
    one_offs = [s for s in labels.sessions if s["family"] is None]
    assert len(one_offs) == 8 and {s["repo"] for s in one_offs} == {"webapp", "etl", "handbook", "shop"}


def test_the_kinds_split_in_two_halves_over_every_repository_and_language(labels: Labels) -> None:
    fams = labels.families
    assert {f: fams[f]["split"] for f in fams} == NIGHT_SPLIT
    assert night_world.corpus_kinds("tune") == ["lint", "logging", "changelog", "config"]
    assert night_world.corpus_kinds("heldout") == ["types", "tests", "mdlint", "sql"]
    halves = {h: [f for f in fams if fams[f]["split"] == h] for h in ("tune", "heldout")}
    assert all(len(v) == 4 for v in halves.values())
    for kinds in halves.values():
        assert {fams[f]["repo"] for f in kinds} == {"webapp", "etl", "handbook", "shop"}
    languages = [fams[f]["rule_language"] for f in fams]
    assert len(set(languages)) == len(languages) == 8
    assert all(s["split"] == fams[s["family"]]["split"] for s in labels.sessions if s["family"])


def test_each_kinds_work_does_to_its_check_what_its_role_says(tmp_path: Path) -> None:
    """Right work and a first try pass the check (the logging kind's first try fails it: it prints), a failure
    session's work fails it; the rule is broken exactly where the judge will look."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    repos = make_repos(tmp_path)
    for fam in NIGHT_FAMILIES:
        repo = repos[fam.repo]
        original = (repo / fam.work_file).read_text() if (repo / fam.work_file).exists() else None
        codes = {}
        for name in ("first_try", "after_correction", "broken"):
            (repo / fam.work_file).parent.mkdir(parents=True, exist_ok=True)
            (repo / fam.work_file).write_text(getattr(fam, name))
            codes[name] = subprocess.run(
                fam.check, shell=True, cwd=repo, env=env, capture_output=True
            ).returncode
        if original is None:
            (repo / fam.work_file).unlink()
        else:
            (repo / fam.work_file).write_text(original)
        assert codes["after_correction"] == 0, (fam.id, codes)
        assert codes["broken"] != 0, (fam.id, codes)
        assert (codes["first_try"] == 0) == (fam.id != "logging"), (fam.id, codes)
        violation = night_world.VIOLATIONS[fam.id]
        assert re.search(violation, fam.first_try) and not re.search(violation, fam.after_correction), fam.id


def test_the_corpus_ingests_into_its_sessions_with_the_real_pipeline(
    store: sqlite_utils.Database, labels: Labels
) -> None:
    rows = {(r["tool"], r["session_id"]) for r in store.query("SELECT tool, session_id FROM sessions")}
    assert {(s["tool"], s["session_id"]) for s in labels.sessions} <= rows
    parents = list(store.query("SELECT count(*) AS n FROM sessions WHERE has_user_turn = 1"))[0]["n"]
    assert parents >= 120
    # What mining reads from each kind's sessions is what happened: failures fail their check, the others pass.
    outcome: dict[str, str] = {}
    for a in mine.mine_detailed(store).attempts:
        outcome.setdefault(a.session_id, a.outcome)  # the session's first task and the work on it
    for s in labels.sessions:
        if s["family"]:
            want = "failure" if s["role"] == "failure" else "success"
            assert outcome.get(s["session_id"]) == want, s["key"]


def _heldout_ari(db: sqlite_utils.Database, result: mine.MiningResult, labels: Labels) -> float:
    truth, pred = truth_and_prediction(db, result, labels)
    heldout = {f for f in labels.families if labels.families[f]["split"] == "heldout"}
    pairs = [(t, p) for t, p in zip(truth, pred, strict=True) if t in heldout]
    return float(adjusted_rand_score([t for t, _ in pairs], [p for _, p in pairs]))


def test_mining_at_its_defaults_finds_the_eight_kinds(store: sqlite_utils.Database, labels: Labels) -> None:
    result = mine.mine_detailed(store)
    spec = labels.by_session()
    family_of = result.family_of()
    placed: dict[str, Counter[str]] = defaultdict(Counter)
    for a in result.attempts:
        kind = spec[(a.tool, a.session_id)]["family"]
        if kind:
            fam = family_of.get(a.key)
            placed[kind][fam.id if fam else "none"] += 1
    found = {}
    for kind in KINDS:
        fam, n = placed[kind].most_common(1)[0]
        assert fam != "none" and n / sum(placed[kind].values()) >= 0.75, (kind, placed[kind])
        found[kind] = fam
    assert len(set(found.values())) == 8, found
    # Each kind's users' rule is a rubric item of its family (as mining keeps it: without a leading "no,").
    rubric = {f.id: set(f.rubric) for f in result.families}
    for kind, fam in found.items():
        assert mine.rubric_item(labels.families[kind]["rule"]) in rubric[fam], (kind, rubric[fam])
    print(f"ARI on the held-out kinds, mined on the whole corpus: {_heldout_ari(store, result, labels):.3f}")
    print({k: dict(v) for k, v in placed.items()})


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(LearningNight(night_world.work_kinds(KINDS))) as srv:
        yield srv


def _stored(w: night_world.CorpusWorld) -> list[dict[str, Any]]:
    db = sqlite_utils.Database(next(w.skillopt_home.rglob("skillopt.db")))
    try:
        return list(db.query("SELECT tool, session_id, started_at FROM sessions WHERE has_user_turn = 1"))
    finally:
        db.close()


def test_a_world_starts_with_the_first_sessions_of_each_kind_and_receives_the_next(
    tmp_path: Path, server: ScriptedServer, labels: Labels
) -> None:
    kinds = ["lint", "config"]
    # Building a world and ingesting runs no agent: the CLI's path is only written into the configuration.
    w = night_world.make_world(tmp_path / "w", server, Path("claude"), kinds, corpus=NIGHTS, first=5)
    want = {s["session_id"] for s in labels.sessions if s["family"] in kinds and s["index"] < 5}
    assert {r["session_id"] for r in _stored(w)} == want
    assert (w.root / "src" / "shop" / "tools" / "check_sql.py").exists()
    copied = "\n".join(p.read_text(encoding="utf-8") for p in w.home.rglob("*.jsonl"))
    assert labels.source_root not in copied and str(w.root / "src") in copied
    before = {r["session_id"]: r["started_at"] for r in _stored(w)}

    added = night_world.add_sessions(w, kinds, upto=8)
    assert [(s["family"], s["index"]) for s in added] == [(k, i) for i in (5, 6, 7) for k in kinds]
    after = {r["session_id"]: r["started_at"] for r in _stored(w)}
    assert set(after) == want | {s["session_id"] for s in added}
    assert all(after[sid] == at for sid, at in before.items())
    # The new sessions keep their recorded times: all of them after every session of night 1.
    assert min(after[s["session_id"]] for s in added) > max(before.values())
    assert w.upto == {"lint": 8, "config": 8}


def test_a_world_without_corrections_and_with_one_offs(
    tmp_path: Path, server: ScriptedServer, labels: Labels
) -> None:
    w = night_world.make_world(
        tmp_path / "w",
        server,
        Path("claude"),
        ["sql"],
        corpus=NIGHTS,
        first=4,
        corrections=False,
        one_offs=True,
    )
    copied = "\n".join(p.read_text(encoding="utf-8") for p in w.home.rglob("*.jsonl"))
    assert labels.families["sql"]["rule"] not in copied and night_world.NEUTRAL in copied
    stored = {r["session_id"] for r in _stored(w)}
    one_offs = [s for s in labels.sessions if s["family"] is None]
    # The one-offs recorded before the fifth round of sessions came along, the later ones did not.
    fifth = next(p for p, s in enumerate(labels.sessions) if s.get("index") == 4)
    early = {s["session_id"] for s in one_offs if labels.sessions.index(s) < fifth}
    assert early and early <= stored
    assert not ({s["session_id"] for s in one_offs} - early) & stored
    with pytest.raises(ValueError, match="corpus=NIGHTS"):
        night_world.make_world(tmp_path / "old", server, Path("claude"), ["lint"], first=4)


def test_work_kinds_cover_the_new_kinds() -> None:
    kinds = {k.id: k for k in night_world.work_kinds(KINDS)}
    assert set(kinds) == set(KINDS)
    assert all(len(k.prompts) == 14 for k in kinds.values())
    assert set(KINDS) <= set(night_world.VIOLATIONS)  # the scope corpus adds its own kinds


def test_the_mining_corpus_still_makes_its_world(tmp_path: Path, server: ScriptedServer) -> None:
    """`make_world` without `corpus` is the mining corpus' world as before: every session of the kinds asked."""
    old = read_labels()
    w = night_world.make_world(tmp_path / "w", server, Path("claude"), ["lint", "logging"])
    want = {s["session_id"] for s in old.sessions if s["family"] in ("lint", "logging")}
    assert {r["session_id"] for r in _stored(w)} == want
    copied = "\n".join(p.read_text(encoding="utf-8") for p in w.home.rglob("*.jsonl"))
    assert old.source_root not in copied and str(w.root / "src") in copied


def test_sessions_added_later_can_say_other_words_and_start_later(
    tmp_path: Path, server: ScriptedServer, labels: Labels
) -> None:
    """The weeks after an install from the recorded sessions: what the user said swapped, times moved."""
    w = night_world.make_world(tmp_path / "w", server, Path("claude"), ["lint"], corpus=NIGHTS, first=7)
    later = [s for s in labels.sessions if s["family"] == "lint" and s["index"] >= 7]
    corrected = next(s for s in later if s["role"] == "corrected")
    said = next(t["text"] for t in corrected["turns"] if t["kind"] == "correction")
    start = utcnow() - timedelta(
        hours=2
    )  # after the recording, and not ahead of the clock (ingest drops that)
    swaps = {corrected["session_id"]: {said: "no — not # noqa and not # type: ignore either"}}
    added = night_world.add_sessions(w, ["lint"], upto=14, swaps=swaps, start=start)
    assert {s["session_id"] for s in added} == {s["session_id"] for s in later}
    copied = [p for p in w.home.rglob("*.jsonl") if corrected["session_id"] in str(p)]
    text = "\n".join(p.read_text(encoding="utf-8") for p in copied)
    assert "not # type: ignore either" in text and json.dumps(said)[1:-1] not in text
    stored = {r["session_id"]: r["started_at"] for r in _stored(w)}
    new = sorted(stored[s["session_id"]] for s in later)
    assert new[0][:19] == to_iso(start)[:19] and max(stored.values()) == new[-1], new
