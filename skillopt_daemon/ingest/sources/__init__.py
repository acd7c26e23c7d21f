"""The registry of log readers, one per agent tool, all behind `sources.base.Source`.

`all_sources(settings)` builds the enabled readers with each tool's home resolved (config, then the tool's
own variable, then its default folder) and one shared `Redactor` holding the user's extra patterns, so
nothing unredacted can leave any of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt_daemon.core import paths
from skillopt_daemon.ingest.redact import Redactor
from skillopt_daemon.ingest.sources.base import BaseSource, Source
from skillopt_lib import plugins
from skillopt_lib.agents import TOOLS, AgentTool

if TYPE_CHECKING:
    from skillopt_daemon.core.config import Settings


def _reader(tool: AgentTool, name: str) -> type[BaseSource]:
    """The reader a tool's row names: `"module:Class"` (a plugin's), or a module of this package (a built-in
    row's short name) holding the `BaseSource` subclass whose `tool` is `tool`."""
    if ":" in name:
        obj = plugins.load_object(name)
        if not (isinstance(obj, type) and issubclass(obj, BaseSource)) or obj.tool != tool:
            raise ImportError(f"{name} is not a BaseSource subclass whose tool is {tool.value}")
        return obj
    mod = importlib.import_module(f"{__name__}.{name}")
    for found in vars(mod).values():
        mine = isinstance(found, type) and issubclass(found, BaseSource) and found.__module__ == mod.__name__
        if mine and getattr(found, "tool", None) == tool:
            return found
    raise ImportError(f"{mod.__name__} defines no reader for {tool.value}")


class _Readers(Mapping[AgentTool, list[type[BaseSource]]]):
    """Every loaded tool's readers (its `source`, then its `extra_sources`), imported on first use; a
    plugin's reader that fails to import is reported (`skillopt plugins`) and leaves the others working."""

    def __init__(self) -> None:
        self._cache: dict[AgentTool, list[type[BaseSource]]] = {}
        plugins.on_change(self._cache.clear)

    def _load(self) -> dict[AgentTool, list[type[BaseSource]]]:
        if not self._cache or set(self._cache) - set(TOOLS):
            self._cache.clear()
            for tool, row in TOOLS.items():
                try:
                    self._cache[tool] = [_reader(tool, n) for n in (row.source, *row.extra_sources)]
                except ImportError as exc:
                    plugins.note_problem(f"the session reader of {tool.value} cannot be loaded: {exc}")
        return self._cache

    def __getitem__(self, tool: AgentTool) -> list[type[BaseSource]]:
        return self._load()[tool]

    def __iter__(self) -> Iterator[AgentTool]:
        return iter(list(self._load()))

    def __len__(self) -> int:
        return len(self._load())


READERS = _Readers()


class _FirstReader(Mapping[AgentTool, type[BaseSource]]):
    """`SOURCES`: each tool's main reader."""

    def __getitem__(self, tool: AgentTool) -> type[BaseSource]:
        return READERS[tool][0]

    def __iter__(self) -> Iterator[AgentTool]:
        return iter(READERS)

    def __len__(self) -> int:
        return len(READERS)


class _ExtraReaders(Mapping[AgentTool, list[type[BaseSource]]]):
    """`EXTRA_SOURCES`: further readers of tools with several log formats (VS Code's Copilot Chat)."""

    def _tools(self) -> list[AgentTool]:
        return [t for t in READERS if len(READERS[t]) > 1]

    def __getitem__(self, tool: AgentTool) -> list[type[BaseSource]]:
        if tool not in self._tools():
            raise KeyError(tool)
        return READERS[tool][1:]

    def __iter__(self) -> Iterator[AgentTool]:
        return iter(self._tools())

    def __len__(self) -> int:
        return len(self._tools())


# One reader per tool, and further readers for tools with several log formats (VS Code's Copilot Chat
# stores its sessions apart from the Copilot CLI), both from the tools' rows in `agents.TOOLS`.
SOURCES: Mapping[AgentTool, type[BaseSource]] = _FirstReader()
EXTRA_SOURCES: Mapping[AgentTool, list[type[BaseSource]]] = _ExtraReaders()


def redactor_for(settings: Settings) -> Redactor:
    return Redactor(settings.ingest.redact_patterns)


def build_source(
    cls: type[BaseSource],
    home: Path,
    settings: Settings | None = None,
    *,
    redactor: Redactor | None = None,
    pin_repo: bool = True,
) -> BaseSource:
    """One reader with the ingest settings applied (excerpt size, replay folder, redaction patterns)."""
    if settings is not None and redactor is None:
        redactor = redactor_for(settings)
    excerpt = settings.ingest.excerpt_chars if settings is not None else 2000
    extra = [d.expanduser() for d in settings.tool(cls.tool).extra_dirs] if settings is not None else []
    return cls(
        home,
        redactor=redactor,
        excerpt_chars=excerpt,
        workspaces=paths.workspaces_dir(),
        pin_repo=pin_repo,
        extra_roots=extra,
    )


def all_sources(settings: Settings | None = None, tools: list[AgentTool] | None = None) -> list[Source]:
    """Every enabled reader (or only those of `tools`), homes resolved, sharing one redactor."""
    from skillopt_daemon.core.config import load_settings, tool_home

    settings = settings or load_settings()
    redactor = redactor_for(settings)
    out: list[Source] = []
    for tool, readers in READERS.items():
        if tools is not None and tool not in tools:
            continue
        if not settings.tool(tool).enabled:
            continue
        home = tool_home(tool, settings)
        for reader in readers:
            # The ingest pipeline pins repo state itself, outside its transaction (git can be slow), once
            # per new session; readers built for it leave that to the pipeline.
            out.append(build_source(reader, home, settings, redactor=redactor, pin_repo=False))
    return out


def source_for(path: Path, sources: list[Source]) -> Source | None:
    """The reader whose roots contain `path` and that takes it as a transcript."""
    resolved = Path(path)
    for src in sources:
        for root in src.roots():
            try:
                resolved.relative_to(root)
            except ValueError:
                continue
            if src.is_transcript(resolved):
                return src
    return None


__all__ = [
    "EXTRA_SOURCES",
    "READERS",
    "SOURCES",
    "BaseSource",
    "Source",
    "all_sources",
    "build_source",
    "redactor_for",
    "source_for",
]
