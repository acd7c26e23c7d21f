from durations import parse_duration


def test_hours_alone():
    assert parse_duration("2h") == 7200


def test_all_three_units():
    assert parse_duration("2h5m10s") == 7510


def test_minutes_still_work():
    assert parse_duration("45m") == 2700
