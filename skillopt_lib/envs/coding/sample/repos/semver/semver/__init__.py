"""Version numbers of the plugin index."""


def newest(versions: list[str]) -> str:
    """The highest of versions written as 'MAJOR.MINOR.PATCH', compared number by number."""
    return max(versions)
