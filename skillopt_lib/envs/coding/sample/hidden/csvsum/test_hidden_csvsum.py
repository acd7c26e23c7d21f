from csvsum import column_total


def test_whitespace_cells_count_as_zero():
    assert column_total("a\n 1 \n  \n", "a") == 1.0


def test_thousands_separators_are_read():
    assert column_total('a\n"1,200"\n3\n', "a") == 1203.0


def test_plain_sum():
    assert column_total("a\n1.5\n2.5\n", "a") == 4.0
