"""skillopt's local half: ingest agent sessions, run the nightly cycle, keep the skill registry, the CLI."""
