"""docs/cli.md is generated from the commands' --help; a stale copy fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from skillopt_lib.errors import EXIT_CODES

DOC = Path(__file__).resolve().parents[3] / "docs" / "cli.md"


def _generate() -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "skillopt_daemon.cli.reference"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_docs_cli_md_is_up_to_date() -> None:
    generated = _generate()
    assert DOC.read_text(encoding="utf-8") == generated, (
        "docs/cli.md is stale: run `python -m skillopt_daemon.cli.reference --write`"
    )


def test_reference_documents_exit_codes_and_the_review_commands() -> None:
    text = DOC.read_text(encoding="utf-8")
    for code, meaning in EXIT_CODES.items():
        assert f"| {code} | {meaning} |" in text
    for cmd in ("status", "propose", "diff", "approve", "reject", "rollback", "history", "doctor"):
        assert f"## skillopt {cmd}\n" in text
    for cmd in ("skills list", "skills show", "skills import", "config show", "config get", "config set"):
        assert f"## skillopt {cmd}\n" in text
    assert "\x1b[" not in text  # no terminal colour codes
