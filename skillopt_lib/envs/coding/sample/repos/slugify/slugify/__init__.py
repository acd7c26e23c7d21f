"""URL slugs for blog post titles."""


def slugify(title: str) -> str:
    """Lower-case words joined by single hyphens, keeping only letters and digits."""
    raise NotImplementedError("slugify is not written yet")
