"""Helpers for the reader tests: drive a source over a file as the tailer would, and group what it emits."""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skillopt_daemon.ingest.sources.base import (
    BaseSource,
    Record,
    SessionInfo,
    SkipRecord,
    ToolCallRecord,
    ToolResultRecord,
    TurnRecord,
)

FIXTURES = Path(__file__).parent / "fixtures"


def parse_path(src: BaseSource, path: Path, state: dict[str, Any] | None = None) -> list[Record]:
    """Everything a reader emits for one file, line by line or whole, as the tailer would drive it."""
    ctx = src.context(path, state)
    data = path.read_bytes()
    if not src.line_oriented:
        return src.parse_file(ctx, data)
    out: list[Record] = []
    for line in data.split(b"\n"):
        if line.strip():
            out.extend(src.parse_line(ctx, line))
    return out


@dataclass
class Parsed:
    """Records of one parse, grouped the way tests ask about them."""

    records: list[Record]

    @property
    def infos(self) -> list[SessionInfo]:
        return [r for r in self.records if isinstance(r, SessionInfo)]

    def info(self, field: str) -> Any:
        """The last non-None value of a SessionInfo field (how the store merges them)."""
        value = None
        for i in self.infos:
            v = getattr(i, field)
            if v is not None:
                value = v
        return value

    def extra(self, key: str) -> Any:
        value = None
        for i in self.infos:
            if key in i.extra:
                value = i.extra[key]
        return value

    @property
    def turns(self) -> list[TurnRecord]:
        return [r for r in self.records if isinstance(r, TurnRecord)]

    def user_texts(self) -> list[str]:
        return [t.text for t in self.turns if t.role == "user" and not t.is_meta]

    @property
    def calls(self) -> list[ToolCallRecord]:
        return [r for r in self.records if isinstance(r, ToolCallRecord)]

    @property
    def results(self) -> list[ToolResultRecord]:
        return [r for r in self.records if isinstance(r, ToolResultRecord)]

    @property
    def skips(self) -> list[SkipRecord]:
        return [r for r in self.records if isinstance(r, SkipRecord)]

    def skip_reasons(self) -> list[str]:
        return [s.reason for s in self.skips]

    def dump(self) -> str:
        """Every record as JSON, for 'does this text appear anywhere' assertions."""
        return "\n".join(json.dumps(asdict(r), ensure_ascii=False) for r in self.records)


def parsed(src: BaseSource, path: Path, state: dict[str, Any] | None = None) -> Parsed:
    return Parsed(parse_path(src, path, state))


def git_repo(path: Path) -> str:
    """A small git repo with one commit; returns the commit id."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "README.md").write_text("demo\n")
    env_args = ["-c", "user.email=dev@example.com", "-c", "user.name=dev", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(["git", *env_args, "-C", str(path), "commit", "-qm", "init"], check=True)
    return subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
