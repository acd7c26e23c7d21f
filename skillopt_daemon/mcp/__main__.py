"""`python -m skillopt_daemon.mcp`: the review tools over MCP on stdio (what `skillopt mcp` runs)."""

from skillopt_daemon.mcp.server import run_stdio

run_stdio()
