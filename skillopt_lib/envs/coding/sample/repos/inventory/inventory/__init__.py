"""Stock levels for the warehouse tool."""


class OutOfStock(Exception):
    pass


class Inventory:
    def __init__(self) -> None:
        self.stock: dict[str, int] = {}

    def add(self, sku: str, quantity: int) -> None:
        self.stock[sku] = self.stock.get(sku, 0) + quantity

    def remove(self, sku: str, quantity: int) -> None:
        """Take `quantity` out; raise OutOfStock (and change nothing) when there is not enough."""
        self.stock[sku] = self.stock.get(sku, 0) - quantity
