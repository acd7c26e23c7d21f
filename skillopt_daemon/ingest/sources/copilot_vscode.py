"""VS Code Copilot Chat: `<VS Code user dir>/workspaceStorage/<hash>/chatSessions/<session>.jsonl`, an
operation log (`kind` 0 sets the whole state, 1 sets the value at path `k`, 2 splices items into the array
at `k` from index `i`, 3 deletes at `k`); older builds wrote the state as one `<session>.json`.

The state is only meaningful once every operation is applied, so this reader is whole-file: each change
re-reads the file and the store replaces what it had for it. The project folder is in the sibling
`workspace.json` (`folder` or `workspace` URI).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from skillopt_daemon.core import paths
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
    as_list,
    as_str,
    decode_json_line,
)
from skillopt_lib.agents import AgentTool

VSCODE_FLAVOURS = ("Code", "Code - Insiders", "VSCodium")


def vscode_workspace_storage_dirs() -> list[Path]:
    """Where each VS Code flavour keeps per-workspace storage on this platform."""
    home = paths.user_home()
    if sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    elif sys.platform.startswith("win"):
        base = home / "AppData" / "Roaming"
    else:
        base = home / ".config"
    return [base / flavour / "User" / "workspaceStorage" for flavour in VSCODE_FLAVOURS]


def file_uri_to_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    return unquote(parsed.path) or None


def apply_ops(lines: list[bytes]) -> tuple[dict[str, Any], list[SkipRecord]]:
    """Replay the operation log into the final session state."""
    state: Any = {}
    skips: list[SkipRecord] = []
    for raw in lines:
        if not raw.strip():
            continue
        try:
            op, _ = decode_json_line(raw)
        except SourceError as exc:
            skips.append(SkipRecord(exc.reason, exc.detail))
            continue
        if not isinstance(op, dict) or "kind" not in op:
            skips.append(SkipRecord("unknown record type", str(op)[:80]))
            continue
        kind = op.get("kind")
        path = as_list(op.get("k"))
        try:
            if kind == 0:
                state = op.get("v")
            elif kind == 1:
                state = _set(state, path, op.get("v"))
            elif kind == 2:
                target = _get(state, path)
                value = op.get("v")
                items: list[Any] = value if isinstance(value, list) else [value]
                if not isinstance(target, list):
                    target = []
                    state = _set(state, path, target)
                index = op.get("i")
                if isinstance(index, int):
                    target[index:] = items
                else:
                    target.extend(items)
            elif kind == 3:
                parent = _get(state, path[:-1])
                if isinstance(parent, dict):
                    parent.pop(path[-1], None)
                elif isinstance(parent, list) and isinstance(path[-1], int) and path[-1] < len(parent):
                    del parent[path[-1]]
            else:
                skips.append(SkipRecord(f"unknown record type kind {kind}"))
        except (KeyError, IndexError, TypeError):
            skips.append(SkipRecord("operation on a missing path", json.dumps(path)[:80]))
    return (state if isinstance(state, dict) else {}), skips


def _get(state: Any, path: list[Any]) -> Any:
    cur = state
    for part in path:
        if isinstance(cur, dict):
            cur = cur.get(part)
        elif isinstance(cur, list) and isinstance(part, int) and -len(cur) <= part < len(cur):
            cur = cur[part]
        else:
            return None
    return cur


def _set(state: Any, path: list[Any], value: Any) -> Any:
    if not path:
        return value
    parent = _get(state, path[:-1])
    last = path[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list) and isinstance(last, int):
        if last == len(parent):
            parent.append(value)
        else:
            parent[last] = value
    else:
        raise KeyError(last)
    return state


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if isinstance(value.get("value"), str):
            return str(value["value"])
        if isinstance(value.get("text"), str):
            return str(value["text"])
        if isinstance(value.get("content"), (dict, str)):
            return _text(value["content"])
    return ""


class CopilotVSCodeSource(BaseSource):
    tool = AgentTool.COPILOT
    line_oriented = False
    known_version = "vscode-chat-3"

    def roots(self) -> list[Path]:
        return [*vscode_workspace_storage_dirs(), *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        return path.parent.name == "chatSessions" and path.suffix in (".jsonl", ".json")

    def session_key_for(self, path: Path) -> str:
        return path.stem

    def file_records(self, ctx: FileContext, data: bytes) -> list[Record]:
        out: list[Record] = []
        if ctx.path.suffix == ".json":
            try:
                loaded, _ = decode_json_line(data)
            except SourceError as exc:
                return [SkipRecord(exc.reason, exc.detail)]
            state = loaded if isinstance(loaded, dict) else {}
        else:
            state, skips = apply_ops(data.split(b"\n"))
            out.extend(skips)
        sid = str(state.get("sessionId") or ctx.session_key)
        ctx.state["sid"] = sid
        cwd = self._workspace(ctx.path)
        info = SessionInfo(
            session_id=sid,
            project_path=cwd,
            started_at=self.ts(ctx, state.get("creationDate"), out),
            ended_at=self.ts(ctx, state.get("lastMessageDate"), out),
            title=as_str(state.get("customTitle")),
            entrypoint="vscode",
            tool_version=str(state["version"]) if state.get("version") is not None else None,
        )
        info.extra["client"] = "vscode-copilot-chat"
        requests = as_list(state.get("requests"))
        first_text = ""
        for req in requests:
            if isinstance(req, dict):
                first_text = _text(req.get("message"))
                break
        self.first_seen(ctx, info, cwd, first_text)
        out.append(info)
        for i, req in enumerate(requests):
            if not isinstance(req, dict):
                out.append(SkipRecord("request is not an object"))
                continue
            rid = str(req.get("requestId") or f"request-{i}")
            ts = self.ts(ctx, req.get("timestamp"), out)
            model = as_str(req.get("modelId"))
            out.append(TurnRecord(sid, rid, "user", _text(req.get("message")), timestamp=ts))
            if model:
                info.model = model
            response = as_list(req.get("response"))
            texts: list[str] = []
            calls: list[dict[str, Any]] = []
            for part in response:
                if not isinstance(part, dict):
                    continue
                kind = part.get("kind")
                if kind in ("toolInvocationSerialized", "toolInvocation"):
                    calls.append(part)
                elif kind in (None, "markdownContent", "markdownVuln"):
                    texts.append(_text(part))
            akey = f"{rid}-response"
            out.append(
                TurnRecord(sid, akey, "assistant", "".join(texts), timestamp=ts, parent_key=rid, model=model)
            )
            for j, call in enumerate(calls):
                ckey = str(call.get("toolCallId") or f"{akey}-call{j}")
                name = str(call.get("toolId") or "?")
                summary = _text(call.get("invocationMessage"))
                out.append(ToolCallRecord(sid, ckey, akey, name, summary, timestamp=ts))
                if call.get("isComplete") or call.get("pastTenseMessage"):
                    details = as_dict(call.get("resultDetails"))
                    is_error = details.get("isError") if isinstance(details.get("isError"), bool) else None
                    out.append(
                        ToolResultRecord(
                            sid, ckey, None, is_error, _text(call.get("pastTenseMessage")), timestamp=ts
                        )
                    )
        return out

    def _workspace(self, path: Path) -> str | None:
        ws = path.parent.parent / "workspace.json"
        try:
            doc = json.loads(ws.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict):
            return None
        for key in ("folder", "workspace"):
            if isinstance(doc.get(key), str):
                return file_uri_to_path(doc[key])
        return None
