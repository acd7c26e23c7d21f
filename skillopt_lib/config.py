"""The trainer's configuration: one pydantic model, loaded from TOML or YAML, with dotted overrides.

Keys are never meant to live in a config file: `api_key_env` names the variable holding one. A literal
`api_key` is accepted (some users will write one anyway) but is a `SecretStr`, and everything the trainer
writes goes through `masked_dump` and `Redactor`, which hide secrets by key name *and* by value, so a key
under an unusual name (an Azure, Qwen or MiniMax setting) still never reaches disk or a log. Values are
recognised by `skillopt_lib.secrets`, the same patterns the daemon redacts transcripts with.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from skillopt_lib.budget import LearningRate
from skillopt_lib.errors import ConfigError
from skillopt_lib.gate import GateConfig
from skillopt_lib.providers import key_env_candidates

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Price(_Model):
    """USD per million tokens. Without cache prices, the built-in table's ratio of cache to input price for
    the model applies (`backends.base.price_of`)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float | None = Field(default=None, description="input read from the prompt cache")
    cache_write: float | None = Field(default=None, description="input written to the prompt cache")


class BackendConfig(_Model):
    """One model role (agent or optimizer): which backend, which model, where, and how patiently."""

    backend: str = Field(
        default="openai", description="registered backend or preset name (see docs/optimizer.md)"
    )
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, description="name of the environment variable with the key")
    api_key: SecretStr | None = Field(default=None, description="discouraged: prefer api_key_env")
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float = 120.0
    max_retries: int = Field(default=4, ge=0)
    azure_api_version: str | None = None
    json_response_format: bool = Field(
        default=False, description="ask the server for JSON output (OpenAI API)"
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="backend-specific settings (exec backends)"
    )


# The training config's models are built (their validators compiled) when a config is first validated, not
# when this module is imported: the daemon's settings import it for `BackendConfig` and `Price`, and
# `skillopt status` reads the settings and never a training config.
_BUILT_WHEN_USED = ConfigDict(defer_build=True)  # over `_Model`'s own settings


class ReflectConfig(_Model):
    model_config = _BUILT_WHEN_USED

    minibatch_size: int = Field(default=8, ge=1)
    parallel: int = Field(default=4, ge=1, description="optimizer calls in flight")
    json_retries: int = Field(default=2, ge=0, description="re-asks after an unparsable answer")
    use_successes: bool = True
    merge_group_size: int = Field(default=8, ge=2)
    max_trajectory_chars: int = Field(default=3000, ge=200)


class TrainConfig(_Model):
    model_config = _BUILT_WHEN_USED

    env: str | None = Field(default=None, description="built-in environment name or package.module:Class")
    env_options: dict[str, Any] = Field(default_factory=dict)
    agent: BackendConfig = Field(default_factory=BackendConfig)
    optimizer: BackendConfig = Field(default_factory=BackendConfig)
    seed: int = 42
    epochs: int = Field(default=4, ge=1)
    batch_size: int = Field(default=40, ge=1)
    learning_rate: LearningRate = Field(default_factory=LearningRate)
    max_skill_tokens: int = Field(
        default=2000, ge=1, description="a skill's total size limit, checked at select and on slow updates"
    )
    allow_large_deletions: bool = Field(
        default=False, description="accept candidates that lose more than half of the skill's content"
    )
    gate: GateConfig = Field(default_factory=GateConfig)
    reflect: ReflectConfig = Field(default_factory=ReflectConfig)
    slow_update: bool = True
    meta_skill: bool = True
    patience: int | None = Field(default=4, ge=1, description="stop after this many steps without acceptance")
    max_steps: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(
        default=None, ge=1, description="stop when all roles together used this many"
    )
    max_cost_usd: float | None = Field(default=None, gt=0)
    concurrency: int = Field(default=4, ge=1, description="rollouts in flight")
    executor: str = "local"
    prompts_dir: Path | None = Field(
        default=None, description="folder of .md files overriding the optimizer prompts"
    )
    prices: dict[str, Price] = Field(default_factory=dict, description="model name -> USD per million tokens")
    initial_skill: Path | None = None
    evaluate_test: bool | Literal["if-accepted"] = Field(
        default=True,
        description="evaluate the initial and best skills on the test split at the end (`if-accepted`: only "
        "when the gate accepted an edit, so a run that changed nothing pays for no test replays)",
    )
    baseline: bool = Field(
        default=True,
        description="measure the initial skill on the validation split before training; the sequential "
        "gate measures the incumbent beside every candidate anyway, so without it the figure comes from "
        "the gate's pairs (the night's choice: a replay per validation item saved)",
    )
    use_recorded: bool = Field(
        default=False,
        description="take an environment's recorded result for a train item instead of a rollout when it "
        "has one (`Environment.recorded`): a session whose user corrected the work already shows the "
        "failure the optimizer learns from",
    )
    hold_pending: bool = Field(
        default=False,
        description="while a carried candidate is still pending, train no new candidate in this run (its "
        "evidence keeps the validation items and the error budget to itself)",
    )


def _parse_value(text: str) -> Any:
    # PyYAML is imported by what reads a training config, not by every reader of settings.
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply `a.b.c=value` overrides (values parsed as YAML scalars: 3, 0.5, true, [1, 2])."""
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"bad override {item!r}", hint="write overrides as key.sub=value, e.g. gate.kind=strict"
            )
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = {}
                node[part] = nxt
            node = nxt
        node[parts[-1]] = _parse_value(value)
    return data


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    import yaml  # see `_parse_value`

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from None
    try:
        if p.suffix.lower() == ".toml":
            data: Any = tomllib.loads(text)
        else:
            data = yaml.safe_load(text) or {}
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"config {p} is not valid {p.suffix.lstrip('.').upper() or 'YAML'}: {exc}"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config {p} must be a mapping of keys to values")
    if isinstance(data.get("train"), dict) and len(data) == 1:
        data = data["train"]
    return data


def load_config(
    path: str | os.PathLike[str] | None = None, overrides: list[str] | None = None, **updates: Any
) -> TrainConfig:
    """Load a TrainConfig; a mistake becomes a ConfigError naming the key (no traceback for the user)."""
    data = read_config_file(path) if path else {}
    for key, value in updates.items():
        if value is not None:
            data[key] = value
    apply_overrides(data, list(overrides or []))
    return validate_config(data)


def validate_config(data: dict[str, Any]) -> TrainConfig:
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(explain_validation(exc), hint="see docs/optimizer.md for every key") from None


def explain_validation(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            lines.append(f"unknown configuration key '{key}'")
        else:
            lines.append(f"configuration key '{key}': {err['msg']}")
    return "; ".join(lines)


# ---------------------------------------------------------------------------------------------- secrets

SECRET_MARKERS = ("key", "token", "secret", "password", "passwd", "credential", "auth", "bearer", "cookie")
_NOT_SECRET_SUFFIXES = ("_env", "_tokens", "tokens")
MASK = "****"


def _mask_values(text: str) -> str:
    """Key-shaped strings anywhere in a text masked, by the one set of patterns ingest redacts with too."""
    # Imported here: compiling the patterns is paid by what masks a text, not by every reader of settings
    # (`skillopt status` and `approve` load them and mask nothing).
    from skillopt_lib import secrets as secret_patterns

    return secret_patterns.mask(text, MASK)[0]


def is_secret_key(key: str) -> bool:
    """A key whose text value is a secret (`api_key`, `auth_token`), not a budget or a variable name
    (`max_tokens`, `api_key_env`)."""
    low = key.lower()
    return any(m in low for m in SECRET_MARKERS) and not low.endswith(_NOT_SECRET_SUFFIXES)


def masked_dump(data: Any) -> Any:
    """A copy with every string under a secret-looking key masked, and key-shaped strings masked anywhere."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    if isinstance(data, SecretStr):
        return MASK
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            if is_secret_key(str(k)) and isinstance(v, (str, SecretStr)) and v != "":
                out[k] = MASK
            else:
                out[k] = masked_dump(v)
        return out
    if isinstance(data, list):
        return [masked_dump(v) for v in data]
    if isinstance(data, str):
        return _mask_values(data)
    return data


class Redactor:
    """Removes known secret values (and key-shaped strings) from any text before it is written."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        self._secrets = sorted({s for s in (secrets or []) if s and len(s) >= 6}, key=len, reverse=True)

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= 6 and secret not in self._secrets:
            self._secrets = sorted([*self._secrets, secret], key=len, reverse=True)

    def text(self, text: str) -> str:
        for s in self._secrets:
            if s in text:
                text = text.replace(s, MASK)
        return _mask_values(text)

    def data(self, data: Any) -> Any:
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, dict):
            return {k: self.data(v) for k, v in data.items()}
        if isinstance(data, (list, tuple)):
            return [self.data(v) for v in data]
        return data

    def json_line(self, data: Any) -> str:
        return self.text(json.dumps(self.data(data), ensure_ascii=False, default=str))


def config_secrets(cfg: TrainConfig) -> list[str]:
    """Every secret value the config can reach: literal keys, and the keys of the variables they are read
    from (set in the environment or stored in skillopt's keys file)."""
    from skillopt_lib.keys import lookup

    found: list[str] = []
    for role in (cfg.agent, cfg.optimizer):
        if role.api_key is not None:
            found.append(role.api_key.get_secret_value())
        for var in key_env_candidates(role):
            if (hit := lookup(var)) is not None:
                found.append(hit[0])

    def walk(node: Any, key: str = "") -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, str(k))
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and is_secret_key(key):
            found.append(node)
        elif isinstance(node, str) and key.lower().endswith("_env") and os.environ.get(node):
            found.append(os.environ[node])

    walk(cfg.env_options)
    walk(cfg.agent.options)
    walk(cfg.optimizer.options)
    return found


Role = Literal["agent", "optimizer"]
