"""The MCP server's tests run in the integration tests' homes (`harness.install_home`)."""

from harness.install_home import env

__all__ = ["env"]
