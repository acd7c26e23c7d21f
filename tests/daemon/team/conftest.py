"""The team-channel fixtures live in `testkit/team_home.py`."""

from testkit.team_home import team

__all__ = ["team"]
