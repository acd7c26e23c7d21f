from pagination import page_count


def test_partly_filled_last_page_counts():
    assert page_count(21, 10) == 3
