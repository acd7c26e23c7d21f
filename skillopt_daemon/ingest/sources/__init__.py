"""The registry of log readers, one per agent tool, all behind `sources.base.Source`.

`all_sources(settings)` builds the enabled readers with each tool's home resolved (config, then the tool's
own variable, then its default folder) and one shared `Redactor` holding the user's extra patterns, so
nothing unredacted can leave any of them.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt_daemon.core import paths
from skillopt_daemon.ingest.redact import Redactor
from skillopt_daemon.ingest.sources.base import BaseSource, Source
from skillopt_lib.agents import TOOLS, AgentTool

if TYPE_CHECKING:
    from skillopt_daemon.core.config import Settings


def _reader(tool: AgentTool, module: str) -> type[BaseSource]:
    """The reader class in `sources.<module>` for `tool` (the module named by the tool's row)."""
    mod = importlib.import_module(f"{__name__}.{module}")
    for obj in vars(mod).values():
        mine = isinstance(obj, type) and issubclass(obj, BaseSource) and obj.__module__ == mod.__name__
        if mine and getattr(obj, "tool", None) == tool:
            return obj
    raise ImportError(f"{mod.__name__} defines no reader for {tool.value}")


# One reader per tool, and further readers for tools with several log formats (VS Code's Copilot Chat
# stores its sessions apart from the Copilot CLI), both from the tools' rows in `agents.TOOLS`.
SOURCES: dict[AgentTool, type[BaseSource]] = {tool: _reader(tool, row.source) for tool, row in TOOLS.items()}
EXTRA_SOURCES: dict[AgentTool, list[type[BaseSource]]] = {
    tool: [_reader(tool, m) for m in row.extra_sources] for tool, row in TOOLS.items() if row.extra_sources
}


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
    for tool, cls in SOURCES.items():
        if tools is not None and tool not in tools:
            continue
        if not settings.tool(tool).enabled:
            continue
        home = tool_home(tool, settings)
        for reader in [cls, *EXTRA_SOURCES.get(tool, [])]:
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
    "SOURCES",
    "BaseSource",
    "Source",
    "all_sources",
    "build_source",
    "redactor_for",
    "source_for",
]
