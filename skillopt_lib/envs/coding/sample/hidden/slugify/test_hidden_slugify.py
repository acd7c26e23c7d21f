from slugify import slugify


def test_punctuation_is_dropped():
    assert slugify("Hello, World!") == "hello-world"


def test_runs_of_separators_collapse():
    assert slugify("a  --  b") == "a-b"


def test_no_leading_or_trailing_hyphen():
    assert slugify("  Trim me  ") == "trim-me"


def test_digits_are_kept():
    assert slugify("Top 10 Tips") == "top-10-tips"
