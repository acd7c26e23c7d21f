"""Reads `~/.toy-agent/sessions/<session id>.jsonl`: a first line `{"session": ID, "cwd": PATH}`, then one
line per message `{"id", "role": "user"|"assistant", "text", "ts"}` and per command
`{"id", "call": COMMAND, "exit": CODE, "output", "ts"}`.

`BaseSource` does the rest: bad lines become skip records, every text is redacted before it is stored, and
records are upserts by their keys, so reading a line twice stores it once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillopt_daemon.ingest.sources.base import (
    BaseSource,
    FileContext,
    Record,
    SessionInfo,
    SkipRecord,
    SourceError,
    ToolCallRecord,
    ToolResultRecord,
    TurnRecord,
)
from skillopt_lib.agents import AgentTool


class ToySource(BaseSource):
    tool = AgentTool("toy-agent")

    def roots(self) -> list[Path]:
        return [self.home / "sessions", *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        return path.suffix == ".jsonl" and path.parent.name == "sessions"

    def line_records(self, ctx: FileContext, obj: Any) -> list[Record]:
        if not isinstance(obj, dict):
            raise SourceError("not a json object")
        out: list[Record] = []
        sid = self.session_id(ctx)
        ts = self.ts(ctx, obj.get("ts"), out)
        if "session" in obj:
            ctx.state["sid"] = str(obj["session"])
            info = SessionInfo(session_id=self.session_id(ctx), project_path=obj.get("cwd"), started_at=ts)
            self.first_seen(ctx, info, info.project_path)
            return [*out, info]
        key = str(obj.get("id") or f"line-{ctx.state.get('line', 0)}")
        if obj.get("role") in ("user", "assistant"):
            out.append(TurnRecord(sid, key, obj["role"], str(obj.get("text") or ""), timestamp=ts))
            ctx.state["last_turn"] = key
        elif "call" in obj:
            turn = str(ctx.state.get("last_turn") or key)
            out.append(ToolCallRecord(sid, key, turn, "shell", str(obj["call"]), timestamp=ts))
            code = obj.get("exit")
            out.append(
                ToolResultRecord(
                    sid,
                    key,
                    code if isinstance(code, int) else None,
                    bool(code) if isinstance(code, int) else None,
                    str(obj.get("output") or ""),
                    timestamp=ts,
                )
            )
        else:
            out.append(SkipRecord("unknown toy-agent line"))
        if ts:
            out.append(SessionInfo(session_id=sid, ended_at=ts))
        return out


def doctor(tool: AgentTool) -> list[tuple[str, str, str]]:
    """`skillopt doctor`'s own checks for the tool: (name, level, detail) tuples."""
    return [("sessions folder", "info", "toy-agent keeps one JSONL file per session")]
