from inventory import Inventory, OutOfStock


def test_failed_remove_changes_nothing():
    inv = Inventory()
    inv.add("bolt", 2)
    try:
        inv.remove("bolt", 3)
    except OutOfStock:
        pass
    assert inv.stock["bolt"] == 2


def test_unknown_sku_is_out_of_stock():
    inv = Inventory()
    try:
        inv.remove("nut", 1)
    except OutOfStock:
        return
    raise AssertionError("expected OutOfStock")


def test_exact_stock_can_be_removed():
    inv = Inventory()
    inv.add("bolt", 2)
    inv.remove("bolt", 2)
    assert inv.stock.get("bolt", 0) == 0
