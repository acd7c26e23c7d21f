from leapyear import is_leap_year


def test_1900_was_not_a_leap_year():
    assert not is_leap_year(1900)
