"""Finding every occurrence of a fixed set of words in a text in one pass: the redactor's prefilter.

The redactor tries a pattern only where one of its trigger words occurs, so on a backfill most of its time
went into looking for some forty triggers in every text, one `str.find` scan per trigger. Hyperscan finds
all of them in one pass over the text's UTF-8 bytes, about ten times faster on transcript text. Where its
wheel is missing (Windows, unusual platforms) the same answer comes from the `str.find` loop.

The same pass also tells whether each of a few named regular expressions occurs at all (`presence`), so
the redactor's base64 pass is skipped for the texts that hold no long enough run without a scan of its own.

A trigger word alone still wakes the redactor for every "token" in a code listing. `PatternPrefilter` goes
one step further where hyperscan is installed: it runs the redactor's whole patterns, widened where
hyperscan cannot follow them exactly, over an ASCII text in one pass, and a text none of them can match is
done with (most texts are ASCII, and most hold no secret).
"""

from __future__ import annotations

import functools
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
            n = len(self.words)
            # Each byte as \xhh: a literal whatever the word holds. A named expression is reported once.
            self._db = _database(
                tuple(b"".join(b"\\x%02x" % c for c in w.encode()) for w in self.words)
                + tuple(p.pattern.encode() for p in self.presence.values()),
                (0,) * n + (hyperscan.HS_FLAG_SINGLEMATCH,) * len(self.presence),
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


class PatternPrefilter:
    r"""Whether any of several regular expressions may match an ASCII text, in one hyperscan pass.

    Each expression is compiled in hyperscan's prefilter mode, which widens what it cannot do exactly
    (look-arounds, lazy repeats), so `may_match` can say True where `re` finds no match but never False
    where it finds one. On ASCII text the two engines agree on case folding, `\d`, `\w` and `\b`; they
    differ on `\s`, which in Python's `re` also matches the separators U+001C..U+001F, so a text holding
    one of those is reported as a possible match. Text with any other character is not this class's to
    judge: the caller must check `str.isascii()` first.

    Raises RuntimeError when hyperscan is not installed (the caller then goes without), and re.error /
    hyperscan.error when an expression cannot be compiled. Thread safety as `TriggerScanner`.
    """

    def __init__(self, patterns: Iterable[re.Pattern[str]]) -> None:
        if hyperscan is None:
            raise RuntimeError("hyperscan is not installed")
        expressions: list[bytes] = [rb"[\x1c-\x1f]"]  # where `re`'s `\s` differs from hyperscan's
        flags: list[int] = [hyperscan.HS_FLAG_SINGLEMATCH]
        for pattern in patterns:
            source, flag = pattern.pattern, hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH
            if source.startswith("(?i)"):
                source = source[4:]
            if pattern.flags & re.IGNORECASE:
                flag |= hyperscan.HS_FLAG_CASELESS
            if pattern.flags & re.DOTALL:
                flag |= hyperscan.HS_FLAG_DOTALL
            if pattern.flags & re.MULTILINE:
                flag |= hyperscan.HS_FLAG_MULTILINE
            expressions.append(source.encode())
            flags.append(flag | hyperscan.HS_FLAG_ALLOWEMPTY)
        self._db = _database(tuple(expressions), tuple(flags))
        self._local = threading.local()
        self._new_scratch, self._terminated = hyperscan.Scratch, hyperscan.ScanTerminated

    def may_match(self, text: str) -> bool:
        """False only if no expression matches anywhere in `text`, which must be ASCII (else ValueError)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._new_scratch(self._db)
        try:
            data = text.encode("ascii")
        except UnicodeEncodeError:
            raise ValueError("PatternPrefilter judges ASCII text only") from None
        try:
            self._db.scan(data, match_event_handler=_stop, scratch=scratch)
        except self._terminated:
            return True
        return False


def _stop(_id: int, _from: int, _to: int, _flags: int, _context: object) -> bool:
    """The first match answers the question: stop the scan (it raises ScanTerminated)."""
    return True


@functools.lru_cache(maxsize=16)
def _database(expressions: tuple[bytes, ...], flags: tuple[int, ...]) -> Any:
    """A compiled hyperscan database, once per process for each set of expressions.

    Compiling is the slow part (tens of milliseconds: a command's start-up, not a scan), and every
    redactor of a process (the default one, the one with the user's patterns) asks for the same sets. A
    database is read-only once compiled, so scanners share it; each thread scans with its own scratch.
    """
    db = hyperscan.Database()
    db.compile(
        expressions=list(expressions),
        ids=list(range(len(expressions))),
        elements=len(expressions),
        flags=list(flags),
    )
    return db


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
