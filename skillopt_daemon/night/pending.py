"""Candidates the gate could not decide yet, with their paired evidence, waiting for the next night.

A night rarely holds enough replays to decide; the sequential gate keeps an undecided candidate `pending`
and the next night adds paired replays to the same evidence until it is accepted or refuted. One file per
skill in the runs folder (0600): the candidate's bundle and its evidence, as the library serialises them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillopt_daemon.core import fsio, paths
from skillopt_lib.gate import GateConfig, PairedEvidence, evidence_figures
from skillopt_lib.trainer import PendingCandidate


def pending_path(skill: str) -> Path:
    """Where a skill's undecided candidate and its paired gate evidence wait for the next night."""
    return paths.runs_dir() / "pending" / f"{skill}.json"


def load_pending(skill: str) -> PendingCandidate | None:
    """The candidate carried over from an earlier night, or None (a damaged file counts as none)."""
    path = pending_path(skill)
    try:
        return PendingCandidate.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError):
        return None


def store_pending(skill: str, pending: Any) -> None:
    """Keep `pending` for the next night, or forget the skill's pending candidate when it was decided."""
    path = pending_path(skill)
    if pending is None:
        path.unlink(missing_ok=True)
        return
    fsio.write_private(path, json.dumps(pending.to_dict()))


def pending_lines() -> list[str]:
    """One status line per skill with a pending candidate: its running figures."""
    folder = paths.runs_dir() / "pending"
    lines = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            s = evidence_figures(PairedEvidence.from_dict(data["evidence"]), GateConfig())
        except (OSError, ValueError, KeyError):
            continue
        lines.append(
            f"pending evidence: {path.stem}: {s['mean_difference']:+.3f} on {s['n']} task(s) "
            f"({s['improved_items']} better, {s['worsened_items']} worse), p={s['p_value']:.3f}, "
            f"night {s['session']}"
        )
    return lines
