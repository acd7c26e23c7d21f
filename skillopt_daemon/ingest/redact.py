"""Secrets out before anything is stored: every text a source emits passes through a `Redactor`.

Transcripts are full of credentials: keys pasted into prompts, `env` dumps in tool output, `.env` files the
agent read. What the store never holds cannot leak to the optimizer's model provider, the dashboard or a
backup, so redaction happens inside the sources, before the pipeline sees a record. What counts as a secret
is the library's one set of patterns (`skillopt_lib.secrets`), the same set that masks the trainer's run
files; this module makes applying it fast and adds what only transcripts need (base64-encoded dumps, the
user's own `ingest.redact_patterns`).

Speed matters because the backfill pushes every byte of a user's history through here. Each pattern has a
few literal "triggers" (cheap substrings that any match must contain); a text is lower-cased once, every
trigger occurrence is found in one pass (`trigger_scan`), and only the patterns whose trigger occurs are
tried, anchored at those places. A trigger should be as long as the pattern allows: `passw`, not `pass`,
which every "3 passed" of a test run contains. Where hyperscan is installed, an ASCII text first goes
through all the patterns at once (`PatternPrefilter`), and most texts stop there: a "token" in a code
listing wakes a trigger, but no pattern.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import Any

from skillopt_daemon.ingest.trigger_scan import PatternPrefilter, TriggerScanner
from skillopt_lib import secrets
from skillopt_lib.errors import ConfigError
from skillopt_lib.secrets import Pattern

MARK = "[REDACTED:{kind}]"

# The patterns themselves are the library's (`skillopt_lib.secrets`): one set, used by run files and ingest.
# A run of base64 (as `base64` wraps it, 76 characters a line, or on one line) long enough to hide a
# `NAME=value` line. Such runs are decoded and, when they are text, scanned like any text (`env | base64`).
_B64_RUN = re.compile(
    r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/]{20,}(?:\n[A-Za-z0-9+/]{4,})*={0,2}(?![A-Za-z0-9+/=_\-])"
)
_MIN_B64 = 20
# Texts up to this long are remembered with what `redact` made of them (a pure function of the text).
_SHORT = 80
# What the trigger scan looks for in the lower-cased text so that texts without such a run skip the base64
# pass: every run of `_B64_RUN` holds `_MIN_B64` of these characters in a row (lower-casing keeps them so),
# and replacing a secret with a mark never joins two shorter runs (a mark starts and ends with a bracket).
_B64_PRESENT = f"[a-z0-9+/]{{{_MIN_B64}}}"
# The same in text that has not been lower-cased (for the pattern prefilter).
_B64_PRESENT_ANY_CASE = re.compile(f"[A-Za-z0-9+/]{{{_MIN_B64}}}")

# A private key's first and last lines, to tell whether a text cut in two left one open (see `redact_tail`).
_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")


def _may_encode_text(run: str) -> bool:
    """A cheap first look before decoding: base64 of text is about a third capital letters (the first
    character of every group encodes a byte under 0x80 as A-Z or a-f), while paths, identifiers and hex
    digests that also match `_B64_RUN` are mostly lower case. Most runs stop here, undecoded."""
    upper = sum(1 for ch in run if "A" <= ch <= "Z")
    return upper * 6 >= len(run)


def _decoded_text(run: str, *, unaligned: bool) -> str | None:
    """The text a base64 run encodes, or None when it is not base64 of mostly printable text.

    `unaligned`: the run may start in the middle of a 4-character group (the text was cut there), so each
    of the four alignments is tried.
    """
    joined = run.replace("\n", "").rstrip("=")
    for shift in range(4 if unaligned else 1):
        body = joined[shift:]
        body = body[: len(body) - len(body) % 4]
        if len(body) < _MIN_B64 - 4:
            return None
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            continue
        text = raw.decode("utf-8", errors="replace")
        printable = sum(1 for ch in text if ch.isprintable() or ch in "\n\r\t")
        if printable >= 0.95 * len(text):
            return text
    return None


class Redactor:
    """Replaces secrets in text with `[REDACTED:<kind>]` and counts them.

    `extra_patterns` are the user's own regexes (`ingest.redact_patterns`); a whole match is replaced with
    `[REDACTED:custom]`. They always run, since no trigger can be derived from an arbitrary regex.
    """

    def __init__(self, extra_patterns: Iterable[str] = ()) -> None:
        custom: list[Pattern] = []
        for raw in extra_patterns:
            try:
                custom.append(Pattern("custom", re.compile(raw), ()))
            except re.error as exc:
                raise ConfigError(
                    f"redaction pattern {raw!r} is not a valid regular expression: {exc}",
                    hint="fix it with `skillopt config set ingest.redact_patterns ...`",
                ) from None
        # Read when built, not imported once: the one set is `skillopt_lib.secrets.PATTERNS`.
        self.patterns: tuple[Pattern, ...] = secrets.PATTERNS + tuple(custom)
        self._always = [p for p in self.patterns if not p.triggers]
        self._triggered = [p for p in self.patterns if p.triggers]
        self._multiline = [p for p in self._triggered if p.multiline]
        self._single = [p for p in self._triggered if not p.multiline]
        self._triggers = tuple(sorted({t for p in self._triggered for t in p.triggers}))
        self._by_trigger: dict[str, tuple[int, ...]] = {
            t: tuple(i for i, p in enumerate(self._single) if t in p.triggers) for t in self._triggers
        }
        self._scanner = TriggerScanner(self._triggers, presence={"base64": _B64_PRESENT})
        self._short: dict[str, tuple[str, int]] = {}  # what `redact` gave for short texts
        # Every built-in pattern and the base64 run at once, over ASCII text; None without hyperscan.
        self._prefilter: PatternPrefilter | None = None
        try:
            self._prefilter = PatternPrefilter([p.regex for p in self._triggered] + [_B64_PRESENT_ANY_CASE])
        except RuntimeError:
            pass

    def redact(self, text: str) -> tuple[str, int]:
        """Return the text with every secret replaced, and how many were replaced."""
        if not text:
            return text, 0
        if len(text) <= _SHORT:  # tool names, folders, branches, models: the same few, over and over
            known = self._short.get(text)
            if known is None:
                if len(self._short) >= 4096:
                    self._short.clear()
                known = self._short[text] = self._redact_text(text)
            return known
        return self._redact_text(text)

    def _redact_text(self, text: str) -> tuple[str, int]:
        total = 0
        encoded = len(text) >= _MIN_B64  # whether a base64 run may hide a secret
        if self._prefilter is not None and text.isascii() and not self._prefilter.may_match(text):
            # No built-in pattern matches anywhere, and there is no long base64 run: most texts end here.
            if not self._always:
                return text, 0
            encoded = False
        elif len(text) >= 6:
            lower = text.lower()
            scan = self._scanner.scan(lower)  # every trigger found in one pass, and any long base64 run
            positions = scan.positions
            encoded = encoded and "base64" in scan.present
            if positions:  # else no built-in pattern can match: most texts stop here
                for pattern in self._multiline:
                    if any(t in positions for t in pattern.triggers):
                        text, n = self._apply(pattern, text)
                        if n:
                            total += n
                            lower = text.lower()
                            positions = self._scanner.positions(lower)
                if len(lower) == len(text):
                    text, n = self._redact_at_triggers(text, lower, positions)
                else:  # lower-casing changed the length (rare Unicode): positions do not line up, scan it all
                    text, n = self._run(self._single, set(positions), text)
                total += n
        for pattern in self._always:
            text, n = self._apply(pattern, text)
            total += n
        if encoded and len(text) >= _MIN_B64:
            text, n = self._redact_encoded(text)
            total += n
        return text, total

    def _redact_encoded(self, text: str) -> tuple[str, int]:
        """Replace each base64 run whose decoded text holds a secret (an encoded `env` dump)."""
        total = 0

        def check(m: re.Match[str]) -> str:
            nonlocal total
            if not _may_encode_text(m.group(0)):
                return m.group(0)
            decoded = _decoded_text(m.group(0), unaligned=m.start() == 0)
            if decoded is None:
                return m.group(0)
            _, n = self.redact(decoded)
            if not n:
                return m.group(0)
            total += n
            return MARK.format(kind="base64-secret")

        text = _B64_RUN.sub(check, text)
        return text, total

    def redact_tail(self, text: str, size: int) -> tuple[str, int]:
        """The redacted end of `text` (at least its last `size` characters), as part of the whole text.

        The end is taken from the start of a line, so a wrapped base64 run decodes aligned, and a private
        key whose BEGIN line lies before the cut is redacted up to its END line: the end of a long output is
        never redacted as if it stood alone.
        """
        start = max(0, len(text) - size)
        if start == 0:
            return self.redact(text)
        start = text.rfind("\n", 0, start) + 1
        tail, carried = text[start:], 0
        if text.rfind("PRIVATE KEY", 0, start) != -1:
            begins = list(_PEM_BEGIN.finditer(text, 0, start))
            if begins and _PEM_END.search(text, begins[-1].end(), start) is None:
                end = _PEM_END.search(tail)
                tail = MARK.format(kind="private-key") + (tail[end.end() :] if end else "")
                carried = 1
        tail, n = self.redact(tail)
        return tail, n + carried

    def _run(self, patterns: Sequence[Pattern], present: set[str], text: str) -> tuple[str, int]:
        total = 0
        for pattern in patterns:
            if present.isdisjoint(pattern.triggers):
                continue
            text, n = self._apply(pattern, text)
            total += n
        return text, total

    def _redact_at_triggers(
        self, text: str, lower: str, positions: dict[str, list[int]] | None = None
    ) -> tuple[str, int]:
        """Try each pattern only where one of its triggers occurs, then replace all matches in one pass.

        A match must start at most `back` characters before one of its trigger's occurrences and cannot
        cross a line end, so anchored attempts there find every match a full scan would; where patterns
        overlap, the earlier one in the list wins, as if they had been applied one after another.
        """
        if positions is None:  # the caller has not searched `lower` for the triggers yet
            positions = self._scanner.positions(lower)
        found: list[tuple[int, int, int, str]] = []  # (pattern order, start, end, mark)
        size = len(text)
        orders = sorted({o for t in positions for o in self._by_trigger[t]})
        for order in orders:
            pattern = self._single[order]
            hits = [i for t in pattern.triggers if t in positions for i in positions[t]]
            if len(pattern.triggers) > 1:
                hits = sorted(set(hits))
            mark = MARK.format(kind=pattern.kind)
            covered = 0  # matches of this pattern are non-overlapping, like re.sub's
            eol = bol = -1
            anchored, g = pattern.anchored, pattern.group
            for i in hits:
                if i < covered:
                    continue
                if i > eol:
                    bol = text.rfind("\n", 0, i) + 1
                    eol = text.find("\n", i)
                    eol = size if eol == -1 else eol
                if anchored is None:
                    m = pattern.regex.match(text, i, eol)
                    if m is not None and m.end() > m.start():
                        found.append((order, m.start(g), m.end(g), mark))
                        covered = m.end()
                else:
                    m = anchored.match(text, max(bol, i - pattern.back, covered), eol)
                    if m is not None and m.end() > m.start(1):
                        found.append((order, m.start(g + 1), m.end(g + 1), mark))
                        covered = m.end()
        if not found:
            return text, 0
        found.sort()
        starts: list[int] = []  # accepted spans, kept sorted by start (they never overlap)
        taken: list[tuple[int, int, str]] = []
        for _, start, end, mark in found:
            at = bisect.bisect_right(starts, start)
            if at > 0 and taken[at - 1][1] > start:
                continue
            if at < len(taken) and taken[at][0] < end:
                continue
            starts.insert(at, start)
            taken.insert(at, (start, end, mark))
        parts: list[str] = []
        pos = 0
        for start, end, mark in taken:
            parts.append(text[pos:start])
            parts.append(mark)
            pos = end
        parts.append(text[pos:])
        return "".join(parts), len(taken)

    @staticmethod
    def _apply(pattern: Pattern, text: str) -> tuple[str, int]:
        return secrets.apply(pattern, text, MARK.format(kind=pattern.kind))

    def redact_value(self, value: Any) -> tuple[Any, int]:
        """Redact every string inside a JSON-like value (dicts, lists); returns a new value and the count."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            total = 0
            out: dict[Any, Any] = {}
            for k, v in value.items():
                out[k], n = self.redact_value(v)
                total += n
            return out, total
        if isinstance(value, list):
            total = 0
            items = []
            for v in value:
                r, n = self.redact_value(v)
                items.append(r)
                total += n
            return items, total
        return value, 0

    def redact_record(self, record: Any) -> int:
        """Redact, in place, every text field of a record dataclass (and string values in its `extra`)."""
        total = 0
        for f in fields(record):
            value = getattr(record, f.name)
            if isinstance(value, str) and f.name not in _UNREDACTED_FIELDS:
                new, n = self.redact(value)
                if n:
                    setattr(record, f.name, new)
                    total += n
            elif isinstance(value, dict) and value:
                new_d, n = self.redact_value(value)
                if n:
                    setattr(record, f.name, new_d)
                    total += n
        return total


# Identifiers and timestamps: never secrets, and changing them would break keys and joins.
_UNREDACTED_FIELDS = frozenset(
    {"session_id", "key", "turn_key", "call_key", "parent_key", "timestamp", "started_at", "ended_at", "role"}
)

_default: Redactor | None = None


def default_redactor() -> Redactor:
    """The redactor with built-in patterns only; sources built from settings add the user's patterns."""
    global _default
    if _default is None:
        _default = Redactor()
    return _default


def redact(text: str) -> tuple[str, int]:
    """Redact with the built-in patterns."""
    return default_redactor().redact(text)
