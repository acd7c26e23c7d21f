"""A running night's progress, where `skillopt status` and the dashboard in another process can read it.

The night already says what it is doing through its `say` callback and counts its replays in its budget;
`NightProgress` keeps the latest of both, with the skill or family it is on and the replays it plans, in
the night's `progress.json` (0600, see `runs.progress_path`). It writes when the night says something and
from a small thread while replays run, never more than about once a second, so a long night costs a few
hundred small writes and no database writes at all. The file goes when the night ends; a killed night's
file is removed when the night is settled as interrupted.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.runs import clear_progress, progress_path
from skillopt_lib.fsio import write_private

INTERVAL_S = 1.0


class NightProgress:
    """What a night is doing, recorded for other processes. Thread safe; never raises into the night."""

    def __init__(self, run_id: str, started_at: str, budget: NightBudget, say: Callable[[str], None]) -> None:
        self.run_id = run_id
        self._budget = budget
        self._say = say
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._written_at = 0.0
        self._written: dict[str, Any] | None = None
        self._skill_start_replays = 0
        self._state: dict[str, Any] = {
            "run_id": run_id,
            "pid": os.getpid(),
            "started_at": started_at,
            "step": "starting",
            "skill": None,
            "family": None,
            "new_skill": False,
            "index": 0,
            "total": 0,
            "replays_planned": None,
            "replays_cap": budget.max_replays,
        }

    # -- what the night tells it -----------------------------------------------------------------------

    def say(self, message: str) -> None:
        """The night's progress callback: passed on, and kept as the current step."""
        self._say(message)
        with self._lock:
            self._state["step"] = message
        self.flush()

    def skill(self, name: str, *, index: int, total: int, family: str | None = None) -> None:
        """The night moves on to skill `index` of `total` (a new skill's family when `family` is given)."""
        with self._lock:
            self._skill_start_replays = self._budget.replays
            self._state.update(
                skill=name,
                family=family,
                new_skill=family is not None,
                index=index,
                total=total,
                replays_planned=None,
            )
        self.flush(force=True)

    def plan(self, replays: int) -> None:
        """The current skill plans about `replays` replays: the night then plans what it has done before
        this skill and these, within its replay cap."""
        with self._lock:
            total = self._skill_start_replays + max(0, replays)
            self._state["replays_planned"] = min(total, self._budget.max_replays)
        self.flush(force=True)

    # -- writing ---------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            state = dict(self._state)
        state.update(
            replays_done=self._budget.replays,
            tokens=self._budget.tokens,
            cost_usd=round(self._budget.cost_usd, 6),
            priced_by=sorted(self._budget.priced_by),
        )
        return state

    def flush(self, *, force: bool = False) -> None:
        """Write the progress when it changed, at most once per `INTERVAL_S` unless `force`."""
        state = self.snapshot()
        now = time.monotonic()
        with self._lock:
            if state == self._written or (not force and now - self._written_at < INTERVAL_S):
                return
            self._written, self._written_at = state, now
        try:
            write_private(
                progress_path(self.run_id), json.dumps({**state, "updated_at": utcnow_iso()}, default=str)
            )
        except OSError:
            pass  # a full disk must not stop the night; status then shows less

    def start(self) -> NightProgress:
        """Write the first record and keep it current while replays run (they say nothing themselves)."""
        self.flush(force=True)
        self._thread = threading.Thread(target=self._tick, name="night-progress", daemon=True)
        self._thread.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self.flush()

    def stop(self) -> None:
        """The night ended: no more writes, and the file is removed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        clear_progress(self.run_id)
