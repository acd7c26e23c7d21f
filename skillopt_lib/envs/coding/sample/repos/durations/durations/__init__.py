"""Durations in the job scheduler's config files."""

import re

_PART = re.compile(r"(\d+)([hms])")


def parse_duration(text: str) -> int:
    """Seconds in a duration such as '1h30m', '45s' or '2h5m10s'."""
    seconds = 0
    for amount, unit in _PART.findall(text):
        if unit == "m":
            seconds += int(amount) * 60
        elif unit == "s":
            seconds += int(amount)
    return seconds
