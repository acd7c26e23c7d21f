"""What each user message is, without a model: a new task, a follow-up, a correction, an acknowledgement, a
question about the result, or meta text (slash commands and the like).

This is the one place that says what counts as a correction. Ingest's signals count a session's
corrections with it (`signals.derive_signals`, what the dashboard and `sessions show` report), and the
night's mining reads every message's kind from it (`night/mining/attempts.py`), so what the dashboard counts and
what the night learns from are the same messages.

Only tasks start attempts; everything else belongs to the attempt before it. Words are matched in English,
Chinese, Japanese, Portuguese, Spanish, French, German and Italian; position does the rest: the first request
of a session is a task whatever it says, a message right after an acknowledgement starts afresh, and a short or
referring message in the middle of work continues it. When a model is available its labels take precedence
(`night/mining/labels.py`); this is the fallback, and the reason it gives is shown by `skillopt tasks mine --explain`.
How well it reads the recorded corpus (precision and recall of corrections on its held-out half, per
language) is in docs/nightly.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    TASK = "task"
    FOLLOWUP = "followup"
    CORRECTION = "correction"
    ACK = "ack"
    QUESTION = "question"
    META = "meta"


# Messages that only approve, thank or close the work: short, and made of these words.
_ACK_WORDS = re.compile(
    r"^\W*(?:thanks?(?:\s+you)?|thx|ty|great|perfect|nice|awesome|cool|good(?:\s+job)?|looks\s+good|lgtm|ok(?:ay)?|"
    r"done|that\s+works|works(?:\s+now)?|that'?s\s+(?:it|all|fine|great)|all\s+good|ship\s+it|"
    r"(?:ok,?\s+)?(?:commit|push|merge)\s+(?:it|that|this)|leave\s+it(?:\s+\w+){0,3}|let'?s\s+stop\s+here|"
    r"obrigad[oa]|perfeito|valeu|beleza|gracias|perfecto|vale|genial|merci|parfait|d'accord|danke|super|prima|"
    r"passt|grazie|perfetto|谢谢|多谢|好的|可以了|没问题|行|完美|ありがとう|了解|大丈夫|"
    r"deixa\s+assim|déjalo\s+así|lass\s+(?:es|das)\s+so|先这样|就这样|算了)"
    r"(?:[\s,.!;:~，。！、]+(?:thanks?|that'?s\s+it|obrigad[oa]|gracias|merci|danke|grazie|谢谢|好的|"
    r"perfeito|perfecto|parfait|super|great|ok|all\s+good|for\s+now|now))*[\s!.,~，。！]*$",
    re.IGNORECASE,
)
# Rejections and rules at the start: "no, ...", "don't ...", "revert that", "it still fails", and their
# equivalents. "no" alone is not enough where it opens a pleasantry ("no problem, thanks").
_CORRECTION_START = re.compile(
    r"""^\W*(?:
        no\b(?!\s+(?:problem|worries|thanks|need)\b)|nope\b|nah\b|wrong\b|incorrect\b|
        not\s+(?:like\s+that|what|that|quite)\b|
        that(?:'?s|\s+is|\s+was)\s+(?:not|wrong|incorrect|bad|broken)\b|this\s+is\s+(?:wrong|not|incorrect|broken)\b|
        (?:please\s+)?(?:don'?t|do\s+not|never|stop)\b|please\s+no\b|
        (?:please\s+)?(?:undo|revert|roll\s*back)\b|please\s+use\b|
        instead\b|actually\b|
        you\s+(?:forgot|missed|broke|didn'?t|did\s+not|should(?:n'?t)?|were\s+supposed)\b|
        (?:it|that|this|the\s+\w+)\s+(?:still\s+)?(?:fails|failed|didn'?t|did\s+not|doesn'?t|does\s+not|isn'?t|is\s+not)\b|
        still\s+(?:fail\w*|broken|wrong|not)\b|
        i\s+(?:said|told\s+you|asked)\b|(?:use|try)\s+\S+\s+instead\b|
        não\b|nao\b|nunca\b|errado|pare\b|nein\b|nicht\b|falsch|niemals\b|non\b|niente\b|mai\s+più\b|sbagliat[oa]\b|pas\s+(?:de|comme|ça)\b|jamais\b|
        ne\s+\w+\s+pas\b|incorrecto|mal\b|no\s+uses\b|sin\b|不要|别|不是|不对|错了|不行|不能|やめて|違う|ダメ
    )""",
    re.IGNORECASE | re.VERBOSE,
)
# ... or anywhere: "X instead of Y", "X rather than Y", "..., not Y", "do X instead", and their equivalents.
_CORRECTION_ANYWHERE = re.compile(
    r"(?:\binstead\s+of\b|\brather\s+than\b|,\s*not\s+\w+|\binstead\W*$|\bi\s+said\b|\bi\s+told\s+you\b|"
    r"\bthat'?s\s+not\s+what\b|\bnot\s+what\s+i\s+(?:asked|wanted|meant)\b|"
    r"\bnão\b|\bem\s+vez\s+de\b|\bno\s+uses\b|\ben\s+lugar\s+de\b|"
    r"\bnicht\b|\bstatt\b|\banstatt\b|\bpas\s+de\b|\bau\s+lieu\s+de\b|\binvece\s+di\b|而不是|不要|别用|不用|じゃなくて)",
    re.IGNORECASE,
)
# Where a correction shows itself: its first words (a long message is read no further than this).
_CORRECTION_HEAD = 300
_QUESTION_ABOUT_RESULT = re.compile(
    r"^\W*(?:show\s+me|what\s+(?:did|have)\s+you|why\s+did\s+you|how\s+did\s+you|did\s+you|can\s+i\s+see|"
    r"where\s+did\s+you|which\s+files|mostra|o\s+que\s+(?:você\s+)?mudou|¿?qu[ée]\s+(?:archivos\s+)?cambiaste|"
    r"por\s*qu[ée]\s+(?:lo\s+)?(?:hiciste|cambiaste)|muéstrame|qu'?as[- ]tu|montre|was\s+hast\s+du|zeig|"
    r"为什么|你改了|改了什么|给我看|看看|どうして|何を変え)",
    re.IGNORECASE,
)
_FOLLOWUP_START = re.compile(
    r"^\W*(?:also|and\b|then\b|plus\b|same\b|do\s+the\s+same|now\s+(?:also|run|do|try)|run\s+(?:it|them|that|the\s+\w+)?"
    r".*\b(?:again|once\s+more)|try\s+again|again\b|one\s+more|também|e\s+também|además|también|y\s+también|aussi|"
    r"et\s+aussi|auch|und\s+auch|anche|还有|也|再|另外|顺便|それと|あと)",
    re.IGNORECASE,
)
_REFERS_BACK = re.compile(
    r"\b(?:it|its|them|that|this|those|these|the\s+same|too|as\s+well|again|once\s+more|isso|isto|eso|esto|"
    r"ça|cela|das|dies|lo|la)\b|这个|那个|它|同样|これ|それ",
    re.IGNORECASE,
)
_SLASH = re.compile(r"^/[\w:-]+(?:\s|$)")
_META = re.compile(
    r"^\s*(?:<command-(?:name|message|args)>|<local-command|<bash-(?:input|stdout|stderr)>|\[Request interrupted|"
    r"Caveat: The messages below)",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def words(text: str) -> int:
    """Word count; CJK text counts about one word per two characters."""
    return len(_WORD.findall(_CJK.sub(" ", text))) + (len(_CJK.findall(text)) + 1) // 2


def is_ack(text: str) -> bool:
    return words(text) <= 6 and bool(_ACK_WORDS.match(text.strip()))


def is_correction(text: str) -> bool:
    """Does this message reject or redirect what the agent did, or state a rule for it?"""
    head = text.strip()[:_CORRECTION_HEAD]
    return bool(_CORRECTION_START.match(head)) or bool(_CORRECTION_ANYWHERE.search(head))


def is_meta(text: str) -> bool:
    return bool(_SLASH.match(text.strip())) or bool(_META.match(text))


@dataclass(frozen=True)
class Context:
    """Where a message sits: is an attempt open, what came before it."""

    has_task: bool = False
    after_ack: bool = False
    task_prompt: str = ""


def classify(text: str, ctx: Context) -> tuple[Kind, str]:
    """The kind of one user message and why, from its words and its position."""
    stripped = text.strip()
    if is_meta(stripped):
        return Kind.META, "a slash command or text the tool added"
    if not ctx.has_task:
        return Kind.TASK, "the first request of the session"
    if is_ack(stripped):
        return Kind.ACK, "approves or closes the work"
    if is_correction(stripped):
        return Kind.CORRECTION, "rejects what the agent did or states a rule"
    n = words(stripped)
    if _QUESTION_ABOUT_RESULT.match(stripped) and n <= 12:
        return Kind.QUESTION, "asks about the result"
    if ctx.after_ack:
        return Kind.TASK, "a new request after the last one was closed"
    if _FOLLOWUP_START.match(stripped):
        return Kind.FOLLOWUP, "continues the work (also / again / the same)"
    if n <= 5 or (n <= 10 and _REFERS_BACK.search(stripped)):
        return Kind.FOLLOWUP, "short and refers to the work in progress"
    return Kind.TASK, "a new request of its own"


def message_kinds(texts: Iterable[str]) -> list[tuple[Kind, str]]:
    """The kind of each of a session's user messages (in order, meta turns left out), each read in the
    context of the messages before it: the walk both ingest's signals and the night's mining make."""
    out: list[tuple[Kind, str]] = []
    task, after_ack = "", False
    for text in texts:
        kind, why = classify(text, Context(has_task=bool(task), after_ack=after_ack, task_prompt=task))
        out.append((kind, why))
        if kind is Kind.TASK:
            task, after_ack = text.strip(), False
        elif kind is Kind.ACK:
            after_ack = True
    return out
