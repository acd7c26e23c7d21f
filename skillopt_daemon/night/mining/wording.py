"""Whether a line a night adds follows from the user's words: the test behind "learned from".

A proposal says a line was learned from a correction only when the line's content comes from it. Sharing
one word is not that: a project's vocabulary ("tests", "build", "commit") turns up in every correction and
in any text planted in its files, so a planted paragraph that mentions the build would read as "learned
from" the user's correction about the build. A line follows from a correction when, after both are read
alike (the screen's `normalise`: hidden characters and look-alike letters undone, NFKC; lower case):

- they share a run of `RUN` consecutive content words (the user's phrase, kept, whatever else the line
  says), or
- at least `MIN_SHARED` of the line's content words, and at least a third of them (`SHARE`), are the
  correction's.

Content words leave out function words and the words every rule is built from ("always", "never", "run",
"use", "before"): two rules that both say "always run … before …" share nothing about what to run. Words
are compared by their first `STEM` letters, so "format"/"formatter" and "commit"/"committing" count as one;
Chinese and Japanese are compared character by character, as they have no spaces. A third of the content
words is where a paraphrase of the correction still lands (it keeps the things named: the tool, the flag,
the file) and a planted line that only borrows the project's vocabulary does not.
"""

from __future__ import annotations

import functools
import re

RUN = 4
MIN_SHARED = 2
SHARE = 1 / 3
STEM = 5

# Function words and the words rules are made of, in the languages the night reads most; they say nothing
# about what a rule is about.
_FILLER_WORDS = """
    the and for with that this these those you your yours are was were has have had not but its it's into
    from onto than then them they their there here what when where which while who whom why how all any
    each every some such only also just very can could would should must may might will shall does did
    done doing use used using run runs running make makes made sure always never please first before after
    again once ever our ours out over under per via one two off now any other more most less same own
    les des une est pour dans avec sur pas que qui ses aux par toujours jamais avant après
    der die das und mit für nicht ist ein eine den dem immer nie vor nach
    los las una con para por que del siempre nunca antes después
    uma com não para por que dos das sempre nunca antes depois
"""
_FILLER = frozenset(_FILLER_WORDS.split())


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    word = re.compile(r"[^\W_]+", re.UNICODE)
    cjk = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
    return word, cjk


def words(text: str) -> list[str]:
    """The text's words in order as both sides are read: normalised, lower case, CJK characters one by one."""
    # The screen (and its tables of look-alike letters) loads only when a line is compared: the review
    # faces import this module through the conflict check and must stay quick.
    from skillopt_lib.screen import normalise

    word, cjk = _patterns()
    out: list[str] = []
    for w in word.findall(normalise(text).lower()):
        out.extend(cjk.findall(w) if cjk.search(w) else [w])
    return out


def content_words(text: str) -> list[str]:
    """The text's content words in order, by their first `STEM` letters (CJK characters as they are)."""
    _word, cjk = _patterns()
    return [
        w if cjk.match(w) else w[:STEM]
        for w in words(text)
        if cjk.match(w) or (len(w) >= 3 and w not in _FILLER)
    ]


def content(text: str) -> set[str]:
    """The text's content words as a set (`content_words`)."""
    return set(content_words(text))


def _runs(seq: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)}


def follows_from(line: str, said: str) -> bool:
    """Whether `line`'s content comes from `said` (a correction of the user's), as the module docstring
    defines it."""
    if _runs(content_words(line), RUN) & _runs(content_words(said), RUN):
        return True
    mine = content(line)
    shared = mine & content(said)
    return len(shared) >= MIN_SHARED and len(shared) >= SHARE * len(mine)


def overlap(line: str, said: str) -> int:
    """How many content words `line` shares with `said`: orders the corrections a line follows from."""
    return len(content(line) & content(said))
