"""Finding every occurrence of a fixed set of words in a text in one pass: the redactor's prefilter.

The redactor tries a pattern only where one of its trigger words occurs, so on a backfill most of its time
went into looking for some forty triggers in every text, one `str.find` scan per trigger. An Aho-Corasick
automaton (pyahocorasick) finds all of them in a single pass, about four times faster on transcript text.
Where the wheel is missing (an unusual platform) the same answer comes from the `str.find` loop.
"""

from __future__ import annotations

from collections.abc import Iterable

try:
    import ahocorasick
except ImportError:  # no wheel for this platform: the str.find loop below gives the same answer
    ahocorasick = None


class TriggerScanner:
    """Where each of `words` occurs in a text; both implementations give identical answers.

    Thread safety: a built scanner is read-only and can be shared between threads.
    """

    def __init__(self, words: Iterable[str], *, automaton: bool | None = None) -> None:
        """`automaton`: None uses pyahocorasick when installed; False forces the pure-Python search."""
        self.words: tuple[str, ...] = tuple(sorted(set(words)))
        use = ahocorasick is not None if automaton is None else automaton
        if use and ahocorasick is None:
            raise RuntimeError("pyahocorasick is not installed")
        self._automaton = None
        if use and self.words:
            auto = ahocorasick.Automaton()
            for word in self.words:
                auto.add_word(word, (word, len(word) - 1))
            auto.make_automaton()
            self._automaton = auto

    @property
    def uses_automaton(self) -> bool:
        return self._automaton is not None

    def positions(self, text: str) -> dict[str, list[int]]:
        """Start offsets of every occurrence (overlapping ones too) of each word found, in ascending order.

        Words that do not occur are absent from the result. Never raises for any `str`.
        """
        found: dict[str, list[int]] = {}
        if self._automaton is not None:
            for end, (word, back) in self._automaton.iter(text):
                occ = found.get(word)
                if occ is None:
                    found[word] = [end - back]
                else:
                    occ.append(end - back)
            return found
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

    def present(self, text: str) -> set[str]:
        """The words that occur in `text`."""
        if self._automaton is not None:
            return {word for _end, (word, _back) in self._automaton.iter(text)}
        return {word for word in self.words if word in text}
