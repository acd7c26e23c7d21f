from temperature import to_celsius


def test_boiling_point():
    assert to_celsius(212) == 100.0
