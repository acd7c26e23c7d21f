"""Agent tools skillopt ships as plugins: each subpackage registers itself through the documented hooks
(`docs/plugins.md`) by an entry point in `pyproject.toml`, exactly as a third-party package would, and
nothing else in skillopt names it."""
