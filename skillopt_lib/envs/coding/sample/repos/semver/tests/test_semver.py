from semver import newest


def test_ten_is_after_nine():
    assert newest(["1.9.0", "1.10.0"]) == "1.10.0"
