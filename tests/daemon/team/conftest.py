"""The team-channel fixtures live in `tests/harness/team_home.py`."""

from harness.team_home import team

__all__ = ["team"]
