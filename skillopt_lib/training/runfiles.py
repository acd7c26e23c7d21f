"""The run folder: what a training run leaves behind, written so a kill at any moment loses at most a step.

    config.json      the resolved configuration, secrets masked
    state.json       the checkpoint (atomically replaced after every step)
    history.jsonl    one line per step / slow update / evaluation
    best_skill.md    the best skill's SKILL.md; best_skill/ holds the whole bundle when it has more files
    summary.json     the outcome, written at the end

Every file may hold transcripts, so files are 0600 and the folder 0700; every write goes through the
run's `Redactor`, so no key reaches disk whatever it is called.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from skillopt_lib.config import Redactor
from skillopt_lib.errors import ConfigError
from skillopt_lib.skill import SKILL_FILE, SkillBundle, bundle_from_json, bundle_to_json
from skillopt_lib.training.records import HISTORY_KEYS, HistoryRecord

STATE_VERSION = 1
HISTORY_FILE = "history.jsonl"
# Re-exported: what a history line holds, and how a bundle is written into a run's files.
__all__ = [
    "HISTORY_FILE",
    "HISTORY_KEYS",
    "HistoryRecord",
    "RunFiles",
    "bundle_from_json",
    "bundle_to_json",
    "read_history",
]


def utc_iso() -> str:
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    return path


def write_private(path: Path, text: str) -> None:
    """Atomic replace with 0600 permissions: a reader sees the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_history(run_dir: Path, *, complete_lines_only: bool = True) -> list[HistoryRecord]:
    """The records of `run_dir`'s history.jsonl, oldest first; [] when the run has written none yet.

    A run appends to its history while others read it (the dashboard's live page, `skillopt train`'s table,
    the night's evidence). With `complete_lines_only`, a last line without its newline is still being
    written and is left for the next read. A line that is not a JSON object (torn by a crash) is skipped,
    so a reader never fails on a run that was killed; the trainer drops such lines when it resumes.
    """
    try:
        text = (Path(run_dir) / HISTORY_FILE).read_text(encoding="utf-8")
    except OSError:
        return []
    lines = text.split("\n")
    if complete_lines_only or not lines[-1]:
        lines.pop()  # the text after the last newline: empty, or a line being written
    out: list[HistoryRecord] = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(cast(HistoryRecord, rec))
    return out


class RunFiles:
    def __init__(self, run_dir: Path, redactor: Redactor) -> None:
        self.dir = _private_dir(Path(run_dir))
        self.redactor = redactor

    @property
    def state_path(self) -> Path:
        return self.dir / "state.json"

    @property
    def history_path(self) -> Path:
        return self.dir / HISTORY_FILE

    def write_json(self, name: str, data: Any) -> None:
        text = json.dumps(self.redactor.data(data), indent=2, ensure_ascii=False, default=str) + "\n"
        write_private(self.dir / name, self.redactor.text(text))

    def append_history(self, record: HistoryRecord) -> int:
        """Append one line; returns the new line count (the checkpoint stores it)."""
        line = self.redactor.json_line(record)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        fd = os.open(self.history_path, flags, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return self.history_lines()

    def history_lines(self) -> int:
        if not self.history_path.exists():
            return 0
        with self.history_path.open("rb") as fh:
            return sum(1 for _ in fh)

    def truncate_history(self, lines: int) -> None:
        """Drop lines written after the last checkpoint (a step that was killed half way is redone)."""
        if not self.history_path.exists():
            return
        kept = self.history_path.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]
        write_private(self.history_path, "".join(kept))

    def history(self) -> list[HistoryRecord]:
        return read_history(self.dir, complete_lines_only=False)

    def write_skill(self, name: str, bundle: SkillBundle) -> None:
        """`name`.md is SKILL.md; a multi-file bundle is also written in full to the folder `name`/."""
        write_private(self.dir / f"{name}.md", self.redactor.text(bundle.doc.serialize()))
        folder = self.dir / name
        if len(bundle.files) > 1:
            if folder.exists():
                shutil.rmtree(folder)
            _private_dir(folder)
            for path, data in bundle.files.items():
                target = folder / path
                _private_dir(target.parent)
                try:
                    write_private(target, self.redactor.text(data.decode("utf-8")))
                except UnicodeDecodeError:
                    target.write_bytes(data)
        elif folder.exists() and (folder / SKILL_FILE).exists():
            shutil.rmtree(folder)


def saved_config(run_dir: str | Path) -> dict[str, Any]:
    """The configuration a run was started with, as data (masked literal keys dropped: keys come from the
    environment on resume)."""
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise ConfigError(
            f"{run_dir} has no config.json", hint="give the folder of a run started by skillopt train"
        )
    saved: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for role in ("agent", "optimizer"):
        if isinstance(saved.get(role), dict) and saved[role].get("api_key") == "****":
            saved[role]["api_key"] = None
    return saved
