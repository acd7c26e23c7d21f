from csvsum import column_total


def test_blank_cells_count_as_zero():
    assert column_total("a,b\n1,2\n,3\n", "a") == 1.0
