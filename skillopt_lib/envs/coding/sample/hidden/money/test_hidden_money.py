from money import format_cents


def test_whole_amount_has_two_decimals():
    assert format_cents(700) == "7.00"


def test_negative_amount():
    assert format_cents(-1250) == "-12.50"


def test_small_negative_amount():
    assert format_cents(-5) == "-0.05"


def test_amount_below_one_unit():
    assert format_cents(9) == "0.09"
