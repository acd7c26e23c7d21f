"""Environments: a task set split into train / val / test, and a way to run and score one task.

Built-in environments are registered by name here, through the `skillopt_environments` plugin hook that a
third-party package implements too (`skillopt_lib.plugins`); any other environment can also be named as
`package.module:ClassName`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from skillopt_lib import plugins
from skillopt_lib.envs.base import Environment
from skillopt_lib.errors import ConfigError

# name -> "module:Class". Each built-in environment adds one line.
BUILTIN_ENVS: dict[str, str] = {
    "searchqa": "skillopt_lib.envs.searchqa:SearchQAEnv",
    "livemath": "skillopt_lib.envs.livemath:LiveMathEnv",
    "docvqa": "skillopt_lib.envs.docvqa:DocVQAEnv",
    "officeqa": "skillopt_lib.envs.officeqa:OfficeQAEnv",
    "spreadsheetbench": "skillopt_lib.envs.spreadsheetbench:SpreadsheetBenchEnv",
    "alfworld": "skillopt_lib.envs.alfworld:ALFWorldEnv",
    "coding": "skillopt_lib.envs.coding:CodingEnv",
    "house-style": "skillopt_lib.envs.toy:HouseStyleEnv",
    "exec-tasks": "skillopt_lib.envs.exec_tasks:ExecTasksEnvironment",
}


def skillopt_environments(register: plugins.Register) -> None:
    """The built-in environments, registered through the hook every plugin uses."""
    for name, target in BUILTIN_ENVS.items():
        register(name, target)


def env_names() -> dict[str, str]:
    """Every environment a plugin provides (built-ins first): name -> "module:Class"."""
    found = plugins.catalog("skillopt_environments", "environment", plugins.pair, '(name, "module:Class")')
    return {name: str(target) for name, target in found.items.items()}


# Packages only benchmarks use, by import name, and the extra of `skillopt-local` that installs them: the
# daemon's own install leaves them out.
BENCH_MODULES = {"openpyxl": "bench", "formulas": "bench", "PIL": "bench", "textworld": "textworld"}


def resolve_env_class(spec: str) -> Any:
    names = env_names()
    target = names.get(spec, spec)
    if ":" not in target:
        known = ", ".join(sorted(names)) or "none"
        raise ConfigError(
            f"unknown environment {spec!r}",
            hint=f"use a built-in name ({known}) or 'package.module:ClassName'",
        )
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = BENCH_MODULES.get(str(exc.name or "").partition(".")[0])
        if extra is not None:
            raise ConfigError(
                f"the {spec} benchmark needs {exc.name}, which the `{extra}` extra installs",
                hint=f"pip install 'skillopt-local[{extra}]' (with pipx: "
                f"pipx install --force 'skillopt-local[{extra}]')",
            ) from None
        raise ConfigError(f"cannot import environment module {module_name!r}: {exc}") from None
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise ConfigError(f"module {module_name!r} has no environment class {class_name!r}") from None


def load_env(spec: str, **kwargs: Any) -> Environment:
    """Instantiate an environment by built-in name or import path, passing keyword options through.

    An option the environment does not take (e.g. `--sample` for one that ships no sample) is a
    ConfigError naming the options it does take, not a traceback.
    """
    cls = resolve_env_class(spec)
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    if params and not takes_any:
        unknown = sorted(k for k in kwargs if k not in params)
        if unknown:
            known = ", ".join(k for k in params if k != "self") or "none"
            raise ConfigError(
                f"environment {spec!r} does not take the option(s) {', '.join(unknown)}",
                hint=f"its options are: {known}",
            )
    return cls(**kwargs)
