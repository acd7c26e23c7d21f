from money import format_cents


def test_cents_below_ten_keep_their_zero():
    assert format_cents(1205) == "12.05"
