"""The registry layer: skill versions, where they are installed, and the installers that write them.

Import from here; the modules behind it (`models`, `content`, `versions`, `targets`, `drift`, `installs`,
`imports`, `decisions`, and `book`, the facade composing them) are how it is built, not its interface.
"""

from typing import TYPE_CHECKING, Any

from skillopt_daemon.registry.book import Registry, open_registry
from skillopt_daemon.registry.installs import LOCK_TIMEOUT_S
from skillopt_daemon.registry.models import (
    ORIGINS,
    ApproveResult,
    Event,
    HandEdit,
    ImportResult,
    InstallOutcome,
    IntegrationTarget,
    Origin,
    State,
    TargetState,
    Version,
)

if TYPE_CHECKING:
    from skillopt_daemon.registry.evidence import Evidence

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


def __getattr__(name: str) -> Any:
    # `Evidence` is imported on first use: the commands that only read versions do not build the model (a
    # pydantic class builds its validator when it is defined).
    if name == "Evidence":
        from skillopt_daemon.registry.evidence import Evidence

        return Evidence
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
