"""Secrets out before anything is stored: every text a source emits passes through a `Redactor`.

Transcripts are full of credentials: keys pasted into prompts, `env` dumps in tool output, `.env` files the
agent read. What the store never holds cannot leak to the optimizer's model provider, the dashboard or a
backup, so redaction happens inside the sources, before the pipeline sees a record.

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
from dataclasses import dataclass, fields
from typing import Any

from skillopt_daemon.ingest.trigger_scan import PatternPrefilter, TriggerScanner
from skillopt_lib.errors import ConfigError

MARK = "[REDACTED:{kind}]"

# Value characters of a key=value secret. `[` is excluded so that already-redacted text is left alone
# (redaction is idempotent), `$`, `{`, `(` and `<` so that references such as `$TOKEN`, `${{ secrets.X }}`,
# `getpass()` or `<your key>` are not mistaken for values.
_VALUE = r"""[^\s"'`,;()\[\]{}<>$\\]"""
_END = r"""(?=[\s"'`,;)}\]>\\]|$)"""
# A value never ends in `:` (that is the next key: `label: auth_token: <secret>`).
_VALUE_LAST = r"""[^\s"'`,;()\[\]{}<>$\\:]"""
_SECRET = "(" + _VALUE + "{5,}" + _VALUE_LAST + ")"
# The same, not starting with `:` either: after `key:` that makes `key::name` (a path) no assignment.
_SECRET_AFTER_COLON = "(" + _VALUE_LAST + _VALUE + "{4,}" + _VALUE_LAST + ")"


@dataclass(frozen=True)
class Pattern:
    kind: str
    regex: re.Pattern[str]
    # Lower-case substrings of which at least one occurs in every match; empty: always run.
    triggers: tuple[str, ...]
    # Number of the group holding the secret; 0 replaces the whole match (1+ keeps the key name).
    group: int = 0
    # Matches can span lines (PEM blocks); every other pattern matches within one line.
    multiline: bool = False
    # How far before a trigger occurrence a match can start (the trigger sits at most this deep in it).
    back: int = 0
    # `regex` behind a lazy `.{0,back}` prefix, so one anchored attempt covers every possible start; the
    # secret is then group `group + 1`.
    anchored: re.Pattern[str] | None = None


def _p(
    kind: str, regex: str, triggers: Sequence[str], group: int = 0, flags: int = 0, back: int = 0
) -> Pattern:
    multiline = bool(flags & re.DOTALL)
    anchored = None
    if back:
        body, extra = (regex[4:], re.IGNORECASE) if regex.startswith("(?i)") else (regex, 0)
        anchored = re.compile(f"(?:.){{0,{back}}}?({body})", flags | extra)
    lowered = tuple(t.lower() for t in triggers)
    return Pattern(kind, re.compile(regex, flags), lowered, group, multiline, back, anchored)


_NB = r"(?<![A-Za-z0-9_\-])"  # not preceded by a token character

BUILTIN_PATTERNS: tuple[Pattern, ...] = (
    # PEM blocks first: they contain base64 that other patterns would partly eat. A block cut off by an
    # excerpt (no END line) is redacted to the end of the text.
    _p(
        "private-key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----.*?"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----|\Z)",
        ["private key"],
        flags=re.DOTALL,
    ),
    _p("anthropic-key", _NB + r"sk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_\-]{20,}", ["sk-"]),
    _p(
        "openai-key",
        _NB + r"sk-(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}",
        ["sk-"],
    ),
    _p(
        "aws-access-key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
        ["akia", "asia", "abia", "acca"],
    ),
    _p(
        "aws-secret-key",
        r"(?i)(aws_?secret_?access_?key|aws_?session_?token|secretaccesskey)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{30,})",
        ["aws", "secret"],
        group=2,
    ),
    _p(
        "github-token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b",
        ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
    ),
    _p("github-token", r"\bgithub_pat_[A-Za-z0-9_]{30,}", ["github_pat_"]),
    _p(
        "gitlab-token",
        r"\bgl(?:pat|ptt|dt|rt|oas|cbt|imt|agent|ft|soat)-[A-Za-z0-9_\-]{20,}",
        ["gl"],
    ),
    _p(
        "slack-token",
        r"\bxox[abposre]-[A-Za-z0-9\-]{10,}",
        ["xox"],
    ),
    _p(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}",
        ["hooks.slack.com"],
        back=8,
    ),
    _p("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", ["aiza"]),
    _p("google-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}", ["ya29."]),
    _p("google-oauth-secret", r"\bGOCSPX-[0-9A-Za-z_\-]{20,}", ["gocspx-"]),
    _p("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}", ["_live_", "_test_"], back=2),
    _p("stripe-webhook-secret", r"\bwhsec_[0-9A-Za-z]{24,}", ["whsec_"]),
    _p("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ["npm_"]),
    _p("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b", ["hf_"]),
    _p("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{30,}", ["sg."]),
    _p("digitalocean-token", r"\bdo[por]_v1_[a-f0-9]{64}\b", ["_v1_"], back=3),
    _p("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", ["shp"]),
    _p(
        "azure-key",
        r"(?i)\b(AccountKey|SharedAccessKey|SharedAccessSignature|Primary ?Key|Secondary ?Key)"
        r"=([A-Za-z0-9+/=%]{20,})",
        ["key", "signature"],
        group=2,
        back=16,
    ),
    # An Azure SAS token is a query string; its signature is the secret.
    _p("azure-sas", r"(?i)([?&]sig=)([A-Za-z0-9%+/=]{16,})", ["sig="], group=2, back=1),
    _p(
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        ["eyj"],
    ),
    _p("bearer-token", r"(?i)\b(Bearer\s+)([A-Za-z0-9._~+/=\-]{16,})", ["bearer"], group=2),
    _p(
        "auth-header",
        r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:Basic|Token|Digest|Bearer|Negotiate)?\s*)([^\s\"'\\\[]{8,})",
        ["authorization"],
        group=2,
    ),
    _p(
        "connection-string",
        r"(?i)\b([a-z][a-z0-9+.\-]{1,30}://[^\s:/@\"'<>]{0,100}:)(?!\[REDACTED)([^\s@/\"'<>]{1,200})(@[A-Za-z0-9.\-_\[\]]+)",
        ["://"],
        group=2,
        back=31,
    ),
    _p(
        "password-in-connection-string",
        r"(?i)\b((?:Password|Pwd)\s*=\s*)(?!\[REDACTED)([^;\s\"']{3,})",
        ["password", "pwd"],
        group=2,
    ),
    # key = value where the key names a secret: FOO_API_KEY=..., "password": "...", token: ... Only the value
    # is replaced. The value must end at a delimiter, so `os.environ["X"]` or `get_token()` are left alone,
    # and `::` is a path, not an assignment: `tests/test_token.py::test_refresh`, `SecretKey::new()`.
    _p(
        "secret-assignment",
        r"(?i)(?:passw(?:or)?d|passphrase|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key"
        r"|credentials?|auth[_\-]?key)[A-Za-z0-9_.\-]{0,40}[\"']?\s*(?::=|=|:)\s*[\"']?"
        r"(?=[^\s\"']*[A-Za-z])" + _SECRET_AFTER_COLON + _END,
        ["passw", "passphrase", "secret", "token", "key", "credential"],
        group=1,
        back=8,
    ),
    _p(
        "password-flag",
        r"(?i)(\s--?(?:password|passwd|token|api-key|secret)[= ]\s*[\"']?)" + _SECRET + _END,
        ["passw", "token", "secret", "api-key"],
        group=2,
        back=3,
    ),
    # A number is a password too when the variable says so: DB_PASSWORD=123456. Only NAME=value with no
    # spaces (an env assignment) and a part of the name (between underscores) that is exactly the word, so
    # MAX_TOKENS=100000 stays. The match starts at that word: MYSQL_ROOT_PASSWORD=1 matches from PASSWORD.
    _p(
        "secret-assignment",
        r"(?i)(?<![A-Za-z0-9])((?:passw(?:or)?d|pass|pwd|passphrase|secret|token|key)"
        r"(?:_[A-Za-z0-9]{1,30}){0,3}=[\"']?)(\d{4,64})(?=[\s\"'`,;&)}\]]|$)",
        # not a bare "pass": every "5 passed" in test output would wake the pattern
        ["passw", "passp", "pass_", "pass=", "pwd", "secret", "token", "key"],
        group=2,
    ),
    # The MySQL clients take the password glued to -p (`-P` is the port); sshpass takes it after -p.
    # Triggers are shared with other patterns where possible: each distinct trigger costs a scan of the text.
    _p(
        "password-flag",
        r"(?<![\w\-])((?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck)\b"
        r"[^\n|;&]*?\s-p[\"']?)([^\s\"'`;|&]+)",
        ["mysql"],
        group=2,
    ),
    _p(
        "password-flag",
        r"(?<![\w\-])(sshpass\b[^\n|;&]*?\s-p\s*[\"']?)([^\s\"'`;|&]+)",
        ["sshpass"],
        group=2,
        back=3,
    ),
    # A password in a URL's query string: ?password=..., &key=..., ?access_token=...
    _p(
        "url-query-secret",
        r"(?i)([?&](?:password|passwd|pass|pwd|passphrase|secret|client_secret|key|api_?key|apikey"
        r"|access_?key|token|access_token|auth_?token|refresh_token|id_token)=)(?!\[REDACTED)"
        r"([^&#\s\"'<>\[\]]{3,})",
        ["passw", "passp", "pass=", "pwd", "secret", "key", "token"],
        group=2,
        back=9,
    ),
)


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
        self.patterns: tuple[Pattern, ...] = BUILTIN_PATTERNS + tuple(custom)
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
        mark = MARK.format(kind=pattern.kind)
        if pattern.group == 0:
            return pattern.regex.subn(mark, text)
        g = pattern.group

        def keep_rest(m: re.Match[str]) -> str:
            whole = m.group(0)
            start, end = m.start(g) - m.start(0), m.end(g) - m.start(0)
            return whole[:start] + mark + whole[end:]

        return pattern.regex.subn(keep_rest, text)

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
