"""How the command line talks: rich for people, `--json` for programs, stderr for errors and progress."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console(highlight=False, soft_wrap=False)
err_console = Console(stderr=True, highlight=False)


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
