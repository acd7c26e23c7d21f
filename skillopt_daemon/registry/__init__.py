"""The registry layer: skill versions, where they are installed, and the installers that write them.

Import from here; the modules behind it (`models`, `content`, `versions`, `targets`, `drift`, `installs`,
`imports`, `decisions`, and `book`, the facade composing them) are how it is built, not its interface.
"""

from skillopt_daemon.registry.book import Registry, open_registry
from skillopt_daemon.registry.installs import LOCK_TIMEOUT_S
from skillopt_daemon.registry.models import (
    ORIGINS,
    ApproveResult,
    Event,
    Evidence,
    HandEdit,
    ImportResult,
    InstallOutcome,
    IntegrationTarget,
    Origin,
    State,
    TargetState,
    Version,
)

__all__ = [
    "Origin",
    "State",
    "ORIGINS",
    "LOCK_TIMEOUT_S",
    "Evidence",
    "Version",
    "TargetState",
    "Event",
    "InstallOutcome",
    "HandEdit",
    "ApproveResult",
    "ImportResult",
    "IntegrationTarget",
    "Registry",
    "open_registry",
]
