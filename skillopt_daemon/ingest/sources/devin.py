"""Devin: CLI transcripts `<home>/cli/transcripts/*.json` in the ATIF trajectory format, and cloud sessions
exported as JSON (the API's session object with its `messages`) into `<home>/exports/` or a folder listed
in `tools.devin.extra_dirs`.

Both are whole documents rewritten in place, so the reader is whole-file. ATIF: `{schema_version,
session_id, agent{name, version, model_name}, steps[{step_id, source user|agent|system, message, timestamp,
tool_calls[{tool_call_id, function_name, arguments}], observation{results[{source_call_id, content}]}}]}`.
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
    as_dict,
    as_str,
    decode_json_line,
    exit_code_in,
    summarize_input,
    text_of,
)
from skillopt_lib.agents import AgentTool

CLOUD_USER_TYPES = frozenset({"initial_user_message", "user_message"})
CLOUD_AGENT_TYPES = frozenset({"devin_message"})


class DevinSource(BaseSource):
    tool = AgentTool.DEVIN
    line_oriented = False
    known_version = "ATIF-v1.7"

    def roots(self) -> list[Path]:
        return [self.home / "cli" / "transcripts", self.home / "exports", *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        return path.suffix == ".json"

    def session_key_for(self, path: Path) -> str:
        return path.stem

    def file_records(self, ctx: FileContext, data: bytes) -> list[Record]:
        try:
            doc, _ = decode_json_line(data)
        except SourceError as exc:
            if exc.reason == "blank line":
                return []
            return [SkipRecord(exc.reason, exc.detail)]
        if not isinstance(doc, dict):
            return [SkipRecord("not a json object")]
        if isinstance(doc.get("steps"), list):
            return self._atif(ctx, doc)
        if isinstance(doc.get("messages"), list):
            return self._cloud(ctx, doc)
        return [SkipRecord("unknown document (neither ATIF nor a session export)")]

    def _atif(self, ctx: FileContext, doc: dict[str, Any]) -> list[Record]:
        out: list[Record] = []
        sid = str(doc.get("session_id") or ctx.session_key)
        ctx.state["sid"] = sid
        agent = as_dict(doc.get("agent"))
        extra = as_dict(doc.get("extra"))
        cwd = extra.get("cwd") or extra.get("working_directory") or doc.get("cwd")
        info = SessionInfo(
            session_id=sid,
            project_path=cwd if isinstance(cwd, str) else None,
            model=as_str(agent.get("model_name")),
            tool_version=str(agent.get("version")) if agent.get("version") else None,
            entrypoint="cli",
        )
        info.extra["schema_version"] = doc.get("schema_version")
        first_user = ""
        first_ts: str | None = None
        last_ts: str | None = None
        prev: str | None = None
        for i, step in enumerate(doc["steps"]):
            if not isinstance(step, dict):
                out.append(SkipRecord("step is not an object"))
                continue
            ts = self.ts(ctx, step.get("timestamp"), out)
            first_ts = first_ts or ts
            last_ts = ts or last_ts
            key = f"step-{step.get('step_id', i + 1)}"
            source = step.get("source")
            text = text_of(step.get("message"))
            if source == "user":
                first_user = first_user or text
                out.append(TurnRecord(sid, key, "user", text, timestamp=ts, parent_key=prev))
            elif source == "agent":
                model = as_str(step.get("model_name"))
                turn = TurnRecord(sid, key, "assistant", text, timestamp=ts, parent_key=prev, model=model)
                metrics = as_dict(step.get("metrics"))
                turn.input_tokens = (
                    metrics.get("prompt_tokens") if isinstance(metrics.get("prompt_tokens"), int) else None
                )
                turn.output_tokens = (
                    metrics.get("completion_tokens")
                    if isinstance(metrics.get("completion_tokens"), int)
                    else None
                )
                out.append(turn)
                for j, call in enumerate(step.get("tool_calls") or []):
                    if not isinstance(call, dict):
                        continue
                    ckey = str(call.get("tool_call_id") or f"{key}-call{j}")
                    name = str(call.get("function_name") or "?")
                    out.append(
                        ToolCallRecord(sid, ckey, key, name, summarize_input(call.get("arguments")), ts)
                    )
                obs = as_dict(step.get("observation"))
                for res in obs.get("results") or []:
                    if not isinstance(res, dict):
                        continue
                    content = res.get("content")
                    output = content if isinstance(content, str) else text_of(content)
                    code = exit_code_in(output)
                    is_error = None if code is None else code != 0
                    call_key = str(res.get("source_call_id") or "")
                    out.append(ToolResultRecord(sid, call_key, code, is_error, output, timestamp=ts))
            elif source == "system":
                out.append(TurnRecord(sid, key, "system", text, timestamp=ts, parent_key=prev, is_meta=True))
            else:
                out.append(SkipRecord(f"unknown step source {source}"))
                continue
            prev = key
        info.started_at, info.ended_at = first_ts, last_ts
        self.first_seen(ctx, info, info.project_path, first_user)
        out.insert(0, info)
        return out

    def _cloud(self, ctx: FileContext, doc: dict[str, Any]) -> list[Record]:
        out: list[Record] = []
        sid = str(doc.get("session_id") or ctx.session_key)
        ctx.state["sid"] = sid
        info = SessionInfo(
            session_id=sid,
            title=as_str(doc.get("title")),
            started_at=self.ts(ctx, doc.get("created_at"), out),
            ended_at=self.ts(ctx, doc.get("updated_at"), out),
            entrypoint="cloud",
        )
        info.extra["status"] = doc.get("status_enum") or doc.get("status")
        pr = doc.get("pull_request")
        if isinstance(pr, dict) and pr.get("url"):
            info.extra["pull_request"] = pr["url"]
        first_user = ""
        prev: str | None = None
        for i, msg in enumerate(doc["messages"]):
            if not isinstance(msg, dict):
                out.append(SkipRecord("message is not an object"))
                continue
            mtype = msg.get("type")
            key = str(msg.get("event_id") or f"message-{i}")
            ts = self.ts(ctx, msg.get("timestamp"), out)
            text = text_of(msg.get("message"))
            if mtype in CLOUD_USER_TYPES:
                first_user = first_user or text
                out.append(TurnRecord(sid, key, "user", text, timestamp=ts, parent_key=prev))
            elif mtype in CLOUD_AGENT_TYPES:
                out.append(TurnRecord(sid, key, "assistant", text, timestamp=ts, parent_key=prev))
            else:
                out.append(SkipRecord(f"unknown record type {mtype}"))
                continue
            prev = key
        self.first_seen(ctx, info, None, first_user)
        out.insert(0, info)
        return out
