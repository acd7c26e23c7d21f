"""The integration tests' homes and in-process runner (`harness.install_home`)."""

from harness.install_home import cli, env

__all__ = ["cli", "env"]
