"""The ingest tests' installation per test (`harness.ingest_home`)."""

from harness.ingest_home import Env, env, pipeline

__all__ = ["Env", "env", "pipeline"]
