"""Backends play two roles: the frozen agent that runs tasks, and the optimizer model that edits skills."""
