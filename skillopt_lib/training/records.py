"""What one line of a run's history.jsonl holds: the typed record a training run hands its caller.

A run writes one record per baseline, carried candidate, step, slow update, meta-notes update and test
evaluation (`TrainResult.steps` holds them, in order), so a caller learns what a run did from the value it
returned, never by reading the run's folder; `runfiles.read_history` reads the same records back from disk
for the faces that show a run while it goes (the dashboard, `skillopt train`'s table, `report`).
"""

from __future__ import annotations

from typing import Any, TypedDict


class HistoryRecord(TypedDict, total=False):
    """One line of history.jsonl, as the trainer writes it; `kind` says which keys a record has.

    Typed at both ends: the trainer builds every line as this type (`Trainer._history` takes nothing
    else), so writing a key it does not declare fails type checking, and so does a reader asking for one
    (a TypedDict's `.get` with an unknown literal key is an error). `HISTORY_KEYS` lets a test check what
    a real run wrote.
    """

    kind: str  # baseline | pending | step | slow_update | meta_notes | test
    step: int
    epoch: int
    batch: int
    time: str
    usage_total: dict[str, Any]
    usage_step: dict[str, Any]
    val: dict[str, Any]  # baseline: score, n, repeats; otherwise: incumbent
    train: dict[str, Any]
    skill_hash: str
    candidate_hash: str
    accepted: bool
    reason: str
    gate: dict[str, Any] | None  # the gate decision (`GateDecision.to_dict`), with its `stats`
    changed_tokens: int
    rejected_edits: list[dict[str, Any]]
    screened: list[dict[str, Any]]  # the candidate screen's verdicts on what it rejected
    screen: dict[str, Any]  # its verdict on the candidate it let through (warnings carried to a proposal)
    held_back: list[dict[str, Any]]  # edits it warned about: seated only after every clean edit
    invalid_skill: list[str]
    applied: list[dict[str, Any]]
    proposed: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    selected: list[dict[str, Any]]
    ranked_by: str
    dropped: list[dict[str, Any]]
    conflicts: list[dict[str, Any]]
    optimizer_calls: list[dict[str, Any]]
    budget: dict[str, Any]
    guidance: str
    notes: str
    test: dict[str, Any]


HISTORY_KEYS = frozenset(HistoryRecord.__annotations__)


class RunSummary(TypedDict):
    """What a finished run says of itself (`TrainResult.summary`, and `summary.json` in its folder).

    Typed for the same reason as `HistoryRecord`: the trainer builds it as this type, and a caller (the
    night's evidence, `skillopt train`'s last line) asking for a key it does not hold fails type checking.
    """

    env: str
    run_dir: str
    skill_name: str
    steps: int
    epochs_completed: int
    accepted_steps: int
    rejected_edits: int
    stopped: str | None
    gate: str
    tier: str | None  # the weakest tier among the accepted decisions that made the best skill
    initial_val: float | None  # None when nothing measured the validation split
    best_val: float | None
    test: dict[str, Any]  # initial and best skill on the test split, when it was evaluated
    best_skill_hash: str
    warnings: list[str]
    pending: dict[str, Any] | None  # the running figures of a candidate left undecided
    changed_tokens: int
    usage: dict[str, Any]
    started: str
    finished: str
