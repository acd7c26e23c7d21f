"""The ingest tests' installation per test (`testkit.ingest_home`)."""

from testkit.ingest_home import Env, env, pipeline

__all__ = ["Env", "env", "pipeline"]
