from dedupe import unique


def test_order_of_many_items():
    names = [f"user{i}" for i in range(20, 0, -1)]
    assert unique(names + names) == names


def test_empty_list():
    assert unique([]) == []


def test_case_is_significant():
    assert unique(["Ann", "ann", "Ann"]) == ["Ann", "ann"]
