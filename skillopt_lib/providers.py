"""Model providers skillopt knows by name: OpenAI-compatible presets and the variables their keys live in.

A leaf module: the configuration (which must find every secret a run can reach, to redact it) and the
backend registry (which must resolve keys and presets) both read these tables, and neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Preset:
    """An OpenAI-compatible server: where it listens and which variable usually holds its key."""

    base_url: str
    key_env: str | None
    needs_key: bool = True


PRESETS: dict[str, Preset] = {
    "qwen": Preset("https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY"),
    "dashscope": Preset("https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY"),
    "minimax": Preset("https://api.minimax.io/v1", "MINIMAX_API_KEY"),
    "deepseek": Preset("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "ollama": Preset("http://127.0.0.1:11434/v1", None, needs_key=False),
    "vllm": Preset("http://127.0.0.1:8000/v1", None, needs_key=False),
}

DEFAULT_KEY_ENV: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "azure": "AZURE_OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}


class KeyedBackend(Protocol):
    """What key lookup reads from a backend's settings (a `skillopt_lib.config.BackendConfig` has both)."""

    @property
    def backend(self) -> str: ...

    @property
    def api_key_env(self) -> str | None: ...


def key_env_candidates(cfg: KeyedBackend) -> list[str]:
    """The environment variables a key may come from, in order: the configured one, the preset's, the
    backend's usual one (only when none is configured). Never raises; may be empty."""
    names: list[str] = []
    if cfg.api_key_env:
        names.append(cfg.api_key_env)
    preset = PRESETS.get(cfg.backend)
    if preset is not None and preset.key_env and preset.key_env not in names:
        names.append(preset.key_env)
    default = DEFAULT_KEY_ENV.get(cfg.backend)
    if default and not cfg.api_key_env and default not in names:
        names.append(default)
    return names
