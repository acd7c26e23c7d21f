"""The training loop's public names, where callers have always imported them from.

The loop itself lives in `skillopt_lib/training/`: the `Trainer` in `loop.py`, one step's phases in `step.py`,
an epoch's end in `epoch.py`, a run's state and results in `state.py`, its history records in `records.py`, and the one-call API in `api.py`.
"""

from __future__ import annotations

from skillopt_lib.training.api import evaluate_skill, train
from skillopt_lib.training.epoch import META_NOTES_MAX
from skillopt_lib.training.loop import Event, EventHandler, Trainer, exec_backends
from skillopt_lib.training.records import HistoryRecord
from skillopt_lib.training.runfiles import saved_config
from skillopt_lib.training.state import BudgetExhausted, EvalResult, PendingCandidate, RunState, TrainResult

__all__ = [
    "META_NOTES_MAX", "BudgetExhausted", "EvalResult", "Event", "EventHandler",
    "HistoryRecord", "PendingCandidate", "RunState", "TrainResult", "Trainer", "evaluate_skill", "exec_backends",
    "saved_config", "train",
]  # fmt: skip
