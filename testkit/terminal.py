"""Running the real `skillopt` on a pseudo-terminal, as a person types at it: what it asks is answered as
it appears, and everything it showed comes back as one text."""

from __future__ import annotations

import os
import select
import subprocess
from collections.abc import Mapping

from testkit import cli


def at_a_terminal(
    env: Mapping[str, str], *args: str, answers: Mapping[str, str], cwd: str | None = None
) -> tuple[int, str]:
    """`skillopt ARGS` on a pseudo-terminal; each key of `answers` (a prompt's text) is answered with its
    value once it shows. Returns the exit code and what the terminal showed."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(cli.SKILLOPT), *args],
        env=dict(env),
        cwd=cwd,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    shown = b""
    pending = dict(answers)
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the process closed the terminal
            break
        if not chunk:
            break
        shown += chunk
        for prompt in list(pending):
            if prompt.encode() in shown:
                os.write(master, pending.pop(prompt).encode() + b"\n")
    code = proc.wait(timeout=60)
    os.close(master)
    return code, shown.decode(errors="replace").replace("\r\n", "\n")
