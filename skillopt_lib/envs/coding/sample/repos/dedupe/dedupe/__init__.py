"""Removing repeated entries from the mailing list export."""


def unique(items: list[str]) -> list[str]:
    """Each item once, in the order it first appears."""
    return list(set(items))
