"""Each built-in tool's integration: what `skillopt install TOOL` places besides the `skillopt` skill.

One module per tool, named by the tool's row (`ToolSpec.integration`), each with `placements(ctx)`; a
plugin's tool names its own function the same way.
"""
