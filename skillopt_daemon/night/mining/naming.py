"""A family's name without a model: a phrase of the user's own requests, the one that says most of what the
family's requests share.

Top TF-IDF terms name a family in fragments ("lint / make / linter / make lint"): single words, the pairs
that hold them again, numbers reduced to `num`, in an order nobody wrote. A user recognises a kind of work by
how they asked for it, so the name is the clause of a member's request closest to the family's centroid
("make lint is failing"): whole words the user wrote, in their order. Once a model labels the requests,
its canonical intent names the family instead (`mining._family_name`), and the families regroup.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from skillopt_daemon.night.mining.clustering import normalize_prompt
from skillopt_daemon.night.mining.tfidf import STOP_WORDS, Tfidf

# Where a request's clauses part: sentence ends, semicolons, a comma or colon before a space, a dash between
# spaces, brackets. A full stop inside a word (`dates.py`, `1.4.0`) is no break.
_CLAUSE_BREAK = re.compile(r"[;!?\n()\[\]]+|[.,:](?=\s|$)|\s[-\u2013\u2014]+\s")
# How the user addressed the agent, not what they asked for.
_POLITE_HEAD = re.compile(
    r"^(?:(?:please|pls|hey|hi|hello|ok|okay|so|now|also|and|then|can you|could you|would you|can we)\b[\s,]*)+",
    re.IGNORECASE,
)
_POLITE_TAIL = re.compile(r"(?:(?:^|[\s,]+)(?:please|pls|thanks|thank you))+$", re.IGNORECASE)

MIN_WORDS = 2  # one word that weighs ("red", "lint") does not say what the work was
MAX_WORDS = 10  # a longer clause is cut; status shows about 60 characters of a name anyway


def clauses(request: str) -> list[str]:
    """The request's clauses, without the courtesies around them, as the user wrote them."""
    out = []
    for part in _CLAUSE_BREAK.split(request):
        text = " ".join(part.split())
        text = _POLITE_TAIL.sub("", _POLITE_HEAD.sub("", text)).strip(" '\"`*_-")
        if text:
            out.append(text)
    return out


def _words_weighed(vec: Tfidf, normalized: str) -> set[str]:
    """The clause's words that count as terms: "put that in config/worker.toml" has one (`worker`)."""
    return {t for t in vec.terms_of(normalized) if " " not in t}


def _repeats_a_word(words: Sequence[str]) -> bool:
    """Whether a word that is not a stop word comes twice ("list orders over 5 orders")."""
    content = [w for w in re.findall(r"\w+", " ".join(words).lower()) if w not in STOP_WORDS]
    return len(set(content)) < len(content)


def _cut(words: Sequence[str]) -> str:
    return " ".join(words[:MAX_WORDS]) + ("…" if len(words) > MAX_WORDS else "")


def lexical_name(requests: Sequence[str], vec: Tfidf, centroid: np.ndarray) -> str:
    """The clause of `requests` whose terms are closest to `centroid` (the family's mean TF-IDF row, by
    `vec`'s terms), among those holding at least `MIN_WORDS` words that are terms (not stop words).

    A clause repeating a word comes after every other, then the closest wins, then the shorter, then the
    earlier. When no clause has two such words, the first request's words name the family.
    """
    candidates: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for request in requests:
        for clause in clauses(request):
            key = normalize_prompt(clause)
            if key in seen or len(_words_weighed(vec, key)) < MIN_WORDS:
                continue
            seen.add(key)
            candidates.append((key, clause.split()))
    if candidates:
        rows = vec.transform([key for key, _ in candidates])
        scores = rows.dot(np.asarray(centroid, dtype=np.float64))
        best = min(
            range(len(candidates)),
            key=lambda i: (
                _repeats_a_word(candidates[i][1]),
                -round(float(scores[i]), 9),
                len(candidates[i][1]),
                i,
            ),
        )
        if scores[best] > 0:
            return _cut(candidates[best][1])
    first = next((r.split() for r in requests if r.split()), [])
    return _cut(first) if first else "tasks"
