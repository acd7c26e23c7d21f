"""Candidates the gate could not decide yet, with their paired evidence, waiting for later nights.

A small family rarely holds enough validation tasks to decide in one night. The night's gate is
anytime-valid (`skillopt_lib.gate.evalue_decision`), so an undecided candidate is kept with its evidence,
and every later night adds the new sessions of its kind as new items until it is accepted or refuted: the
evidence is never thrown away for being small.

One row per target (an installed skill, or a family's new skill) in the store's `pending_evidence` table
(m012): the candidate's bundle, the incumbent it was measured against (a new skill's draft is kept too, so
the next night measures the same pair), and the evidence. It lives in the store, beside the gate's ledger,
so it cannot vanish unnoticed: a target whose ledger has a pending test but no kept evidence (deleted, never
written, or left by a run that stopped) has that test retired as spent, never restarted at the same share.
The evidence is trusted only when its sha256 is the digest the ledger recorded when the night wrote it and
its hashes name the skills it holds: damaged or hand-edited evidence, or evidence copied from another
target, is discarded with a warning, and its candidate is never tested again. Files an earlier version kept
in `runs/pending/` are moved into the store when first read, after the same checks.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.night.ledger import TABLE, StoreLedger
from skillopt_lib.gate import GateConfig, evidence_figures
from skillopt_lib.skill import SkillBundle, bundle_from_json, bundle_to_json

if TYPE_CHECKING:
    # The trainer pulls in the optimizer's whole stack; `skillopt status` reads pending evidence without it.
    from skillopt_lib.trainer import PendingCandidate

log = logging.getLogger("skillopt.night")
FORMAT = 2
EVIDENCE = "pending_evidence"


@dataclass
class Carried:
    """A target's pending candidate as loaded: the candidate with its evidence, and the incumbent bundle it
    was measured against (a new skill's draft; None for an installed skill, whose incumbent is its
    installed version)."""

    pending: PendingCandidate
    incumbent: SkillBundle | None = None


def legacy_path(target: str) -> Path:
    """Where earlier versions kept a target's pending candidate (moved into the store when read)."""
    return paths.runs_dir() / "pending" / f"{target.replace(':', '@').replace('/', '_')}.json"


def _stored(db: sqlite_utils.Database, target: str) -> bytes | None:
    if EVIDENCE not in db.table_names():
        return None
    rows = list(db.query(f"SELECT body FROM {EVIDENCE} WHERE target = ?", [target]))
    return str(rows[0]["body"]).encode("utf-8") if rows else None


def load_pending(
    db: sqlite_utils.Database,
    target: str,
    warnings: list[str] | None = None,
    *,
    lineage: str = "",
    write: bool = True,
) -> Carried | None:
    """The candidate carried over from an earlier night, or None.

    Evidence that cannot be trusted is discarded with a warning appended to `warnings`, and its candidate
    recorded as decided in the ledger; a pending test with no kept evidence is retired as spent. With
    `write=False` (a dry run) nothing is changed: the same checks decide what is returned.
    """
    ledger = StoreLedger(db, target, lineage=lineage)
    raw = _stored(db, target)
    legacy: Path | None = legacy_path(target)
    if raw is None and legacy is not None:
        try:
            raw = legacy.read_bytes()
        except FileNotFoundError:
            raw = None
        except OSError as exc:
            _warn(warnings, f"pending evidence for {target} cannot be read ({exc}); ignored")
            return None
    else:
        legacy = None
    carried: Carried | None = None
    why: str | None = None
    if raw is not None:
        try:
            carried, why = _parse(raw, target, ledger)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            carried, why = None, f"it is damaged ({str(exc)[:120]})"
    if not write:
        return carried
    if raw is not None and carried is None:
        _discard(db, legacy, ledger, raw, target, why or "it is damaged", warnings)
    elif carried is not None and raw is not None and legacy is not None:
        _keep(db, target, lineage, carried.pending, raw)  # an earlier version's file, now in the store
        legacy.replace(legacy.with_name(legacy.name + ".migrated"))
    missing = ledger.retire_pending_except(
        carried.pending.incumbent_hash if carried else None,
        carried.pending.skill.content_hash if carried else None,
        "its pending evidence is missing: the share it was given counts as spent",
    )
    if any(r["evidence_digest"] for r in missing):
        _warn(
            warnings,
            f"pending evidence for {target} is missing (the night kept it and it is gone): its candidate "
            "counts as decided and is not tested again",
        )
    return carried


def _parse(raw: bytes, target: str, ledger: StoreLedger) -> tuple[Carried | None, str | None]:
    data = json.loads(raw.decode("utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None, "it is not pending evidence this version wrote"
    if data.get("target") != target:
        return None, f"it names another target ({str(data.get('target'))[:60]!r})"
    from skillopt_lib.trainer import PendingCandidate

    pending = PendingCandidate.from_dict(data["candidate"])
    incumbent = bundle_from_json(data["incumbent"]) if data.get("incumbent") else None
    if pending.evidence.candidate_hash != pending.skill.content_hash:
        return None, "its evidence names another candidate than the one it holds"
    if pending.evidence.incumbent_hash != pending.incumbent_hash:
        return None, "its evidence names another incumbent"
    if incumbent is not None and incumbent.content_hash != pending.incumbent_hash:
        return None, "the draft it holds is not the one its evidence was measured against"
    row = ledger.row(pending.incumbent_hash, pending.skill.content_hash)
    if row is None or row["outcome"] != "pending":
        return None, "the gate's ledger has no undecided test of this candidate"
    if row["evidence_digest"] != hashlib.sha256(raw).hexdigest():
        return None, "it was changed after the night wrote it"
    if abs(float(row["share"]) - pending.evidence.share) > 1e-9:
        return None, "its share of the error budget is not the ledger's"
    return Carried(pending, incumbent), None


def _discard(
    db: sqlite_utils.Database,
    legacy: Path | None,
    ledger: StoreLedger,
    raw: bytes,
    target: str,
    why: str,
    warnings: list[str] | None,
) -> None:
    try:
        data = json.loads(raw.decode("utf-8"))
        cand = data["candidate"]
        ledger.discard(str(cand["incumbent_hash"]), str(cand["evidence"]["candidate_hash"]), why)
    except (ValueError, KeyError, TypeError, AttributeError):
        pass  # nothing identifiable to retire; the pending tests left are retired as missing evidence
    where = "it is kept aside in the store"
    if legacy is not None:
        try:
            legacy.replace(legacy.with_name(legacy.name + ".discarded"))
            where = f"it is kept aside as {legacy.name}.discarded"
        except OSError:
            legacy.unlink(missing_ok=True)
    else:
        with db.conn:
            db.execute(
                f"UPDATE {EVIDENCE} SET target = ? WHERE target = ?",
                [f"discarded:{target}:{utcnow_iso()}", target],
            )
    _warn(warnings, f"pending evidence for {target} was discarded: {why}; {where}")


def _warn(warnings: list[str] | None, text: str) -> None:
    log.warning("%s", text)
    if warnings is not None:
        warnings.append(text)


def _keep(
    db: sqlite_utils.Database, target: str, lineage: str, pending: PendingCandidate, raw: bytes
) -> None:
    digest = hashlib.sha256(raw).hexdigest()
    with db.conn:
        db.table(EVIDENCE).upsert(
            {
                "target": target,
                "lineage": lineage,
                "incumbent_hash": pending.incumbent_hash,
                "candidate_hash": pending.skill.content_hash,
                "body": raw.decode("utf-8"),
                "digest": digest,
                "written_at": utcnow_iso(),
            },
            pk="target",
        )
        db.execute(
            f"UPDATE {TABLE} SET evidence_digest = ? "
            "WHERE target = ? AND incumbent_hash = ? AND candidate_hash = ?",
            [digest, target, pending.incumbent_hash, pending.skill.content_hash],
        )


def store_pending(
    db: sqlite_utils.Database,
    target: str,
    pending: PendingCandidate | None,
    incumbent: SkillBundle | None,
    lineage: str = "",
) -> None:
    """Keep `pending` for the next night (recording its digest in the ledger, in one transaction), or forget
    the target's pending candidate when it was decided."""
    if pending is None:
        if EVIDENCE in db.table_names():
            with db.conn:
                db.execute(f"DELETE FROM {EVIDENCE} WHERE target = ?", [target])
        return
    data: dict[str, Any] = {
        "format": FORMAT,
        "target": target,
        "candidate": pending.to_dict(),
        "incumbent": bundle_to_json(incumbent) if incumbent is not None else None,
    }
    _keep(db, target, lineage, pending, json.dumps(data).encode("utf-8"))


def pending_lines(db: sqlite_utils.Database) -> list[str]:
    """One status line per target with a pending candidate: its running figures. Damaged evidence is skipped
    here (the next night discards it with a warning); status never fails on it."""
    if EVIDENCE not in db.table_names():
        return []
    lines = []
    rows = db.query(
        f"SELECT target, body FROM {EVIDENCE} WHERE target NOT LIKE 'discarded:%' ORDER BY target"
    )
    for row in rows:
        target = str(row["target"])
        try:
            data = json.loads(row["body"])
            from skillopt_lib.trainer import PendingCandidate

            evidence = PendingCandidate.from_dict(data["candidate"]).evidence
            s = evidence_figures(evidence, GateConfig.anytime())
        except (ValueError, KeyError, TypeError, AttributeError):
            lines.append(f"pending evidence: {target} is damaged; the next night discards it")
            continue
        need = s.get("more_items_needed")
        lines.append(
            f"pending evidence: {target}: {s['mean_difference']:+.3f} on {s['n']} task(s) "
            f"({s['improved_items']} better, {s['worsened_items']} worse), e-value {s.get('e_value', 0):.1f}"
            + (f"; needs about {need} more session(s) of this work that improve" if need else "")
        )
    return lines
