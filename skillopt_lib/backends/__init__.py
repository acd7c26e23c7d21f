"""Backends play two roles: the frozen agent that runs tasks, and the optimizer model that edits skills.

Every backend is created from a `skillopt_lib.config.BackendConfig` through this one registry (name -> factory),
so the trainer never chooses a backend by if/elif. The built-in backends are registered through the
`skillopt_backends` plugin hook (`skillopt_lib.plugins`) that a third-party package implements too; a
program can also add one with `register_backend`. Presets are OpenAI-compatible
servers with a known base URL and key variable: `backend = "deepseek"` is `openai` with those filled in.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from skillopt_lib import keys, plugins
from skillopt_lib.config import BackendConfig
from skillopt_lib.errors import ConfigError, did_you_mean
from skillopt_lib.net import is_loopback_url
from skillopt_lib.providers import PRESETS, key_env_candidates

BackendFactory = Callable[[BackendConfig, dict[str, Any]], Any]


# name -> "module:factory"; imported lazily so that a missing optional SDK only matters when used.
BUILTIN_BACKENDS: dict[str, str] = {
    "openai": "skillopt_lib.backends.openai:create",
    "azure": "skillopt_lib.backends.openai:create_azure",
    "anthropic": "skillopt_lib.backends.anthropic:create",
    "claude-code": "skillopt_lib.backends.claude_code:create",
    "codex": "skillopt_lib.backends.codex:create",
    "copilot": "skillopt_lib.backends.copilot:create",
    "cursor": "skillopt_lib.backends.cursor:create",
    "claude-code-chat": "skillopt_lib.backends.cli_chat:create_claude_code_chat",
    "codex-chat": "skillopt_lib.backends.cli_chat:create_codex_chat",
    "gemini": "skillopt_lib.backends.gemini:create",
}
_BUILTIN: dict[str, BackendFactory | str] = {}  # from the plugins' hooks, filled on first use
_ADDED: dict[str, BackendFactory | str] = {}  # register_backend's, which win over a plugin's
_REGISTRY: dict[str, BackendFactory] = {}  # resolved factories


def skillopt_backends(register: plugins.Register) -> None:
    """The built-in backends, registered through the hook every plugin uses."""
    for name, factory in BUILTIN_BACKENDS.items():
        register(name, factory)


def _from_plugins() -> dict[str, BackendFactory | str]:
    if not _BUILTIN:
        found = plugins.catalog("skillopt_backends", "backend", plugins.pair, "(name, factory)")
        _BUILTIN.update(found.items)
    return _BUILTIN


def _forget() -> None:
    _BUILTIN.clear()
    _REGISTRY.clear()


plugins.on_change(_forget)


def register_backend(name: str, factory: BackendFactory | str) -> None:
    """Register a backend factory `factory(config, context) -> backend` (or its "module:function" path).

    `context` carries what a backend may need from the run: `prices` (model -> Price overrides) and, for
    exec backends, whatever the caller passes (e.g. a workspace root).
    """
    _ADDED[name] = factory
    _REGISTRY.pop(name, None)


def backend_names() -> list[str]:
    return sorted(set(_from_plugins()) | set(_ADDED) | set(PRESETS))


def is_backend(name: str) -> bool:
    """Whether `name` is a backend or a preset. A built-in name answers without loading the plugins (a
    built-in wins a clash of names), which reads every installed package's metadata."""
    return name in BUILTIN_BACKENDS or name in _ADDED or name in PRESETS or name in backend_names()


def unknown_backend(name: str) -> str:
    """What to say about a backend name that is not registered: the closest one, when it looks mistyped."""
    guess = did_you_mean(name, backend_names())
    return f"unknown backend {name!r}" + (f" ({guess})" if guess else "")


def _factory(name: str) -> BackendFactory:
    if name in _REGISTRY:
        return _REGISTRY[name]
    # A built-in wins a clash of names, so a built-in backend needs no plugin loaded.
    target = _ADDED.get(name) or BUILTIN_BACKENDS.get(name) or _from_plugins().get(name)
    if target is None:
        raise ConfigError(unknown_backend(name), hint=f"use one of: {', '.join(backend_names())}")
    if not isinstance(target, str):
        _REGISTRY[name] = target
        return target
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"backend {name!r} cannot be loaded: {exc}") from None
    factory: BackendFactory = getattr(module, attr)
    _REGISTRY[name] = factory
    return factory


def resolve_preset(cfg: BackendConfig) -> BackendConfig:
    """Turn a preset name into an `openai` config with its base URL and key variable filled in."""
    preset = PRESETS.get(cfg.backend)
    if preset is None:
        return cfg
    updates: dict[str, Any] = {"backend": "openai"}
    if not cfg.base_url:
        updates["base_url"] = preset.base_url
    if not cfg.api_key_env and preset.key_env:
        updates["api_key_env"] = preset.key_env
    if not preset.needs_key:
        updates["options"] = {**cfg.options, "key_optional": True}
    return cfg.model_copy(update=updates)


def resolve_api_key(cfg: BackendConfig, role: str = "") -> str | None:
    """The key for a backend: literal `api_key`, else the named variable, else the backend's usual variable;
    each variable is looked up in the environment first, then in skillopt's keys file (`skillopt keys set`),
    which is how a daemon started as a service gets a key no shell of its own exported.

    A local server (a loopback base URL or a keyless preset) may go without; anything else without a key is a
    ConfigError that says which variable to set.
    """
    if cfg.api_key is not None and cfg.api_key.get_secret_value():
        return cfg.api_key.get_secret_value()
    for name in key_env_candidates(cfg):
        found = keys.lookup(name)
        if found is not None:
            return found[0]
    if cfg.api_key_env:
        raise ConfigError(
            f"the {role + ' ' if role else ''}backend's key {cfg.api_key_env} is neither set in the "
            "environment nor stored in skillopt's keys file",
            hint=f"store it with `skillopt keys set {cfg.api_key_env}` (a running daemon finds it at its "
            f"next night), or export {cfg.api_key_env}=... in the shell that runs skillopt",
        )
    if cfg.options.get("key_optional") or is_loopback_url(cfg.base_url):
        return None
    wanted = key_env_candidates(cfg)
    hint = (
        f"store it with `skillopt keys set {wanted[0]}`, export {wanted[0]}=..., or set api_key_env in the "
        "config"
        if wanted
        else "set api_key_env in the config"
    )
    raise ConfigError(f"no API key for the {role + ' ' if role else ''}backend {cfg.backend!r}", hint=hint)


def create_backend(cfg: BackendConfig, role: str = "", **context: Any) -> Any:
    """Build the backend a config names. Raises ConfigError (never a traceback) for a config mistake."""
    resolved = resolve_preset(cfg)
    if not resolved.model and resolved.backend in ("openai", "azure", "anthropic"):
        raise ConfigError(
            f"no model set for the {role + ' ' if role else ''}backend {cfg.backend!r}",
            hint=f"set {role + '.' if role else ''}model in the config "
            f"or with --set {role or 'agent'}.model=NAME",
        )
    return _factory(resolved.backend)(resolved, {"role": role, **context})
