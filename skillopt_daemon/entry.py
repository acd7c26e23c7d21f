"""The `skillopt` console script.

`skillopt notify` runs in agent hooks at the end of every session, where the agent may not wait long: it
takes a path that imports only the standard library and `skillopt_daemon.core.paths`. Everything else (and
`notify --help` or unexpected arguments) goes to the typer CLI.

The review commands (`QUICK`) run without the cyclic garbage collector: they live for a fraction of a second
and what they allocate is freed by reference counting, while the collector's passes over the objects their
imports create (typer's, pydantic's, the settings' models) cost them a tenth of their time. Every other
command, the daemon and a night among them, keeps the collector.
"""

from __future__ import annotations

import gc
import os
import sys

# Short-lived commands that read the store and print (or make one decision): see the module's docstring.
QUICK = frozenset({"status", "diff", "approve", "reject", "propose", "history", "rollback"})


def main() -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        # The standard library and one constant: not the whole command tree.
        from skillopt_lib import __version__

        print(f"skillopt {__version__}")
        return
    if argv[:1] and argv[0] in QUICK:
        gc.disable()
    # skillopt uses no pydantic plugin; looking for them scans every installed package's metadata.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if argv[:1] == ["notify"]:
        from skillopt_daemon.ingest.notes import fast_main

        code = fast_main(argv[1:])
        if code is not None:
            sys.exit(code)
    from skillopt_daemon.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
