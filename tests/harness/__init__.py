"""Pytest plumbing around :mod:`skillopt.testing`: fixtures and small helpers for CLI-driven tests."""
