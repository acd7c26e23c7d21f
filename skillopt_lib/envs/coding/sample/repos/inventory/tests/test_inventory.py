import pytest
from inventory import Inventory, OutOfStock


def test_remove_more_than_stock_raises():
    inv = Inventory()
    inv.add("bolt", 2)
    with pytest.raises(OutOfStock):
        inv.remove("bolt", 3)
