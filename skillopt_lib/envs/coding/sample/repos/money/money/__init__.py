"""Amounts of money for invoices, kept as whole cents."""


def format_cents(cents: int) -> str:
    """'12.05' for 1205 cents: always two decimals, a leading '-' for negative amounts."""
    return f"{cents // 100}.{cents % 100}"
