"""Drive an agent's interactive TUI in a detached tmux pane.

Why: people use Claude Code and Codex interactively, and those sessions leave transcripts that differ
from headless ones (``entrypoint: "cli"``, typed prompts, title side requests, records written out of
order). Code that reads users' sessions must be tested on genuine interactive transcripts, so this
module types prompts into the real TUI, waits for each turn to finish by watching the transcript the
CLI writes, and exits the way a person would.

Each session gets its own tmux server socket, so tests never touch a user's tmux.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.agent_clis import find_claude_transcript, find_codex_rollout


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


class TmuxSession:
    """One command running in a detached tmux pane of a private tmux server.

    The command runs with exactly ``env`` (through ``env -i``), in ``cwd``; the pane stays around after
    the command exits so its exit status and last screen can still be read.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | Path,
        work_dir: str | Path,
        width: int = 200,
        height: int = 60,
    ) -> None:
        self.argv = list(argv)
        self.env = dict(env)
        self.cwd = Path(cwd)
        self.work_dir = Path(work_dir)
        self.width = width
        self.height = height
        self._socket_dir: Path | None = None
        self.status_file = self.work_dir / "exit-status"
        self.target = "agent"
        self._started = False

    @property
    def socket(self) -> Path:
        if self._socket_dir is None:
            raise RuntimeError("the tmux session was not started")
        return self._socket_dir / "sock"

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, check=check, timeout=30
        )

    def start(self) -> TmuxSession:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        # Unix socket paths are limited to about 100 bytes, too few for pytest's folders: keep it short.
        self._socket_dir = Path(tempfile.mkdtemp(prefix="skillopt-tmux-"))
        launcher = self.work_dir / "launch.sh"
        env_args = " ".join(shlex.quote(f"{k}={v}") for k, v in self.env.items())
        launcher.write_text(
            f"cd {shlex.quote(str(self.cwd))} || exit 97\n"
            f"env -i {env_args} {shlex.join(self.argv)}\n"
            # tmux does not always learn a pane's exit status, so the launcher records it.
            f"echo $? > {shlex.quote(str(self.status_file))}\n"
        )
        self._started = True
        try:
            self._tmux(
                "-f", "/dev/null", "new-session", "-d", "-s", self.target,
                "-x", str(self.width), "-y", str(self.height), f"bash {shlex.quote(str(launcher))}",
                ";", "set-option", "-t", self.target, "remain-on-exit", "on",
            )  # fmt: skip
        except BaseException:
            self.close()
            raise
        return self

    def send_text(self, text: str) -> None:
        """Type ``text`` literally (no key-name interpretation)."""
        self._tmux("send-keys", "-t", self.target, "-l", text)

    def send_keys(self, *keys: str) -> None:
        """Press named keys, e.g. ``Enter``, ``Escape``, ``C-c``."""
        self._tmux("send-keys", "-t", self.target, *keys)

    def capture(self) -> str:
        """The visible screen as plain text."""
        proc = self._tmux("capture-pane", "-p", "-t", self.target, check=False)
        return proc.stdout

    def exit_status(self) -> int | None:
        """The command's exit status once it has exited (-1 if the pane vanished), else ``None``."""
        try:
            return int(self.status_file.read_text().strip())
        except (OSError, ValueError):
            pass
        proc = self._tmux("display-message", "-p", "-t", self.target, "#{pane_dead}", check=False)
        if proc.returncode != 0:
            return -1  # the tmux server is gone, and the pane with it
        return None

    def wait_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``condition``; on timeout raise with the screen, which is what one needs to debug a TUI."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            status = self.exit_status()
            if status is not None:
                raise RuntimeError(f"TUI exited ({status}) while waiting for {what}:\n{self.capture()}")
            time.sleep(0.1)
        if condition():
            return
        raise TimeoutError(f"timed out after {timeout}s waiting for {what}; screen:\n{self.capture()}")

    def wait_for_screen(self, pattern: str, timeout: float = 30) -> None:
        self.wait_until(
            lambda: re.search(pattern, self.capture()) is not None, timeout, f"screen /{pattern}/"
        )

    def wait_stable(self, quiet: float = 1.0, timeout: float = 30) -> None:
        """Wait until the screen has not changed for ``quiet`` seconds (start-up animations are over)."""
        last, since = self.capture(), time.monotonic()

        def settled() -> bool:
            nonlocal last, since
            now = self.capture()
            if now != last:
                last, since = now, time.monotonic()
            return time.monotonic() - since >= quiet

        self.wait_until(settled, timeout, f"the screen to settle for {quiet}s")

    def wait_exit(self, timeout: float = 20) -> int | None:
        """Wait for the command to exit; its status, or ``None`` on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.exit_status()
            if status is not None:
                return status
            time.sleep(0.1)
        return None

    def close(self) -> None:
        if self._started:
            self._tmux("kill-server", check=False)
            self._started = False
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    def __enter__(self) -> TmuxSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class InteractiveRun:
    """What an interactive session left behind."""

    session_id: str | None
    transcript: Path | None
    exit_status: int | None
    screens: list[str] = field(default_factory=list)


def _count_lines(path: Path | None, predicate: Callable[[dict[str, Any]], bool]) -> int:
    if path is None or not path.exists():
        return 0
    count = 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and predicate(record):
            count += 1
    return count


def _at_least(counter: Callable[[], int], n: int) -> Callable[[], bool]:
    return lambda: counter() >= n


def _is_task_complete(record: dict[str, Any]) -> bool:
    payload = record.get("payload")
    return (
        record.get("type") == "event_msg"
        and isinstance(payload, dict)
        and payload.get("type") == "task_complete"
    )


def run_claude_interactive(
    claude: str | Path,
    prompts: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    work_dir: str | Path,
    session_id: str | None = None,
    extra_args: Sequence[str] = (),
    turn_timeout: float = 60,
) -> InteractiveRun:
    """Type ``prompts`` one by one into the Claude Code TUI, each after the previous turn finished.

    ``env`` must come from :func:`~skillopt.testing.agent_clis.claude_env` with ``cwd`` among its
    ``trusted_dirs`` (otherwise the TUI stops at onboarding or the trust dialog). A turn is finished when
    the transcript gains a ``system`` record with subtype ``turn_duration``.
    """
    session_id = session_id or str(uuid.uuid4())
    home = Path(env["HOME"])
    argv = [str(claude), "--session-id", session_id, *extra_args]
    screens: list[str] = []
    with TmuxSession(argv, env=env, cwd=cwd, work_dir=work_dir) as tui:
        tui.wait_for_screen(r"for shortcuts", timeout=turn_timeout)
        tui.wait_stable(quiet=0.5, timeout=turn_timeout)

        def finished_turns() -> int:
            path = find_claude_transcript(home, session_id)
            return _count_lines(
                path, lambda r: r.get("type") == "system" and r.get("subtype") == "turn_duration"
            )

        for n, prompt in enumerate(prompts, start=1):
            tui.send_text(prompt)
            time.sleep(0.3)  # let the TUI render the typed text before submitting
            tui.send_keys("Enter")
            tui.wait_until(_at_least(finished_turns, n), turn_timeout, f"turn {n} of the claude session")
            screens.append(tui.capture())
        tui.send_text("/exit")
        time.sleep(0.3)
        tui.send_keys("Enter")
        status = tui.wait_exit(timeout=20)
    return InteractiveRun(session_id, find_claude_transcript(home, session_id), status, screens)


def run_codex_interactive(
    codex: str | Path,
    prompts: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    work_dir: str | Path,
    extra_args: Sequence[str] = (),
    turn_timeout: float = 60,
) -> InteractiveRun:
    """Type ``prompts`` into the Codex TUI (``--no-daemon``), each after the previous ``task_complete``.

    ``env`` must come from :func:`~skillopt.testing.agent_clis.codex_env` with ``cwd`` trusted.
    """
    home = Path(env["HOME"])
    sessions = home / ".codex" / "sessions"
    before = set(sessions.glob("**/rollout-*.jsonl")) if sessions.exists() else set()
    argv = [str(codex), "--no-daemon", *extra_args]
    screens: list[str] = []

    def rollout() -> Path | None:
        new = set(sessions.glob("**/rollout-*.jsonl")) - before if sessions.exists() else set()
        return sorted(new)[0] if new else None

    with TmuxSession(argv, env=env, cwd=cwd, work_dir=work_dir) as tui:
        tui.wait_for_screen(r"for shortcuts", timeout=turn_timeout)
        tui.wait_stable(quiet=1.0, timeout=turn_timeout)  # keys typed during the splash screen are lost

        def finished_turns() -> int:
            return _count_lines(
                rollout(),
                lambda r: (
                    r.get("type") == "event_msg"
                    and isinstance(r.get("payload"), dict)
                    and r["payload"].get("type") == "task_complete"
                ),  # type: ignore[union-attr]
            )

        for n, prompt in enumerate(prompts, start=1):
            tui.send_text(prompt)
            time.sleep(0.3)
            tui.send_keys("Enter")
            tui.wait_until(_at_least(finished_turns, n), turn_timeout, f"turn {n} of the codex session")
            screens.append(tui.capture())
        tui.send_text("/quit")
        time.sleep(0.3)
        tui.send_keys("Enter")
        status = tui.wait_exit(timeout=20)
    path = rollout()
    thread_id = None
    if path is not None:
        m = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$", path.name)
        thread_id = m.group(1) if m else None
    if thread_id is not None and path is None:
        path = find_codex_rollout(home, thread_id)
    return InteractiveRun(thread_id, path, status, screens)
