from semver import newest


def test_patch_numbers_compare_as_numbers():
    assert newest(["2.0.9", "2.0.11", "2.0.2"]) == "2.0.11"


def test_major_wins_over_minor():
    assert newest(["10.0.0", "9.99.99"]) == "10.0.0"


def test_single_version():
    assert newest(["0.1.0"]) == "0.1.0"
