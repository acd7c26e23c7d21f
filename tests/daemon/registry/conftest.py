"""The review tests' homes (`testkit.review_home`)."""

from testkit.review_home import Env, env, reg

__all__ = ["Env", "env", "reg"]
