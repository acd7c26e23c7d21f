"""The service's tests. The service files and status sections are read in the review tests' homes
(`testkit.review_home`); the daemon's own tests take the ingest tests' installation in their modules."""

from testkit.review_home import env, reg

__all__ = ["env", "reg"]
