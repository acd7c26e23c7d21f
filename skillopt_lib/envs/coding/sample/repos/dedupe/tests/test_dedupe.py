from dedupe import unique


def test_first_appearance_order_is_kept():
    assert unique(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
