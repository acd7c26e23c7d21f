"""What counts as a secret: the one set of patterns that both the library and the daemon hide.

The library masks run files with it (`config.masked_dump` and `config.Redactor`: config dumps, trajectories,
logs), and the daemon's ingest redacts every transcript text with it (`skillopt_daemon.ingest.redact`, which
adds the fast trigger scan, the pattern prefilter, base64-decoding and the user's own patterns on top). A
pattern added here is therefore hidden everywhere skillopt writes text; there is no second list to forget.

Each pattern names the `kind` of secret, the literal `triggers` (lower-case substrings every match contains,
so a text without any of them skips the pattern), and which group is the secret (1+ keeps the key name, as
in `API_KEY=****`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

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
    """One kind of secret as a regular expression, with what makes it cheap to skip (see `define`)."""

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


def define(
    kind: str, regex: str, triggers: Sequence[str], group: int = 0, flags: int = 0, back: int = 0
) -> Pattern:
    """One pattern. `triggers`: substrings (any case) of which every match holds one, as long as the
    pattern allows (`passw`, not `pass`, which every "3 passed" holds); `back`: how far before a trigger a
    match can start, when the trigger does not open the match."""
    multiline = bool(flags & re.DOTALL)
    anchored = None
    if back:
        body, extra = (regex[4:], re.IGNORECASE) if regex.startswith("(?i)") else (regex, 0)
        anchored = re.compile(f"(?:.){{0,{back}}}?({body})", flags | extra)
    lowered = tuple(t.lower() for t in triggers)
    return Pattern(kind, re.compile(regex, flags), lowered, group, multiline, back, anchored)


_NB = r"(?<![A-Za-z0-9_\-])"  # not preceded by a token character

PATTERNS: tuple[Pattern, ...] = (
    # PEM blocks first: they contain base64 that other patterns would partly eat. A block cut off by an
    # excerpt (no END line) is redacted to the end of the text.
    define(
        "private-key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----.*?"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----|\Z)",
        ["private key"],
        flags=re.DOTALL,
    ),
    define("anthropic-key", _NB + r"sk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_\-]{20,}", ["sk-"]),
    define(
        "openai-key",
        _NB + r"sk-(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}",
        ["sk-"],
    ),
    define(
        "aws-access-key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
        ["akia", "asia", "abia", "acca"],
    ),
    define(
        "aws-secret-key",
        r"(?i)(aws_?secret_?access_?key|aws_?session_?token|secretaccesskey)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{30,})",
        ["aws", "secret"],
        group=2,
    ),
    define(
        "github-token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b",
        ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
    ),
    define("github-token", r"\bgithub_pat_[A-Za-z0-9_]{30,}", ["github_pat_"]),
    define(
        "gitlab-token",
        r"\bgl(?:pat|ptt|dt|rt|oas|cbt|imt|agent|ft|soat)-[A-Za-z0-9_\-]{20,}",
        ["gl"],
    ),
    define(
        "slack-token",
        r"\bxox[abposre]-[A-Za-z0-9\-]{10,}",
        ["xox"],
    ),
    define(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}",
        ["hooks.slack.com"],
        back=8,
    ),
    define("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", ["aiza"]),
    define("google-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}", ["ya29."]),
    define("google-oauth-secret", r"\bGOCSPX-[0-9A-Za-z_\-]{20,}", ["gocspx-"]),
    define("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}", ["_live_", "_test_"], back=2),
    define("stripe-webhook-secret", r"\bwhsec_[0-9A-Za-z]{24,}", ["whsec_"]),
    define("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ["npm_"]),
    define("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b", ["hf_"]),
    define("sendgrid-key", r"\bSG\.[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{30,}", ["sg."]),
    define("digitalocean-token", r"\bdo[por]_v1_[a-f0-9]{64}\b", ["_v1_"], back=3),
    define("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", ["shp"]),
    define(
        "azure-key",
        r"(?i)\b(AccountKey|SharedAccessKey|SharedAccessSignature|Primary ?Key|Secondary ?Key)"
        r"=([A-Za-z0-9+/=%]{20,})",
        ["key", "signature"],
        group=2,
        back=16,
    ),
    # An Azure SAS token is a query string; its signature is the secret.
    define("azure-sas", r"(?i)([?&]sig=)([A-Za-z0-9%+/=]{16,})", ["sig="], group=2, back=1),
    define(
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        ["eyj"],
    ),
    define("bearer-token", r"(?i)\b(Bearer\s+)([A-Za-z0-9._~+/=\-]{16,})", ["bearer"], group=2),
    define(
        "auth-header",
        r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:Basic|Token|Digest|Bearer|Negotiate)?\s*)([^\s\"'\\\[]{8,})",
        ["authorization"],
        group=2,
    ),
    define(
        "connection-string",
        r"(?i)\b([a-z][a-z0-9+.\-]{1,30}://[^\s:/@\"'<>]{0,100}:)(?!\[REDACTED)([^\s@/\"'<>]{1,200})(@[A-Za-z0-9.\-_\[\]]+)",
        ["://"],
        group=2,
        back=31,
    ),
    define(
        "password-in-connection-string",
        r"(?i)\b((?:Password|Pwd)\s*=\s*)(?!\[REDACTED)([^;\s\"']{3,})",
        ["password", "pwd"],
        group=2,
    ),
    # key = value where the key names a secret: FOO_API_KEY=..., "password": "...", token: ... Only the value
    # is replaced. A key ending in `_env` names the variable that holds a secret (`api_key_env = "MY_KEY"`),
    # not the secret. The value must end at a delimiter, so `os.environ["X"]` or `get_token()` are left alone,
    # and `::` is a path, not an assignment: `tests/test_token.py::test_refresh`, `SecretKey::new()`.
    define(
        "secret-assignment",
        r"(?i)(?:passw(?:or)?d|passphrase|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key"
        r"|credentials?|auth[_\-]?key)[A-Za-z0-9_.\-]{0,40}(?<![_.\-]env)[\"']?\s*(?::=|=|:)\s*[\"']?"
        r"(?=[^\s\"']*[A-Za-z])" + _SECRET_AFTER_COLON + _END,
        ["passw", "passphrase", "secret", "token", "key", "credential"],
        group=1,
        back=8,
    ),
    define(
        "password-flag",
        r"(?i)(\s--?(?:password|passwd|token|api-key|secret)[= ]\s*[\"']?)" + _SECRET + _END,
        ["passw", "token", "secret", "api-key"],
        group=2,
        back=3,
    ),
    # A number is a password too when the variable says so: DB_PASSWORD=123456. Only NAME=value with no
    # spaces (an env assignment) and a part of the name (between underscores) that is exactly the word, so
    # MAX_TOKENS=100000 stays. The match starts at that word: MYSQL_ROOT_PASSWORD=1 matches from PASSWORD.
    define(
        "secret-assignment",
        r"(?i)(?<![A-Za-z0-9])((?:passw(?:or)?d|pass|pwd|passphrase|secret|token|key)"
        r"(?:_[A-Za-z0-9]{1,30}){0,3}=[\"']?)(\d{4,64})(?=[\s\"'`,;&)}\]]|$)",
        # not a bare "pass": every "5 passed" in test output would wake the pattern
        ["passw", "passp", "pass_", "pass=", "pwd", "secret", "token", "key"],
        group=2,
    ),
    # The MySQL clients take the password glued to -p (`-P` is the port); sshpass takes it after -p.
    # Triggers are shared with other patterns where possible: each distinct trigger costs a scan of the text.
    define(
        "password-flag",
        r"(?<![\w\-])((?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck)\b"
        r"[^\n|;&]*?\s-p[\"']?)([^\s\"'`;|&]+)",
        ["mysql"],
        group=2,
    ),
    define(
        "password-flag",
        r"(?<![\w\-])(sshpass\b[^\n|;&]*?\s-p\s*[\"']?)([^\s\"'`;|&]+)",
        ["sshpass"],
        group=2,
        back=3,
    ),
    # A password in a URL's query string: ?password=..., &key=..., ?access_token=...
    define(
        "url-query-secret",
        r"(?i)([?&](?:password|passwd|pass|pwd|passphrase|secret|client_secret|key|api_?key|apikey"
        r"|access_?key|token|access_token|auth_?token|refresh_token|id_token)=)(?!\[REDACTED)"
        r"([^&#\s\"'<>\[\]]{3,})",
        ["passw", "passp", "pass=", "pwd", "secret", "key", "token"],
        group=2,
        back=9,
    ),
)


def mask(text: str, mark: str = "****") -> tuple[str, int]:
    """`text` with every match of every pattern replaced by `mark` (only the secret group where a pattern
    keeps its key name), and how many were replaced. Patterns run in order; a pattern whose triggers do not
    occur in the text is not tried."""
    if not text:
        return text, 0
    lower = text.lower()
    total = 0
    for pattern in PATTERNS:
        if pattern.triggers and not any(t in lower for t in pattern.triggers):
            continue
        text, n = apply(pattern, text, mark)
        if n:
            total += n
            lower = text.lower()
    return text, total


def apply(pattern: Pattern, text: str, mark: str) -> tuple[str, int]:
    """Replace every match of one pattern (its secret group, or the whole match) with `mark`."""
    if pattern.group == 0:
        return pattern.regex.subn(mark.replace("\\", "\\\\"), text)
    g = pattern.group

    def keep_rest(m: re.Match[str]) -> str:
        whole = m.group(0)
        start, end = m.start(g) - m.start(0), m.end(g) - m.start(0)
        return whole[:start] + mark + whole[end:]

    return pattern.regex.subn(keep_rest, text)
