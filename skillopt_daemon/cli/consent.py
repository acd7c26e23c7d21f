"""Asking, once, whether the night may use the user's agent login as its optimizer.

With no optimizer configured the night would spend on the agent CLI the user is signed in to (their plan's
usage, not an API key). That is asked before the first night spends anything: at `skillopt install` for
Claude Code or Codex, at the Claude Code plugin's `/skillopt-setup`, or at the first `skillopt status`. A
terminal gets a yes/no question; anything else (a hook, a pipe, an agent running the command) gets one line
saying how to answer. The question names what a night is counted against (the plan, or the key it is billed
to) and the cap that stops it, with the setting that changes it; the answer defaults to no. The answer is
`optimizer.consent` in the config file, so it is asked only once.
"""

from __future__ import annotations

import sys

import typer

from skillopt_daemon.cli.output import err_console
from skillopt_daemon.night.agents import SAY_YES, NightModel


def interactive() -> bool:
    """Only a person at a terminal is asked; anything else is told how to answer."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def ask(model: NightModel) -> str | None:
    """Ask the user (at a terminal) and remember the answer; elsewhere print how to answer. Returns the
    answer given, or None when none was."""
    if not model.asks:
        return None
    if not interactive():
        err_console.print(
            f"note: {model.question()} Answer with `{SAY_YES}` (or `no`).",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return None
    # No is the default: spending on the user's login is theirs to choose, never Enter's.
    yes = typer.confirm(f"{model.question()} Use it?", default=False, err=True)
    answer = "yes" if yes else "no"
    from skillopt_daemon.cli.config_cmd import set_cmd

    set_cmd("optimizer.consent", answer)
    if not yes:
        err_console.print(
            "nights will train nothing until an optimizer is set: `skillopt config set optimizer.backend "
            f"openai` (plus optimizer.model and an API key variable), or `{SAY_YES}`",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return answer
