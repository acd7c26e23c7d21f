"""The project's test support, for its tests and benchmarks and not shipped: the agent CLIs' facts and
drivers, pytest fixtures and homes, night scenarios and the recorded corpora (``testkit.corpus``), built on
the scripted model server of :mod:`skillopt_lib.testing`. It imports neither ``tests`` nor ``benchmarks``."""
