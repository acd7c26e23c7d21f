"""`skillopt config show|get|set|path`: settings by dotted key (`night.schedule`, `tools.codex.enabled`).

Values are validated by the settings model itself before anything is written, so `config set` can never
leave a file that the next command refuses to load. Values given on the command line are read as text
first and as JSON second (`config set night.auto_approve '["my-skill"]'`).
"""

from __future__ import annotations

import enum
import json
import os
import sys
import types
import typing
from contextlib import contextmanager
from typing import Any, Union

import tomli_w
import typer
from pydantic import BaseModel, ValidationError

from skillopt_daemon.cli.output import console, err_console, print_json
from skillopt_daemon.core import paths
from skillopt_daemon.core.config import Settings, _explain, is_secret_key, load_settings, masked
from skillopt_daemon.core.fsio import atomic_write
from skillopt_lib.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

config_app = typer.Typer(help="Read and change settings (config.toml).", no_args_is_help=True)


def _unwrap(tp: Any) -> Any:
    """Optional[X] → X."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
    return tp


def resolve_key(key: str) -> list[str]:
    """The key's parts, checked against the settings model; an unknown part is an error naming the key."""
    parts = [p for p in key.strip().split(".")]
    if not key.strip() or any(not p for p in parts):
        raise ConfigError(f"'{key}' is not a configuration key", hint="keys look like night.schedule")
    tp: Any = Settings
    out: list[str] = []
    for i, part in enumerate(parts):
        tp = _unwrap(tp)
        so_far = ".".join(parts[: i + 1])
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            fields = tp.model_fields
            if part not in fields:
                where = ".".join(parts[:i]) or "the top level"
                raise ConfigError(
                    f"unknown configuration key '{so_far}'",
                    hint=f"keys in {where}: {', '.join(sorted(fields))}",
                )
            out.append(part)
            tp = fields[part].annotation
        elif typing.get_origin(tp) is dict:
            key_tp, val_tp = typing.get_args(tp)
            # A key type that names things (agent tools, with their aliases) reads the user's spelling the
            # way the settings do, so `tools.claude.enabled` is the same setting as `tools.claude-code.enabled`.
            parse = getattr(key_tp, "parse", None) if isinstance(key_tp, type) else None
            if parse is not None or (isinstance(key_tp, type) and issubclass(key_tp, enum.Enum)):
                try:
                    part = str(parse(part).value if parse else key_tp(part).value)
                except ValueError as exc:
                    raise ConfigError(f"unknown configuration key '{so_far}': {exc}") from None
            out.append(part)
            tp = val_tp
        else:
            raise ConfigError(
                f"unknown configuration key '{so_far}'", hint=f"'{'.'.join(parts[:i])}' has no sub-keys"
            )
    return out


def _read_file() -> dict[str, Any]:
    path = paths.config_file()
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot read {path}: {exc}", hint="fix the file by hand, or move it aside"
        ) from None


@contextmanager
def _without_env() -> typing.Iterator[None]:
    """Validate what the file will hold, not what the environment overrides."""
    from skillopt_daemon.core import config as config_mod

    config_mod._CONFIG_FILE_OVERRIDE.append(paths.config_file())  # SKILLOPT_HOME still decides the file
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("SKILLOPT_")}
    try:
        yield
    finally:
        os.environ.update(saved)
        config_mod._CONFIG_FILE_OVERRIDE.pop()


def _dig(data: Any, parts: list[str]) -> Any:
    for p in parts:
        if not isinstance(data, dict) or p not in data:
            return None
        data = data[p]
    return data


def _strip_none(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _strip_none(v) for k, v in data.items() if v is not None}
    return data


def _secret(parts: list[str]) -> bool:
    return is_secret_key(parts[-1])


def _effective() -> dict[str, Any]:
    dumped: dict[str, Any] = load_settings().model_dump(mode="json")
    return dumped


@config_app.command("path")
def path_cmd() -> None:
    """Print where the configuration file is (it may not exist yet)."""
    console.print(str(paths.config_file()), markup=False, highlight=False)


@config_app.command("show")
def show(json_out: bool = typer.Option(False, "--json", help="Print JSON instead of TOML.")) -> None:
    """Every setting in effect (file, environment and defaults), secrets masked."""
    data = masked(_effective())
    if json_out:
        print_json(data)
        return
    sys.stdout.write(tomli_w.dumps(_strip_none(data)))


@config_app.command("get")
def get(
    key: str = typer.Argument(..., help="A dotted key, e.g. night.schedule."),
    json_out: bool = typer.Option(False, "--json", help="Print the value as JSON."),
) -> None:
    """Print one setting in effect."""
    parts = resolve_key(key)
    value = _dig(_effective(), parts)
    if _secret(parts) and isinstance(value, str) and value:
        value = "****"
    value = masked(value) if isinstance(value, dict) else value
    if json_out or isinstance(value, (dict, list)):
        print_json(value)
    else:
        console.print(
            "" if value is None else str(value).lower() if isinstance(value, bool) else str(value),
            markup=False,
            highlight=False,
        )


@config_app.command("set")
def set_cmd(
    key: str = typer.Argument(..., help="A dotted key, e.g. night.schedule."),
    value: str = typer.Argument(..., help="The new value (text, a number, true/false, or JSON)."),
) -> None:
    """Change one setting in the configuration file, after checking it."""
    parts = resolve_key(key)
    data = _read_file()
    candidates: list[Any] = [value]
    try:
        parsed = json.loads(value)
        if parsed != value:
            candidates.append(parsed)
    except json.JSONDecodeError:
        pass
    first_error: ValidationError | None = None
    validated: Settings | None = None
    for cand in candidates:
        trial = json.loads(json.dumps(data, default=str))
        node = trial
        for p in parts[:-1]:
            if not isinstance(node.get(p), dict):
                node[p] = {}
            node = node[p]
        node[parts[-1]] = cand
        try:
            with _without_env():
                validated = Settings.model_validate(trial)
            data = trial
            break
        except ValidationError as exc:
            first_error = first_error or exc
    if validated is None:
        assert first_error is not None
        raise ConfigError(_explain(first_error), hint=f"see the current value: skillopt config get {key}")
    normal = _dig(validated.model_dump(mode="json"), parts)
    node = data
    for p in parts[:-1]:
        node = node[p]
    if normal is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = normal
    target = paths.config_file()
    paths.ensure_private_dir(target.parent)
    atomic_write(target, tomli_w.dumps(_strip_none(data)).encode("utf-8"), 0o600)
    shown = "****" if _secret(parts) else json.dumps(normal)
    console.print(f"{'.'.join(parts)} = {shown}", markup=False, highlight=False)
    env_name = "SKILLOPT_" + "__".join(p.upper() for p in parts)
    if env_name in os.environ:
        err_console.print(f"[yellow]note:[/] {env_name} is set and overrides this file", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")
