"""Before the scheduled night: bring teammates' rules home, when a team is set up, and never stop the night.

The daemon's nightly job calls `pull_before_night` first. Without a team (`skillopt team init` never run)
it does nothing; with one, it pulls, so tonight's training sees what teammates published since yesterday.
The team repository is another machine on the network: when it cannot be reached, or its policy cannot be
read, the failure is one line in the log and the night goes on with the rules received before.
"""

from __future__ import annotations

import logging

from skillopt_daemon.registry import open_registry
from skillopt_daemon.team.channel import Channel, TeamSettings, settings_file
from skillopt_daemon.team.pull import pull
from skillopt_lib.errors import SkillOptError

log = logging.getLogger(__name__)


def pull_before_night() -> str | None:
    """Pull the team's rules; what went wrong in one line (also logged), or None. Never raises for the
    team's sake: a night is not lost to a network outage."""
    if not settings_file().is_file():
        return None
    try:
        reg, _ = open_registry(actor="daemon")
        found = pull(Channel(TeamSettings.load()), reg.db, reg)
    except SkillOptError as exc:
        why = f"the team's rules were not pulled before the night: {exc.message}; the night goes on"
        log.warning("%s", why)
        return why
    queued = sum(1 for p in found if p.status in ("new", "changed"))
    log.info("team pull before the night: %d rule(s) found, %d queued", len(found), queued)
    return None
