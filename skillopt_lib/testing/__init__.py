"""Test doubles for the model providers that coding agents talk to.

The project must never reach a real model provider from its tests, benchmarks or examples, yet the
agent CLIs it trains (Claude Code, Codex, ...) only do interesting work when a model answers them.
This package supplies a deterministic, scripted stand-in that speaks the real wire protocols: what a
plugin author needs to test a plugin against a scripted model (docs/plugins.md). The rest of the
project's test support (the real CLIs' drivers, fixtures, corpora) lives in ``testkit``, which is not
shipped.
"""

from typing import TYPE_CHECKING, Any

from skillopt_lib.testing.script import (
    Branch,
    Fault,
    Match,
    Rule,
    Script,
    ScriptError,
    Step,
    ToolCall,
    apply_patch,
    bash,
    call,
    load_script,
    write_file,
)

if TYPE_CHECKING:
    from skillopt_lib.testing.scripted_server import RecordedRequest, ScriptedServer


def __getattr__(name: str) -> Any:
    # Imported lazily so that ``python -m skillopt_lib.testing.scripted_server`` does not find the module
    # already imported by its package (runpy warns about that).
    if name in ("RecordedRequest", "ScriptedServer"):
        from skillopt_lib.testing import scripted_server

        return getattr(scripted_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Branch",
    "Fault",
    "Match",
    "RecordedRequest",
    "Rule",
    "Script",
    "ScriptError",
    "ScriptedServer",
    "Step",
    "ToolCall",
    "apply_patch",
    "bash",
    "call",
    "load_script",
    "write_file",
]
