"""The integration tests' homes and in-process runner (`testkit.install_home`)."""

from testkit.install_home import cli, env

__all__ = ["cli", "env"]
