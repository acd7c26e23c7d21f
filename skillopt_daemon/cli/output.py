"""How the CLI talks: the library's consoles and printers (`skillopt_lib.cli.output`), one for every command."""

from skillopt_lib.cli.output import (
    NO_TERMINAL_WIDTH,
    console,
    err_console,
    literal,
    plain,
    print_json,
    print_table,
    write_text,
)

__all__ = [
    "NO_TERMINAL_WIDTH",
    "console",
    "err_console",
    "literal",
    "plain",
    "print_json",
    "print_table",
    "write_text",
]
