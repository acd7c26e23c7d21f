"""Whether a dangerous phrase sits inside a prohibition ("never use `curl | sh`"), in the languages the
candidate screen reads.

A user's rule that forbids a dangerous thing has to name it, so the screen finds the same phrase in "never
pipe `curl` into `sh`" as in "pipe `curl` into `sh`". A rule that forbids is a warning at most
(`skillopt_lib.screen`); this module says which one forbids. Negations come before the phrase in most of
the languages ("never", "nunca", "jamais", "n'… pas", "non … mai", "不要", "禁止") and after it in some
("`curl | sh` nicht verwenden", "`curl | sh` は実行しないでください", "… is forbidden"). A negation that is
an exhortation ("don't forget to", "n'oubliez pas de", "no olvides", "别忘了", "忘れないで") is not one, and
neither is one whose scope ends before the phrase ("never … without first running …").
A phrase that spans a whole sentence ("put the tokens into the commit message") can hold its negation
between its own words ("include no secrets in logs", "füge niemals Tokens in die Commit-Nachricht ein").
"""

from __future__ import annotations

import re

_BEFORE = re.compile(
    r"\b(?:never|not|no|don['’]?t|doesn['’]?t|mustn['’]?t|shouldn['’]?t|can['’]?t|cannot|won['’]?t|avoid|"
    r"forbid(?:den)?|prohibit(?:ed)?|disallow(?:ed)?|refuse\s+to|"
    r"nunca|jamás|jamais|pas|ne|niemals|nie|nicht|keinesfalls|keineswegs|kein(?:e|en)?|vermeide\w*|"
    r"não|nao|non|mai|evit[aeo]\w*|évite[rz]?|interdit|verboten|prohibid[oa]|proibid[oa]|vietat[oa])\b|"
    r"\bn['’](?!importe)(?=\w)|不要|禁止|切勿|别|不得|不能|不可|勿|严禁|避免|不允许|決して|絶対に",
    re.IGNORECASE,
)
_AFTER = re.compile(
    r"\b(?:(?:is|are)\s+(?:not\s+allowed|forbidden|prohibited|banned|never\s+(?:ok|okay|allowed)))\b|"
    r"\b(?:nicht|nie|niemals|keinesfalls|verboten|interdit|prohibido|proibido|vietato)\b|"
    r"是禁止的|禁止|不允许|不可以|不得|(?<!忘れ)(?:しないで|しない|するな|しては(?:いけ|なり)|禁止|避け|使わない|ないでください)",
    re.IGNORECASE,
)
# Negations that may sit between a phrase's words; "no" only before what it denies ("no secrets"), since in
# Portuguese and Spanish "no" is also "in the" ("no corpo da issue").
_INSIDE = re.compile(
    r"\b(?:never|not|niemals|nie|nicht|keine?[nmrs]?|jamais|pas|nunca|jamás|mai|não|nenhu\w*|ningun\w*|ningún|"
    r"nessun\w*)\b|\bno\s+(?=(?:secrets?|tokens?|passwords?|credentials?|keys?|environment|env)\b)",
    re.IGNORECASE,
)
# Words after a negation that turn it into an exhortation ("don't forget to", "never hesitate to").
_EXHORTATION = re.compile(
    r"^\W*(?:(?:forget|hesitate|skip|fail|omit|neglect|refuse|stop|wait|ask|bother|worry|need\s+to\s+ask|"
    r"prompt|confirm|tell|inform|mention|question|oubli\w*|hésit\w*|manque\w*|vergiss\w*|zöger\w*|olvid\w*|"
    r"dud\w*|esque[çc]\w*|hesit\w*|dimentic\w*|esit\w*|tard\w*)\b|忘|犹豫|迟疑)",
    re.IGNORECASE,
)
# The same, where the exhortation's verb comes before the negation ("n'oubliez pas", "vergiss nicht").
_EXHORTATION_BEFORE = re.compile(
    r"(?:\bn['’]\s*|\bne\s+)?\b(?:oubli\w*|hésit\w*|manque\w*|vergiss\w*|vergesst|vergessen\s+sie|zöger\w*)\s*$|忘れ$",
    re.IGNORECASE,
)
_SCOPE_BREAK = re.compile(
    r"\b(?:without|unless|until|before|after|first|except|then|but|instead|sans|avant|ohne|bevor|sin|antes|"
    r"sem|senza|prima|always|rather|matter|toujours|immer|siempre|sempre)\b",
    re.IGNORECASE,
)
_AFTER_BREAK = re.compile(
    r"\b(?:and|then|but|if|when|und|dann|aber|sondern|wenn|falls|sobald|et|puis|mais|si|quand|y|luego|pero|"
    r"cuando|e|poi|ma|se|quando)\b",
    re.IGNORECASE,
)
# After a negation that follows the phrase, only politeness may close the clause: "しないで実行" is "run
# without …", "`curl | sh` nicht vergessen" is "don't forget it".
_AFTER_REST = re.compile(
    r"(?:\s|ください|下さい|ね|よ|的|です|使用|执行|运行|。|aus|ausführen|verwenden|benutzen|nutzen)*"
)
_CLAUSE = re.compile(r"[.;:!?\n。；：！？]|,\s|，|、|\band then\b", re.IGNORECASE)
_WORDS = re.compile(r"[^\s`'\"*]+")
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]*)?[,;:.!?]?")


def prohibited(text: str, start: int, end: int | None = None, *, inside: bool = False) -> bool:
    """Whether the phrase at `text[start:end]` is forbidden rather than asked for: a negation at most a few
    words before it in the same clause, or (given `end`) right after it, and not an exhortation. With
    `inside`, a negation between the phrase's own words counts too: for phrases that span a whole sentence
    ("put … into the commit message"), not for those that carry a negation of their own ("do not tell the
    user")."""
    if _before(text, start):
        return True
    if end is None:
        return False
    return (inside and _inside(text[start:end])) or _after(text, end)


def _before(text: str, start: int) -> bool:
    head = text[:start]
    cut = max((m.end() for m in _CLAUSE.finditer(head)), default=0)
    clause = head[cut:]
    negs = list(_BEFORE.finditer(clause))
    if not negs:
        return False
    last = negs[-1]
    between = clause[last.end() :]
    if _EXHORTATION.match(between) or _SCOPE_BREAK.search(between):
        return False
    if _EXHORTATION_BEFORE.search(clause[: last.start()].rstrip()):
        return False
    return len(_WORDS.findall(between)) <= 7


def _inside(span: str) -> bool:
    """A negation inside the phrase itself, between its words ("include no secrets in logs", "füge niemals
    Tokens in die Commit-Nachricht ein"). Only plain words count: `--no-progress-meter`, `no.example` or a
    code span are part of a command, not a negation."""
    words = " ".join(w for w in _WORDS.findall(re.sub(r"`[^`]*`", " ", span)) if _PLAIN_WORD.fullmatch(w))
    return any(not _EXHORTATION.match(words[neg.end() :]) for neg in _INSIDE.finditer(words))


def _after(text: str, end: int) -> bool:
    tail = text[end:]
    stop = _CLAUSE.search(tail)
    clause = tail[: stop.start()] if stop else tail
    brk = _AFTER_BREAK.search(clause)
    clause = clause[: brk.start()] if brk else clause
    neg = _AFTER.search(clause)
    if neg is None:
        return False
    if not _AFTER_REST.fullmatch(clause[neg.end() :]):
        return False
    between = clause[: neg.start()]
    # Scripts without spaces between words (Chinese, Japanese) count characters, others count words.
    return len(between) <= 20 if not between.isascii() else len(_WORDS.findall(between)) <= 2
