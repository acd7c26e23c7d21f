"""Finding every occurrence of a fixed set of words in a text in one pass: the redactor's prefilter.

The redactor tries a pattern only where one of its trigger words occurs, so on a backfill most of its time
went into looking for some forty triggers in every text, one `str.find` scan per trigger. Hyperscan finds
all of them in one pass over the text's UTF-8 bytes, about ten times faster on transcript text. Where its
wheel is missing (Windows, unusual platforms) the same answer comes from the `str.find` loop.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

try:
    import hyperscan
except ImportError:  # no wheel for this platform: the str.find loop below gives the same answer
    hyperscan = None  # type: ignore[assignment]


class TriggerScanner:
    """Where each of `words` occurs in a text; both implementations give identical answers.

    Thread safety: a built scanner can be shared between threads (each thread gets its own scan space).
    """

    def __init__(self, words: Iterable[str], *, native: bool | None = None) -> None:
        """`native`: None uses hyperscan when installed; False forces the pure-Python search."""
        self.words: tuple[str, ...] = tuple(sorted(set(words)))
        use = hyperscan is not None if native is None else native
        if use and hyperscan is None:
            raise RuntimeError("hyperscan is not installed")
        self._db: Any = None
        self._local = threading.local()
        if use and self.words:
            self._db = hyperscan.Database()
            # Each byte as \xhh: a literal whatever the word holds.
            self._db.compile(
                expressions=[b"".join(b"\\x%02x" % c for c in w.encode()) for w in self.words],
                ids=list(range(len(self.words))),
                elements=len(self.words),
                flags=[0] * len(self.words),
            )
            self._lengths = [len(w.encode()) for w in self.words]
            self._new_scratch = hyperscan.Scratch

    @property
    def native(self) -> bool:
        return self._db is not None

    def positions(self, text: str) -> dict[str, list[int]]:
        """Start offsets of every occurrence (overlapping ones too) of each word found, in ascending order.

        Words that do not occur are absent from the result. Never raises for any `str`.
        """
        if self._db is not None:
            return self._native_positions(text)
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

    def _native_positions(self, text: str) -> dict[str, list[int]]:
        data = text.encode("utf-8", "surrogatepass")  # lone surrogates (from JSON escapes) included
        ends: list[tuple[int, int]] = []  # (byte offset after the end, word id), in order of the end
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._new_scratch(self._db)
        self._db.scan(data, match_event_handler=_collect, context=ends, scratch=scratch)
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
