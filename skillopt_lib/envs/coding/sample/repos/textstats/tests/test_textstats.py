from textstats import word_count


def test_word_count_simple():
    assert word_count("one two three") == 3


def test_word_count_repeated_spaces():
    assert word_count("one  two") == 2
