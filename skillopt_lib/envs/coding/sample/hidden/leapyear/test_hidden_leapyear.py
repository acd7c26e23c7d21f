from leapyear import days_in_february, is_leap_year


def test_2000_was_a_leap_year():
    assert is_leap_year(2000)


def test_2100_will_not_be():
    assert not is_leap_year(2100)


def test_february_2100_has_28_days():
    assert days_in_february(2100) == 28


def test_2024_is_a_leap_year():
    assert is_leap_year(2024)
