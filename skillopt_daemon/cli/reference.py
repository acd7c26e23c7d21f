"""The command reference (`docs/cli.md`), generated from every command's `--help`.

`python -m skillopt_daemon.cli.reference` prints it; `--write` updates docs/cli.md; `--check` exits 1 when
the file is stale. Help is rendered at a fixed width with colour off, so the output depends only on the
code: typer reads those settings when it is imported, hence the re-run in a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer

from skillopt_lib.errors import EXIT_CODES

WIDTH = 100
_CHILD = "_SKILLOPT_REFERENCE_CHILD"
DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _walk(cmd: Any, path: list[str]) -> list[list[str]]:
    """Command paths, depth first. Duck-typed: typer ships its own copy of click's classes."""
    out = [path]
    if hasattr(cmd, "list_commands"):
        ctx = type(cmd).context_class(cmd) if hasattr(type(cmd), "context_class") else None
        for name in sorted(cmd.list_commands(ctx)):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                out += _walk(sub, [*path, name])
    return out


def render() -> str:
    """The Markdown reference. Call in a process started with the fixed help settings (see `main`)."""
    from typer.testing import CliRunner

    from skillopt_daemon.cli import app

    root = typer.main.get_command(app)
    runner = CliRunner()
    parts = [
        "# skillopt command reference\n",
        "Generated from each command's `--help` by `python -m skillopt_daemon.cli.reference --write`; "
        "a test fails when this file is stale.\n",
        "## Exit codes\n",
        "| code | meaning |",
        "| --- | --- |",
        *[f"| {code} | {text} |" for code, text in sorted(EXIT_CODES.items())],
        "",
    ]
    for path in _walk(root, []):
        result = runner.invoke(app, [*path, "--help"], prog_name="skillopt", env={"COLUMNS": str(WIDTH)})
        text = "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())
        parts += [f"## {' '.join(['skillopt', *path])}\n", "```text", text, "```", ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if os.environ.get(_CHILD) != "1":
        env = dict(os.environ)
        env.update(
            {
                _CHILD: "1",
                "TERMINAL_WIDTH": str(WIDTH),
                "COLUMNS": str(WIDTH),
                "_TYPER_FORCE_DISABLE_TERMINAL": "1",
                "NO_COLOR": "1",
                "TERM": "dumb",
            }
        )
        for var in ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS"):
            env.pop(var, None)
        return subprocess.call([sys.executable, "-m", "skillopt_daemon.cli.reference", *args], env=env)
    text = render()
    if "--write" in args:
        DOC_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {DOC_PATH.name}", file=sys.stderr)
        return 0
    if "--check" in args:
        current = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.exists() else ""
        if current != text:
            print(
                "docs/cli.md is stale: run `python -m skillopt_daemon.cli.reference --write`",
                file=sys.stderr,
            )
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
