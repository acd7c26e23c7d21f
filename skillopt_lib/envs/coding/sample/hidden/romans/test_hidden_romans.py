from romans import to_roman


def test_nine():
    assert to_roman(9) == "IX"


def test_forty_nine():
    assert to_roman(49) == "XLIX"


def test_1994():
    assert to_roman(1994) == "MCMXCIV"


def test_three_stays_additive():
    assert to_roman(3) == "III"
