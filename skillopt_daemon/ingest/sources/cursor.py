"""Cursor agent transcripts: `<home>/projects/<path slug>/agent-transcripts/<session>.jsonl` (some builds:
`agent-transcripts/<session>/<n>.jsonl`), records `{role, message: {content}}` with no ids or timestamps.

Times come from the file's modification time. The user's words are inside `<user_query>` tags; the rest of
a user record is context Cursor attached. The project comes from the `Workspace Path:` line Cursor puts in
that context, or else from the folder slug (the path with `/` turned into `-`), resolved against the disk.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from skillopt_daemon.core import timeutil
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
    exit_code_in,
    summarize_input,
    text_of,
)
from skillopt_lib.agents import AgentTool

_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.DOTALL)
_WORKSPACE = re.compile(r"Workspace Path:\s*(\S+)")


def unslug(slug: str, root: Path = Path("/")) -> str | None:
    """Turn `Users-me-my-app` back into `/Users/me/my-app` by walking the disk (dashes are ambiguous)."""
    parts = [p for p in slug.split("-") if p != ""]
    if not parts:
        return None

    def walk(base: Path, rest: list[str], depth: int) -> Path | None:
        if not rest:
            return base
        if depth > 40:
            return None
        for n in range(1, len(rest) + 1):
            for sep in ("-", ".", "_", " "):
                name = sep.join(rest[:n])
                cand = base / name
                if cand.is_dir():
                    found = walk(cand, rest[n:], depth + 1)
                    if found is not None:
                        return found
                if n == 1:
                    break
        return None

    try:
        found = walk(root, parts, 0)
    except OSError:
        return None
    return str(found) if found is not None else None


class CursorSource(BaseSource):
    tool = AgentTool.CURSOR
    line_oriented = True
    known_version = "2025.11"

    def roots(self) -> list[Path]:
        return [self.home / "projects", *self.extra_roots]

    def is_transcript(self, path: Path) -> bool:
        return path.suffix == ".jsonl" and "agent-transcripts" in path.parts

    def session_key_for(self, path: Path) -> str:
        return path.stem if path.parent.name == "agent-transcripts" else path.parent.name

    def _slug(self, path: Path) -> str | None:
        parts = path.parts
        if "agent-transcripts" in parts:
            i = parts.index("agent-transcripts")
            return parts[i - 1] if i > 0 else None
        return None

    def _first_info(self, ctx: FileContext, obj: dict[str, Any], sid: str, mtime: str | None) -> SessionInfo:
        """The session facts the first line tells: the workspace (from its text, else the folder's slug)."""
        info = SessionInfo(session_id=sid, started_at=mtime, ended_at=mtime)
        slug = self._slug(ctx.path)
        cwd = None
        text = (
            text_of((obj.get("message") or {}).get("content")) if isinstance(obj.get("message"), dict) else ""
        )
        m = _WORKSPACE.search(text)
        if m:
            cwd = m.group(1)
        elif slug:
            cwd = unslug(slug)
            if cwd is None:
                info.extra["project_slug"] = slug
        info.project_path = cwd
        self.first_seen(ctx, info, cwd)
        return info

    def line_records(self, ctx: FileContext, obj: Any) -> list[Record]:
        if not isinstance(obj, dict):
            raise SourceError("not a json object")
        out: list[Record] = []
        sid = self.session_id(ctx)
        try:
            mtime = timeutil.to_iso(timeutil.from_epoch(ctx.path.stat().st_mtime))
        except OSError:
            mtime = None
        if not ctx.state.get("seen"):
            out.append(self._first_info(ctx, obj, sid, mtime))
        msg: dict[str, Any] = obj["message"] if isinstance(obj.get("message"), dict) else obj
        role = obj.get("role") or msg.get("role")
        content = msg.get("content")
        pos = int(ctx.state.get("pos", 0)) + 1
        ctx.state["pos"] = pos
        raw = text_of(content)
        key = f"{role}-{hashlib.sha1(raw.encode('utf-8', 'replace')).hexdigest()[:16]}-{pos}"
        if role == "user":
            results = (
                [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
                if isinstance(content, list)
                else []
            )
            for block in results:
                output = text_of(block.get("content"))
                is_err = bool(block.get("is_error")) if block.get("is_error") is not None else None
                out.append(
                    ToolResultRecord(
                        sid,
                        str(block.get("tool_use_id") or ""),
                        exit_code_in(output),
                        is_err,
                        output,
                        timestamp=mtime,
                    )
                )
            if results and not raw:
                return out
            queries = _QUERY.findall(raw)
            text = "\n".join(queries) if queries else raw
            meta = not queries and raw.lstrip().startswith("<")
            out.append(TurnRecord(sid, key, "user", text, timestamp=mtime, is_meta=meta))
            if not meta:
                self.check_replay_text(ctx, sid, text, out)
        elif role == "assistant":
            out.append(TurnRecord(sid, key, "assistant", raw, timestamp=mtime))
            if isinstance(content, list):
                for i, block in enumerate(content):
                    if isinstance(block, dict) and block.get("type") in ("tool_use", "tool_call"):
                        out.append(
                            ToolCallRecord(
                                sid,
                                str(block.get("id") or f"{key}-call{i}"),
                                key,
                                str(block.get("name") or "?"),
                                summarize_input(block.get("input") or block.get("arguments")),
                                timestamp=mtime,
                            )
                        )
        else:
            out.append(SkipRecord(f"unknown record type {role}" if role else "record without role"))
        if mtime and role in ("user", "assistant"):
            out.append(SessionInfo(session_id=sid, ended_at=mtime))
        return out
