"""Model API keys that live outside any one shell: `keys.json` (0600) in skillopt's data folder.

A daemon started as a user service, at login, or from another terminal does not see the variables of the
shell the user configured it in, so an `export OPENAI_API_KEY=...` there cannot reach its nights. Keys are
stored here under the name of the variable a backend reads them from (`OPENAI_API_KEY`, or whatever
`api_key_env` names) and looked up after the environment: a variable that is set always wins, so a run
with a different key in its environment behaves as it always did. The file is read on every lookup, so a
key stored while the daemon runs is found at its next night without a restart.

Values never leave this module except to the backend that asked: `skillopt keys list` shows names only.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Literal

from skillopt_lib import userdir
from skillopt_lib.errors import ConfigError
from skillopt_lib.fsio import write_private
from skillopt_lib.providers import DEFAULT_KEY_ENV, PRESETS

NOTE_KEY = "// Note"
NOTE = "This file stores secret API keys for skillopt. Do not share it."
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Source = Literal["environment", "keys file"]


def keys_file() -> Path:
    return userdir.data_dir() / "keys.json"


def variable_for(name: str) -> str:
    """The variable a key is stored under: `name` itself (OPENAI_API_KEY), or the usual variable of a
    backend or preset named by `name` (openai → OPENAI_API_KEY, deepseek → DEEPSEEK_API_KEY)."""
    low = name.strip().lower()
    if low in DEFAULT_KEY_ENV:
        return DEFAULT_KEY_ENV[low]
    preset = PRESETS.get(low)
    if preset is not None and preset.key_env:
        return preset.key_env
    if not _NAME.match(name.strip()):
        known = ", ".join(sorted({*DEFAULT_KEY_ENV, *(n for n, p in PRESETS.items() if p.key_env)}))
        raise ConfigError(
            f"{name!r} is not a key name",
            hint=f"name the variable the backend reads (e.g. OPENAI_API_KEY, or your api_key_env), "
            f"or a backend: {known}",
        )
    return name.strip()


def load_keys() -> dict[str, str]:
    """Every stored key by variable name; {} when there is no file yet."""
    path = keys_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(
            f"cannot read the keys file {path}: {exc.strerror}",
            hint=f"make it readable by you only: chmod 600 {path}",
        ) from None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ConfigError(
            f"the keys file {path} is not a JSON object of names and keys",
            hint="fix it by hand, or move it aside and store the keys again with `skillopt keys set NAME`",
        )
    return {str(k): str(v) for k, v in data.items() if k != NOTE_KEY and isinstance(v, str) and v}


def _save(keys: dict[str, str]) -> None:
    doc = {NOTE_KEY: NOTE, **dict(sorted(keys.items()))}
    write_private(keys_file(), json.dumps(doc, indent=2) + "\n")


def set_key(name: str, value: str) -> str:
    """Store `value` under the variable `name` stands for; returns that variable's name."""
    var = variable_for(name)
    value = value.strip()
    if not value:
        raise ConfigError("no key was given; nothing was stored", hint="paste the key at the prompt")
    if any(c.isspace() for c in value):
        raise ConfigError(
            "a key has no spaces or line breaks; nothing was stored",
            hint="paste the key alone, on one line",
        )
    keys = load_keys()
    keys[var] = value
    _save(keys)
    return var


def remove_key(name: str) -> str | None:
    """Forget the key stored for `name`; returns the variable removed, or None when none was stored."""
    var = variable_for(name)
    keys = load_keys()
    if var not in keys:
        return None
    del keys[var]
    _save(keys)
    return var


def stored_names() -> list[str]:
    return sorted(load_keys())


def lookup(var: str) -> tuple[str, Source] | None:
    """The key for variable `var` and where it came from: the environment first, then the keys file. A
    keys file that cannot be read counts as holding nothing here (`skillopt keys list` says why)."""
    value = os.environ.get(var)
    if value:
        return value, "environment"
    try:
        stored = load_keys().get(var)
    except ConfigError:
        return None
    return (stored, "keys file") if stored else None
