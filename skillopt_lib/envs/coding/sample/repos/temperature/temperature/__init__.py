"""Unit conversion for the weather station feed."""


def to_celsius(fahrenheit: float) -> float:
    """Degrees Celsius for degrees Fahrenheit, rounded to one decimal."""
    return round(fahrenheit - 32 * 5 / 9, 1)
