from temperature import to_celsius


def test_freezing_point():
    assert to_celsius(32) == 0.0


def test_body_temperature():
    assert to_celsius(98.6) == 37.0


def test_minus_forty_is_the_same():
    assert to_celsius(-40) == -40.0
