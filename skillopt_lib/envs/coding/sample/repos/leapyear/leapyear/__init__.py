"""Calendar helpers for the booking system."""


def is_leap_year(year: int) -> bool:
    """Gregorian rule: every 4th year, except centuries, except every 4th century."""
    return year % 4 == 0


def days_in_february(year: int) -> int:
    return 29 if is_leap_year(year) else 28
