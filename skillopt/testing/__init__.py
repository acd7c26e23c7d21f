"""Test doubles for the model providers that coding agents talk to.

The project must never reach a real model provider from its tests, benchmarks or examples, yet the
agent CLIs it trains (Claude Code, Codex, ...) only do interesting work when a model answers them.
This package supplies a deterministic, scripted stand-in that speaks the real wire protocols, plus the
facts needed to run the real CLIs against it in an isolated home directory.
"""

from skillopt.testing.script import (
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
from skillopt.testing.scripted_server import RecordedRequest, ScriptedServer

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
