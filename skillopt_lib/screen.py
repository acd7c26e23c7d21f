"""The candidate screen: what a skill must never learn, whatever the replays say.

A learned skill runs in every future session of every tool it is installed into, and most of the text a
night learns from is not the user's: tool output (READMEs, issue bodies, web pages, test logs, a
dependency's install messages) and the agent's own words. An instruction planted in any of them reaches the
optimizer as evidence, and an optimizer that copies it into an edit launders it into a rule. Replays cannot
catch that: an injected line that happens to make a check pass scores better.

So every line a candidate adds is screened, before it is replayed and again before it is proposed, for what
an attacker wants a coding agent to do and what a user's rule almost never asks:

- `fetch-and-execute`: run code fetched from the network (`curl … | sh`, `iex (iwr …)`, `python -c
  "$(curl …)"`, a base64 payload piped to a shell, installing a package straight from an unknown URL);
- `unknown-host`: send data to a host the repository does not already use (or, as a warning, name one);
- `credentials`: read key folders or credential files (`~/.ssh`, `~/.aws/credentials`, `.env` *contents*,
  keychains, token commands);
- `environment-dump`: dump the environment (`env`, `printenv`, `set`, `os.environ`, `/proc/*/environ`);
- `permissions`: turn off the agent's permission prompts or sandbox (`--dangerously-skip-permissions`,
  `bypassPermissions`, `--yolo`, `danger-full-access`, auto-approve, approving skillopt proposals itself);
- `git-remote-or-hooks`: change git remotes, URL rewrites, hooks or the hooks path;
- `ignore-instructions`: tell the agent to ignore its instructions or system prompt, or to hide what it
  does from the user, in the languages the night reads (English, French, German, Spanish, Portuguese,
  Italian, Chinese, Japanese);
- `hidden-text`: invisible characters, bidirectional overrides or Unicode tag characters in the line;
- `addresses-agents`: text that speaks to "AI agents" rather than being a rule for this one;
- `copied-from-tool-output`: a line whose long word sequences occur in the tool output the optimizer was
  shown and not in the user's own words.

Lines are read after undoing the usual disguises: invisible characters removed, Unicode tag characters
decoded, compatibility forms folded (NFKC), look-alike letters of other scripts inside Latin words mapped
to Latin (Unicode's confusables table, via `confusable_homoglyphs`), and base64, hex and percent-encoded
runs decoded and screened too. A rule that only matches once a disguise is removed is always a rejection:
nobody hides a good rule.

Each finding has a severity. `reject` is a clear attack: the candidate must not be replayed or proposed.
`warn` is where a legitimate rule can look alike ("never commit `.env`", "run `curl -fsS --retry 3` in CI
scripts", "run `pre-commit install` after cloning", a prohibition such as "never use `curl | sh`"): the
candidate may be proposed, with the warning shown, and is never auto-approved (`auto_approve_refusal`).
"""

from __future__ import annotations

import base64
import binascii
import difflib
import re
import subprocess
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from confusable_homoglyphs import confusables

from skillopt_lib.net import is_loopback_host

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
RULES = (
    FETCH_EXEC,
    UNKNOWN_HOST,
    CREDENTIALS,
    ENV_DUMP,
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


def decoded_runs(text: str, depth: int = 2) -> list[tuple[str, str]]:
    """Readable text hidden in base64, hex escapes (`\\x63\\x75…`) or percent-encoding, with how it was
    hidden; nested encodings are followed `depth` levels deep."""
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
    for m in _HEX_RUN.finditer(text):
        found = _printable(bytes.fromhex(m.group().replace("\\x", "")))
        if found:
            out.append((found, "hex escapes"))
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


# ---------------------------------------------------------------------------------------------- hosts

_URL_HOST = re.compile(
    r"\b(?:https?|ftps?|wss?|sftp|ssh|git|rsync|s3|gs)://(?:[^@/\s'\"`]+@)?\[?([A-Za-z0-9.\-_:]+?)\]?(?::\d+)?(?=[/\s'\"`)>\]?#,;|]|$)"
)
_SCP_HOST = re.compile(r"\b[\w.-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+):")
_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])")
_CMD_HOST = re.compile(
    r"\b(?:nc|ncat|netcat|telnet|ssh|sftp|ftp|dig|nslookup|host|ping|socat\s+\S+\s+tcp:?)\s+(?:-\S+\s+)*"
    r"(?:[\w.-]+@)?([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)"
)
_DEV_TCP = re.compile(r"/dev/(?:tcp|udp)/([A-Za-z0-9.-]+)/")
_TLDS = (
    "com|net|org|io|dev|app|co|ai|xyz|ru|cn|info|biz|site|online|top|tk|cc|us|uk|de|fr|es|it|pt|jp|br|"
    "cloud|tech|link|click|pw|su|ws|gg"
)
_BARE_HOST = re.compile(
    rf"(?:\b(?:to|at|from|via|on|into|endpoint|server|host|webhook|domain|à|an|nach|auf|a|para|per|verso|到|に)\s+"
    rf"[`'\"]?)([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9-]+)*\.(?:{_TLDS}))\b",
    re.IGNORECASE,
)


def _clean_host(host: str) -> str:
    host = host.strip().strip(".").lower()
    return host[4:] if host.startswith("www.") else host


def hosts_in(text: str) -> set[str]:
    """Every host a text names: in URLs, `user@host:` paths, network commands' arguments, `/dev/tcp/`,
    IPv4 addresses, and bare domains after "to", "at", "via" and the like."""
    found: set[str] = set()
    for pattern in (_URL_HOST, _SCP_HOST, _CMD_HOST, _DEV_TCP, _BARE_HOST):
        found.update(_clean_host(m.group(1)) for m in pattern.finditer(text))
    found.update(m.group(1) for m in _IPV4.finditer(text) if all(int(p) < 256 for p in m.group(1).split(".")))
    return {h for h in found if h and ("." in h or ":" in h or h == "localhost")}


def known_host(host: str, repo_hosts: Collection[str]) -> bool:
    """Whether the repository already talks to `host`: this machine, a host it names, or a subdomain of one."""
    host = _clean_host(host)
    if is_loopback_host(host) or host in {"0.0.0.0", "::"}:
        return True
    for known in repo_hosts:
        k = _clean_host(known)
        if host == k or (k and host.endswith("." + k)):
            return True
    return False


_REPO_TEXT_LIMIT = 20_000_000
_REPO_FILE_LIMIT = 262_144


def repo_hosts(repo: str | Path | None, *, max_files: int = 3000) -> set[str]:
    """The hosts a repository already uses: its git remotes' hosts and every host named in its tracked text
    files (manifests, lock files, CI settings, docs), so a rule that calls the project's own registry or API
    is not taken for exfiltration. A folder outside git is read file by file, within the same limits."""
    if not repo:
        return set()
    root = Path(repo).expanduser()
    if not root.is_dir():
        return set()
    found: set[str] = set()
    names: list[Path] = []
    try:
        remotes = subprocess.run(
            ["git", "-c", "core.quotepath=off", "remote", "-v"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
        )
        listed = subprocess.run(
            ["git", "-c", "core.quotepath=off", "ls-files", "-z"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        remotes = listed = None  # type: ignore[assignment]
    if remotes is not None and remotes.returncode == 0:
        found |= hosts_in(remotes.stdout)
    if listed is not None and listed.returncode == 0:
        names = [root / n for n in listed.stdout.split("\0") if n]
    else:
        names = [p for p in root.rglob("*") if ".git" not in p.parts and p.is_file()]
    budget = _REPO_TEXT_LIMIT
    for path in names[:max_files]:
        try:
            if not path.is_file() or path.stat().st_size > _REPO_FILE_LIMIT:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:4096]:
            continue
        budget -= len(data)
        if budget < 0:
            break
        found |= hosts_in(data.decode("utf-8", "replace"))
    return found


# ---------------------------------------------------------------------------------------------- patterns

_F = (
    r"(?:curl|wget|fetch|aria2c|https?|httpie|iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring|"
    r"lwp-request|lwp-download|GET)"
)
_R = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:(?:ba|da|z|k|c|tc|fi|a)?sh|python[\d.]*|py|perl|ruby|node|deno|bun|php|lua|"
    r"pwsh|powershell(?:\.exe)?|iex|invoke-expression|cmd(?:\.exe)?|source|xargs\s+(?:-\S+\s+)*\S*sh)"
)
_NEG = re.compile(
    r"\b(?:never|not|no|don'?t|doesn'?t|mustn'?t|shouldn'?t|can'?t|cannot|won'?t|avoid|forbid(?:den)?|"
    r"prohibit(?:ed)?|disallow(?:ed)?|refuse\s+to|nunca|jamais|niemals|nie|mai|kein(?:e|en)?)\b|不要|禁止|切勿|别|しない|禁止",
    re.IGNORECASE,
)
# Words after a negation that turn it into an exhortation ("don't forget to", "never hesitate to").
_NOT_NEG = re.compile(
    r"^\W*(?:forget|hesitate|skip|fail|omit|neglect|refuse|stop|wait|ask|bother|worry|need\s+to\s+ask|"
    r"prompt|confirm|tell|inform|mention|question)\b",
    re.IGNORECASE,
)
_SCOPE_BREAK = re.compile(
    r"\b(?:without|unless|until|before|after|first|except|then|but|instead)\b", re.IGNORECASE
)
_CLAUSE = re.compile(r"[.;!?\n。；！？]|,\s|，|、|\band then\b", re.IGNORECASE)


def _negated(text: str, start: int) -> bool:
    """Whether the match at `start` sits inside a prohibition: a negation at most a few words before it in
    the same clause, not one that turns into an exhortation ("don't forget to …")."""
    head = text[:start]
    cut = max((m.end() for m in _CLAUSE.finditer(head)), default=0)
    clause = head[cut:]
    negs = list(_NEG.finditer(clause))
    if not negs:
        return False
    last = negs[-1]
    between = clause[last.end() :]
    if _NOT_NEG.match(between) or _SCOPE_BREAK.search(between):
        return False
    return len(re.findall(r"[^\s`'\"*]+", between)) <= 5


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
        r"(?!\s+variable\b)[^\n]{0,60}\b(?:to|into|in|at)\b\s+(?![`'\"]?\S*\.(?:example|sample|template|dist)\b)\S",
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
        negatable=False,
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
        r"\b(?:ai|llm|language[-\s]model|coding|autonomous)\s+(?:agents?|assistants?|models?|bots?)\b|"
        r"\bif\s+you\s+are\s+an?\s+(?:ai|llm|assistant|agent|language\s+model|bot)\b|\bnote\s+(?:to|for)\s+(?:ai|llms?|agents?|assistants?|bots?)\b|"
        r"\b(?:agents?|assistants?)\s+(?:ia|d'ia|de\s+ia)\b|\bki-(?:agent\w*|assistent\w*|modell\w*)|\bagent[ei]\s+(?:ia|di\s+ia)\b|"
        r"\bassistent[ei]\s+(?:ia|di\s+ia)\b|AI\s*(?:代理|助手|智能体|エージェント|アシスタント)|人工智能(?:代理|助手)",
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
            if rule.negatable and severity == "reject" and not disguised and _negated(text, m.start()):
                severity, why = "warn", f"{why}, stated as a prohibition"
            if disguised:
                severity, why = "reject", f"{why} ({how})"
            key = (rule.rule, severity)
            if key in seen:
                continue
            seen.add(key)
            out.append(Finding(0, line, rule.rule, severity, f"{why}: “{_excerpt(text, m)}”"))
        unknown = sorted(h for h in hosts_in(text) if not known_host(h, repo_hosts))
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
            if sev == "reject" and not disguised and sends is not None and _negated(text, sends.start()):
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
