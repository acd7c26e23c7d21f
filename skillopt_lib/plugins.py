"""Plugins: how agent tools, model backends and benchmark environments reach skillopt.

skillopt uses pluggy (the plugin library of pytest, datasette and llm). Everything skillopt ships is
registered through the same hooks a third party implements: the modules in `DEFAULT_PLUGINS` are plugins
like any other, so a tool added by a package is no different from a built-in one. Third-party plugins are
found through the `skillopt` entry-point group::

    [project.entry-points.skillopt]
    toy = "skillopt_toy"

A plugin module defines functions named like the hook specifications below, marked with `@hookimpl`.
Each hook receives a `register` callback (as llm's `register_models(register)` does) and calls it once per
thing it adds; a hook written for earlier versions may instead take no argument and return a list, which
counts the same. One mechanism (`catalog`) collects every plugin's registrations for all three hooks,
checks each, and settles clashes: a built-in wins a clash of names, so no package can silently take over
`claude-code`, and every clash is reported by `skillopt plugins` and `skillopt doctor`.

Hook results name modules and classes (``"package.module:Name"``) rather than importing them: the library
stays free of the daemon, each layer imports only its own part of a tool, and a plugin whose reader fails to
import breaks that reader only.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import pluggy

PROJECT = "skillopt"
ENTRY_POINT_GROUP = "skillopt"

# The built-in plugins and the hooks each implements (datasette's DEFAULT_PLUGINS). Their answers come
# before any third-party plugin's. A built-in module is registered when one of its hooks is first called,
# so a command that only needs the tools' rows does not import the backends or the benchmarks; pluggy
# itself is imported on first use too (agent hooks run `skillopt notify` at the end of every session).
DEFAULT_PLUGINS: dict[str, tuple[str, ...]] = {
    "skillopt_lib.agents": ("skillopt_agent_tools",),
    "skillopt_lib.backends": ("skillopt_backends",),
    "skillopt_lib.envs": ("skillopt_environments",),
}


def hookimpl(function: Any = None, **options: Any) -> Any:
    """Mark a function as a hook implementation (pluggy's `HookimplMarker("skillopt")`, made on first use).

    Built-in modules need no marker: a module-level function named after a hook is taken as its
    implementation, as pytest does for `pytest_*` functions.
    """
    import pluggy

    marker = pluggy.HookimplMarker(PROJECT)
    return marker(function, **options) if function is not None else marker(**options)


# Set to 1 to load the built-in plugins only (a broken third-party package must not stop `skillopt doctor`
# from saying so).
NO_PLUGINS_ENV = "SKILLOPT_NO_PLUGINS"

log = logging.getLogger("skillopt.plugins")

# What a hook is handed: called with one row (agent tools) or a name and what it names (backends,
# environments).
Register = Callable[..., None]
T = TypeVar("T")


class HookSpecs:
    """The hooks a plugin may implement. Every hook is called with `register`, a callback taking one thing
    the plugin adds; an implementation may also leave `register` out and return a list of them (or None).

    Each method is one hook specification (marked as such when the manager is made)."""

    def skillopt_agent_tools(self, register: Register) -> list[Any] | None:  # ToolSpec rows
        """Agent tools this plugin adds: `register(row)` for each `skillopt_lib.agents.ToolSpec` row.

        A row is the whole contract of a tool: its CLI facts (`executables`, `tested_versions`,
        `install_hint`, `aliases`), its home (`home_env`, `home_default`), its skills folders
        (`user_skill_dir`, `project_skill_dirs`, `scopes`: what `skillopt install` and approved versions
        write to), its session source (`source` and `extra_sources`: ``"module:Class"`` of a
        `skillopt_daemon.ingest.sources.base.BaseSource` subclass whose `tool` is the row's tool), its
        installer (`installer`: ``"module:Class"`` of a `FolderInstaller` subclass), its exec backend for
        replays (`backend`: a name a `skillopt_backends` hook registers, or None), the options that backend
        gets by default (`replay_options`, overridden by `tools.<tool>.replay_options` in the settings), its
        chat backend (`chat_backend`), what `skillopt install` places besides skills (`integration`:
        ``"module:function"`` taking a `skillopt_daemon.integrations.plan.PlacementContext`) and its doctor
        checks (`doctor`: ``"module:function"`` taking the tool and returning `(name, level, detail)`
        tuples). Built-in rows name short module names relative to skillopt's own packages; a plugin names
        full ``"module:Name"`` paths.
        """

    def skillopt_backends(self, register: Register) -> list[tuple[str, Any]] | None:
        """Model backends this plugin adds: `register(name, factory)` for each.

        `factory(config, context) -> backend` receives the `skillopt_lib.config.BackendConfig` a user wrote
        and a context dict (`role`, `prices`, and for exec backends `workspaces_root`); it may also be given
        as ``"module:function"`` so that a missing SDK only matters when the backend is used. A chat backend
        implements `skillopt_lib.backends.base.ChatBackend`; an exec backend (one that drives an agent CLI)
        implements `skillopt_lib.execution.ExecBackend`. The name is what `backend = ...` in a config means.
        """

    def skillopt_environments(self, register: Register) -> list[tuple[str, str]] | None:
        """Benchmark environments this plugin adds: `register(name, "module:Class")` for each.

        The class implements `skillopt_lib.envs.base.Environment` and is constructed with the keyword
        options a user passes (`skillopt train --env NAME`); an option it does not take is refused with the
        ones it does.
        """


@dataclass
class PluginInfo:
    """One loaded plugin, as `skillopt plugins` shows it."""

    name: str
    module: str
    builtin: bool
    version: str | None
    hooks: list[str]
    provides: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "builtin": self.builtin,
            "version": self.version,
            "hooks": self.hooks,
            "provides": self.provides,
        }


@dataclass
class _State:
    pm: pluggy.PluginManager
    distributions: dict[str, str | None]  # plugin name -> version of the package that provided it
    problems: list[str]


_lock = threading.RLock()
_state: _State | None = None
_listeners: list[Any] = []


def _load_entry_points(pm: pluggy.PluginManager, problems: list[str]) -> dict[str, str | None]:
    """Register each `skillopt` entry point's module; one that fails to import is a problem, not a crash."""
    from importlib import metadata

    found: dict[str, str | None] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            plugin = ep.load()
        except Exception as exc:  # a third party's bug: report it and keep the rest working
            problems.append(
                f"plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}; "
                f"fix or uninstall the package that provides it"
            )
            continue
        try:
            pm.register(plugin, name=ep.name)
        except ValueError as exc:
            problems.append(f"plugin {ep.name!r} cannot be registered: {exc}")
            continue
        dist = getattr(ep, "dist", None)
        found[ep.name] = dist.version if dist is not None else None
    return found


def manager() -> pluggy.PluginManager:
    """The one plugin manager, with the built-ins and every installed plugin registered (on first use)."""
    return _get().pm


def _manager_class() -> type[pluggy.PluginManager]:
    import pluggy

    class Manager(pluggy.PluginManager):
        """Takes a built-in module's `skillopt_*` functions as implementations without a marker."""

        def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
            opts = super().parse_hookimpl_opts(plugin, name)
            if (
                opts is None
                and name.startswith("skillopt_")
                and getattr(plugin, "__name__", "") in DEFAULT_PLUGINS
            ):
                method = getattr(plugin, name, None)
                if callable(method):
                    return {
                        "wrapper": False,
                        "hookwrapper": False,
                        "optionalhook": False,
                        "tryfirst": False,
                        "trylast": False,
                        "specname": None,
                    }
            return opts

    return Manager


def _builtin(pm: pluggy.PluginManager, hook: str | None = None) -> None:
    """Register the built-in modules that implement `hook` (every built-in, with None)."""
    for name, hooks in DEFAULT_PLUGINS.items():
        if (hook is None or hook in hooks) and pm.get_plugin(name) is None:
            pm.register(importlib.import_module(name), name=name)


def _get() -> _State:
    global _state
    with _lock:
        if _state is None:
            import pluggy

            mark = pluggy.HookspecMarker(PROJECT)
            for name in vars(HookSpecs):
                if name.startswith("skillopt_"):
                    mark(getattr(HookSpecs, name))  # marked here, so importing this module needs no pluggy
            pm = _manager_class()(PROJECT)
            pm.add_hookspecs(HookSpecs)
            problems: list[str] = []
            dists: dict[str, str | None] = {}
            if not os.environ.get(NO_PLUGINS_ENV):
                dists = _load_entry_points(pm, problems)
            _state = _State(pm, dists, problems)
        return _state


def register(plugin: Any, name: str | None = None) -> str:
    """Register a plugin object or module in this process (what an entry point does at start-up)."""
    with _lock:
        registered = _get().pm.register(plugin, name=name)
        _changed()
        if registered is None:
            raise ValueError(f"plugin {name or plugin!r} is blocked")
        return registered


def unregister(name: str) -> None:
    """Take a plugin out again (tests, and `register`'s undo)."""
    with _lock:
        _get().pm.unregister(name=name)
        _changed()


def reset() -> None:
    """Forget every plugin; the next use loads the built-ins and installed plugins again."""
    global _state
    with _lock:
        _state = None
        _changed()


def on_change(callback: Any) -> None:
    """Call `callback()` whenever the set of plugins changes (caches built from hook results drop)."""
    _listeners.append(callback)


def _changed() -> None:
    for cb in list(_listeners):
        cb()


def is_builtin(plugin_name: str) -> bool:
    return plugin_name in DEFAULT_PLUGINS


def results(hook: str) -> list[tuple[str, Any]]:
    """Every item each plugin's `hook` returned, with the plugin's name: built-ins first, then third-party
    plugins in the order they were registered."""
    with _lock:
        pm = manager()
        _builtin(pm, hook)
    caller = getattr(pm.hook, hook)
    impls = list(caller.get_hookimpls())  # registration order (pluggy calls them newest first)
    impls.sort(key=lambda impl: 0 if is_builtin(impl.plugin_name) else 1)  # stable: keeps that order
    out: list[tuple[str, Any]] = []
    for impl in impls:
        got: list[Any] = []

        def register(*args: Any, _got: list[Any] = got) -> None:
            _got.append(args[0] if len(args) == 1 else tuple(args))

        returned = impl.function(register) if "register" in impl.argnames else impl.function()
        for item in [*got, *(returned or ())]:
            out.append((impl.plugin_name, item))
    return out


@dataclass(frozen=True)
class Catalog(Generic[T]):
    """What every plugin registered through one hook, by name: built-ins first, the first of a name kept."""

    items: dict[str, T]
    owners: dict[str, str]  # name -> the plugin that provides it


def catalog(hook: str, noun: str, parse: Callable[[Any], tuple[str, T]], expected: str) -> Catalog[T]:
    """Every plugin's registrations for `hook` (`results`), each turned into `(name, thing)` by `parse`.

    The one place where registrations are checked and clashes settled, for agent tools, backends and
    environments alike: a registration `parse` refuses (TypeError or ValueError) is reported as a problem
    naming the plugin and what it should register (`expected`), and a second one for a name already taken
    is reported and ignored, so a built-in (registered first) always wins its name."""
    items: dict[str, T] = {}
    owners: dict[str, str] = {}
    for plugin_name, item in results(hook):
        try:
            name, thing = parse(item)
        except (TypeError, ValueError):
            note_problem(f"plugin {plugin_name!r} registered {item!r} through {hook}; register {expected}")
            continue
        if name in items:
            note_problem(
                f"plugin {plugin_name!r} adds the {noun} {name!r}, which {owners[name]!r} already provides; "
                "the first one is used"
            )
            continue
        items[name] = thing
        owners[name] = plugin_name
    return Catalog(items, owners)


def pair(item: Any) -> tuple[str, Any]:
    """A `(name, what it names)` registration, checked (what backends and environments register)."""
    name, thing = item
    if not isinstance(name, str) or not name:
        raise ValueError(f"not a name: {name!r}")
    return name, thing


def problems() -> list[str]:
    """What went wrong loading plugins (failed imports); clashes are added by the registries that see them."""
    return list(_get().problems)


def note_problem(message: str) -> None:
    with _lock:
        st = _get()
        if message not in st.problems:
            st.problems.append(message)
            log.warning(message)


def load_object(path: str, *, package: str | None = None) -> Any:
    """Import ``"module:Name"`` (or ``"module"`` relative to `package` for built-in rows' short names)."""
    module_name, _, attr = path.partition(":")
    if package and "." not in module_name:
        module_name = f"{package}.{module_name}"
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def loaded() -> list[PluginInfo]:
    """The plugins loaded now, built-ins first, with the hooks each implements and what they provide."""
    st = _get()
    pm = st.pm
    with _lock:
        _builtin(pm)
    infos: dict[str, PluginInfo] = {}
    order = list(DEFAULT_PLUGINS) + [n for n, _ in pm.list_name_plugin() if n not in DEFAULT_PLUGINS]
    for name in order:
        plugin = pm.get_plugin(name)
        if plugin is None:
            continue
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or [])
        infos[name] = PluginInfo(
            name=name,
            module=getattr(plugin, "__name__", type(plugin).__name__),
            builtin=is_builtin(name),
            version=st.distributions.get(name),
            hooks=hooks,
        )
    labels = {
        "skillopt_agent_tools": "agent tools",
        "skillopt_backends": "backends",
        "skillopt_environments": "environments",
    }
    for hook, label in labels.items():
        for plugin_name, item in results(hook):
            key = getattr(item, "tool", None) or (item[0] if isinstance(item, tuple) else str(item))
            info = infos.get(plugin_name)
            if info is not None:
                info.provides.setdefault(label, []).append(str(key))
    return list(infos.values())
