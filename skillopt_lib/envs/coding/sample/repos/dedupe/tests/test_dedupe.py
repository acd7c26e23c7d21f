from dedupe import unique


def test_first_appearance_order_is_kept():
    # Eight distinct entries, so a set's order cannot match the first-appearance order by chance.
    entries = ["kim", "bo", "ana", "bo", "eli", "kim", "zoe", "cy", "ana", "max", "dee"]
    assert unique(entries) == ["kim", "bo", "ana", "eli", "zoe", "cy", "max", "dee"]
