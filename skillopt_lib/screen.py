"""The candidate screen: what a skill must never learn, whatever the replays say.

A learned skill runs in every future session of every tool it is installed into, and most of the text a
night learns from is not the user's: tool output (READMEs, issue bodies, web pages, test logs, a
dependency's install messages) and the agent's own words. An instruction planted in any of them reaches the
optimizer as evidence, and an optimizer that copies it into an edit launders it into a rule. Replays cannot
catch that: an injected line that happens to make a check pass scores better.

So every line a candidate adds is screened, before it is replayed and again before it is proposed, for what
an attacker wants a coding agent to do and what a user's rule almost never asks:

- `fetch-and-execute`: run code fetched from the network (`curl … | sh`, `iex (iwr …)`, `python -c
  "$(curl …)"`, installing a package straight from an unknown URL), or decode a payload and run it (base64,
  hex, octal escapes or a compressed stream piped to a shell: `xxd -r -p | sh`, `printf '\\143…' | sh`,
  `base64 -d | gunzip | sh`; `exec(bytes.fromhex(…))`, `eval pack "H*", …`, `eval(Buffer.from(…))`);
- `unknown-host`: send data to a host the project does not already use (or, as a warning, name one);
- `package-registry`: switch a package registry, index or module proxy (`npm config set registry`, an
  `.npmrc` `registry=` line, `yarn config set npmRegistryServer`, `pip config set global.index-url`,
  `PIP_INDEX_URL`, `--extra-index-url`, `UV_INDEX_URL`, `GOPROXY`, `GONOSUMDB`, `GOFLAGS=-insecure`, cargo's
  `replace-with`, `gem sources --add`, `poetry source add`, or said in words): rejected when it points at a
  host the project does not use, a warning when it names only the project's own (`skillopt_lib.registries`);
- `credentials`: read key folders or credential files (`~/.ssh`, `~/.aws/credentials`, `.env` *contents*,
  keychains, token commands);
- `environment-dump`: dump the environment (`env`, `printenv`, `set`, `os.environ`, `/proc/*/environ`);
- `secrets-into-records`: put secrets, tokens or the environment where others read them: a commit message,
  an issue or pull request body, a log file (`git commit -m "$(env)"`, `gh issue create --body "$(cat
  ~/.aws/credentials)"`, "paste the tokens into the issue body");
- `permissions`: turn off the agent's permission prompts or sandbox (`--dangerously-skip-permissions`,
  `bypassPermissions`, `--yolo`, `danger-full-access`, auto-approve, approving skillopt proposals itself);
- `git-remote-or-hooks`: change git remotes, URL rewrites, hooks or the hooks path;
- `ignore-instructions`: tell the agent to ignore its instructions or system prompt, or to hide what it
  does from the user;
- `hidden-text`: invisible characters, bidirectional overrides or Unicode tag characters in the line;
- `addresses-agents`: text that speaks to "AI agents" rather than being a rule for this one ("agents IA",
  "KI-Agenten", "agentes de IA", "assistenti AI", "AI 代理", "AIエージェント", "LLMs", …);
- `copied-from-tool-output`: a line whose long word sequences occur in the tool output the optimizer was
  shown and not in the user's own words.

The rules written in words read the languages the night reads: English, French, German, Spanish,
Portuguese, Italian, Chinese and Japanese. Which hosts are the project's own comes from what the project
runs (its remotes, manifests, lock files, CI files, scripts), never from its prose
(`skillopt_lib.project_hosts`): a host that first appears in a README, or in the text being screened, is
unknown.

Lines are read after undoing the usual disguises: invisible characters removed, Unicode tag characters
decoded, compatibility forms folded (NFKC), look-alike letters of other scripts inside Latin words mapped
to Latin (Unicode's confusables table, via `confusable_homoglyphs`), and base64 (compressed or not), hex,
octal-escaped and percent-encoded runs decoded and screened too. A rule that only matches once a disguise
is removed is always a rejection: nobody hides a good rule.

Each finding has a severity. `reject` is a clear attack: the candidate must not be replayed or proposed.
`warn` is where a legitimate rule can look alike ("never commit `.env`", "run `curl -fsS --retry 3` in CI
scripts", "run `pre-commit install` after cloning", "use the company registry at <a host of `.npmrc`>"): the
candidate may be proposed, with the warning shown, and is never auto-approved (`auto_approve_refusal`).
A rule that forbids a dangerous thing is a warning at most, whichever rule finds it ("never use
`curl | sh`", "nunca ejecutes `curl | sh`", "`curl | sh` nicht verwenden", "`curl | sh` は実行しないで",
"never put tokens in commit messages"; `skillopt_lib.prohibition`), unless the prohibition was disguised.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import difflib
import lzma
import re
import unicodedata
import zlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Literal
from urllib.parse import unquote

from confusable_homoglyphs import confusables

from skillopt_lib.hosts import hosts_in as hosts_in
from skillopt_lib.hosts import known_host as known_host
from skillopt_lib.hosts import listed_hosts
from skillopt_lib.prohibition import prohibited
from skillopt_lib.project_hosts import repo_hosts as repo_hosts
from skillopt_lib.registries import registry_switch
from skillopt_lib.rulelines import is_rule_line as is_rule_line
from skillopt_lib.rulelines import rule_lines as rule_lines

Severity = Literal["reject", "warn"]

FETCH_EXEC = "fetch-and-execute"
UNKNOWN_HOST = "unknown-host"
CREDENTIALS = "credentials"
ENV_DUMP = "environment-dump"
PERMISSIONS = "permissions"
GIT = "git-remote-or-hooks"
IGNORE = "ignore-instructions"
HIDDEN = "hidden-text"
ADDRESSES_AGENTS = "addresses-agents"
COPIED = "copied-from-tool-output"
REGISTRY = "package-registry"
RECORDS = "secrets-into-records"
RULES = (
    FETCH_EXEC,
    UNKNOWN_HOST,
    REGISTRY,
    CREDENTIALS,
    ENV_DUMP,
    RECORDS,
    PERMISSIONS,
    GIT,
    IGNORE,
    HIDDEN,
    ADDRESSES_AGENTS,
    COPIED,
)


@dataclass(frozen=True)
class Finding:
    """One reason a line may not become a rule: which line (1-based, among the added lines), which rule,
    why in a reviewer's words, and how sure the screen is (`reject` or `warn`)."""

    line_no: int
    line: str
    rule: str
    severity: Severity
    why: str

    def describe(self) -> str:
        return f"line {self.line_no} ({self.rule}, {self.severity}): {self.why}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ScreenResult:
    """The screen's verdict on a candidate's added lines; stored in the proposal's evidence (`to_dict`)."""

    lines: list[str]
    findings: list[Finding] = field(default_factory=list)

    @property
    def rejected(self) -> bool:
        """A clear attack in at least one line: never replay, never propose."""
        return any(f.severity == "reject" for f in self.findings)

    @property
    def flagged(self) -> bool:
        """Anything found at all: a proposal shows the warnings and is never approved automatically."""
        return bool(self.findings)

    def rejects(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "reject"]

    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warn"]

    def reason(self, limit: int = 3) -> str:
        """One sentence for a night's outcome: the first findings, worst first, by line and rule."""
        found = self.rejects() or self.warnings()
        if not found:
            return ""
        head = "; ".join(f.describe() for f in found[:limit])
        more = len(found) - limit
        verb = "rejected by the candidate screen" if self.rejected else "flagged by the candidate screen"
        return f"{verb}: {head}" + (f"; and {more} more" if more > 0 else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "rejected": self.rejected,
            "flagged": self.flagged,
            "lines": len(self.lines),
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScreenResult:
        findings = [Finding(**f) for f in data.get("findings") or []]
        return cls(lines=[], findings=findings)


# ---------------------------------------------------------------------------------------------- disguises

# Characters that render as nothing (or reorder what is shown) and have no place in a skill's rule.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2060-\u2064\u206a-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_TAGS = re.compile("[\U000e0000-\U000e007f]")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_LATIN = re.compile(r"[A-Za-z]")
_LOOKALIKE_SCRIPTS = {"CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC", "LISU", "GEORGIAN"}
_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/_=-])")
_HEX_RUN = re.compile(r"(?:\\x[0-9a-fA-F]{2}){4,}")
_PCT_RUN = re.compile(r"(?:%[0-9a-fA-F]{2}){4,}")
_OCT_RUN = re.compile(r"(?:\\[0-3]?[0-7]{1,2}){4,}")
_BARE_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-fA-F]{2}){8,}(?![0-9A-Za-z])")
_INFLATE_LIMIT = 65_536


def _untag(text: str) -> str:
    """Unicode tag characters (U+E0020..U+E007E) spell invisible ASCII: show it."""
    return _TAGS.sub(
        lambda m: chr(ord(m.group()) - 0xE0000) if 0xE0020 <= ord(m.group()) <= 0xE007E else "", text
    )


@lru_cache(maxsize=4096)
def _latinise(word: str) -> str:
    """A word made of Latin letters and look-alikes from other scripts, spelled in Latin letters.

    Only words that mix scripts, or consist entirely of look-alikes, are changed: a Russian or Greek word
    stays as it is (unless it happens to be made only of letters that look Latin, which is harmless)."""
    if word.isascii():
        return word
    found = confusables.is_confusable(word, greedy=True, preferred_aliases=["latin"]) or []
    mapping: dict[str, str] = {}
    for entry in found:
        if entry.get("alias") not in _LOOKALIKE_SCRIPTS:
            continue
        latin = next(
            (h["c"] for h in entry.get("homoglyphs") or [] if h["c"].isascii() and h["c"].isalpha()), ""
        )
        if latin:
            mapping[entry["character"]] = latin
    if not mapping:
        return word
    mixed = bool(_LATIN.search(word))
    if not mixed and any(ch not in mapping for ch in word if not ch.isascii()):
        return word
    return "".join(mapping.get(ch, ch) for ch in word)


def _benign(text: str) -> str:
    """Compatibility forms of everything but letters folded (fullwidth punctuation, ellipses, odd spaces):
    what any text may carry without hiding anything."""
    return "".join(
        ch if unicodedata.category(ch).startswith("L") else unicodedata.normalize("NFKC", ch) for ch in text
    )


def normalise(text: str) -> str:
    """The text as a reader of its meaning sees it: tags decoded, invisible characters removed, NFKC,
    look-alike letters inside Latin words mapped to Latin, whitespace collapsed."""
    out = _untag(text)
    out = _BIDI.sub("", _INVISIBLE.sub("", out))
    out = unicodedata.normalize("NFKC", out)
    out = _WORD.sub(lambda m: _latinise(m.group()), out)
    return _spaces(out)


def _spaces(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _printable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 8:
        return None
    good = sum(1 for ch in text if ch.isprintable() or ch in "\n\t")
    return text if good / len(text) >= 0.95 and re.search(r"[A-Za-z]{3}", text) else None


def _inflated(data: bytes) -> str | None:
    """Readable text compressed with gzip, zlib, bzip2 or xz (a payload packed before it is encoded), read
    no further than `_INFLATE_LIMIT` bytes so a compression bomb costs nothing."""
    try:
        if data[:2] in (b"\x1f\x8b", b"x\x01", b"x^", b"x\x9c", b"x\xda"):
            wbits = 31 if data[:2] == b"\x1f\x8b" else 15
            raw = zlib.decompressobj(wbits).decompress(data, _INFLATE_LIMIT)
        elif data[:3] == b"BZh":
            raw = bz2.BZ2Decompressor().decompress(data, _INFLATE_LIMIT)
        elif data[:6] == b"\xfd7zXZ\x00":
            raw = lzma.LZMADecompressor().decompress(data, _INFLATE_LIMIT)
        else:
            return None
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
        return None
    return _printable(raw)


def decoded_runs(text: str, depth: int = 2) -> list[tuple[str, str]]:
    """Readable text hidden in base64 (compressed or not), hex (escaped `\\x63\\x75…` or bare), octal
    escapes (`\\143\\165…`) or percent-encoding, with how it was hidden; nested encodings are followed
    `depth` levels deep."""
    out: list[tuple[str, str]] = []
    for m in _B64_RUN.finditer(text):
        run = m.group()
        if run.isalpha() and (run.islower() or run.isupper()):
            continue  # a plain word, not an encoding
        for alphabet in (run, run.replace("-", "+").replace("_", "/")):
            try:
                raw = base64.b64decode(alphabet + "=" * (-len(alphabet) % 4), validate=True)
            except (binascii.Error, ValueError):
                continue
            found = _printable(raw)
            if found:
                out.append((found, "base64"))
                break
            packed = _inflated(raw)
            if packed:
                out.append((packed, "compressed base64"))
                break
    for m in _HEX_RUN.finditer(text):
        found = _printable(bytes.fromhex(m.group().replace("\\x", "")))
        if found:
            out.append((found, "hex escapes"))
    for m in _BARE_HEX_RUN.finditer(text):
        found = _printable(bytes.fromhex(m.group()))
        if found:
            out.append((found, "hex"))
    for m in _OCT_RUN.finditer(text):
        octets = [int(o, 8) for o in m.group().split("\\")[1:]]
        found = _printable(bytes(o for o in octets if o < 256))
        if found:
            out.append((found, "octal escapes"))
    for m in _PCT_RUN.finditer(text):
        found = unquote(m.group())
        if found != m.group() and _printable(found.encode("utf-8")):
            out.append((found, "percent-encoding"))
    if depth > 1:
        out += [
            (inner, f"{how} inside {outer_how}")
            for t, outer_how in list(out)
            for inner, how in decoded_runs(t, depth - 1)
        ]
    return out


# ---------------------------------------------------------------------------------------------- patterns

_F = (
    r"(?:curl|wget|fetch|aria2c|https?|httpie|iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring|"
    r"lwp-request|lwp-download|GET)"
)
_R = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:(?:ba|da|z|k|c|tc|fi|a)?sh|python[\d.]*|py|perl|ruby|node|deno|bun|php|lua|"
    r"pwsh|powershell(?:\.exe)?|iex|invoke-expression|cmd(?:\.exe)?|source|xargs\s+(?:-\S+\s+)*\S*sh)"
)


@dataclass(frozen=True)
class _Rule:
    rule: str
    severity: Severity
    why: str
    pattern: re.Pattern[str]
    negatable: bool = True


def _rules(rule: str, severity: Severity, why: str, *patterns: str, negatable: bool = True) -> list[_Rule]:
    return [_Rule(rule, severity, why, re.compile(p, re.IGNORECASE), negatable) for p in patterns]


_READ_CMD = (
    r"(?:cat|less|more|head|tail|type|get-content|gc|bat|xxd|od|hexdump|strings|base64|cp|copy|scp|rsync|tar|zip|"
    r"7z|grep|awk|sed|open|tee|nl|sort|jq|yq)"
)
_READ_WORD = (
    r"(?:\b(?:read|open|print|show|display|dump|list|copy|send|upload|include|paste|post|output|collect|gather|extract|"
    r"look\s+at|inspect|attach|embed|log|echo|share|forward|exfiltrate|encode|lire|lis|lisez|affiche[rz]?|copie[rz]?|"
    r"envo[iy]\w*|lies|lese|lesen|zeige|zeigen|kopiere|sende|senden|lee|leer|muestra|mostrar|copia|envía|"
    r"enviar|leia|ler|mostre|copie|envie|leggi|leggere|mostra|invia)\b|(?:读取|读|查看|打印|复制|发送|読み取|読んで|読む|表示|コピー|送信|送って))"
)
_CRED_PATH = (
    r"(?:(?:~|\$home|\$\{home\}|%userprofile%|/root|/home/[^/\s]+|/users/[^/\s]+)/)?\.ssh(?:/[\w.*-]*)?|"
    r"\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?:\.pub)?|\.aws/(?:credentials|config)|\baws_secret_access_key\b|"
    r"\.azure/|\.config/gcloud|application_default_credentials\.json|\.kube/config|\.docker/config\.json|"
    r"(?<![\w.])[._]netrc\b|\.git-credentials|(?:~|\$home)/\.npmrc|(?:~|\$home)/\.pypirc|\.gem/credentials|"
    r"\.cargo/credentials|\.config/gh/hosts\.yml|\.gnupg|\.password-store|\.claude/\.credentials\.json|"
    r"\.codex/auth\.json|\.config/github-copilot|/etc/shadow|\blogin\s+data\b|cookies\.sqlite|\.mozilla/firefox|"
    r"library/keychains|\bkeychains?\b|\bwallet\.dat\b|\.bitcoin/|\.electrum"
)
_ENV_FILE = r"(?<![\w./-])\.env(?:\.(?!example\b|sample\b|template\b|dist\b|defaults?\b)[\w-]+)?(?![\w.-])"
_SEND_WORD = (
    r"(?:\b(?:send|post|upload|report|forward|submit|transmit|exfiltrate|share|sync|mirror|beacon|email|mail|push|"
    r"envo[iy]\w*|transmet\w*|téléverse[rz]?|sende|senden|schicke?|übertrage|hochladen|lade\s+\S+\s+hoch|"
    r"envía|enviar|sube|subir|envie|carregue|invia|inviare|carica)\b|(?:发送|上传|传到|提交到|送信|送って|アップロード))"
)

# An interpreter reading its program from a pipe: `| sh`, `| bash -s`, `| python3 -` (not `| python x.py`).
_STDIN_RUN = rf"\|\s*{_R}\b(?:\s+-[-\w]*)*\s*(?=$|[`'\")|;&])"
_SECRET_WORDS = (
    r"(?:(?:the\s+)?output\s+of\s+`?(?:env|printenv|set|export(?:\s+-p)?)\b`?|the\s+(?:value|contents?)\s+of\s+\S+|"
    r"(?:(?:all|every|the|your|its|any)\s+)*(?:environment(?:\s+variables)?|env(?:\s+vars)?|secrets?|tokens?|"
    r"api[\s_-]?keys?|access\s+keys?|passwords?|credentials?|private\s+keys?|ssh\s+keys?|session\s+cookies?)\b"
    # "the token's expiry", "the environment name": facts about a secret, not the secret
    r"(?![\s'’s]*(?:expir|names?\b|counts?\b|ids?\b|numbers?\b|length|prefix|types?\b|scopes?\b|hash|rotation|"
    r"ttl\b|age\b|format|polic|refresh|valid|baseline|scan|manager|detect|store|rotat|handling|fix))|"
    r"`?\$\{?\w*(?:token|secret|api_?key|password|passwd|credentials?|private_key|access_key)\w*\}?`?)"
)
_RECORD_WORDS = (
    r"(?:commit(?:\s+messages?|\s+bod(?:y|ies)|\s+titles?)?|git\s+notes?|tag\s+messages?|"
    r"issues?(?:\s+(?:bod(?:y|ies)|comments?|descriptions?|titles?))?|"
    r"pull\s+requests?(?:\s+(?:bod(?:y|ies)|descriptions?|comments?|titles?))?|"
    r"(?:PR|MR)s?(?:\s+(?:bod(?:y|ies)|descriptions?|comments?|titles?))?|merge\s+requests?|gists?|changelog|"
    r"release\s+notes|(?:(?:build|ci|test|job|debug|error|server|app)\s+)?logs?(?:\s+files?)?|`?[\w./-]+\.log\b`?|"
    r"job\s+summary)\b"
)

_RULES: list[_Rule] = [
    # (a) fetch and execute
    *_rules(
        FETCH_EXEC,
        "reject",
        "runs code fetched from the network",
        rf"\b{_F}\b[^|\n]*\|\s*(?:env\s+(?:\S+=\S+\s+)*)?{_R}\b",
        rf"\b{_R}\b\s+(?:-\S+\s+)*[\"']?\s*(?:<\s*)?[<\"'(]*\$\(\s*{_F}\b",
        rf"(?:\bsource|(?<![\w.])\.|\b{_R})\s+<\(\s*{_F}\b",
        rf"\beval\b[^\n]{{0,12}}[\$`]\(?\s*{_F}\b",
        rf"\b(?:iex|invoke-expression)\b\s*\(?[^\n]{{0,100}}?(?:\b{_F}\b|downloadstring|net\.webclient)",
        rf"(?:\b{_F}\b|downloadstring)[^\n]{{0,160}}\|\s*(?:iex|invoke-expression)\b",
        rf"\b{_F}\b[^\n]{{0,200}}?(?:\s-o|\s-O|--output|\s>|-outfile)\s*\S+[^\n]{{0,80}}?(?:&&|;|\bthen\b)\s*(?:chmod\s+\S*x|{_R}\s+\S|\./)",
        r"\bexec\s*\([^\n]{0,120}(?:urlopen|requests\.get|urllib|httpx\.get)",
        r"(?:urlopen|requests\.get|httpx\.get)\([^\n]{0,200}\)[^\n]{0,60}\b(?:exec|eval)\b",
        r"\beval\s*\(\s*(?:await\s+)?(?:fetch|require\s*\(\s*['\"]https?:)",
        r"\bdownload\w*\b[^\n.]{0,60}\b(?:and|then)\s+(?:run|execute|exec|source|pipe)\b",
        r"\bpipe\b[^\n.]{0,40}\b(?:into|to|through)\s+(?:a\s+)?(?:shell|sh|bash|zsh|powershell)\b",
        r"télécharge\w*[^\n.]{0,60}\bet\s+(?:exécute|lance)\w*|herunter\w*[^\n.]{0,60}\bund\s+(?:ausführ|führ)\w*|"
        r"descarga\w*[^\n.]{0,60}\by\s+ejecut\w*|baix\w*[^\n.]{0,60}\be\s+execut\w*|scaric\w*[^\n.]{0,60}\be(?:d)?\s+esegu\w*|"
        r"下载[^\n。]{0,30}(?:运行|执行)|ダウンロード[^\n。]{0,30}実行",
    ),
    *_rules(
        FETCH_EXEC,
        "reject",
        "decodes a hidden payload and runs it",
        rf"\bbase64\s+(?:-d|--decode|-D)\b[^\n|]*\|\s*{_R}\b",
        rf"\bopenssl\s+(?:enc\s+)?-?base64\s+-d\b[^\n|]*\|\s*{_R}\b",
        r"frombase64string[^\n]{0,200}(?:\biex\b|invoke-expression|\|\s*\w*sh\b)",
        r"\bb64decode\b[^\n]{0,100}\b(?:exec|eval|system|popen)\b|\b(?:exec|eval|system|popen)\s*\([^\n]{0,100}b64decode",
        rf"\bxxd\s+-r\b[^\n|]*\|\s*{_R}\b",
        rf"\b(?:xxd\s+(?:-\S+\s+)*-r|base(?:32|64)\s+(?:-\S+\s+)*(?:-d|--decode|-D)|basenc\b[^\n|]*(?:-d|--decode)|"
        rf"openssl\s+(?:enc\s+)?[^\n|]*\s-d\b|gunzip|zcat|gzcat|bzcat|bunzip2|unxz|xzcat|unzstd|zstdcat|unlzma|lzcat|uudecode|"
        rf"(?:gzip|bzip2|xz|zstd|lzma|brotli|lz4)\s+(?:-\S+\s+)*(?:-d|--decompress|-dc|-cd))\b[^\n]*?{_STDIN_RUN}",
        rf"\b(?:echo\s+(?:-\w+\s+)*|printf\s+)\$?['\"]?[^\n|]*?\\(?:x[0-9a-f]{{2}}|[0-7]{{1,3}}|u[0-9a-f]{{4}})[^\n|]*{_STDIN_RUN}",
        r"\b(?:eval|(?:ba|z|da|k)?sh\s+-c)\s+\$'(?:\\(?:x[0-9a-f]{2}|[0-7]{1,3})){3,}",
        rf"(?:\b{_R}\b\s+(?:-\S+\s+)*|\beval\s+)[\"']?(?:\$\(|<\(|`)[^\n)`]*(?:\bbase(?:32|64)\s+[^\n)`]*(?:-d|--decode|-D)\b|"
        r"\bxxd\s+[^\n)`]*-r|\bgunzip\b|\bzcat\b|\bopenssl\b[^\n)`]*\s-d\b|\buudecode\b|\becho\s+-e\s+\S*\\x|"
        r"\bprintf\s+\S*\\(?:x[0-9a-f]{2}|[0-7]{1,3}))",
        r"\b(?:exec|eval|compile|system|popen|run|call|check_output)\s*\([^\n]{0,160}(?:fromhex|unhexlify|a2b_hex|"
        r"b16decode|b32decode|b85decode|a85decode|(?:zlib|gzip|bz2|lzma)\.decompress|codecs\.decode|marshal\.loads|"
        r"\.decode\(\s*['\"](?:hex|rot.?13|zlib|base64)|join\(\s*(?:map\(\s*)?chr\b|chr\(\s*\d+\s*\)\s*\+)",
        r"\beval\b\s*\(?\s*(?:pack|unpack|decode_base64|MIME::Base64::decode\w*|uncompress|Compress::Zlib::\w+)\b|"
        r"\bperl\b[^\n]{0,80}\beval\b[^\n]{0,40}\b(?:pack|unpack)\b",
        r"\b(?:eval|Function|execSync|spawnSync|runInThisContext|runInNewContext)\s*\(\s*[^\n]{0,60}?(?:Buffer\.from|"
        r"atob\s*\(|unescape\s*\(|String\.fromCharCode|zlib\.\w+Sync|decodeURIComponent\s*\(\s*['\"]%)",
        r"\b(?:eval|instance_eval|system)\b\s*\(?\s*[^\n]{0,40}(?:\.pack\(|\.unpack1?\(|Base64\.decode64|Zlib::Inflate)",
        r"\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]*\s-(?:e|ec|en|enc|enco\w*)\s+[A-Za-z0-9+/=]{16,}|"
        r"(?:gzipstream|deflatestream|\[char\])[^\n]{0,300}(?:\biex\b|invoke-expression)",
        r"\b(?:decode|deobfuscate|unhex|unescape|decompress|decrypt)\w*\b[^\n.;]{0,60}\b(?:and|then)\s+(?:run|execute|exec|"
        r"eval|source|pipe)\s+(?:it|them|that|this|the\s+(?:result|output|payload|script|command|code)s?)\b|"
        r"(?:décode|décoder|décodez|décompresse|déchiffre)\w*[^\n.;]{0,60}\bet\s+(?:exécute|lance)\w*|"
        r"(?:dekodier|entschlüssel|dekomprimier)\w*[^\n.;]{0,60}\bund\s+(?:führ\w*[^\n.;]{0,30}\baus\b|ausführ\w*|starte\w*)|"
        r"(?:decodific|descodific|descomprim|descifr)\w*[^\n.;]{0,60}\b(?:y|e|ed)\s+(?:ejecut|ejecút|execut|esegu)\w*|"
        r"(?:解码|解密|解压)[^\n。]{0,30}(?:运行|执行)|(?:デコード|復号|解凍)[^\n。]{0,30}実行",
    ),
    # (c) credentials
    *_rules(
        CREDENTIALS,
        "reject",
        "reads credentials or keys",
        rf"\b{_READ_CMD}\b[^\n|;&]{{0,60}}(?:{_CRED_PATH})",
        rf"{_READ_WORD}[^\n.;]{{0,60}}(?:{_CRED_PATH})",
        rf"\b{_READ_CMD}\b\s+(?:-\S+\s+)*[\"'`]?(?:\./)?{_ENV_FILE}",
        rf"{_READ_WORD}[^\n.;]{{0,40}}(?:contents?|values?|secrets?|keys?|tokens?|variables?|lines?|inhalt|contenu|contenido|conteúdo|contenuto|内容|中身)\b[^\n.;]{{0,30}}{_ENV_FILE}",
        rf"{_READ_WORD}[^\n.;]{{0,12}}{_ENV_FILE}[^\n.;]{{0,40}}\b(?:contents?|values?|secrets?|keys?|tokens?|file\s+(?:in|to|into)\b)",
        rf"[@<]\s*(?:\./)?{_ENV_FILE}",
        r"\bsecurity\s+(?:find-(?:generic|internet)-password|dump-keychain|export)\b|\bsecret-tool\s+lookup\b|"
        r"\bkeyring\s+get\b|\bgh\s+auth\s+token\b|\bgit\s+credential\s+fill\b|\baws\s+configure\s+(?:get|export-credentials)\b|"
        r"\bgcloud\s+auth\s+print-(?:access|identity)-token\b|\baz\s+account\s+get-access-token\b|"
        r"\bkubectl\s+config\s+view\s+--raw\b|\bdocker-credential-\w+\s+get\b",
        r"\b(?:echo|printf|print|cat|log|console\.log)\b[^\n;|]{0,20}\$\{?\w*(?:token|secret|api_?key|passw(?:or)?d|credential|private_key)\w*",
    ),
    *_rules(CREDENTIALS, "warn", "mentions a credential folder or key file", _CRED_PATH),
    # (d) environment dumps
    *_rules(
        ENV_DUMP,
        "reject",
        "dumps the environment (every secret in it)",
        r"\b(?:run|execute|exec|call|type)\s+`?\s*(?:env|printenv)(?:\s+(?:-0|--null))?(?:`|\s*$|[.,;)]|\s*[|>&]|\s+(?:and|then|to|into)\b)",
        r"(?:^|`|;|&&|\$\(|\bthen)\s*(?:env|printenv)\s*(?:-0|--null)?\s*(?:\||>|\))",
        r"`\s*set\s*`|(?:^|[;|&(]|\$\()\s*set\s*[|>]",
        r"\bexport\s+-p\b|\bdeclare\s+-[px]\b|\bcompgen\s+-e\b|\b(?:get-childitem|gci|dir|ls)\s+env:|"
        r"\[(?:system\.)?environment\]::getenvironmentvariables\(\)|/proc/(?:self|\d+|\*|\$\$|\$pid)/environ",
        r"(?:json\.dumps?|print|pprint|str|dict|repr|write|yaml\.\w*dump|requests\.\w+|sorted|list|pformat)\s*\(\s*(?:dict\s*\(\s*)?os\.environ\b(?!\s*(?:\.get|\[|\.setdefault|\.pop))",
        r"\bos\.environ\.(?:items|keys|values)\s*\(\)|\bfor\s+\w+(?:\s*,\s*\w+)?\s+in\s+os\.environ\b",
        r"(?:json\.stringify|console\.log|object\.(?:entries|keys|values)|util\.inspect)\s*\(\s*process\.env\s*[,)]|"
        r"\bENV\.(?:to_h|inspect|each)\b|\bSystem\.getenv\(\s*\)|\bos\.Environ\(\)|\bstd::env::vars\(\)",
        rf"(?:\b(?:dump|print|export|list|send|upload|log|save|write|copy|collect|output|share|show)\b|{_SEND_WORD})[^\n.]{{0,30}}"
        r"\b(?:(?:all|every|the\s+whole|the\s+entire|the|your|its)\s+)+(?:environment\s+variables|env\s+vars|environment)\b"
        r"(?!\s+(?:variable|name|names|type|label)\b)[^\n]{0,60}\b(?:to|into|in|at)\b\s+(?![`'\"]?\S*\.(?:example|sample|template|dist)\b)\S",
        r"(?:exporte[rz]?|envoie[rz]?|envoyer|sende|senden|exportiere|envía|enviar|exporta|envie|esporta|invia|导出|发送|送信|エクスポート)"
        r"[^\n.]{0,40}(?:l'environnement|variables\s+d'environnement|umgebung(?:svariablen)?|variables\s+de\s+entorno|"
        r"entorno|variáveis\s+de\s+ambiente|ambiente|variabili\s+d'ambiente|环境变量|環境変数|環境)",
        r"(?:环境变量|環境変数)[^\n。]{0,20}(?:导出|发送|送信|エクスポート|上传)",
    ),
    *_rules(
        ENV_DUMP,
        "warn",
        "lists the environment (fine to name variables, never to print them all)",
        r"\b(?:dump|print|list|log|show)\b[^\n.]{0,20}\b(?:all\s+|every\s+|the\s+)?(?:environment\s+variables|env\s+vars)\b",
    ),
    # secrets or the environment put where others read them: commits, issues, pull requests, logs
    *_rules(
        RECORDS,
        "reject",
        "puts secrets or the environment into a commit, issue, pull request or log",
        rf"\b(?:put|include|add|paste|append|write|copy|insert|embed|record|attach|print|echo|dump|save|store|post|"
        rf"send|log|leave)\b[^\n.;,]{{0,40}}?{_SECRET_WORDS}[^\n.;,]{{0,40}}?\b(?:in|into|to|inside|within|as|on)\s+"
        rf"(?:the\s+|a\s+|an\s+|each\s+|every\s+|your\s+|its\s+)?{_RECORD_WORDS}",
        r"\b(?:git\s+(?:commit|tag|notes)|gh\s+(?:issue|pr|gist|release|run)|glab\s+\w+|hub\s+\w+)\b[^\n]*(?:\$\(|<\()"
        r"[^\n]*?(?:\benv\b|\bprintenv\b|\bset\b|\bexport\s+-p|credential|secret|token|(?<![\w.])\.env\b|\.ssh|\.aws|"
        r"\.npmrc|\.netrc|\.pypirc|id_rsa|id_ed25519|\.git-credentials|os\.environ|process\.env)",
        r"\b(?:git\s+(?:commit|tag|notes)|gh\s+(?:issue|pr|gist|release)|glab\s+\w+)\b[^\n]*(?:-F|--file|--body-file)"
        r"\s+\S*(?:credential|secret|token|(?<![\w.])\.env\b|\.ssh|\.aws|\.npmrc|\.netrc|\.pypirc|/proc/\S*environ)",
        r"\b(?:git\s+(?:commit|tag|notes\s+add)|gh\s+(?:issue|pr|gist|release)\s+\w+|glab\s+(?:issue|mr)\s+\w+)\b[^\n]*"
        r"\$\{?\w*(?:token|secret|api_?key|password|passwd|credentials?|private_key|access_key)",
        r"(?:ajout|mets|met|mett|coll|inclu|insèr|insér|écri|copi|plac|enregistr)\w*[^\n.;]{0,40}"
        r"(?:variables?\s+d['’]environnement|l['’]environnement|secrets?|jetons?|tokens?|clés?|mots?\s+de\s+passe|identifiants|"
        r"sortie\s+de\s+`?(?:env|printenv)\b)"
        r"[^\n.;]{0,30}\b(?:dans|en|au|aux|à)\s+(?:l['’]|le\s+|la\s+|les\s+)?(?:message\s+de\s+commit|commit|issue|ticket|"
        r"description\s+de\s+la\s+(?:pr|pull\s+request|mr)|pull\s+request|logs?|journal|journaux)",
        r"\b(?:füg|schreib|kopier|setz|pack|häng|leg|nimm|übernimm)\w*[^\n.;]{0,40}(?:umgebungsvariablen|umgebung|"
        r"geheimnisse|secrets?|tokens?|schlüssel|passwörter|passwort|zugangsdaten|ausgabe\s+von\s+`?(?:env|printenv)\b)[^\n.;]{0,30}\b(?:in|ins|zur|zum|an)\s+"
        r"(?:die\s+|das\s+|den\s+)?(?:commit-nachricht|commit-message|commit|issue|pull-request|pr-beschreibung|logs?|protokoll)",
        r"\b(?:pon|incluy|inclu|añad|agreg|peg|escrib|copi|insert|mete|guard|coloqu|coloc|adicion|col[ae]|escrev|"
        r"insir|inser|ponh|põe|grav|inserisc|inserir|mett|includ|aggiung|incoll|scriv|salv)\w*[^\n.;]{0,40}(?:variables\s+de\s+entorno|entorno|secretos?|claves?|contraseñas?|credenciales|"
        r"variáveis\s+de\s+ambiente|segredos?|chaves?|senhas?|credenciais|variabili\s+d['’]ambiente|segreti|chiavi|"
        r"credenziali|tokens?|password|(?:salida|saída|output)\s+d[eio]l?\s+`?(?:env|printenv)\b)\b[^\n.;]{0,30}\b(?:en|al|a\s+la|dentro\s+de|n[oa]s?|em|ao|à|nel|nella|nei|nelle|"
        r"in|alla)\s+(?:el\s+|la\s+|los\s+|las\s+|o\s+|a\s+|il\s+|lo\s+)?(?:mensaje\s+(?:de(?:l)?\s+)?commit|"
        r"mensagem\s+de\s+commit|messaggio\s+di\s+commit|commit|issue|incidencia|corpo\s+da\s+issue|"
        r"descri(?:pción|ção|zione)\s+d\w*\s+(?:pr|pull\s+request)|pull\s+request|pr\b|logs?|registros?)",
        r"(?:环境变量|密钥|秘钥|令牌|token|密码|凭据|凭证|私钥|API\s*key)[^\n。]{0,20}(?:写入|写到|放入|放到|加到|加入|附加到|"
        r"粘贴到|贴到|复制到|记录到|输出到|打印到|包含在)[^\n。]{0,10}(?:提交信息|提交消息|commit|issue|议题|PR|拉取请求|合并请求|日志)",
        r"(?:環境変数|シークレット|トークン|秘密鍵|パスワード|認証情報|APIキー|クレデンシャル)[^\n。]{0,30}"
        r"(?:コミットメッセージ|コミット|イシュー|issue|プルリクエスト|PR|ログ)(?:の中)?(?:に|へ)[^\n。]{0,6}"
        r"(?:含め|入れ|書|貼|追加|記録|出力|載せ)",
        rf"\b(?:commit|push|publish)\s+(?:(?:the|all|your|its|every)\s+)*{_SECRET_WORDS}",
        rf"\bgit\s+(?:add|commit)\b[^\n;|&]*\s[\"'`]?(?:\./)?(?:{_ENV_FILE}|{_CRED_PATH})",
    ),
    # (e) the agent's own permissions and sandbox
    *_rules(
        PERMISSIONS,
        "reject",
        "turns off the agent's permission prompts or sandbox",
        r"dangerously[-_ ]?skip[-_ ]?permissions|--dangerously-[\w-]+|bypass[-_ ]?permissions|"
        r"--permission-mode\s+(?:bypass\w*|dontask)|--yolo\b|\byolo\s+mode\b|--allow-all(?:-tools|-paths|-urls)?\b|"
        r"--trust-all-tools|(?:-a|--ask-for-approval)\s+never\b|approval_policy\s*=\s*[\"']?never|"
        r"(?:-s|--sandbox)\s+danger-full-access|sandbox_mode\s*=\s*[\"']?danger-full-access|danger-full-access|"
        r"\bIS_SANDBOX\s*=\s*1|chat\.tools\.autoApprove|\bautoApprove\b|defaultMode[\"']?\s*:\s*[\"']?bypass|"
        r"skipDangerousModePermissionPrompt|[\"']allow[\"']\s*:\s*\[\s*[\"'](?:Bash|\*)[\"'(]|\bBash\(\s*\*\s*\)|\bBash\(:\*\)",
        r"\b(?:disable|turn\s+off|switch\s+off|bypass|skip|circumvent|deactivate|escape|break\s+out\s+of|get\s+around)\b"
        r"[^\n.]{0,40}\b(?:sandbox(?:ing)?|permission\s+(?:prompts?|checks?|system)|permissions|approvals?|"
        r"confirmation\s+prompts?|safety\s+(?:checks|settings|measures)|guardrails)\b",
        r"\bsandbox\s+(?:off|disabled)\b|\bwithout\s+(?:asking|requesting|waiting)\s+(?:for\s+)?(?:the\s+user'?s?\s+)?"
        r"(?:permission|approval|confirmation)\b|\bauto-?(?:approve|confirm|accept)\w*\s+(?:all|every|each|any)\b|"
        r"\bapprove\s+(?:all|every|each)\s+(?:tool\s+calls?|commands?|requests?)\b[^\n.]{0,20}\bautomatically\b",
        r"désactive[rz]?\s+(?:le\s+|la\s+|les\s+)?(?:sandbox|bac\s+à\s+sable|permissions|confirmations)|"
        r"deaktiviere\w*\s+(?:die\s+|den\s+)?(?:sandbox|berechtigung\w*)|(?:sandbox|berechtigungen)\s+(?:deaktivieren|abschalten|umgehen)|"
        r"desactiva\w*\s+(?:el\s+|la\s+|los\s+)?(?:sandbox|permisos|confirmaciones)|desativ\w*\s+(?:o\s+|a\s+|as\s+|os\s+)?(?:sandbox|permissões)|"
        r"disattiva\w*\s+(?:la\s+|il\s+|i\s+|le\s+)?(?:sandbox|permessi)|(?:禁用|关闭|绕过|跳过)[^\n。]{0,6}(?:沙箱|沙盒|权限)|"
        r"(?:サンドボックス|権限|許可)[^\n。]{0,8}(?:無効|スキップ|オフ|回避)|許可なしで|確認なしで",
    ),
    *_rules(
        PERMISSIONS,
        "reject",
        "approves skillopt's proposals itself (only the user may)",
        r"\bskillopt\s+(?:approve|config\s+set\s+night\.auto_approve)\b",
    ),
    *_rules(PERMISSIONS, "warn", "runs a browser or tool without its sandbox", r"--no-sandbox\b"),
    # (f) git remotes and hooks
    *_rules(
        GIT,
        "reject",
        "changes where git pushes or what runs on commit",
        r"\bgit\s+remote\s+(?:add|set-url|rename|remove|rm|set-head)\b",
        r"\bgit\s+config\s+(?:--\S+\s+)*(?:remote\.[\w.-]+\.(?:url|pushurl)|url\.\S+\.(?:insteadof|pushinsteadof)|"
        r"core\.hookspath|core\.sshcommand|credential\.helper|core\.fsmonitor|core\.pager|core\.editor|include\.path|"
        r"alias\.\w+)",
        r"\binsteadOf\b|\bcore\.hooksPath\b",
        r"(?:>>?|\btee\b|\bcp\b|\bmv\b|\bln\b|\bchmod\b|\binstall\b|\bwrite\b|\bedit\b|\bmodify\b|\bcreate\b|\badd\b|\bappend\b)"
        r"[^\n]{0,60}\.git/(?:hooks|config)\b",
        r"\b(?:change|replace|point|set|switch|update|redirect)\b[^\n.]{0,30}\b(?:git\s+)?(?:remote|origin)\b[^\n.]{0,20}\b(?:url\s+)?to\b",
    ),
    *_rules(
        GIT,
        "warn",
        "installs git hooks or skips them (legitimate for pre-commit; check what they run)",
        r"\b(?:pre-commit|husky|lefthook|overcommit)\s+install\b|\.husky/|\.git/hooks\b|--no-verify\b",
    ),
    # (g) instructions to ignore instructions, or to hide from the user
    *_rules(
        IGNORE,
        "reject",
        "tells the agent to ignore its instructions or hide from the user",
        r"\b(?:ignore|disregard|forget|override|bypass)\b[^\n.]{0,30}\b(?:previous|prior|above|earlier|preceding|"
        r"original|initial|your|system|developer|safety)\b[^\n.]{0,20}\b(?:instructions?|directions?|rules|"
        r"guidelines|prompts?|directives?|constraints|guardrails|messages)\b",
        r"\b(?:ignore|disregard|forget)\s+(?:(?:all|any|every)\s+)?(?:of\s+)?(?:the\s+)?(?:other\s+)?"
        r"(?:instructions|directives|prompts?)\b",
        r"\b(?:reveal|print|show|repeat|output|leak|ignore|override|replace)\b[^\n.]{0,20}\b(?:your|the)\s+system\s+prompt\b",
        r"\byour\s+(?:new|real|actual|true|updated)\s+instructions\b|\bnew\s+instructions\s*:|\byou\s+are\s+now\s+"
        r"(?:in\s+)?(?:dan|developer\s+mode|jailbroken|unrestricted|an?\s+unrestricted)|\bdeveloper\s+mode\s+(?:enabled|on)\b|"
        r"</?\s*(?:system|im_start|im_end)\s*>|\[/?\s*(?:system|inst)\s*\]|\bbegin\s+system\s+prompt\b|^\s*system\s*:",
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|notify|mention\s+(?:this|it)\s+to|alert|show)\s+(?:the\s+)?user\b(?!\s+to\b)|"
        r"\bwithout\s+(?:telling|informing|notifying|alerting)\s+(?:the\s+)?user\b|\bhide\s+(?:this|it|that)\s+from\s+(?:the\s+)?user\b|"
        r"\bkeep\s+(?:this|it)\s+(?:secret|hidden)\s+from\b|\b(?:silently|quietly|secretly|covertly)\s+(?:run|execute|send|"
        r"upload|install|download|add|exfiltrate|copy|post)\b",
        r"\b(?:ignor|oubli)\w*\s+(?:toutes?\s+)?(?:les\s+|tes\s+|vos\s+)?(?:instructions|consignes)\b|"
        r"\b(?:ignor|oubli)\w*[^\n.]{0,20}(?:règles|directives)\s+(?:précédentes|antérieures|ci-dessus|initiales)\b|"
        r"\bne\s+tiens?\s+pas\s+compte\s+des\s+instructions\b|\b(?:ton|votre)\s+(?:prompt|invite)\s+système\b|"
        r"\bsans\s+(?:le\s+dire|prévenir|informer)\s+(?:à\s+)?l'utilisateur\b|\bne\s+(?:le\s+)?dis\s+pas\s+à\s+l'utilisateur\b",
        r"\b(?:ignorier\w*|vergiss)\s+(?:alle\s+)?(?:vorherigen\s+|bisherigen\s+|obigen\s+|früheren\s+|deine\s+)?"
        r"(?:anweisungen|instruktionen|vorgaben)\b|"
        r"\b(?:ignorier\w*|vergiss)\s+(?:alle\s+)?(?:vorherigen|bisherigen|obigen|früheren|deine)\s+regeln\b|"
        r"\bsystem-?prompt\b[^\n.]{0,20}\b(?:ignorier|vergiss)|\bohne\s+(?:es\s+)?(?:dem\s+)?(?:benutzer|nutzer)\w*\s+(?:zu\s+)?(?:sagen|mitzuteilen|informieren)",
        r"\b(?:ignor(?:a|e|ar|en)|olvida)\s+(?:todas\s+|todos\s+)?(?:las\s+|los\s+|tus\s+)?(?:instrucciones|indicaciones|órdenes)\b|"
        r"\b(?:ignor(?:a|e|ar|en)|olvida)\s+(?:todas\s+)?(?:las\s+|tus\s+)?reglas\s+(?:anteriores|previas)\b|\bprompt\s+del\s+sistema\b|"
        r"\bsin\s+(?:decírselo|avisar|informar)\s+al\s+usuario\b|\bno\s+(?:le\s+)?(?:digas|informes)\s+al\s+usuario\b",
        r"\b(?:ignore|ignora|desconsidere|desconsidera|esqueça)\s+(?:todas\s+)?(?:as\s+|suas\s+)?(?:instruções|instrucoes|orientações)\b|"
        r"\b(?:ignore|ignora|desconsidere|esqueça)\s+(?:todas\s+)?(?:as\s+|suas\s+)?regras\s+anteriores\b|\bprompt\s+do\s+sistema\b|"
        r"\bsem\s+(?:contar|avisar|informar)\s+(?:ao\s+)?usuário\b|\bnão\s+(?:conte|diga|informe)\s+ao\s+usuário\b",
        r"\b(?:ignora|dimentica)\s+(?:tutte\s+)?(?:le\s+)?(?:tue\s+)?(?:istruzioni|indicazioni)\b|"
        r"\b(?:ignora|dimentica)\s+(?:tutte\s+)?(?:le\s+)?regole\s+precedenti\b|\bprompt\s+di\s+sistema\b|\bsenza\s+(?:dirlo|avvisare|informare)\s+(?:all')?utente\b|"
        r"\bnon\s+(?:dirlo|dire\s+nulla)\s+all'utente\b",
        r"(?:忽略|无视|忽视|忘记|不要理会|不要遵守)[^\n。]{0,12}(?:指令|指示|提示词|之前的规则|以上的规则)|系统提示词?[^\n。]{0,10}(?:忽略|泄露|输出|显示)|"
        r"不要(?:告诉|通知|让)用户|瞒着用户|悄悄(?:地)?(?:运行|执行|发送|上传)",
        r"(?:指示|命令|指令|プロンプト)[^\n。]{0,6}(?:を)?(?:無視|忘れ)|システムプロンプト[^\n。]{0,10}(?:無視|表示|出力)|"
        r"ユーザーに(?:は)?(?:伝え|言わ|知らせ|見せ)(?:ないで|ずに)|こっそり",
    ),
    *_rules(
        IGNORE,
        "warn",
        "talks about the agent's system prompt",
        r"\bsystem\s+prompt\b|システムプロンプト|系统提示",
    ),
    # text aimed at AI agents rather than a rule for this one
    *_rules(
        ADDRESSES_AGENTS,
        "warn",
        "is addressed to AI agents, the way planted instructions are",
        r"\b(?:ai|a\.i\.|llm|gpt|genai|language[-\s]model|coding|autonomous)(?:[-\s](?:powered|based|driven|coding))?"
        r"[-\s]+(?:agents?|assistants?|models?|bots?)\b|\bLLMs\b|\b(?:large\s+)?language[-\s]models\b|"
        r"\bif\s+you\s+are\s+an?\s+(?:ai|llm|assistant|agent|language\s+model|bot)\b|"
        r"\bnote\s+(?:to|for)\s+(?:ai|llms?|agents?|assistants?|bots?|language\s+models)\b",
        # French, Spanish, Portuguese, Italian: "agents IA", "agents d'IA", "agentes de IA", "assistenti AI", …
        r"\b(?:agents?|agentes|agent[ei]|assistants?|assistentes|asistentes?|assistent[ei]|modèles|modelos|modelli|bots)"
        r"\s+(?:(?:de|di|d['’]|da|del|dell['’])\s*(?:l['’]\s*)?)?(?:ia|ai|llm|intelig[eê]ncia\s+artificial|"
        r"intelligenza\s+artificiale|intelligence\s+artificielle)\b|"
        r"\bmodèles\s+de\s+langage\b|\bmodelos\s+de\s+(?:lenguaje|linguagem)\b|\bmodelli\s+(?:linguistici|di\s+linguaggio)\b|"
        r"\bsi\s+(?:vous\s+êtes|tu\s+es|eres|usted\s+es)\s+(?:une?\s+)?(?:ia|ai|llm)\b|"
        r"\bse\s+(?:você\s+(?:é|for)|sei)\s+(?:uma?\s+|un['’]\s*)?(?:ia|ai|llm)\b",
        # German: "KI-Agenten", "KI-Assistenten", "KI Agenten", "LLM-Agenten", "Sprachmodelle"
        r"\bki[-\s]?(?:\w+-)?(?:agent|assistent|modell|sprachmodell|bot)\w*|\bllm-(?:agent|assistent)\w*|\bsprachmodelle\b|"
        r"\bwenn\s+(?:du|sie)\s+(?:eine?\s+)?(?:ki|ai|llm)\s+(?:bist|sind)\b",
        # Chinese, Japanese: "AI 代理", "智能体", "AI助手", "大语言模型", "AIエージェント", "AIアシスタント"
        r"(?:AI|人工智能)\s*(?:代理|助手|智能体|编程助手|编码助手|模型)|智能体|大(?:型)?语言模型|大模型|如果你是\s*(?:AI|人工智能|大模型)|"
        r"AI\s*(?:エージェント|アシスタント|モデル)|(?:コーディング|自律型?)エージェント|大規模言語モデル|生成AI|あなたが\s*AI",
        negatable=False,
    ),
]

_NETWORK_SEND = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bcurl\b[^\n]*?(?:\s-d\b|\s-d\S|--data(?:-\w+)?\b|\s-F\b|--form\b|\s-T\b|--upload-file\b|-X\s*(?:POST|PUT|PATCH)\b|"
        r"--request\s+(?:POST|PUT|PATCH)\b|--json\b)",
        r"\bwget\b[^\n]*?--(?:post|body)-(?:data|file)|\bwget\b[^\n]*?--method=(?:POST|PUT)",
        r"\b(?:nc|ncat|netcat|telnet|socat)\b|/dev/(?:tcp|udp)/",
        r"\b(?:scp|rsync|sftp)\b[^\n]*\s\S*[\w.-]+:",
        r"invoke-(?:webrequest|restmethod)\b[^\n]*(?:-method\s+(?:post|put)|-body\b|-infile\b)",
        r"\brequests\.(?:post|put|patch)\b|\bhttpx\.(?:post|put)\b|urlopen\([^)]*data\s*=|\bfetch\([^)]*method\s*:\s*['\"](?:post|put)|"
        r"\baxios\.(?:post|put)\b|\bnavigator\.sendBeacon\b",
        r"\bgit\s+push\s+(?:--?\S+\s+)*(?:https?://|git@|ssh://)",
        r"\b(?:dig|nslookup|host|ping|curl|wget)\b[^\n]*(?:\$\(|`[^`]+`|\$\{?\w+)",
        rf"{_SEND_WORD}",
        r"\bwebhooks?\b|\bhooks\.slack\.com\b|discord(?:app)?\.com/api/webhooks|requestbin|pipedream|ngrok|interact\.sh|\boast\.",
    )
]
_INSTALL_URL = re.compile(
    r"\b(?:pip3?|uv\s+pip|pipx|npm|pnpm|yarn|bun|gem|cargo|go)\s+(?:install|add|get)\b[^\n]*?(?:https?://|git\+|github:)",
    re.IGNORECASE,
)


# ---------------------------------------------------------------------------------------------- copying

_TOKEN = re.compile(r"[a-z0-9]+|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|[^\s\w]", re.IGNORECASE)
COPY_RUN = 8  # consecutive tokens that make a copy
_MIN_COPY_TOKENS = 5


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(normalise(text))]


def _grams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


class _Corpus:
    """Word n-grams of a body of text, for every n a line may need (one pass per n, built on demand)."""

    def __init__(self, texts: Iterable[str], limit: int = 4_000_000, base: _Corpus | None = None) -> None:
        self.base = base
        self.token_lists: list[list[str]] = []
        budget = limit
        for text in texts:
            if budget <= 0:
                break
            chunk = str(text)[:budget]
            budget -= len(chunk)
            for line in chunk.splitlines():
                toks = _tokens(line)
                if toks:
                    self.token_lists.append(toks)
        self._by_n: dict[int, set[tuple[str, ...]]] = {}

    def grams(self, n: int) -> set[tuple[str, ...]]:
        if n not in self._by_n:
            out: set[tuple[str, ...]] = set()
            for toks in self.token_lists:
                out |= _grams(toks, n)
            # A run can straddle a line break in the source; join neighbours so it is still found.
            for a, b in zip(self.token_lists, self.token_lists[1:], strict=False):
                out |= _grams([*a[-(n - 1) :], *b[: n - 1]], n) if n > 1 else set()
            self._by_n[n] = out | self.base.grams(n) if self.base is not None else out
        return self._by_n[n]

    @property
    def empty(self) -> bool:
        return not self.token_lists and (self.base is None or self.base.empty)


def copied_share(line: str, tool: _Corpus, user: _Corpus) -> float:
    """The share of `line`'s word runs (COPY_RUN tokens, the whole line when shorter) found in the tool
    output and not in the user's words: 0 for a line the user said or nobody said, 1 for a verbatim copy."""
    toks = _tokens(line.lstrip("-*+ >#"))
    if len(toks) < _MIN_COPY_TOKENS:
        return 0.0
    n = min(COPY_RUN, len(toks))
    mine = _grams(toks, n)
    if not mine:
        return 0.0
    hits = (mine & tool.grams(n)) - user.grams(n)
    return len(hits) / len(mine)


# ---------------------------------------------------------------------------------------------- the screen


def _variants(line: str) -> list[tuple[str, str]]:
    """The line as written (punctuation folded), as read after undoing disguises, and every encoded run
    decoded; the second item says which disguise was undone ("" for the line as written)."""
    plain = _spaces(_benign(line.replace("**", "")))
    deep = normalise(line.replace("**", ""))
    out = [(plain, "")]
    if deep != plain:
        out.append((deep, "once hidden characters and look-alike letters are undone"))
    for text, how in decoded_runs(deep):
        out.append((normalise(text), f"hidden in {how}"))
    return out


def _hidden_characters(line: str) -> Finding | None:
    if _TAGS.search(line):
        return Finding(0, line, HIDDEN, "reject", "carries invisible Unicode tag characters (hidden text)")
    if _BIDI.search(line):
        return Finding(
            0, line, HIDDEN, "reject", "carries bidirectional override characters (text shown out of order)"
        )
    if _INVISIBLE.search(line):
        return Finding(0, line, HIDDEN, "warn", "carries zero-width or invisible characters")
    return None


def _line_findings(line: str, repo_hosts: Collection[str]) -> list[Finding]:
    out: list[Finding] = []
    hidden = _hidden_characters(line)
    if hidden is not None:
        out.append(hidden)
    seen: set[tuple[str, str]] = set()
    for text, how in _variants(line):
        disguised = bool(how)
        for rule in _RULES:
            m = rule.pattern.search(text)
            if m is None:
                continue
            severity: Severity = rule.severity
            why = rule.why
            if (
                rule.negatable
                and severity == "reject"
                and not disguised
                and prohibited(text, m.start(), m.end(), inside=rule.rule == RECORDS)
            ):
                severity, why = "warn", f"{why}, stated as a prohibition"
            if disguised:
                severity, why = "reject", f"{why} ({how})"
            key = (rule.rule, severity)
            if key in seen:
                continue
            seen.add(key)
            out.append(Finding(0, line, rule.rule, severity, f"{why}: “{_excerpt(text, m)}”"))
        named = hosts_in(text)
        unknown = sorted(h for h in named if not known_host(h, repo_hosts))
        registry = _registry_finding(line, text, how, named, unknown, repo_hosts)
        if registry is not None and (registry.rule, registry.severity) not in seen:
            seen.add((registry.rule, registry.severity))
            out.append(registry)
        if unknown:
            sends = next((p.search(text) for p in _NETWORK_SEND if p.search(text)), None)
            installs = _INSTALL_URL.search(text)
            if installs is not None:
                sev: Severity = "reject"
                why = f"installs code straight from a host the repository does not use ({', '.join(unknown[:3])})"
                rule_name = FETCH_EXEC
            elif sends is not None:
                sev, rule_name = "reject", UNKNOWN_HOST
                why = f"sends data to a host the repository does not use ({', '.join(unknown[:3])})"
            else:
                sev, rule_name = "warn", UNKNOWN_HOST
                why = f"names a host the repository does not use ({', '.join(unknown[:3])})"
            cause = installs or sends
            if (
                sev == "reject"
                and not disguised
                and cause is not None
                and prohibited(text, cause.start(), cause.end())
            ):
                sev, why = "warn", why + ", stated as a prohibition"
            if disguised:
                sev, why = "reject", f"{why} ({how})"
            if (rule_name, sev) not in seen:
                seen.add((rule_name, sev))
                out.append(Finding(0, line, rule_name, sev, why))
        only_encoded = how.startswith("hidden in") and not any(f.rule != HIDDEN for f in out)
        if only_encoded and (HIDDEN, "warn") not in seen:
            seen.add((HIDDEN, "warn"))
            out.append(Finding(0, line, HIDDEN, "warn", f"carries encoded text ({how}): “{text[:80]}”"))
    # A "reject" of a rule makes its "warn" redundant.
    rejected = {f.rule for f in out if f.severity == "reject"}
    return [f for f in out if f.severity == "reject" or f.rule not in rejected]


def _registry_finding(
    line: str,
    text: str,
    how: str,
    named: Collection[str],
    unknown: Sequence[str],
    repo_hosts: Collection[str],
) -> Finding | None:
    """A switch of package registry, index or module proxy (`registries.registry_switch`): a rejection when
    it points at a host the project does not use, a warning when it names only the project's own hosts (or
    none), or forbids the switch; always a rejection once a disguise is undone."""
    m = registry_switch(text, names_host=bool(named))
    if m is None:
        return None
    listed = sorted(h for h in listed_hosts(text) if not known_host(h, repo_hosts))
    named, unknown = {*named, *listed}, sorted({*unknown, *listed})
    if unknown:
        severity: Severity = "reject"
        why = f"points a package registry or index at a host the repository does not use ({', '.join(unknown[:3])})"
    else:
        severity = "warn"
        why = "switches a package registry or index (" + (
            "to a host the project uses)" if named else "no host named)"
        )
    if severity == "reject" and not how and prohibited(text, m.start(), m.end()):
        severity, why = "warn", f"{why}, stated as a prohibition"
    if how:
        severity, why = "reject", f"{why} ({how})"
    return Finding(0, line, REGISTRY, severity, f"{why}: “{_excerpt(text, m)}”")


def _excerpt(text: str, m: re.Match[str], width: int = 90) -> str:
    start = max(0, m.start() - 10)
    snippet = text[start : max(m.end(), start + 20)][:width].strip()
    return ("…" if start else "") + snippet + ("…" if m.end() - start > width else "")


def screen(
    added_lines: Sequence[str],
    *,
    user_words: Iterable[str] = (),
    tool_outputs: Iterable[str] = (),
    repo_hosts: Collection[str] = (),
) -> ScreenResult:
    """Screen the lines a candidate adds (see the module docstring for the rules).

    `user_words`: the user's own messages of the tasks (requests and corrections); `tool_outputs`: every
    text the optimizer was shown that the user did not write (tool output, failed checks' output, the
    agent's messages); `repo_hosts`: the hosts the repository already uses (`repo_hosts()`).
    """
    return _screen([str(x) for x in added_lines], _Corpus(tool_outputs), _Corpus(user_words), repo_hosts)


def _screen(lines: list[str], tool: _Corpus, user: _Corpus, repo_hosts: Collection[str]) -> ScreenResult:
    findings: list[Finding] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        found = _line_findings(line, repo_hosts)
        share = copied_share(line, tool, user) if not tool.empty else 0.0
        if share >= 0.5:
            # Text that speaks to AI agents, or hides characters, and comes from tool output is how a planted
            # instruction looks; copied text that only names a host or a key folder may be a README's advice.
            planted = [f for f in found if f.rule in (ADDRESSES_AGENTS, HIDDEN) or f.severity == "reject"]
            found = [
                Finding(0, line, f.rule, "reject", f"{f.why}; copied from tool output")
                if f.rule in (ADDRESSES_AGENTS, HIDDEN) and f.severity == "warn"
                else f
                for f in found
            ]
            found.append(
                Finding(
                    0,
                    line,
                    COPIED,
                    "reject" if planted else "warn",
                    f"{share:.0%} of its wording comes from tool output the optimizer was shown, none from the user",
                )
            )
        findings += [Finding(no, line[:300], f.rule, f.severity, f.why) for f in found]
    findings.sort(key=lambda f: (f.severity != "reject", f.line_no))
    return ScreenResult(lines=lines, findings=findings)


def added_lines(incumbent_files: Mapping[str, str], candidate_files: Mapping[str, str]) -> list[str]:
    """The non-blank lines of the candidate's text files that the incumbent does not have, in order (the
    same lines a proposal's provenance lists)."""
    old = "\n".join(incumbent_files.values()).splitlines()
    new = "\n".join(candidate_files.values()).splitlines()
    out: list[str] = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            out.extend(line for line in new[j1:j2] if line.strip())
    return out


@dataclass
class CandidateScreen:
    """The screen with what a night knows about a skill's tasks, applied to candidates one by one.

    `user_words`, `tool_outputs` and `repo_hosts` as for `screen`; `check` adds the texts of the replays the
    optimizer read this step (`shown`), so a line copied from tonight's tool output is caught too.
    """

    user_words: Sequence[str] = ()
    tool_outputs: Sequence[str] = ()
    repo_hosts: Collection[str] = ()
    _corpora: tuple[_Corpus, _Corpus] | None = field(default=None, init=False, repr=False, compare=False)

    def check(self, incumbent: Any, candidate: Any, shown: Iterable[Any] = ()) -> ScreenResult:
        """Screen what `candidate` (a SkillBundle) adds over `incumbent`; `shown`: the ItemResults the
        optimizer read."""
        if self._corpora is None:  # the tasks' texts are read once, whatever the number of candidates
            self._corpora = (_Corpus(self.tool_outputs), _Corpus(self.user_words))
        tool, user = self._corpora
        user_now: list[str] = []
        tool_now: list[str] = []
        for res in shown:
            u, t = shown_texts(res)
            user_now += u
            tool_now += t
        lines = added_lines(incumbent.text_files(), candidate.text_files())
        return _screen(lines, _Corpus(tool_now, base=tool), _Corpus(user_now, base=user), self.repo_hosts)


def shown_texts(result: Any) -> tuple[list[str], list[str]]:
    """(the user's words, everything else) of one replay result as the optimizer reads it (`ItemResult`):
    the user's stated preferences are theirs; the trajectory, feedback, answer, error and failed checks'
    output are tool output and the agent's words."""
    details = getattr(result, "details", None) or {}
    user = [str(p.get("text", "")) for p in details.get("user_preferences") or [] if isinstance(p, Mapping)]
    other = [str(getattr(result, name, "") or "") for name in ("trajectory", "feedback", "answer", "error")]
    other += [str(c.get("output", "")) for c in details.get("failed_checks") or [] if isinstance(c, Mapping)]
    return user, [t for t in other if t]


# ---------------------------------------------------------------------------------------------- decisions


def provenance_missing(
    lines: Sequence[str], provenance: Sequence[Mapping[str, Any]], frontmatter: Collection[str] = ()
) -> list[str]:
    """The added rule lines no correction of the user's stands behind (entries as the night's provenance
    records them: `line`, `matched`). Failed replays do not trace a line: they stand behind every line of a
    step, a line planted in what the replays read included. `skillopt diff` and the dashboard list these
    lines first, and such a proposal is never approved automatically. Frontmatter, headings, blank lines and
    pure formatting are not rules and are never listed (`rule_lines`)."""
    traced = {str(e.get("line", "")).strip() for e in provenance if e.get("matched")}
    return [line for line in rule_lines(lines, frontmatter) if line.strip() not in traced]


def auto_approve_refusal(screen_record: ScreenResult | Mapping[str, Any] | None) -> str | None:
    """Why a proposal may not be approved automatically, or None when it may.

    Auto-approve is for what the screen found nothing in: a candidate it flagged (even with warnings only)
    waits for the user, and so does one that was never screened (fail closed)."""
    if screen_record is None:
        return "it was not screened for planted instructions"
    result = (
        screen_record if isinstance(screen_record, ScreenResult) else ScreenResult.from_dict(screen_record)
    )
    if result.flagged:
        return "the candidate screen flagged it: " + result.reason()
    return None
