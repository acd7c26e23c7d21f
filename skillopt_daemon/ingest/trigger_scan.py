"""Finding every occurrence of a fixed set of words in a text in one pass: the redactor's prefilter.

The redactor tries a pattern only where one of its trigger words occurs, so on a backfill most of its time
went into looking for some forty triggers in every text, one `str.find` scan per trigger. Hyperscan finds
all of them in one pass over the text's UTF-8 bytes, about ten times faster on transcript text. Where its
wheel is missing (Windows, unusual platforms) the same answer comes from the `str.find` loop.

The same pass also tells whether each of a few named regular expressions occurs at all (`presence`), so
the redactor's base64 pass is skipped for the texts that hold no long enough run without a scan of its own.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

try:
    import hyperscan
except ImportError:  # no wheel for this platform: the str.find loop below gives the same answer
    hyperscan = None  # type: ignore[assignment]


@dataclass
class Scan:
    """What one pass over a text found: each word's start offsets, and which named expressions occur."""

    positions: dict[str, list[int]] = field(default_factory=dict)
    present: frozenset[str] = frozenset()


class TriggerScanner:
    """Where each of `words` occurs in a text; both implementations give identical answers.

    `presence` names regular expressions (ASCII, in the syntax both hyperscan and `re` accept, with no
    anchors or look-arounds) whose occurrence anywhere in the text is reported, without positions.
    Thread safety: a built scanner can be shared between threads (each thread gets its own scan space).
    """

    def __init__(
        self, words: Iterable[str], *, native: bool | None = None, presence: Mapping[str, str] | None = None
    ) -> None:
        """`native`: None uses hyperscan when installed; False forces the pure-Python search."""
        self.words: tuple[str, ...] = tuple(sorted(set(words)))
        self.presence: dict[str, re.Pattern[str]] = {k: re.compile(v) for k, v in (presence or {}).items()}
        use = hyperscan is not None if native is None else native
        if use and hyperscan is None:
            raise RuntimeError("hyperscan is not installed")
        self._db: Any = None
        self._local = threading.local()
        if use and (self.words or self.presence):
            self._db = hyperscan.Database()
            n = len(self.words)
            # Each byte as \xhh: a literal whatever the word holds. A named expression is reported once.
            self._db.compile(
                expressions=[b"".join(b"\\x%02x" % c for c in w.encode()) for w in self.words]
                + [p.pattern.encode() for p in self.presence.values()],
                ids=list(range(n + len(self.presence))),
                elements=n + len(self.presence),
                flags=[0] * n + [hyperscan.HS_FLAG_SINGLEMATCH] * len(self.presence),
            )
            self._names = list(self.presence)
            self._lengths = [len(w.encode()) for w in self.words]
            self._new_scratch = hyperscan.Scratch

    @property
    def native(self) -> bool:
        return self._db is not None

    def positions(self, text: str) -> dict[str, list[int]]:
        """Start offsets of every occurrence (overlapping ones too) of each word found, in ascending order.

        Words that do not occur are absent from the result. Never raises for any `str`.
        """
        return self.scan(text).positions

    def scan(self, text: str) -> Scan:
        """`positions(text)`, and the names of the `presence` expressions that match somewhere in `text`.

        Never raises for any `str`.
        """
        if self._db is not None:
            return self._native_scan(text)
        present = frozenset(name for name, p in self.presence.items() if p.search(text))
        return Scan(self._python_positions(text), present)

    def _python_positions(self, text: str) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        find = text.find
        for word in self.words:
            i = find(word)
            if i == -1:
                continue
            occ = found[word] = []
            while i != -1:
                occ.append(i)
                i = find(word, i + 1)
        return found

    def _native_scan(self, text: str) -> Scan:
        data = text.encode("utf-8", "surrogatepass")  # lone surrogates (from JSON escapes) included
        ends: list[tuple[int, int]] = []  # (byte offset after the end, word id), in order of the end
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._new_scratch(self._db)
        self._db.scan(data, match_event_handler=_collect, context=ends, scratch=scratch)
        if not ends:
            return Scan()
        n = len(self.words)
        present = frozenset(self._names[word - n] for _, word in ends if word >= n)
        if present:
            ends = [(end, word) for end, word in ends if word < n]
        return Scan(self._native_positions(data, text, ends), present)

    def _native_positions(self, data: bytes, text: str, ends: list[tuple[int, int]]) -> dict[str, list[int]]:
        if not ends:
            return {}
        lengths = self._lengths
        hits = sorted((end - lengths[word], word) for end, word in ends)
        if len(data) != len(text):  # some characters take several bytes: byte offsets to character offsets
            hits = _char_offsets(data, hits)
        found: dict[str, list[int]] = {}
        for start, word in hits:
            found.setdefault(self.words[word], []).append(start)
        return found


def _collect(word: int, _from: int, to: int, _flags: int, ends: list[tuple[int, int]]) -> None:
    ends.append((to, word))


def _char_offsets(data: bytes, hits: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte offsets (sorted, each at a character boundary) as offsets into the decoded text."""
    out = []
    byte_at = char_at = 0
    for start, word in hits:
        char_at += len(data[byte_at:start].decode("utf-8", "surrogatepass"))
        byte_at = start
        out.append((char_at, word))
    return out
