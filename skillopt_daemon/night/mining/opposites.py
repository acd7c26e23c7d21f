"""The words a rule or a correction is about, and whether a correction allows something: what tells that
the user's words say the opposite of a rule (`outcomes.py`: a correction against an installed rule;
`conflicts.py`: two rules installed in different scopes).

Kept apart from `outcomes.py` so the review commands can ask it without loading the report's settings and
store code: `skillopt status` stays quick.
"""

from __future__ import annotations

import functools
import re

from skillopt_daemon.night.mining.preferences import terms

# Words that name no rule's subject: a contradiction must share a word outside these with the rule.
_COMMON = {
    "the", "and", "use", "using", "used", "not", "don", "never", "always", "code", "here", "this", "that",
    "with", "for", "instead", "actually", "please", "fix", "just", "keep", "write", "make", "are", "fine",
    "you", "can", "may", "should", "them", "it's", "its", "one", "all", "but", "also", "okay",
}  # fmt: skip
# A correction that allows what a rule forbade: "actually, do use noqa here", "it's fine to ...", "you can
# keep ...", and their equivalents in the languages the classifier reads.
_ALLOWS = re.compile(
    r"(?:\bdo\s+(?:use|keep|add|write)\b|\bit'?s\s+(?:fine|ok|okay|allowed)\s+to\b|\b(?:is|are)\s+(?:fine|ok|okay|"
    r"allowed)\s+here\b|\byou\s+(?:can|may)\s+(?:use|keep|add)\b|\bgo\s+ahead\s+and\s+use\b|\bignore\s+(?:the|that)"
    r"\s+rule\b|\bforget\s+(?:the|that)\s+rule\b|\bpode\s+usar\b|\bpuedes\s+usar\b|\btu\s+peux\s+utiliser\b|"
    r"\bdu\s+darfst\b|\bpuoi\s+usare\b|可以用|可以使用|使っていい)",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=65536)
def cached_terms(text: str) -> frozenset[str]:
    """`preferences.terms`, once per text: the report compares every correction with every rule."""
    return frozenset(terms(text))


def allows(text: str) -> bool:
    """Does this correction allow something (rather than forbid or redirect)? Half of a contradiction."""
    return bool(_ALLOWS.search(text))


def subject(text: str) -> set[str]:
    """The words that name what a rule or a correction is about (none of `_COMMON`)."""
    return {t for t in cached_terms(text) if t not in _COMMON}
