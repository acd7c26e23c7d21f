"""The one way a test runs `skillopt`: as the user does, the console script installed next to this Python,
in a process of its own (`run`, `popen`), or the same entry point in the test's own process (`here`) where a
test makes many calls and a new interpreter each time would cost more than the test.

Both give a `subprocess.CompletedProcess[str]` (`returncode`, `stdout`, `stderr`), so a test reads the result
the same way whichever it chose, and `check=True` turns a non-zero exit into an assertion that shows the
output. `run` passes the environment it is given as the whole environment (a test that builds a user's
machine decides every variable), or this process's when it is given none.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SKILLOPT = Path(sys.executable).with_name("skillopt")


def _checked(proc: subprocess.CompletedProcess[str], check: bool) -> subprocess.CompletedProcess[str]:
    if check and proc.returncode != 0:
        args = " ".join(str(a) for a in proc.args[1:])
        raise AssertionError(f"skillopt {args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def run(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float = 300,
    input: str | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`skillopt ARGS` as a process of its own; its stdin is `input`, or nothing (never the test's)."""
    proc = subprocess.run(
        [str(SKILLOPT), *args],
        env=dict(os.environ if env is None else env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
    )
    return _checked(proc, check)


def run_json(*args: str, **kw: Any) -> Any:
    """`skillopt ARGS --json`, which must succeed, parsed."""
    return json.loads(run(*args, "--json", check=True, **kw).stdout)


def popen(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path | str | None = None, **kw: Any
) -> subprocess.Popen[str]:
    """`skillopt ARGS` started and left running (a daemon, a server), its output piped unless `kw` says
    otherwise."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.Popen(
        [str(SKILLOPT), *args], env=dict(os.environ if env is None else env), cwd=cwd, text=True, **kw
    )


def here(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """`skillopt ARGS` in this process: the console script's own entry point (argument parsing, error
    messages, exit codes), with this process's environment. The rich consoles are pointed at the captured
    streams and given back afterwards (their `_file` None: following sys.stdout again, not the stream that
    happened to be current, or later tests' output would go to a stale stream)."""
    from skillopt_daemon.cli import main, output

    out, err = io.StringIO(), io.StringIO()
    saved = (sys.argv, output.console._file, output.err_console._file)
    sys.argv = ["skillopt", *args]
    output.console.file, output.err_console.file = out, err
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv, output.console._file, output.err_console._file = saved
    return _checked(
        subprocess.CompletedProcess(["skillopt", *args], code, out.getvalue(), err.getvalue()), check
    )


def here_json(*args: str) -> Any:
    """`skillopt ARGS --json` in this process, which must succeed, parsed."""
    return json.loads(here(*args, "--json", check=True).stdout)
