from textstats import longest_word, word_count


def test_empty_text_has_no_words():
    assert word_count("") == 0


def test_tabs_and_newlines_separate_words():
    assert word_count("a\tb\nc") == 3


def test_surrounding_whitespace_is_ignored():
    assert word_count("  padded  ") == 1


def test_longest_word_ignores_whitespace_runs():
    assert longest_word("hi   there") == "there"
