"""Candidates the gate could not decide yet, with their paired evidence, waiting for later nights.

A small family rarely holds enough validation tasks to decide in one night. The night's gate is
anytime-valid (`skillopt_lib.gate.evalue_decision`), so an undecided candidate is kept with its evidence,
and every later night adds the new sessions of its kind as new items until it is accepted or refuted: the
evidence is never thrown away for being small.

One file per target (an installed skill, or a family's new skill) in the runs folder, 0600: the
candidate's bundle, the incumbent it was measured against (a new skill's draft is kept too, so the next
night measures the same pair), and the evidence. The file is trusted only when its sha256 is the digest the
gate's ledger recorded when the night wrote it (`night/ledger.py`) and its hashes name the skills it holds:
a truncated, damaged or hand-edited file, or one copied from another target, is discarded with a warning,
and its candidate is never tested again.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils

from skillopt_daemon.core import fsio, paths
from skillopt_daemon.night.ledger import TABLE, StoreLedger
from skillopt_lib.gate import GateConfig, evidence_figures
from skillopt_lib.runfiles import bundle_from_json, bundle_to_json
from skillopt_lib.skill import SkillBundle

if TYPE_CHECKING:
    # The trainer pulls in the optimizer's whole stack; `skillopt status` reads pending evidence without it.
    from skillopt_lib.trainer import PendingCandidate

log = logging.getLogger("skillopt.night")
FORMAT = 2


@dataclass
class Carried:
    """A target's pending candidate as loaded: the candidate with its evidence, and the incumbent bundle it
    was measured against (a new skill's draft; None for an installed skill, whose incumbent is its
    installed version)."""

    pending: PendingCandidate
    incumbent: SkillBundle | None = None


def pending_path(target: str) -> Path:
    """Where a target's undecided candidate and its paired gate evidence wait for the next night."""
    return paths.runs_dir() / "pending" / f"{target.replace(':', '@').replace('/', '_')}.json"


def load_pending(db: sqlite_utils.Database, target: str, warnings: list[str] | None = None) -> Carried | None:
    """The candidate carried over from an earlier night, or None.

    A file that cannot be trusted is discarded: moved aside (`<name>.json.discarded`, never deleted) with a
    warning appended to `warnings`, and its candidate recorded as decided in the ledger.
    """
    path = pending_path(target)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _warn(warnings, f"pending evidence for {target} cannot be read ({exc}); ignored")
        return None
    ledger = StoreLedger(db, target)
    try:
        carried, why = _parse(raw, target, ledger)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        carried, why = None, f"it is damaged ({str(exc)[:120]})"
    if carried is None:
        _discard(path, ledger, raw, target, why or "it is damaged", warnings)
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
    path: Path, ledger: StoreLedger, raw: bytes, target: str, why: str, warnings: list[str] | None
) -> None:
    try:
        data = json.loads(raw.decode("utf-8"))
        cand = data["candidate"]
        ledger.discard(str(cand["incumbent_hash"]), str(cand["evidence"]["candidate_hash"]), why)
    except (ValueError, KeyError, TypeError, AttributeError):
        pass  # nothing identifiable to retire; the file still goes
    try:
        path.replace(path.with_name(path.name + ".discarded"))
    except OSError:
        path.unlink(missing_ok=True)
    _warn(
        warnings,
        f"pending evidence for {target} was discarded: {why}; it is kept aside as {path.name}.discarded",
    )


def _warn(warnings: list[str] | None, text: str) -> None:
    log.warning("%s", text)
    if warnings is not None:
        warnings.append(text)


def store_pending(
    db: sqlite_utils.Database, target: str, pending: PendingCandidate | None, incumbent: SkillBundle | None
) -> None:
    """Keep `pending` for the next night (recording its digest in the ledger), or forget the target's
    pending candidate when it was decided."""
    path = pending_path(target)
    if pending is None:
        path.unlink(missing_ok=True)
        return
    data: dict[str, Any] = {
        "format": FORMAT,
        "target": target,
        "candidate": pending.to_dict(),
        "incumbent": bundle_to_json(incumbent) if incumbent is not None else None,
    }
    raw = json.dumps(data).encode("utf-8")
    fsio.write_private(path, raw.decode("utf-8"))
    StoreLedger(db, target).record_digest(
        pending.incumbent_hash, pending.skill.content_hash, hashlib.sha256(raw).hexdigest()
    )


def pending_lines(db: sqlite_utils.Database | None = None) -> list[str]:
    """One status line per target with a pending candidate: its running figures. Damaged files are skipped
    here (the next night discards them with a warning); status never fails on them."""
    folder = paths.runs_dir() / "pending"
    lines = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            from skillopt_lib.trainer import PendingCandidate

            evidence = PendingCandidate.from_dict(data["candidate"]).evidence
            s = evidence_figures(evidence, GateConfig.anytime())
            target = str(data["target"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            lines.append(f"pending evidence: {path.name} is damaged; the next night discards it")
            continue
        need = s.get("more_items_needed")
        lines.append(
            f"pending evidence: {target}: {s['mean_difference']:+.3f} on {s['n']} task(s) "
            f"({s['improved_items']} better, {s['worsened_items']} worse), e-value {s.get('e_value', 0):.1f}"
            + (f"; needs about {need} more session(s) of this work that improve" if need else "")
        )
    return lines


def pending_targets(db: sqlite_utils.Database) -> list[str]:
    """Targets with an undecided candidate in the ledger (whether or not its file is still there)."""
    if TABLE not in db.table_names():
        return []
    return [r["target"] for r in db.query(f"SELECT DISTINCT target FROM {TABLE} WHERE outcome = 'pending'")]
