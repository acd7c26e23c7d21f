"""Pytest plumbing around :mod:`skillopt_lib.testing`: fixtures and small helpers for CLI-driven tests."""
