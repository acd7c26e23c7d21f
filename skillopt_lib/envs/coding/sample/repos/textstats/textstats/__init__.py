"""Small text statistics used by the report generator."""


def word_count(text: str) -> int:
    """Number of words in `text`; words are separated by any run of whitespace."""
    return len(text.split(" "))


def longest_word(text: str) -> str:
    """The longest word (the first one on ties); '' for text without words."""
    words = text.split(" ")
    return max(words, key=len) if words else ""
