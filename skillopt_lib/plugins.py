"""Plugins: how agent tools, model backends and benchmark environments reach skillopt.

skillopt uses pluggy (the plugin library of pytest, datasette and llm). Everything skillopt ships is
registered through the same hooks a third party implements: the modules in `DEFAULT_PLUGINS` are plugins
like any other, so a tool added by a package is no different from a built-in one. Third-party plugins are
found through the `skillopt` entry-point group::

    [project.entry-points.skillopt]
    toy = "skillopt_toy"

A plugin module defines functions named like the hook specifications below, marked with `@hookimpl`.
Each hook returns a list (or None); skillopt collects every plugin's answers. A built-in wins a clash of
names, so no package can silently take over `claude-code`; the clash is reported by `skillopt plugins`
and `skillopt doctor`.

Hook results name modules and classes (``"package.module:Name"``) rather than importing them: the library
stays free of the daemon, each layer imports only its own part of a tool, and a plugin whose reader fails to
import breaks that reader only.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

PROJECT = "skillopt"
ENTRY_POINT_GROUP = "skillopt"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

# The built-in plugins, registered before any third-party one (datasette's DEFAULT_PLUGINS).
DEFAULT_PLUGINS: tuple[str, ...] = (
    "skillopt_lib.agents",
    "skillopt_lib.backends",
    "skillopt_lib.envs",
)

# Set to 1 to load the built-in plugins only (a broken third-party package must not stop `skillopt doctor`
# from saying so).
NO_PLUGINS_ENV = "SKILLOPT_NO_PLUGINS"

log = logging.getLogger("skillopt.plugins")


class HookSpecs:
    """The hooks a plugin may implement. Every hook takes no arguments and returns a list, or None."""

    @hookspec
    def skillopt_agent_tools(self) -> list[Any] | None:  # list[skillopt_lib.agents.ToolSpec]
        """Agent tools this plugin adds, as `skillopt_lib.agents.ToolSpec` rows.

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

    @hookspec
    def skillopt_backends(self) -> list[tuple[str, Any]] | None:
        """Model backends this plugin adds, as `(name, factory)` pairs.

        `factory(config, context) -> backend` receives the `skillopt_lib.config.BackendConfig` a user wrote
        and a context dict (`role`, `prices`, and for exec backends `workspaces_root`); it may also be given
        as ``"module:function"`` so that a missing SDK only matters when the backend is used. A chat backend
        implements `skillopt_lib.backends.base.ChatBackend`; an exec backend (one that drives an agent CLI)
        implements `skillopt_lib.execution.ExecBackend`. The name is what `backend = ...` in a config means.
        """

    @hookspec
    def skillopt_environments(self) -> list[tuple[str, str]] | None:
        """Benchmark environments this plugin adds, as `(name, "module:Class")` pairs.

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


def _get() -> _State:
    global _state
    with _lock:
        if _state is None:
            pm = pluggy.PluginManager(PROJECT)
            pm.add_hookspecs(HookSpecs)
            for name in DEFAULT_PLUGINS:
                pm.register(importlib.import_module(name), name=name)
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
    """Every item each plugin's `hook` returned, with the plugin's name: built-ins first, in registration
    order, then third-party plugins in the order they were installed."""
    pm = manager()
    caller = getattr(pm.hook, hook)
    out: list[tuple[str, Any]] = []
    for impl in caller.get_hookimpls():  # registration order (pluggy calls them newest first)
        items = impl.function()
        for item in items or ():
            out.append((impl.plugin_name, item))
    return out


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
