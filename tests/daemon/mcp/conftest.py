"""The MCP server's tests run in the integration tests' homes (`testkit.install_home`)."""

from testkit.install_home import env

__all__ = ["env"]
