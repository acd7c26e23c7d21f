from pagination import page_count


def test_one_result_needs_one_page():
    assert page_count(1, 25) == 1


def test_exact_multiple_adds_no_page():
    assert page_count(50, 25) == 2


def test_no_results_no_pages():
    assert page_count(0, 10) == 0


def test_one_more_than_a_full_page():
    assert page_count(101, 50) == 3
