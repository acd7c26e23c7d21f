"""Page numbers for the search results view."""


def page_count(total: int, per_page: int) -> int:
    """Pages needed to show `total` results, `per_page` on a page; 0 results need 0 pages."""
    return total // per_page
