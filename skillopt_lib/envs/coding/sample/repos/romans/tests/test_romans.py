from romans import to_roman


def test_four():
    assert to_roman(4) == "IV"
