"""Running an agent CLI as a child process, with the guarantees every run needs.

The whole process group dies on a time-out (agents spawn shells that spawn servers), output is bounded (a
runaway `cat` must not exhaust memory), and the final `result` line survives truncation because it carries
the outcome.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from skillopt_lib.execution import EXCERPT_CHARS, MAX_LINE_BYTES


def _own_bin_dirs() -> set[str]:
    """skillopt's own interpreter folders when it runs from a virtual environment (never a system folder
    such as /usr/bin: a Python installed there shares it with the user's tools)."""
    if sys.prefix == sys.base_prefix:
        return set()
    prefix = os.path.realpath(sys.prefix)
    found = {os.path.realpath(os.path.join(sys.prefix, "Scripts" if os.name == "nt" else "bin"))}
    here = os.path.realpath(os.path.dirname(os.path.abspath(sys.executable)))
    if here.startswith(prefix + os.sep):
        found.add(here)
    return found


def user_path(path: str | None) -> str:
    """`path` without skillopt's own virtual environment: replays and checks must run the user's
    toolchain, and an activated environment puts skillopt's Python (without the user's pytest) first."""
    own = _own_bin_dirs()
    parts = [p for p in (path or os.defpath).split(os.pathsep) if p]
    kept = [p for p in parts if os.path.realpath(p) not in own]
    return os.pathsep.join(kept) if kept else os.defpath


@dataclass
class ProcessOutcome:
    returncode: int | None
    lines: list[str]
    stderr: str
    duration_s: float
    timed_out: bool = False
    stopped: str | None = None
    truncated: bool = False


class _BoundedLines:
    """Keep the first and the last lines of a stream within a byte budget; the middle is dropped.

    The head shows how the run started, the tail how it ended (Claude's `result`, Codex's `turn.completed`).
    """

    def __init__(self, budget: int) -> None:
        self.head_budget = budget // 2
        self.tail_budget = budget - self.head_budget
        self.head: list[str] = []
        self.head_bytes = 0
        self.tail: deque[str] = deque()
        self.tail_bytes = 0
        self.dropped = 0

    def add(self, line: str) -> None:
        size = len(line.encode("utf-8", "replace"))
        if not self.tail and self.head_bytes + size <= self.head_budget:
            self.head.append(line)
            self.head_bytes += size
            return
        self.tail.append(line)
        self.tail_bytes += size
        while self.tail_bytes > self.tail_budget and len(self.tail) > 1:
            gone = self.tail.popleft()
            self.tail_bytes -= len(gone.encode("utf-8", "replace"))
            self.dropped += 1
        if self.tail_bytes > self.tail_budget:  # one line bigger than the whole tail budget
            only = self.tail.pop()
            cut = only.encode("utf-8", "replace")[: max(self.tail_budget, 0)].decode("utf-8", "ignore")
            self.tail.append(cut)
            self.tail_bytes = len(cut.encode("utf-8"))
            self.dropped += 1

    def lines(self) -> list[str]:
        return [*self.head, *self.tail]


def _read_lines(stream: IO[bytes], sink: Callable[[str, bool], None]) -> None:
    """Read complete lines; a line longer than MAX_LINE_BYTES is cut and flagged as truncated."""
    partial = b""
    while True:
        chunk = stream.readline(MAX_LINE_BYTES)
        if not chunk:
            break
        if chunk.endswith(b"\n"):
            if partial:
                sink(partial.decode("utf-8", "replace"), True)
                partial = b""
            else:
                sink(chunk.decode("utf-8", "replace").rstrip("\r\n"), False)
        elif not partial:
            partial = chunk  # keep the first MAX_LINE_BYTES of an overlong line, drop the rest
    if partial:
        sink(partial.decode("utf-8", "replace"), True)


def _read_tail(stream: IO[bytes], keep: int, out: list[bytes]) -> None:
    buf = bytearray()
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        buf += chunk
        if len(buf) > 2 * keep:
            del buf[: len(buf) - keep]
    out.append(bytes(buf[-keep:]))


def kill_group(proc: subprocess.Popen[bytes], grace_s: float = 2.0) -> None:
    """Terminate the process group (agent, its shells and anything they started), then kill it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace_s)
            if sig == signal.SIGTERM:
                # The leader is gone; make sure nothing else of the group survives.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            return
        except subprocess.TimeoutExpired:
            continue


def run_process(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    timeout_s: float,
    max_output_bytes: int = 5_000_000,
    stop_when: Callable[[str], str | None] | None = None,
    stderr_keep: int = 64_000,
    merge_stderr: bool = False,
) -> ProcessOutcome:
    """Run a program in its own session and collect its stdout lines within a byte budget.

    `stop_when(line)` may return a reason to stop the program early (a limit the CLI cannot enforce itself);
    the process group is then killed and the reason reported in `stopped`.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=str(cwd),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        start_new_session=True,
    )
    bounded = _BoundedLines(max_output_bytes)
    state: dict[str, Any] = {"stopped": None, "cut_lines": 0}
    lock = threading.Lock()

    def sink(line: str, cut: bool) -> None:
        with lock:
            bounded.add(line)
            if cut:
                state["cut_lines"] += 1
            if stop_when is not None and state["stopped"] is None:
                reason = stop_when(line)
                if reason:
                    state["stopped"] = reason
                    try:
                        os.killpg(proc.pid, signal.SIGTERM)
                    except (ProcessLookupError, PermissionError):
                        pass

    assert proc.stdout is not None
    err_parts: list[bytes] = []
    threads = [threading.Thread(target=_read_lines, args=(proc.stdout, sink), daemon=True)]
    if proc.stderr is not None:
        threads.append(
            threading.Thread(target=_read_tail, args=(proc.stderr, stderr_keep, err_parts), daemon=True)
        )
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BaseException:
        kill_group(proc, grace_s=0.5)
        raise
    # Whatever the ending, nothing the agent started may outlive the run.
    kill_group(proc, grace_s=2.0 if timed_out else 0.5)
    for t in threads:
        t.join(timeout=5)
    for pipe in (proc.stdout, proc.stderr):
        try:
            if pipe is not None:
                pipe.close()
        except OSError:
            pass
    return ProcessOutcome(
        returncode=proc.returncode,
        lines=bounded.lines(),
        stderr=(err_parts[0] if err_parts else b"").decode("utf-8", "replace"),
        duration_s=time.monotonic() - start,
        timed_out=timed_out,
        stopped=state["stopped"] if not timed_out else None,
        truncated=bounded.dropped > 0 or state["cut_lines"] > 0,
    )


def parse_json_lines(lines: Iterable[str]) -> tuple[list[dict[str, Any]], int]:
    """JSON objects of a stream, and how many non-empty lines were not JSON objects (garbled or cut)."""
    events: list[dict[str, Any]] = []
    bad = 0
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(value, dict):
            events.append(value)
        else:
            bad += 1
    return events, bad


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else {} (event fields are not trusted to have their shape)."""
    return value if isinstance(value, dict) else {}


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The end of a long text (errors and test failures are usually printed last)."""
    if len(text) <= limit:
        return text
    return "…" + text[-limit:]
