"""A progress bar over bytes for long reads (a backfill, `skillopt ingest`), on the caller's console.

The daemon shows it on its own console when it starts a big backfill, `skillopt ingest` on stderr; both
hand it the console (None: no bar), so neither owns the other's output.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)


class progress_bar:
    """A rich progress bar over bytes on the caller's console (None: no bar); `with progress_bar(...) as advance`."""

    def __init__(self, console: Console | None, label: str, total: int) -> None:
        self.console = console
        self.enabled = console is not None and total > 0
        self.label = label
        self.total = total
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> Any:
        if not self.enabled:
            return lambda n: None
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(self.label, total=self.total)
        return lambda n: self._progress.advance(self._task, n)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
