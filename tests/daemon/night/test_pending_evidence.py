"""Pending evidence is bound to its skills and to the gate's ledger: a truncated, damaged or hand-edited
file, or one copied to another target, is discarded with a warning and never trusted; status never fails on
one; a changed confidence never loosens a question already asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlite_utils

from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.ledger import StoreLedger, ledger_rows
from skillopt_daemon.night.pending import load_pending, pending_lines, pending_path, store_pending
from skillopt_lib.gate import GateConfig, PairedEvidence
from skillopt_lib.skill import SkillBundle, SkillDoc
from skillopt_lib.trainer import PendingCandidate

GATE = GateConfig.anytime()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> sqlite_utils.Database:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))
    return open_db()


def _skill(body: str) -> SkillBundle:
    return SkillBundle.from_doc(SkillDoc.new("lint-rules", "How to fix lint.", f"# Lint\n\n{body}\n"))


def _stored(db: sqlite_utils.Database, target: str = "lint-rules") -> tuple[PendingCandidate, SkillBundle]:
    incumbent, candidate = _skill("Fix it."), _skill("Fix it. Never add # noqa.")
    share = StoreLedger(db, target).share(incumbent.content_hash, candidate.content_hash, GATE)
    assert share is not None
    evidence = PairedEvidence(
        candidate.content_hash, incumbent.content_hash, {"t1": [[0.0, 1.0], [0.0, 1.0]]}, 1, share
    )
    pending = PendingCandidate(candidate, incumbent.content_hash, evidence, "pending evidence")
    store_pending(db, target, pending, None)
    return pending, incumbent


def test_a_stored_candidate_comes_back_as_it_was(db: sqlite_utils.Database) -> None:
    pending, _ = _stored(db)
    carried = load_pending(db, "lint-rules")
    assert carried is not None
    assert carried.pending.skill.content_hash == pending.skill.content_hash
    assert carried.pending.evidence.pairs == pending.evidence.pairs
    assert pending_path("lint-rules").stat().st_mode & 0o777 == 0o600


def _discarded(db: sqlite_utils.Database, target: str, why: str) -> None:
    warnings: list[str] = []
    assert load_pending(db, target, warnings) is None
    assert len(warnings) == 1 and why in warnings[0], warnings
    assert not pending_path(target).exists()
    assert pending_path(target).with_name(pending_path(target).name + ".discarded").exists()


def test_a_truncated_file_is_discarded_with_a_warning(db: sqlite_utils.Database) -> None:
    _stored(db)
    path = pending_path("lint-rules")
    path.write_bytes(path.read_bytes()[:200])
    _discarded(db, "lint-rules", "damaged")


def test_a_file_edited_to_claim_a_win_is_never_trusted_and_its_candidate_is_retired(
    db: sqlite_utils.Database,
) -> None:
    pending, incumbent = _stored(db)
    path = pending_path("lint-rules")
    data = json.loads(path.read_text())
    data["candidate"]["evidence"]["pairs"] = {f"t{i}": [[0.0, 1.0]] * 3 for i in range(9)}
    path.write_text(json.dumps(data))
    _discarded(db, "lint-rules", "changed after the night wrote it")
    (row,) = ledger_rows(db, "lint-rules")
    assert row["outcome"].startswith("discarded")
    # the retired candidate never gets a fresh test against this incumbent
    ledger = StoreLedger(db, "lint-rules")
    assert ledger.share(incumbent.content_hash, pending.skill.content_hash, GATE) is None


def test_a_file_pointed_at_another_skill_is_discarded(db: sqlite_utils.Database) -> None:
    _stored(db)
    other = pending_path("docs-rules")
    other.write_bytes(pending_path("lint-rules").read_bytes())
    _discarded(db, "docs-rules", "names another target")


def test_a_lowered_share_or_a_reset_counter_is_refused(db: sqlite_utils.Database) -> None:
    _stored(db)
    path = pending_path("lint-rules")
    data = json.loads(path.read_text())
    data["candidate"]["evidence"]["sessions"] = 0
    path.write_text(json.dumps(data))
    _discarded(db, "lint-rules", "changed after the night wrote it")


@pytest.mark.parametrize(
    "content",
    ["[1, 2, 3]", '{"format": 2, "target": "lint-rules", "candidate": {"skill": 1}}', "{", ""],
)
def test_damaged_files_are_ignored_and_status_still_shows(db: sqlite_utils.Database, content: str) -> None:
    path = pending_path("lint-rules")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    lines = pending_lines()
    assert lines == ["pending evidence: lint-rules.json is damaged; the next night discards it"]
    warnings: list[str] = []
    assert load_pending(db, "lint-rules", warnings) is None and warnings


def test_infinite_scores_are_damage(db: sqlite_utils.Database) -> None:
    _stored(db)
    path = pending_path("lint-rules")
    path.write_text(path.read_text().replace("[0.0, 1.0]", "[0.0, Infinity]", 1))
    assert "damaged" in pending_lines()[0]
    _discarded(db, "lint-rules", "")


def test_a_changed_confidence_never_loosens_a_question_already_asked(db: sqlite_utils.Database) -> None:
    _stored(db)
    ledger = StoreLedger(db, "lint-rules")
    inc = _skill("Fix it.").content_hash
    assert ledger.confidence(inc, 0.8) == pytest.approx(0.95)
    assert ledger.confidence(inc, 0.99) == pytest.approx(0.99)
    assert ledger.confidence("a-new-incumbent", 0.8) == pytest.approx(0.8)
