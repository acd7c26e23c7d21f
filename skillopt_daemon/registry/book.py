"""The registry of skill versions: what exists, what is proposed, what is installed where, and why.

Every decision a person or the nightly cycle makes about a skill goes through `Registry`, and the CLI, the
dashboard and the integrations only call it, so the rules live in one place:

- Versions are immutable and content-addressed (`versions`, `content`); approving, installing and rolling
  back move the per-target pointer and append audit events. Nothing is deleted.
- A hand edit wins (`drift`): a difference at a target is imported as a `hand-edit` version and the write
  is refused unless `force` is given.
- Installs are crash-safe and serialized (`installs`): an intent row before the first byte, `reconcile()`
  after a kill, one installing process at a time.
- Deciding a proposal is a compare-and-set inside one IMMEDIATE transaction (`decisions`): two processes
  approving the same proposal get one install and one refusal.

`Registry` is a thin facade: it builds those parts over one database, each given the parts it needs in its
constructor, and exposes their public methods under one name each. It holds no rule of its own except one:
SQLite's errors become errors a user can act on, at this surface and nowhere deeper.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.store.db import corrupt, corrupt_error
from skillopt_daemon.registry import content
from skillopt_daemon.registry.decisions import Decisions
from skillopt_daemon.registry.drift import Drift
from skillopt_daemon.registry.imports import Imports
from skillopt_daemon.registry.installs import Installs
from skillopt_daemon.registry.targets import Targets
from skillopt_daemon.registry.versions import Versions
from skillopt_lib.errors import StoreError

if TYPE_CHECKING:
    import sqlite_utils

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _store_errors(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn SQLite's exceptions into errors a user can act on (exit code 5), at the public surface."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(
                    "the database is locked by another process",
                    hint="another skillopt command may be running a long write; try again in a moment",
                ) from None
            raise StoreError(f"the database cannot be used: {exc}") from None
        except sqlite3.DatabaseError as exc:
            if corrupt(exc):
                raise corrupt_error(detail=exc) from None
            raise StoreError(f"the database cannot be used: {exc}") from None

    return wrapper


class _Via(Generic[_P, _R]):
    """A facade method: the same-named method of one part, with that method's signature and docstring.

    A descriptor rather than a hand-written forwarding method, so a facade signature can never drift from
    the part's (mypy sees the part's parameters through the ParamSpec)."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, _P], _R]) -> None:
        self._part = part
        self._name = method.__name__
        self.__doc__ = method.__doc__
        self.__wrapped__ = method

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Via[_P, _R]: ...

    @overload
    def __get__(self, obj: Registry, owner: type | None = None) -> Callable[_P, _R]: ...

    def __get__(self, obj: Registry | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return _store_errors(getattr(getattr(obj, self._part), self._name))


class Registry:
    """All registry operations over one open database. `actor` names who acted, for the audit log."""

    def __init__(self, db: sqlite_utils.Database, actor: str = "cli") -> None:
        self.db = db
        self._versions = Versions(db, actor)
        # Reading a target settles installs a killed process left half done: a registry lives as long as the
        # daemon or the dashboard, so recovery cannot wait for the next start.
        self._targets = Targets(self._versions, settle=lambda: self._installs.reconcile())
        self._drift = Drift(self._versions, self._targets)
        self._installs = Installs(self._versions, self._targets, self._drift)
        self._imports = Imports(self._versions, self._targets, self._drift, self._installs)
        self._decisions = Decisions(self._versions, self._targets, self._drift, self._installs)

    @property
    def actor(self) -> str:
        return self._versions.actor

    # -- the book of versions ------------------------------------------------------------------------------

    events = _Via("_versions", Versions.events)
    require_skill = _Via("_versions", Versions.require_skill)
    skill_names = _Via("_versions", Versions.skill_names)
    get_version = _Via("_versions", Versions.get_version)
    versions = _Via("_versions", Versions.versions)
    list_pending = _Via("_versions", Versions.list_pending)
    resolve_id = _Via("_versions", Versions.resolve_id)
    transition = _Via("_versions", Versions.transition)
    current_version = _Via("_versions", Versions.current_version)
    load_bundle = _Via("_versions", Versions.load_bundle)
    diff = _Via("_versions", Versions.diff)
    history = _Via("_versions", Versions.history)
    object_path = staticmethod(content.object_path)

    # -- targets -------------------------------------------------------------------------------------------

    targets = _Via("_targets", Targets.targets)
    target_state = _Via("_targets", Targets.target_state)
    ensure_target = _Via("_targets", Targets.ensure_target)
    set_target_enabled = _Via("_targets", Targets.set_target_enabled)
    installed_nowhere = _Via("_targets", Targets.installed_nowhere)
    active_version = _Via("_targets", Targets.active_version)
    integration_targets = _Via("_targets", Targets.integration_targets)
    record_integration = _Via("_targets", Targets.record_integration)
    forget_integration = _Via("_targets", Targets.forget_integration)
    installer = _Via("_targets", Targets.installer)

    # -- hand edits, installs, imports ---------------------------------------------------------------------

    check_drift = _Via("_drift", Drift.check_drift)
    install_to = _Via("_installs", Installs.install_to)
    reconcile = _Via("_installs", Installs.reconcile)
    import_folder = _Via("_imports", Imports.import_folder)
    import_target = _Via("_imports", Imports.import_target)
    import_path = _Via("_imports", Imports.import_path)
    names_on_disk = _Via("_imports", Imports.names_on_disk)
    infer_target = staticmethod(Imports.infer_target)

    # -- decisions -----------------------------------------------------------------------------------------

    propose = _Via("_decisions", Decisions.propose)
    approve = _Via("_decisions", Decisions.approve)
    reject = _Via("_decisions", Decisions.reject)
    rollback = _Via("_decisions", Decisions.rollback)
    rollback_plan = _Via("_decisions", Decisions.rollback_plan)
    uninstall = _Via("_decisions", Decisions.uninstall)
    record_hand_edits = _Via("_decisions", Decisions.record_hand_edits)


def open_registry(actor: str = "cli", reconcile: bool = True) -> tuple[Registry, list[str]]:
    """Open the database and settle interrupted installs: what every command does first."""
    reg = Registry(open_db(), actor=actor)
    notes = reg.reconcile() if reconcile else []
    return reg, notes
