"""The review tests' homes (`harness.review_home`)."""

from harness.review_home import Env, env, reg

__all__ = ["Env", "env", "reg"]
