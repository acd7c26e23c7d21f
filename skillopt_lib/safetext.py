"""Stored text made safe to show: the one rule every face applies before text reaches a terminal or a page.

Transcripts, the user's corrections, mined family names and model-written skill lines are all stored
verbatim, and any of them may carry terminal control sequences: a clear-screen, a new window title, an OSC 8
link whose visible text is not where it leads, or the "conceal" attribute that hides a line from the person
approving it. Printed raw, they act on the reviewer's terminal instead of being read.

`printable` replaces every C0 and C1 control character (except newline and tab, and a carriage return that
ends a line), DEL, and the Unicode bidirectional controls that reorder what a line appears to say, with a
visible escape (`\\x1b`, `\\x9b`, `\\u202e`). It changes nothing else, so ordinary text (any language, any
punctuation, rich's `[bold]` brackets) is left exactly as it was. The CLI's consoles run it on every string
they render (`skillopt_lib.cli.output`), the dashboard on every value a template prints, and the MCP server
on every string it returns; `json_printable` does the same to a JSON document without changing the data it
decodes to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# C0 controls but tab (\x09) and newline (\x0a); carriage return (\x0d) only where it does not end a line
# (`\r\n` is an ordinary line end, a lone `\r` returns to the line's start and overwrites what it showed);
# DEL; C1 controls (\x9b is a one-byte CSI); Unicode bidirectional marks, embeddings, overrides and isolates.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI}]|\r(?!\n)")
# In a JSON document C0 controls are already escaped by the encoder; the rest may appear raw.
_UNSAFE_IN_JSON = re.compile(f"[\x7f-\x9f{_BIDI}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character but newline and tab shown as a visible escape (`\\x1b`)."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_visible, text)


def json_printable(document: str) -> str:
    """A JSON document with the characters a terminal would act on written as `\\uXXXX` escapes.

    The document decodes to exactly the same data: only how those characters are spelled changes.
    """
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def printable_data(data: Any) -> Any:
    """`data` (dicts, lists, strings, numbers) with `printable` applied to every string, keys included."""
    if isinstance(data, str):
        return printable(data)
    if isinstance(data, Mapping):
        return {printable_data(k): printable_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [printable_data(v) for v in data]
    return data
