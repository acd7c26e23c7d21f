"""Pending evidence is kept in the store and bound to its skills and to the gate's ledger: damaged or
hand-edited evidence, or evidence copied to another target, is discarded with a warning and never trusted;
evidence that went missing spends its candidate's share; an earlier version's file is moved into the store;
status never fails on any of it; a target's candidates share one budget whatever its incumbent's bytes; a
changed confidence or likely tier never loosens a budget already used; a dry run writes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlite_utils

from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.ledger import DryLedger, StoreLedger, ledger_rows, lineage_of
from skillopt_daemon.night.pending import EVIDENCE, legacy_path, load_pending, pending_lines, store_pending
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


def _body(db: sqlite_utils.Database, target: str = "lint-rules") -> dict:
    (row,) = db.query(f"SELECT body FROM {EVIDENCE} WHERE target = ?", [target])
    return json.loads(row["body"])


def _edit(db: sqlite_utils.Database, data: dict, target: str = "lint-rules") -> None:
    """A hand edit of the kept evidence, as someone with the sqlite3 shell would make it."""
    with db.conn:
        db.execute(f"UPDATE {EVIDENCE} SET body = ? WHERE target = ?", [json.dumps(data), target])


def test_a_stored_candidate_comes_back_as_it_was(db: sqlite_utils.Database) -> None:
    pending, _ = _stored(db)
    carried = load_pending(db, "lint-rules")
    assert carried is not None
    assert carried.pending.skill.content_hash == pending.skill.content_hash
    assert carried.pending.evidence.pairs == pending.evidence.pairs
    assert not legacy_path("lint-rules").exists()


def _discarded(db: sqlite_utils.Database, target: str, why: str) -> None:
    warnings: list[str] = []
    assert load_pending(db, target, warnings) is None
    assert any(why in w for w in warnings), warnings
    assert load_pending(db, target) is None, "kept aside, never read again"


def test_evidence_that_went_missing_spends_its_candidates_share(db: sqlite_utils.Database) -> None:
    pending, incumbent = _stored(db)
    with db.conn:
        db.execute(f"DELETE FROM {EVIDENCE}")
    warnings: list[str] = []
    assert load_pending(db, "lint-rules", warnings) is None
    assert warnings and "missing" in warnings[0]
    (row,) = ledger_rows(db, "lint-rules")
    assert row["outcome"].startswith("discarded")
    ledger = StoreLedger(db, "lint-rules")
    # no second look at the same share: the candidate is decided, and the next one gets the next share
    assert ledger.share(incumbent.content_hash, pending.skill.content_hash, GATE) is None
    assert ledger.share(incumbent.content_hash, _skill("Other.").content_hash, GATE) == pytest.approx(0.1)


def test_a_test_whose_evidence_was_never_kept_counts_as_spent(db: sqlite_utils.Database) -> None:
    inc, cand = _skill("Fix it."), _skill("Fix it. Run ruff.")
    assert StoreLedger(db, "lint-rules").share(inc.content_hash, cand.content_hash, GATE) == 0.8
    assert load_pending(db, "lint-rules") is None  # the run that measured it stopped before keeping it
    assert StoreLedger(db, "lint-rules").share(inc.content_hash, cand.content_hash, GATE) is None


def test_an_earlier_versions_file_moves_into_the_store(db: sqlite_utils.Database) -> None:
    pending, _ = _stored(db)
    raw = json.dumps(_body(db)).encode()
    with db.conn:
        db.execute(f"DELETE FROM {EVIDENCE}")
        db.execute("UPDATE gate_ledger SET evidence_digest = ?", [hashlib.sha256(raw).hexdigest()])
    path = legacy_path("lint-rules")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    carried = load_pending(db, "lint-rules")
    assert carried is not None and carried.pending.evidence.pairs == pending.evidence.pairs
    assert not path.exists() and path.with_name(path.name + ".migrated").exists()
    assert load_pending(db, "lint-rules") is not None, "read from the store from now on"


def test_an_earlier_versions_file_edited_by_hand_is_discarded(db: sqlite_utils.Database) -> None:
    _stored(db)
    data = _body(db)
    with db.conn:
        db.execute(f"DELETE FROM {EVIDENCE}")
    data["candidate"]["evidence"]["pairs"]["t2"] = [[0.0, 1.0]]
    path = legacy_path("lint-rules")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    _discarded(db, "lint-rules", "changed after the night wrote it")
    assert path.with_name(path.name + ".discarded").exists()


def test_truncated_evidence_is_discarded_with_a_warning(db: sqlite_utils.Database) -> None:
    _stored(db)
    with db.conn:
        db.execute(f"UPDATE {EVIDENCE} SET body = substr(body, 1, 200)")
    _discarded(db, "lint-rules", "damaged")


def test_evidence_edited_to_claim_a_win_is_never_trusted_and_its_candidate_is_retired(
    db: sqlite_utils.Database,
) -> None:
    pending, incumbent = _stored(db)
    data = _body(db)
    data["candidate"]["evidence"]["pairs"] = {f"t{i}": [[0.0, 1.0]] * 3 for i in range(9)}
    _edit(db, data)
    _discarded(db, "lint-rules", "changed after the night wrote it")
    (row,) = ledger_rows(db, "lint-rules")
    assert row["outcome"].startswith("discarded")
    # the retired candidate never gets a fresh test against this incumbent
    ledger = StoreLedger(db, "lint-rules")
    assert ledger.share(incumbent.content_hash, pending.skill.content_hash, GATE) is None


def test_evidence_pointed_at_another_skill_is_discarded(db: sqlite_utils.Database) -> None:
    _stored(db)
    with db.conn:
        db.execute(
            f"INSERT INTO {EVIDENCE} (target, body) SELECT 'docs-rules', body FROM {EVIDENCE} "
            "WHERE target = 'lint-rules'"
        )
    _discarded(db, "docs-rules", "names another target")


def test_a_lowered_share_or_a_reset_counter_is_refused(db: sqlite_utils.Database) -> None:
    _stored(db)
    data = _body(db)
    data["candidate"]["evidence"]["sessions"] = 0
    _edit(db, data)
    _discarded(db, "lint-rules", "changed after the night wrote it")


@pytest.mark.parametrize(
    "content",
    ["[1, 2, 3]", '{"format": 2, "target": "lint-rules", "candidate": {"skill": 1}}', "{", ""],
)
def test_damaged_evidence_is_ignored_and_status_still_shows(db: sqlite_utils.Database, content: str) -> None:
    db.table(EVIDENCE).insert({"target": "lint-rules", "body": content})
    lines = pending_lines(db)
    assert lines == ["pending evidence: lint-rules is damaged; the next night discards it"]
    warnings: list[str] = []
    assert load_pending(db, "lint-rules", warnings) is None and warnings


def test_infinite_scores_are_damage(db: sqlite_utils.Database) -> None:
    _stored(db)
    with db.conn:
        db.execute(f"UPDATE {EVIDENCE} SET body = replace(body, '[0.0, 1.0]', '[0.0, Infinity]')")
    assert "damaged" in pending_lines(db)[0]
    _discarded(db, "lint-rules", "")


def test_a_hand_edit_of_the_incumbent_buys_no_fresh_budget(db: sqlite_utils.Database) -> None:
    ledger = StoreLedger(db, "lint-rules")
    first, edited = _skill("Fix it."), _skill("Fix it. ")  # one space added by hand
    assert ledger.share(first.content_hash, "cand-1", GATE) == pytest.approx(0.8)
    ledger.decided(first.content_hash, "cand-1", "rejected")
    assert ledger.share(edited.content_hash, "cand-2", GATE) == pytest.approx(0.1)
    # a new skill re-drafted after each rejection is one target too
    drafts = StoreLedger(db, "new:fam-1")
    assert drafts.share("draft-1", "cand-a", GATE) == pytest.approx(0.8)
    drafts.decided("draft-1", "cand-a", "rejected")
    assert drafts.share("draft-2", "cand-b", GATE) == pytest.approx(0.1)
    # an approved, gated proposal starts a new lineage with its own budget
    renewed = StoreLedger(db, "lint-rules", lineage="v-approved")
    assert renewed.share("v-approved-hash", "cand-3", GATE) == pytest.approx(0.8)


def _v(vid: str, parent: str | None, origin: str, state: str = "approved") -> SimpleNamespace:
    return SimpleNamespace(id=vid, parent_id=parent, origin=origin, state=state)


def test_only_an_approved_gated_proposal_starts_a_lineage() -> None:
    versions = [
        _v("v1", None, "imported"),
        _v("v2", "v1", "hand-edit"),
        _v("v3", "v2", "trained"),
        _v("v4", "v3", "hand-edit"),
        _v("v5", "v4", "trained", "rejected"),
    ]
    assert lineage_of(versions, "v2") == "", "a hand edit keeps the skill's first budget"
    assert lineage_of(versions, "v3") == "v3"
    assert lineage_of(versions, "v4") == "v3", "a hand edit of an approved proposal keeps its budget"
    assert lineage_of(versions, "v1") == "", "a rollback returns to the budget already spent"


def test_a_changed_confidence_or_likely_tier_never_loosens_a_budget(db: sqlite_utils.Database) -> None:
    _stored(db)  # first used at 0.95, likely 0.90
    ledger = StoreLedger(db, "lint-rules")
    assert ledger.pinned(0.8, 0.7) == pytest.approx((0.95, 0.9))
    assert ledger.pinned(0.99, 0.95) == pytest.approx((0.99, 0.95))
    assert ledger.pinned(0.95, None) == (0.95, None), "dropping the likely tier tightens"
    proven_only = StoreLedger(db, "docs-rules")
    proven_only.share("inc", "cand", GateConfig.anytime(likely_confidence=None))
    assert proven_only.pinned(0.95, 0.9) == (0.95, None), "a tier the budget began without is not added"
    assert StoreLedger(db, "fresh-skill").pinned(0.8, 0.7) == (0.8, 0.7)


def test_a_dry_run_spends_no_share_and_retires_nothing(db: sqlite_utils.Database) -> None:
    pending, incumbent = _stored(db)
    dry = DryLedger(db, "lint-rules")
    assert dry.share(incumbent.content_hash, pending.skill.content_hash, GATE) == pytest.approx(0.8)
    assert dry.share(incumbent.content_hash, "another", GATE) == pytest.approx(0.1)
    dry.decided(incumbent.content_hash, "another", "rejected")
    assert dry.share(incumbent.content_hash, "another", GATE) is None
    with db.conn:
        db.execute(f"DELETE FROM {EVIDENCE}")
    assert load_pending(db, "lint-rules", write=False) is None
    (row,) = ledger_rows(db, "lint-rules")
    assert row["outcome"] == "pending", "a rehearsal decides nothing"
    assert StoreLedger(db, "lint-rules").share(incumbent.content_hash, "another", GATE) == pytest.approx(0.1)
