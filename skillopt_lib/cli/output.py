"""How the command line talks: rich for people, `--json` for programs, stderr for errors and progress.

The library's `train`/`eval` commands and the daemon's commands print through these same consoles."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

# Not on a terminal (a pipe, a file, an agent running `skillopt` from a slash command) there is no width to
# fit: a console of 80 columns would split commands and hints mid-word for whoever reads them next, so the
# output is as wide as its lines. On a terminal rich measures the window as usual.
NO_TERMINAL_WIDTH = 10_000


def _console(stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else NO_TERMINAL_WIDTH
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


console = _console(stderr=False)
err_console = _console(stderr=True)


def print_json(data: Any) -> None:
    """Machine-readable output on stdout: stable keys, UTF-8, no colour."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    table = Table(title=title, title_justify="left", show_edge=False, header_style="bold")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    console.print(table)
