"""How the command line talks: rich for people, `--json` for programs, stderr for errors and progress.

The library's `train`/`eval` commands and the daemon's commands print through these same consoles. Every
string they render passes through `skillopt_lib.safetext.printable` first, so text that came from a
transcript, a model or a file can never send a control sequence to the terminal, piped or not; table cells
are printed as plain text, never as rich markup, and emoji codes (`:warning:`) are left as written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from skillopt_lib.safetext import json_printable, printable

# Not on a terminal (a pipe, a file, an agent running `skillopt` from a slash command) there is no width to
# fit: a console of 80 columns would split commands and hints mid-word for whoever reads them next, so the
# output is as wide as its lines. On a terminal rich measures the window as usual.
NO_TERMINAL_WIDTH = 10_000


class SafeConsole(Console):
    """A rich console that shows control characters in every string it renders as visible escapes.

    rich turns each printed string (markup or not, table cells and rule titles included) into text through
    `render_str`; its own colours are added afterwards from styles, so they are untouched.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text), **kwargs)


def _console(stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else NO_TERMINAL_WIDTH
    return SafeConsole(stderr=stderr, highlight=False, soft_wrap=False, width=width, emoji=False)


console = _console(stderr=False)
err_console = _console(stderr=True)


def literal(text: object) -> str:
    """Stored text to put inside a rich markup string: its brackets print as written, its controls escaped."""
    return escape(printable(str(text)))


def plain(text: object) -> Text:
    """Stored text as a rich `Text`: never read as markup, control characters shown as escapes."""
    return Text(printable(str(text)))


def write_text(text: str) -> None:
    """Plain text on stdout (a diff for a pipe, a file's contents), with control characters escaped."""
    sys.stdout.write(printable(text))
    sys.stdout.flush()


def print_json(data: Any) -> None:
    """Machine-readable output on stdout: stable keys, UTF-8, no colour.

    Characters a terminal would act on are written as `\\u` escapes, which decode to the same data.
    """
    sys.stdout.write(json_printable(json.dumps(data, indent=2, ensure_ascii=False, default=str)) + "\n")
    sys.stdout.flush()


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A table whose title and cells are shown as plain text (stored text may hold `[`, `]` and controls).

    A cell that is already a rich `Text` (a coloured mark the caller built) is printed as it is.
    """
    # Imported here: `diff` and `approve` print no table, and rich's tables (with their box styles) are a
    # measurable part of their start-up.
    from rich.table import Table

    table = Table(
        title=plain(title) if title is not None else None,
        title_justify="left",
        show_edge=False,
        header_style="bold",
    )
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*[v if isinstance(v, Text) else plain("" if v is None else v) for v in row])
    console.print(table)
