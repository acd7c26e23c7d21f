"""Which lines of a skill can carry a rule: what provenance and the conflict check judge, and nothing else.

Kept apart from the candidate screen (`screen.py`, with its tables of look-alike letters and hosts) because
the review faces ask it for every proposal they show, and must stay quick.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

_FRONTMATTER_KEY = re.compile(r"^[A-Za-z_][\w-]*:(?:\s|$)")
_FENCE = re.compile(r"^(?:`{3,}|~{3,})[\w+.-]*$")


def is_rule_line(line: str) -> bool:
    """Whether a line can carry a rule the agent will follow: not blank, not a Markdown heading, not pure
    formatting (a rule `---`, a code fence, a table's separator row, a lone bullet). Only such lines are
    judged for provenance: a new skill's heading is not something the user had to ask for."""
    text = line.strip()
    if not text or text.startswith("#") or _FENCE.match(text):
        return False
    return any(ch.isalnum() for ch in text)


def rule_lines(lines: Sequence[str], frontmatter: Collection[str] = ()) -> list[str]:
    """The lines of `lines` that can carry a rule (`is_rule_line`), without a leading YAML frontmatter
    block (`---`, `key: value` lines, `---`: a new skill's added lines start with it) and without any line
    in `frontmatter` (the stripped lines of the skill's own frontmatter, when the caller has it)."""
    known = {x.strip() for x in frontmatter}
    skip = 0
    if len(lines) > 1 and lines[0].strip() == "---" and _FRONTMATTER_KEY.match(lines[1].strip()):
        closing = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        skip = closing + 1 if closing is not None else 0
    return [line for line in lines[skip:] if is_rule_line(line) and line.strip() not in known]
